// Side-by-side comparison of two run directories; see compare.h.
#include "sim/report/compare.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>
#include <stdexcept>

#include "sim/report/svg.h"
#include "sim/results/format.h"
#include "sim/sweep/child_pool.h"
#include "sim/sweep/results_table.h"

namespace tpusim::sim::report {

namespace {

using Table = std::vector<std::map<std::string, std::string>>;

Table read_table(const std::string& path) {
  const std::string text = sweep::slurp_file(path);
  const auto rows = sweep::parse_csv(text);
  if (rows.size() < 2) throw std::runtime_error(path + ": missing or without data rows (is it a tpusim run directory?)");
  Table t;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].size() != rows[0].size())
      throw std::runtime_error(path + ":" + std::to_string(r + 1) + ": " + std::to_string(rows[r].size()) +
                               " fields, the header has " + std::to_string(rows[0].size()));
    std::map<std::string, std::string> m;
    for (std::size_t i = 0; i < rows[0].size(); ++i) m[rows[0][i]] = rows[r][i];
    t.push_back(std::move(m));
  }
  return t;
}

double num(const std::map<std::string, std::string>& row, const std::string& key, const std::string& where) {
  const auto it = row.find(key);
  if (it == row.end() || it->second.empty()) return 0;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (*end != 0) throw std::runtime_error(where + ": column " + key + ": not a number: '" + it->second + "'");
  return v;
}

struct Run {
  std::map<std::string, std::string> summary;
  Table ops;
  double clock = 0;
};

Run load(const std::string& dir) {
  Run r;
  r.summary = read_table(dir + "/summary.csv").front();
  r.ops = read_table(dir + "/ops.csv");
  r.clock = num(r.summary, "clock_hz", dir + "/summary.csv");
  if (!(r.clock > 0)) throw std::runtime_error(dir + "/summary.csv: clock_hz must be > 0");
  return r;
}

std::string ratio_text(const CompareRow& r) { return r.a != 0 && r.in_a && r.in_b ? format_fixed(r.ratio(), 3) + "x" : "-"; }

}  // namespace

Comparison compare_runs(const std::string& dir_a, const std::string& dir_b) {
  const Run a = load(dir_a), b = load(dir_b);
  Comparison c;
  c.dir_a = dir_a;
  c.dir_b = dir_b;
  c.workload_a = a.summary.at("workload");
  c.workload_b = b.summary.at("workload");
  c.arch_a = a.summary.at("arch");
  c.arch_b = b.summary.at("arch");
  std::vector<std::string> totals = {"seconds",  "total_flops", "achieved_tflops", "mxu_utilization",
                                     "hbm_bytes", "hbm_bandwidth_utilization", "vmem_peak_bytes"};
  for (const auto& [k, v] : a.summary)
    if (k.find("energy") != std::string::npos || k.find("joules") != std::string::npos) totals.push_back(k);
  for (const auto& k : totals)
    c.rows.push_back({"total", k, num(a.summary, k, dir_a + "/summary.csv"), num(b.summary, k, dir_b + "/summary.csv"),
                      a.summary.count(k) > 0, b.summary.count(k) > 0});
  auto ici = [](const Table& ops) {
    double s = 0;
    for (const auto& o : ops) s += num(o, "ici_bytes", "ops.csv");
    return s;
  };
  c.rows.push_back({"total", "ici_bytes", ici(a.ops), ici(b.ops), true, true});
  // Per kind and per op: seconds of each operator's own interval.
  std::vector<std::string> kinds, names;
  std::map<std::string, std::pair<double, double>> kind_t, op_t;
  std::map<std::string, std::pair<bool, bool>> op_in;
  auto add = [&](const Table& ops, double clock, bool first) {
    for (const auto& o : ops) {
      const double s = num(o, "cycles", "ops.csv") / clock;
      const std::string& k = o.at("kind");
      const std::string& n = o.at("name");
      if (!kind_t.count(k)) kinds.push_back(k);
      if (!op_t.count(n)) names.push_back(n);
      (first ? kind_t[k].first : kind_t[k].second) += s;
      (first ? op_t[n].first : op_t[n].second) += s;
      (first ? op_in[n].first : op_in[n].second) = true;
    }
  };
  add(a.ops, a.clock, true);
  add(b.ops, b.clock, false);
  for (const auto& k : kinds) c.rows.push_back({"kind", k, kind_t[k].first, kind_t[k].second, true, true});
  for (const auto& n : names) c.rows.push_back({"op", n, op_t[n].first, op_t[n].second, op_in[n].first, op_in[n].second});
  return c;
}

void print_comparison(const Comparison& c, std::ostream& os, int top) {
  os << "A: " << c.dir_a << " (" << c.arch_a << ", " << c.workload_a << ")\nB: " << c.dir_b << " (" << c.arch_b << ", "
     << c.workload_b << ")\n";
  auto line = [&](const CompareRow& r, std::size_t w) {
    os << "  " << std::left << std::setw(static_cast<int>(w)) << r.name << std::right << std::setw(16)
       << (r.in_a ? format_real(r.a, 6) : "-") << std::setw(16) << (r.in_b ? format_real(r.b, 6) : "-") << std::setw(16)
       << format_real(r.delta(), 6) << std::setw(10) << ratio_text(r) << "\n";
  };
  auto head = [&](const std::string& title, std::size_t w) {
    os << "\n" << title << "\n  " << std::left << std::setw(static_cast<int>(w)) << "" << std::right << std::setw(16) << "A"
       << std::setw(16) << "B" << std::setw(16) << "B - A" << std::setw(10) << "B / A" << "\n";
  };
  head("Totals", 28);
  for (const auto& r : c.rows)
    if (r.section == "total") line(r, 28);
  head("Time by operator kind (s)", 28);
  for (const auto& r : c.rows)
    if (r.section == "kind") line(r, 28);
  std::vector<CompareRow> ops;
  for (const auto& r : c.rows)
    if (r.section == "op") ops.push_back(r);
  std::stable_sort(ops.begin(), ops.end(),
                   [](const CompareRow& x, const CompareRow& y) { return std::fabs(x.delta()) > std::fabs(y.delta()); });
  std::size_t w = 28;
  for (std::size_t i = 0; i < ops.size() && static_cast<int>(i) < top; ++i) w = std::max(w, ops[i].name.size());
  head("Operators with the largest change (s; all in compare.csv)", w);
  for (std::size_t i = 0; i < ops.size() && static_cast<int>(i) < top; ++i) line(ops[i], w);
}

std::string comparison_csv(const Comparison& c) {
  std::string out = sweep::csv_line({"section", "name", "a", "b", "delta", "ratio"});
  for (const auto& r : c.rows)
    out += sweep::csv_line({r.section, r.name, r.in_a ? format_real(r.a, 15) : "", r.in_b ? format_real(r.b, 15) : "",
                            format_real(r.delta(), 15), r.a != 0 && r.in_a && r.in_b ? format_real(r.ratio(), 15) : ""});
  return out;
}

std::string comparison_html(const Comparison& c) {
  std::ostringstream b;
  b << "<p>A: " << xml_escape(c.dir_a + " (" + c.arch_a + ", " + c.workload_a + ")") << "<br>B: "
    << xml_escape(c.dir_b + " (" + c.arch_b + ", " + c.workload_b + ")") << "</p>\n";
  std::vector<std::string> cats;
  BarSeries sa{"A", "#9c9c9c", {}}, sb{"B", "#4e79a7", {}};
  for (const auto& r : c.rows)
    if (r.section == "kind") {
      cats.push_back(r.name);
      sa.values.push_back(r.a * 1e3);
      sb.values.push_back(r.b * 1e3);
    }
  b << bar_chart("time by operator kind", cats, {sa, sb}, "ms (sum of operator intervals)");
  for (const char* sec : {"total", "kind", "op"}) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : c.rows)
      if (r.section == sec)
        rows.push_back({r.name, r.in_a ? format_real(r.a, 6) : "-", r.in_b ? format_real(r.b, 6) : "-",
                        format_real(r.delta(), 6), ratio_text(r)});
    b << "<h2>" << (std::string(sec) == "total" ? "Totals" : std::string(sec) == "kind" ? "Seconds by operator kind" : "Seconds by operator")
      << "</h2>\n"
      << html_table({"", "A", "B", "B - A", "B / A"}, rows);
  }
  return html_page("tpusim compare", b.str());
}

}  // namespace tpusim::sim::report
