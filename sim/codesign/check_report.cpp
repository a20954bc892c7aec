// The reports of `tpusim check`: terminal summary, check.csv and
// report.html (inline SVG through sim/report/svg.h); see check.h.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "arch/common/derived.h"
#include "sim/codesign/check.h"
#include "sim/report/svg.h"
#include "sim/results/format.h"
#include "sim/sweep/results_table.h"

namespace tpusim::sim::codesign {

namespace {

std::string pct(double v, int d = 1) { return format_fixed(100 * v, d) + "%"; }

std::string gib(double bytes) { return format_fixed(bytes / (1024.0 * 1024 * 1024), 2) + " GiB"; }

std::string signed_num(double v, int d) { return (v >= 0 ? "+" : "") + format_fixed(v, d); }

std::string ms(double s) { return format_fixed(s * 1e3, 3); }

std::string shape_text(const MxuMatmul& m) {
  std::string s = std::to_string(m.m) + "x" + std::to_string(m.k) + "x" + std::to_string(m.n);
  if (m.batch > 1) s = std::to_string(m.batch) + " x " + s;
  return s;
}

double share_of(const ArchCheck& a, models::Phase p, const std::string& type) {
  const auto it = a.shares.find(p);
  if (it == a.shares.end()) return NAN;
  for (const auto& s : it->second)
    if (s.type == type) return s.share;
  return 0;
}

std::string pad_text(std::int64_t d, std::int64_t padded) {
  return d == padded ? std::to_string(d) : std::to_string(d) + "->" + std::to_string(padded);
}

// A suggestion table's phase column: its label, and a width that keeps
// two spaces before it (the label is wider than the figures under it).
std::string phase_label(models::Phase p) { return std::string(models::phase_name(p)) + " ms before->after"; }
int phase_col(models::Phase p) { return std::max(22, static_cast<int>(phase_label(p).size()) + 2); }

std::string divisibility_text(const Divisibility& d) {
  std::string s = d.key + " " + std::to_string(d.value) + ": ";
  auto list = [](const std::vector<int>& v) {
    std::string o;
    for (int x : v) o += (o.empty() ? "" : ",") + std::to_string(x);
    return o.empty() ? std::string("none") : o;
  };
  s += "divides by " + list(d.divides);
  if (!d.fails.empty()) s += "; not by " + list(d.fails);
  // A tensor degree that is a multiple of the KV heads replicates them
  // (models/sharding.h): it runs, with K/V computed and cached per rank.
  if (d.key == "attention.kv_heads") s += " (a tensor degree that is a multiple of it replicates the KV heads)";
  return s;
}

const Candidate& cand(const CheckResult& r, const Suggestion& s) {
  return r.candidates.at(static_cast<std::size_t>(s.candidate));
}

std::string bf16_ridge(const ArchCheck& a) {
  const auto f = arch::derive(a.config);
  const auto it = f.ridge_point.find(arch::DType::bf16);
  return it == f.ridge_point.end() ? "-" : format_fixed(it->second, 0);
}

}  // namespace

void print_check(const CheckResult& r, std::ostream& os) {
  const auto& o = r.options;
  std::string phases;
  for (auto p : o.phases) phases += (phases.empty() ? "" : ",") + std::string(models::phase_name(p));
  os << "tpusim check: " << r.model.name << " (" << models::family_name(r.model.family) << ", "
     << format_fixed(static_cast<double>(r.params) / 1e9, 3) << " B parameters); phases " << phases << ", batch "
     << o.batch << ", seq " << o.seq << ", context " << o.context << "\n\n";
  os << "Model dimensions that do not fill the MXU:\n";
  for (const auto& a : r.archs) {
    os << "  " << a.arch << " (MXU " << a.config.mxu.rows << "x" << a.config.mxu.cols << "): ";
    if (a.dims.empty()) os << "none";
    for (std::size_t i = 0; i < a.dims.size(); ++i)
      os << (i ? ", " : "") << a.dims[i].key << " " << a.dims[i].value << " -> " << a.dims[i].rounded << " ("
         << pct(a.dims[i].waste) << " padding)";
    os << "\n";
  }
  os << "Divisibility by tensor/expert-parallel degrees:\n";
  for (const auto& d : r.divisibility) os << "  " << divisibility_text(d) << "\n";
  if (r.divisibility.empty())
    os << "  none to check: a " << models::family_name(r.model.family) << " model shards over data only\n";

  for (const auto& a : r.archs) {
    os << "\n== " << a.arch << ": MXU " << a.config.mxu.rows << "x" << a.config.mxu.cols << " x"
       << a.config.mxu.count * a.config.chip.tensorcores << ", ridge point " << bf16_ridge(a)
       << " FLOP/byte (bf16), HBM " << gib(static_cast<double>(a.config.hbm.capacity_bytes)) << " ==\n";
    for (auto p : o.phases) {
      os << models::phase_name(p) << ": the layers as the MXU sees them (M x K x N; K pads to rows, N to cols)\n";
      os << "  " << std::left << std::setw(25) << "layer type" << std::setw(26) << "shape" << std::setw(14) << "K"
         << std::setw(14) << "N" << std::right << std::setw(8) << "waste" << std::setw(11) << "FLOP/byte"
         << std::setw(9) << "bound" << std::setw(8) << "time"
         << "\n";
      for (const auto& l : a.layers.at(p)) {
        const double sh = share_of(a, p, l.type);
        os << "  " << std::left << std::setw(25) << l.type << std::setw(26) << shape_text(l.shape) << std::setw(14)
           << pad_text(l.shape.k, l.k_padded) << std::setw(14) << pad_text(l.shape.n, l.n_padded) << std::right
           << std::setw(8) << pct(l.total_waste) << std::setw(11) << format_fixed(l.intensity, 1) << std::setw(9)
           << (l.compute_bound() ? "compute" : "memory") << std::setw(8) << (std::isfinite(sh) ? pct(sh) : "-") << "\n";
      }
      if (auto it = a.shares.find(p); it != a.shares.end())
        for (const auto& s : it->second)
          if (s.type == "collectives" || s.type.rfind("other", 0) == 0)
            os << "  " << std::left << std::setw(25 + 26 + 14 + 14 + 8 + 11 + 9) << s.type << std::right << std::setw(8)
               << pct(s.share) << "\n";
      for (const auto& pt : r.points)
        if (pt.arch == a.arch && pt.phase == p && pt.candidate < 0)
          os << "  step time: " << (pt.ok ? ms(pt.seconds) + " ms (simulated)" : "not simulated: " + pt.error) << "\n";
      os << "  HBM fit (" << models::phase_name(p) << "):";
      const char* sep = " ";
      for (const auto& f : a.fit.at(p)) {
        os << sep << f.dtype << " weights " << gib(static_cast<double>(f.weight_bytes)) << ", total "
           << gib(static_cast<double>(f.total_bytes)) << " -> " << f.min_chips << " chip"
           << (f.min_chips > 1 ? "s" : "") << " (smallest slice " << f.slice << ")";
        sep = "; ";
      }
      os << "\n";
    }
    if (a.kv.bytes_per_token) {
      os << "KV cache: " << a.kv.bytes_per_token << " bytes per token; at context " << a.kv.context;
      if (a.kv.max_batch > 0)
        os << " one chip holds " << a.kv.max_batch << " sequences next to the bf16 weights\n";
      else
        os << " no sequence fits one chip: the bf16 weights alone fill its HBM\n";
    }
    bool header = false;
    int rank = 0;
    for (const auto& s : r.suggestions) {
      if (s.arch != a.arch) continue;
      if (!header) {
        os << "Suggestions, simulated (ranked by gain per parameter changed):\n";
        os << "  " << std::right << std::setw(2) << "#"
           << "  " << std::left << std::setw(64) << "change";
        for (auto p : o.phases) os << std::right << std::setw(phase_col(p)) << phase_label(p);
        os << std::setw(9) << "gain" << std::setw(10) << "params" << std::setw(12) << "memory" << std::setw(8)
           << "score"
           << "\n";
        header = true;
      }
      os << "  " << std::right << std::setw(2) << ++rank << "  " << std::left << std::setw(64) << cand(r, s).title;
      if (!s.error.empty()) {
        os << "simulation failed: " << s.error << "\n";
        continue;
      }
      for (auto p : o.phases) {
        const auto b = s.before.find(p), f = s.after.find(p);
        os << std::right << std::setw(phase_col(p))
           << (b != s.before.end() && f != s.after.end() ? ms(b->second) + " -> " + ms(f->second) : "-");
      }
      os << std::setw(9) << (signed_num(s.gain_pct, 1) + "%") << std::setw(10)
         << (signed_num(s.params_delta_pct, 2) + "%") << std::setw(12)
         << (signed_num(static_cast<double>(s.memory_delta) / (1024.0 * 1024), 0) + " MiB") << std::setw(8)
         << format_fixed(s.score, 2) << "\n";
    }
  }
  os << "\n";
}

std::string check_csv(const CheckResult& r) {
  const std::vector<std::string> header = {"section",
                                           "arch",
                                           "phase",
                                           "name",
                                           "shape",
                                           "k",
                                           "n",
                                           "k_padded",
                                           "n_padded",
                                           "waste_pct",
                                           "intensity",
                                           "ridge",
                                           "bound",
                                           "time_share_pct",
                                           "before_s",
                                           "after_s",
                                           "gain_pct",
                                           "params_delta",
                                           "params_delta_pct",
                                           "memory_delta_bytes",
                                           "score",
                                           "note"};
  std::string out = sweep::csv_line(header);
  auto row = [&](std::map<std::string, std::string> cells) {
    std::vector<std::string> v;
    for (const auto& h : header) v.push_back(cells[h]);
    out += sweep::csv_line(v);
  };
  for (const auto& a : r.archs) {
    for (const auto& d : a.dims)
      row({{"section", "dimension"},
           {"arch", a.arch},
           {"name", d.key},
           {"k", std::to_string(d.value)},
           {"k_padded", std::to_string(d.rounded)},
           {"waste_pct", format_real(100 * d.waste)},
           {"note", "MXU " + std::to_string(d.tile)}});
    for (const auto& [p, layers] : a.layers)
      for (const auto& l : layers) {
        const double sh = share_of(a, p, l.type);
        row({{"section", "layer"},
             {"arch", a.arch},
             {"phase", models::phase_name(p)},
             {"name", l.type},
             {"shape", shape_text(l.shape)},
             {"k", std::to_string(l.shape.k)},
             {"n", std::to_string(l.shape.n)},
             {"k_padded", std::to_string(l.k_padded)},
             {"n_padded", std::to_string(l.n_padded)},
             {"waste_pct", format_real(100 * l.total_waste)},
             {"intensity", format_real(l.intensity)},
             {"ridge", format_real(l.ridge)},
             {"bound", l.compute_bound() ? "compute" : "memory"},
             {"time_share_pct", std::isfinite(sh) ? format_real(100 * sh) : ""}});
      }
    for (const auto& [p, shares] : a.shares)
      for (const auto& s : shares)
        row({{"section", "time_share"},
             {"arch", a.arch},
             {"phase", models::phase_name(p)},
             {"name", s.type},
             {"time_share_pct", format_real(100 * s.share)}});
    for (const auto& pt : r.points)
      if (pt.arch == a.arch && pt.candidate < 0)
        row({{"section", "step"},
             {"arch", a.arch},
             {"phase", models::phase_name(pt.phase)},
             {"name", r.model.name},
             {"before_s", pt.ok ? format_real(pt.seconds, 9) : ""},
             {"note", pt.error}});
    for (const auto& [p, fits] : a.fit)
      for (const auto& f : fits)
        row({{"section", "fit"},
             {"arch", a.arch},
             {"phase", models::phase_name(p)},
             {"name", f.dtype + " weights"},
             {"shape", f.slice},
             {"k", std::to_string(f.min_chips)},
             {"n", std::to_string(f.slice_chips)},
             {"note", std::to_string(f.total_bytes) + " bytes"}});
    if (a.kv.bytes_per_token)
      row({{"section", "kv_cache"},
           {"arch", a.arch},
           {"name", "bytes_per_token"},
           {"k", std::to_string(a.kv.bytes_per_token)},
           {"n", std::to_string(a.kv.max_batch)},
           {"note", "max batch at context " + std::to_string(a.kv.context)}});
  }
  for (const auto& d : r.divisibility)
    row({{"section", "divisibility"}, {"name", d.key}, {"note", divisibility_text(d)}});
  for (const auto& s : r.suggestions)
    for (auto p : r.options.phases) {
      const auto b = s.before.find(p), f = s.after.find(p);
      row({{"section", "suggestion"},
           {"arch", s.arch},
           {"phase", models::phase_name(p)},
           {"name", cand(r, s).id},
           {"before_s", b == s.before.end() ? "" : format_real(b->second, 9)},
           {"after_s", f == s.after.end() ? "" : format_real(f->second, 9)},
           {"gain_pct",
            b == s.before.end() || f == s.after.end() ? "" : format_real(100 * (b->second - f->second) / b->second)},
           {"params_delta", std::to_string(s.params_delta)},
           {"params_delta_pct", format_real(s.params_delta_pct)},
           {"memory_delta_bytes", std::to_string(s.memory_delta)},
           {"score", format_real(s.score)},
           {"note", s.error.empty() ? cand(r, s).title : s.error}});
    }
  return out;
}

std::string check_html(const CheckResult& r) {
  std::ostringstream b;
  std::ostringstream term;
  print_check(r, term);
  b << "<p>Model " << report::xml_escape(r.model.name) << ", " << format_fixed(static_cast<double>(r.params) / 1e9, 3)
    << " B parameters. Every step time is simulated; see docs/codesign.md.</p>\n";
  std::vector<std::vector<std::string>> drows;
  for (const auto& d : r.divisibility) drows.push_back({d.key, std::to_string(d.value), divisibility_text(d)});
  b << "<h2>Divisibility by parallel degrees</h2>\n";
  if (drows.empty())
    b << "<p>None to check: a " << models::family_name(r.model.family) << " model shards over data only.</p>\n";
  else
    b << report::html_table({"key", "value", "detail"}, drows);
  for (const auto& a : r.archs) {
    b << "<h2>" << report::xml_escape(a.arch) << ": MXU " << a.config.mxu.rows << "x" << a.config.mxu.cols << ", ridge "
      << bf16_ridge(a) << " FLOP/byte (bf16)</h2>\n";
    for (auto p : r.options.phases) {
      std::vector<std::vector<std::string>> rows;
      for (const auto& l : a.layers.at(p)) {
        const double sh = share_of(a, p, l.type);
        rows.push_back({l.type, shape_text(l.shape), pad_text(l.shape.k, l.k_padded), pad_text(l.shape.n, l.n_padded),
                        pct(l.total_waste), format_fixed(l.intensity, 1), format_fixed(l.ridge, 0),
                        l.compute_bound() ? "compute" : "memory", std::isfinite(sh) ? pct(sh) : "-"});
      }
      b << "<h3>" << models::phase_name(p) << "</h3>\n"
        << report::html_table({"layer type", "M x K x N", "K (pads to rows)", "N (pads to cols)", "padding waste",
                               "FLOP/byte", "ridge", "bound", "share of step"},
                              rows);
      if (auto it = a.shares.find(p); it != a.shares.end()) {
        std::vector<std::string> cats;
        std::vector<double> vals;
        for (const auto& s : it->second) {
          if (!(s.share > 0)) continue;  // fused into another kernel: no time of its own (check.csv lists it)
          cats.push_back(s.type);
          vals.push_back(100 * s.share);
        }
        b << report::bar_chart(a.arch + " " + models::phase_name(p) + ": time by layer type", cats,
                               {{"share of step", report::palette(0), vals}}, "% of operator time");
      }
      std::vector<std::vector<std::string>> frows;
      for (const auto& f : a.fit.at(p))
        frows.push_back({f.dtype, gib(static_cast<double>(f.weight_bytes)), gib(static_cast<double>(f.total_bytes)),
                         std::to_string(f.min_chips), f.slice});
      b << report::html_table({"weights", "weight bytes", "phase footprint", "chips needed", "smallest slice"}, frows);
    }
    // Suggestions with before/after bars per phase.
    std::vector<std::vector<std::string>> srows;
    for (auto p : r.options.phases) {
      std::vector<std::string> cats;
      report::BarSeries before{"before", "#9c9c9c", {}}, after{"after", "#4e79a7", {}};
      for (const auto& s : r.suggestions) {
        if (s.arch != a.arch || !s.error.empty()) continue;
        const auto bi = s.before.find(p), ai = s.after.find(p);
        if (bi == s.before.end() || ai == s.after.end()) continue;
        cats.push_back(cand(r, s).id);
        before.values.push_back(bi->second * 1e3);
        after.values.push_back(ai->second * 1e3);
      }
      if (!cats.empty())
        b << report::bar_chart(a.arch + " " + models::phase_name(p) + ": simulated step time before and after", cats,
                               {before, after}, "ms per step");
    }
    for (const auto& s : r.suggestions)
      if (s.arch == a.arch)
        srows.push_back({cand(r, s).title, s.error.empty() ? signed_num(s.gain_pct, 2) + "%" : s.error,
                         signed_num(s.params_delta_pct, 2) + "%",
                         signed_num(static_cast<double>(s.memory_delta) / (1024.0 * 1024), 1) + " MiB",
                         format_fixed(s.score, 2)});
    if (!srows.empty())
      b << "<h3>Suggestions, ranked by gain per parameter changed</h3>\n"
        << report::html_table({"change", "step-time gain", "parameters", "memory", "score"}, srows);
  }
  b << "<h2>Terminal summary</h2>\n<pre>" << report::xml_escape(term.str()) << "</pre>\n";
  return report::html_page("tpusim check: " + r.model.name, b.str());
}

void write_check_reports(const CheckResult& r, const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::pair<const char*, std::string> files[] = {{"check.csv", check_csv(r)}, {"report.html", check_html(r)}};
  for (const auto& [name, text] : files) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    std::ofstream f(path, std::ios::binary);
    f << text;
    if (!f) throw std::runtime_error("cannot write " + path);
  }
}

}  // namespace tpusim::sim::codesign
