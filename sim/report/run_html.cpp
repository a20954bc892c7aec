// The run report's plots and page; see run_html.h.
#include "sim/report/run_html.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <cmath>
#include <map>
#include <sstream>
#include <iterator>

#include "arch/common/derived.h"
#include "sim/report/svg.h"
#include "sim/results/format.h"
#include "sim/results/trace_writer.h"
#include "workloads/ir/op.h"

namespace tpusim::sim::report {

namespace {

std::string op_kind_of(const RunReport& r, std::size_t op) {
  return op < r.lowered.ops.size() ? r.lowered.ops[op].kind : "other";
}

// One colour per operator kind across every plot (its place in the IR's
// kind list); kinds the IR does not know take the last colours.
struct KindColors {
  std::map<std::string, std::size_t> index;  // kinds drawn, for the legend
  const char* operator()(const std::string& k) {
    std::size_t i = std::size(workloads::kAllOpKinds);
    if (auto kind = workloads::parse_op_kind(k))
      i = static_cast<std::size_t>(std::find(std::begin(workloads::kAllOpKinds), std::end(workloads::kAllOpKinds), *kind) -
                                   std::begin(workloads::kAllOpKinds));
    index.emplace(k, i);
    return palette(i);
  }
};

}  // namespace

std::string timeline_svg(const RunReport& r) {
  const arch::Program& prog = r.lowered.program;
  std::map<TrackKey, std::string> names;
  for (std::size_t i = 0; i < prog.instrs.size() && i < r.sim.records.size(); ++i)
    names.emplace(track_key(prog.instrs[i], r.sim.records[i]), track_name(prog.instrs[i], r.sim.records[i]));
  const double W = 1000, L = 80, R = 20, T = 40, row = 16;
  const double H = T + row * static_cast<double>(names.size()) + 60;
  const double end = static_cast<double>(std::max<std::uint64_t>(r.sim.end_cycle, 1));
  const double ms_end = end / r.sim.clock_hz * 1e3;
  Scale x = nice_scale(0, ms_end, L, W - R, false);
  x.hi = ms_end;  // the run fills the width exactly
  Svg s(W, H);
  s.text(W / 2, 20, "operator timeline per unit (colour: operator kind)", "text-anchor=\"middle\" font-size=\"14\"");
  std::map<TrackKey, double> y;
  double yy = T;
  for (const auto& [k, n] : names) {
    y[k] = yy;
    s.text(L - 6, yy + row - 5, n, "text-anchor=\"end\" font-size=\"10\"");
    yy += row;
  }
  for (double v : x.ticks()) {
    s.line(x(v), T, x(v), yy, "stroke=\"#ddd\"");
    s.text(x(v), yy + 14, tick_label(v, false), "text-anchor=\"middle\"");
  }
  s.text((L + W - R) / 2, yy + 32, "ms", "text-anchor=\"middle\" font-size=\"12\"");
  // Per track, instructions of one operator that touch within a pixel are
  // drawn as one bar, so the page stays small for long runs.
  struct Bar {
    double x0, x1;
    std::uint32_t op;
  };
  std::map<TrackKey, std::vector<std::pair<std::uint64_t, std::size_t>>> by_track;
  for (std::size_t i = 0; i < prog.instrs.size() && i < r.sim.records.size(); ++i)
    by_track[track_key(prog.instrs[i], r.sim.records[i])].push_back({r.sim.records[i].start, i});
  KindColors color;
  for (auto& [k, list] : by_track) {
    std::sort(list.begin(), list.end());
    std::vector<Bar> bars;
    for (const auto& [start, i] : list) {
      const double x0 = x(static_cast<double>(start) / r.sim.clock_hz * 1e3);
      const double x1 = x(static_cast<double>(r.sim.records[i].finish) / r.sim.clock_hz * 1e3);
      const std::uint32_t op = prog.instrs[i].op;
      if (!bars.empty() && bars.back().op == op && x0 <= bars.back().x1 + 1.0)
        bars.back().x1 = std::max(bars.back().x1, x1);
      else
        bars.push_back({x0, x1, op});
    }
    for (const auto& b : bars) {
      const std::string name = b.op < r.lowered.ops.size() ? r.lowered.ops[b.op].name : "";
      s.raw("<g><title>" + xml_escape(name + " (" + op_kind_of(r, b.op) + ")") + "</title>");
      s.rect(b.x0, y[k] + 2, std::max(b.x1 - b.x0, 0.5), row - 4, std::string("fill=\"") + color(op_kind_of(r, b.op)) + "\"");
      s.raw("</g>\n");
    }
  }
  // Legend of kinds.
  double lx = L;
  for (const auto& [k, i] : color.index) {
    s.rect(lx, yy + 40, 10, 10, std::string("fill=\"") + palette(i) + "\"");
    s.text(lx + 14, yy + 49, k);
    lx += 14 + 7.0 * static_cast<double>(k.size()) + 12;
  }
  return s.str();
}

std::string roofline_svg(const RunReport& r, const RunMetrics& m) {
  const double peak = arch::peak_flops(*r.config, arch::DType::bf16);
  const double bw = arch::hbm_peak_bandwidth(r.config->hbm);
  struct Pt {
    std::string name, kind;
    double x, y;
  };
  std::vector<Pt> pts;
  for (std::size_t i = 0; i < r.lowered.ops.size() && i < m.ops.size(); ++i) {
    const auto& p = r.lowered.ops[i];
    if (p.fused_into >= 0 || m.ops[i].cycles == 0 || p.hbm_bytes == 0) continue;
    double flops = static_cast<double>(p.flops);
    for (auto f : p.fused)
      if (f < r.lowered.ops.size()) flops += static_cast<double>(r.lowered.ops[f].flops);
    if (flops <= 0) continue;
    const double sec = static_cast<double>(m.ops[i].cycles) / r.sim.clock_hz;
    pts.push_back({p.name, p.kind, flops / static_cast<double>(p.hbm_bytes), flops / sec});
  }
  double xlo = 1, xhi = 10, ylo = peak / 1e3, yhi = peak;
  for (const auto& p : pts) {
    xlo = std::min(xlo, p.x), xhi = std::max(xhi, p.x);
    ylo = std::min(ylo, p.y), yhi = std::max(yhi, p.y);
  }
  xhi = std::max(xhi, 4 * peak / bw);
  const double W = 760, H = 560, L = 80, R = 20, T = 40, B = 60;
  const Scale x = nice_scale(xlo, xhi, L, W - R, true);
  const Scale y = nice_scale(ylo, yhi, H - B, T, true);
  Svg s(W, H);
  s.text(W / 2, 22, "roofline: operators (fused groups) against the chip's roofs", "text-anchor=\"middle\" font-size=\"14\"");
  draw_axes(s, x, y, "arithmetic intensity (FLOP per HBM byte)", "achieved FLOP/s");
  // Roofs: min(peak, bw * intensity) from the left edge to the right.
  const double ridge = peak / bw;
  s.polyline({{x(x.lo), y(std::max(bw * x.lo, y.lo))}, {x(ridge), y(peak)}, {x(x.hi), y(peak)}},
             "stroke=\"#d62728\" stroke-width=\"2\" data-peak-flops=\"" + format_real(peak, 6) + "\" data-hbm-bandwidth=\"" +
                 format_real(bw, 6) + "\"");
  s.text(x(x.hi) - 4, y(peak) - 6, "peak " + format_real(peak / 1e12, 4) + " TFLOP/s (bf16)",
         "text-anchor=\"end\" fill=\"#d62728\"");
  s.text(x(ridge) + 6, y(peak) + 16, "ridge " + format_real(ridge, 4) + " FLOP/B", "fill=\"#d62728\"");
  KindColors color;
  for (const auto& p : pts) {
    s.raw("<g><title>" + xml_escape(p.name + " (" + p.kind + "): " + format_real(p.x, 4) + " FLOP/B, " +
                                    format_real(p.y / 1e12, 4) + " TFLOP/s") +
          "</title>");
    s.circle(x(p.x), y(p.y), 3.5,
             std::string("fill=\"") + color(p.kind) + "\" fill-opacity=\"0.75\" data-name=\"" + xml_escape(p.name) +
                 "\" data-x=\"" + format_real(p.x, 6) + "\" data-y=\"" + format_real(p.y, 6) + "\"");
    s.raw("</g>\n");
  }
  double ly = T + 16;
  for (const auto& [k, i] : color.index) {
    s.circle(L + 14, ly - 4, 4, std::string("fill=\"") + palette(i) + "\"");
    s.text(L + 24, ly, k);
    ly += 15;
  }
  return s.str();
}

std::string kind_time_svg(const RunReport& r, const RunMetrics& m) {
  std::vector<std::string> kinds;
  std::map<std::string, double> t;
  for (std::size_t i = 0; i < r.lowered.ops.size() && i < m.ops.size(); ++i) {
    const std::string& k = r.lowered.ops[i].kind;
    if (!t.count(k)) kinds.push_back(k);
    t[k] += static_cast<double>(m.ops[i].cycles) / r.sim.clock_hz * 1e3;
  }
  std::vector<double> v;
  for (const auto& k : kinds) v.push_back(t[k]);
  return bar_chart("time by operator kind", kinds, {{"time", palette(0), v}}, "ms (sum of operator intervals)");
}

std::string hbm_bandwidth_svg(const RunReport& r, const RunMetrics& m) {
  constexpr int kBins = 100;
  const double end = static_cast<double>(std::max<std::uint64_t>(r.sim.end_cycle, 1));
  std::vector<double> bytes(kBins, 0);
  const arch::Program& prog = r.lowered.program;
  double total = 0;
  for (std::size_t i = 0; i < prog.instrs.size() && i < r.sim.records.size(); ++i) {
    const auto* d = std::get_if<arch::DmaWork>(&prog.instrs[i].work);
    if (!d || (d->src != arch::MemSpace::hbm && d->dst != arch::MemSpace::hbm)) continue;
    const double b = static_cast<double>(d->bytes());
    total += b;
    const double s0 = static_cast<double>(r.sim.records[i].start), s1 = static_cast<double>(r.sim.records[i].finish);
    if (s1 <= s0) {
      bytes[std::min(kBins - 1, static_cast<int>(s0 / end * kBins))] += b;
      continue;
    }
    for (int k = static_cast<int>(s0 / end * kBins); k < kBins && k * end / kBins < s1; ++k) {
      const double lo = std::max(s0, k * end / kBins), hi = std::min(s1, (k + 1) * end / kBins);
      if (hi > lo) bytes[k] += b * (hi - lo) / (s1 - s0);
    }
  }
  const double bin_s = end / r.sim.clock_hz / kBins;
  const double peak = m.hbm_peak_bandwidth;
  double hi = peak;
  for (double b : bytes) hi = std::max(hi, b / bin_s);
  const double W = 760, H = 340, L = 80, R = 20, T = 40, B = 60;
  const Scale x = nice_scale(0, end / r.sim.clock_hz * 1e3, L, W - R, false);
  const Scale y = nice_scale(0, hi / 1e9, H - B, T, false);
  Svg s(W, H);
  s.text(W / 2, 22, "HBM bandwidth over time (DMA traffic, 100 bins)", "text-anchor=\"middle\" font-size=\"14\"");
  draw_axes(s, x, y, "ms", "GB/s");
  std::vector<std::pair<double, double>> pts;
  for (int k = 0; k < kBins; ++k) {
    pts.push_back({x(k * bin_s * 1e3), y(bytes[k] / bin_s / 1e9)});
    pts.push_back({x((k + 1) * bin_s * 1e3), y(bytes[k] / bin_s / 1e9)});
  }
  std::string binv;
  for (double b : bytes) binv += (binv.empty() ? "" : " ") + format_real(b, 9);
  s.polyline(pts, "stroke=\"#4e79a7\" stroke-width=\"1.5\" data-bin-seconds=\"" + format_real(bin_s, 9) +
                      "\" data-bin-bytes=\"" + binv + "\" data-total-bytes=\"" + format_real(total, 12) + "\"");
  s.line(x(x.lo), y(peak / 1e9), x(x.hi), y(peak / 1e9), "stroke=\"#d62728\" stroke-dasharray=\"5,4\"");
  s.text(x(x.hi) - 4, y(peak / 1e9) - 5, "peak " + format_real(peak / 1e9, 4) + " GB/s", "text-anchor=\"end\" fill=\"#d62728\"");
  return s.str();
}

std::string run_report_html(const RunReport& r, const RunMetrics& m) {
  std::ostringstream b;
  std::vector<std::vector<std::string>> tot = {
      {"time", format_real(m.seconds * 1e3, 6) + " ms"},
      {"achieved", m.achieved_tflops ? format_real(*m.achieved_tflops, 4) + " TFLOP/s" : "-"},
      {"MXU utilization", m.mxu_utilization ? format_real(100 * *m.mxu_utilization, 4) + "%" : "-"},
      {"HBM traffic", format_real(static_cast<double>(m.hbm_bytes) / 1e9, 6) + " GB"},
      {"HBM bandwidth utilization",
       m.hbm_bandwidth_utilization ? format_real(100 * *m.hbm_bandwidth_utilization, 4) + "%" : "-"}};
  b << "<p>" << xml_escape(r.arch_name + ", " + r.workload_name) << "</p>\n"
    << html_table({"total", "value"}, tot) << "<h2>Timeline</h2>\n"
    << timeline_svg(r) << "<h2>Roofline</h2>\n"
    << roofline_svg(r, m) << "<h2>Time by operator kind</h2>\n"
    << kind_time_svg(r, m) << "<h2>HBM bandwidth</h2>\n"
    << hbm_bandwidth_svg(r, m);
  return html_page("tpusim run: " + r.workload_name + " on " + r.arch_name, b.str());
}

void write_run_report(const RunReport& r, const RunMetrics& m, const std::string& dir) {
  const std::string path = dir + "/report.html";
  std::ofstream f(path, std::ios::binary);
  f << run_report_html(r, m);
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace tpusim::sim::report
