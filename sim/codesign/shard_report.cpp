// The reports of `tpusim shard-search`: the ranked terminal table,
// shard_search.csv and report.html (a bar of step time per simulated
// mesh, coloured by its bottleneck, then the tables); see shard_search.h.
#include <algorithm>
#include <cmath>

#include "sim/codesign/shard_search.h"
#include "sim/report/svg.h"
#include "sim/results/format.h"
#include "sim/sweep/results_table.h"

namespace tpusim::sim::codesign {

namespace {

std::string pct(double v, int d = 1) { return format_fixed(100 * v, d) + "%"; }
std::string gib(double bytes) { return format_fixed(bytes / (1024.0 * 1024 * 1024), 1) + " GiB"; }
std::string time_text(double s) { return s >= 1 ? format_fixed(s, 3) + " s" : format_fixed(s * 1e3, 2) + " ms"; }

const char* bottleneck_color(const std::string& b) {
  if (b == "ici") return "#d62728";
  if (b == "hbm") return "#ff7f0e";
  return "#1f77b4";
}

std::vector<const ShardPoint*> ranked(const ShardSearchResult& r, bool ok) {
  std::vector<const ShardPoint*> out;
  for (const auto& p : r.points)
    if ((p.status == "ok") == ok) out.push_back(&p);
  return out;
}

std::string remat_text(const ShardSearchResult& r, const ShardPoint& p) {
  return r.options.phase == models::Phase::train && p.status != "cannot_shard" ? p.remat : "-";
}

std::vector<std::string> table_header() {
  return {"rank", "mesh", "remat", "step", "MFU", "HFU", "memory/chip", "bottleneck", "exposed ICI", "gap"};
}

std::vector<std::string> table_row(const ShardSearchResult& r, const ShardPoint& p, std::size_t rank) {
  return {std::to_string(rank),
          p.label(),
          remat_text(r, p),
          time_text(p.fig.seconds),
          pct(p.mfu),
          pct(p.hfu),
          gib(static_cast<double>(p.memory_bytes)),
          p.bottleneck,
          pct(p.exposed_comm),
          "+" + format_fixed(p.gap_pct, 1) + "%"};
}

std::string header_text(const ShardSearchResult& r) {
  const auto& o = r.options;
  std::string s =
      "shard-search: " + r.model_name + " " + models::phase_name(o.phase) + " batch " + std::to_string(o.batch) +
      (o.phase == models::Phase::decode ? " context " + std::to_string(o.context) : " seq " + std::to_string(o.seq)) +
      " on " + o.arch + " " + o.slice + " (" + std::to_string(r.chips) + " chips)";
  return s;
}

std::string sampling_text(const ShardSearchResult& r) {
  if (r.options.sample_layers <= 0)
    return "every layer simulated" + (r.sampling_note.empty() ? std::string() : "; " + r.sampling_note);
  const std::int64_t b = r.sample_base, n = r.options.sample_layers;
  return "layer sampling: " + std::to_string(b + n) + " and " + std::to_string(b + 2 * n) + " of " +
         std::to_string(r.layers) + " layers simulated" +
         (b > 0 ? " (the first " + std::to_string(b) + " in both)" : std::string()) + ", extrapolated linearly" +
         (r.sampling_note.empty() ? std::string() : "; " + r.sampling_note);
}

}  // namespace

void print_shard_search(const ShardSearchResult& r, std::ostream& os) {
  const auto ok = ranked(r, true);
  std::size_t no_fit = 0, cannot = 0, failed = 0;
  for (const auto& p : r.points) {
    no_fit += p.status == "no_fit";
    cannot += p.status == "cannot_shard";
    failed += p.status == "error";
  }
  os << header_text(r) << "\n"
     << ok.size() << " ranked, " << failed << " failed, " << no_fit << " do not fit, " << cannot
     << " cannot shard the model; " << r.simulations << " simulations in " << format_fixed(r.wall_seconds, 1)
     << " s wall (" << sampling_text(r) << ")\n\n";
  std::vector<std::vector<std::string>> rows = {table_header()};
  const std::size_t show =
      r.options.top > 0 ? std::min<std::size_t>(ok.size(), static_cast<std::size_t>(r.options.top)) : ok.size();
  for (std::size_t i = 0; i < show; ++i) rows.push_back(table_row(r, *ok[i], i + 1));
  std::vector<std::size_t> w(rows[0].size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) w[c] = std::max(w[c], row[c].size());
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      const bool left = c == 1 || c == 2 || c == 7;
      const std::string pad(w[c] - row[c].size(), ' ');
      os << (c ? "  " : "") << (left ? row[c] + pad : pad + row[c]);
    }
    os << "\n";
  }
  if (show < ok.size()) os << "(" << ok.size() - show << " more in shard_search.csv)\n";
  for (const auto& p : r.points) {
    if (p.status == "ok") continue;
    os << "  " << p.status << ": " << p.label();
    if (p.status != "cannot_shard" && r.options.phase == models::Phase::train) os << " remat " << p.remat;
    os << ": " << p.short_reason << "\n";
  }
}

std::string shard_search_csv(const ShardSearchResult& r) {
  std::string out = sweep::csv_line({"rank", "mesh", "sequence_parallel", "remat", "status", "seconds", "mfu", "hfu",
                                     "memory_per_chip_bytes", "bottleneck", "compute_busy_seconds", "ici_busy_seconds",
                                     "ici_exposed_seconds", "hbm_exposed_seconds", "exposed_comm_share", "gap_pct",
                                     "sampled_layers", "reason"});
  std::size_t rank = 0;
  for (const auto& p : r.points) {
    const bool ok = p.status == "ok";
    auto num = [&](double v) { return ok ? format_real(v, 9) : std::string(); };
    out += sweep::csv_line({ok ? std::to_string(++rank) : "", p.mesh, p.sequence_parallel ? "1" : "0", remat_text(r, p),
                            p.status, num(p.fig.seconds), num(p.mfu), num(p.hfu),
                            p.memory_bytes ? std::to_string(p.memory_bytes) : "", ok ? p.bottleneck : "",
                            num(p.fig.compute_s), num(p.fig.ici_s), num(p.fig.ici_exposed_s), num(p.fig.hbm_exposed_s),
                            num(p.exposed_comm), num(p.gap_pct), std::to_string(r.options.sample_layers), p.reason});
  }
  return out;
}

std::string shard_search_html(const ShardSearchResult& r) {
  using report::Svg;
  const auto ok = ranked(r, true);
  std::string body =
      "<p>" + report::xml_escape(header_text(r)) + "; " + report::xml_escape(sampling_text(r)) + ".</p>\n";
  if (!ok.empty()) {
    // Step time per mesh, best first, one bar each, coloured by bottleneck.
    const double bar_h = 14, gap = 4, label_w = 260, top = 46, width = 860;
    const double bottom = top + (bar_h + gap) * static_cast<double>(ok.size());
    double hi = 0;
    for (const auto* p : ok) hi = std::max(hi, p->fig.seconds * 1e3);
    const report::Scale x = report::nice_scale(0, hi, label_w, width - 90, false);
    Svg s(width, bottom + 50);
    s.text(width / 2, 18, "step time per mesh (ms), coloured by bottleneck", "text-anchor=\"middle\" font-size=\"14\"");
    for (double v : x.ticks()) {
      s.line(x(v), top, x(v), bottom, "stroke=\"#ddd\"");
      s.text(x(v), bottom + 14, report::tick_label(v, false), "text-anchor=\"middle\"");
    }
    s.text((label_w + width - 90) / 2, bottom + 32, "ms", "text-anchor=\"middle\" font-size=\"12\"");
    for (std::size_t i = 0; i < ok.size(); ++i) {
      const ShardPoint& p = *ok[i];
      const double y = top + (bar_h + gap) * static_cast<double>(i);
      const double v = p.fig.seconds * 1e3;
      const std::string label = p.label() + (r.options.phase == models::Phase::train ? " " + remat_text(r, p) : "");
      s.text(label_w - 6, y + bar_h - 3, label, "text-anchor=\"end\" font-size=\"11\"");
      s.raw("<g><title>" + report::xml_escape(label + ": " + format_real(v, 6) + " ms, " + p.bottleneck) + "</title>");
      s.rect(label_w, y, x(v) - label_w, bar_h,
             std::string("fill=\"") + bottleneck_color(p.bottleneck) + "\" data-mesh=\"" + report::xml_escape(p.mesh) +
                 "\" data-sp=\"" + (p.sequence_parallel ? "1" : "0") + "\" data-remat=\"" + remat_text(r, p) +
                 "\" data-bottleneck=\"" + p.bottleneck + "\" data-value=\"" + format_real(p.fig.seconds, 9) + "\"");
      s.text(x(v) + 4, y + bar_h - 3, format_fixed(v, 2), "font-size=\"9\"");
      s.raw("</g>\n");
    }
    double lx = width - 90 - 3 * 100;
    for (const char* b : {"compute", "hbm", "ici"}) {
      s.rect(lx, 28, 10, 10, std::string("fill=\"") + bottleneck_color(b) + "\"");
      s.text(lx + 14, 37, b);
      lx += 100;
    }
    s.line(label_w, top, label_w, bottom, "stroke=\"#333\"");
    body += s.str();
  }
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < ok.size(); ++i) rows.push_back(table_row(r, *ok[i], i + 1));
  body += "<h2>Ranking</h2>\n" + report::html_table(table_header(), rows);
  std::vector<std::vector<std::string>> dropped;
  for (const auto& p : r.points)
    if (p.status != "ok") dropped.push_back({p.label(), remat_text(r, p), p.status, p.reason});
  if (!dropped.empty())
    body += "<h2>Not ranked</h2>\n" + report::html_table({"mesh", "remat", "status", "reason"}, dropped);
  return report::html_page("tpusim shard-search", body);
}

}  // namespace tpusim::sim::codesign
