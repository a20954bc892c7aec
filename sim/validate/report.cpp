// Tables, CSV, SVG plot and HTML page of a validation run; see report.h.
#include "sim/validate/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "sim/report/svg.h"
#include "sim/results/format.h"
#include "sim/sweep/results_table.h"

namespace tpusim::sim::validate {

namespace fs = std::filesystem;

namespace {

// The ±band drawn on the plot: the suite's limit for any single case.
constexpr double kBand = 0.25;

bool has_value(const CaseResult& r) { return r.outcome != Outcome::Error; }

std::string num(double v) { return format_real(v, 4); }

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%+.1f", v);
  return b;
}

std::string tol(const Case& c) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", c.tolerance * 100);
  return std::string("±") + b + "%";
}

using report::xml_escape;

struct Counts {
  int pass = 0, fail = 0, xfail = 0, xpass = 0, error = 0;
  double mean_abs = 0;  // over cases with a value
  double max_abs = 0;
  int valued = 0;
  int fitted = 0;                // cases a config key was solved from
  double unfitted_mean_abs = 0;  // over the other cases with a value
  int unfitted_valued = 0;
};

Counts count(const std::vector<CaseResult>& results) {
  Counts n;
  for (const auto& r : results) {
    switch (r.outcome) {
      case Outcome::Pass: ++n.pass; break;
      case Outcome::Fail: ++n.fail; break;
      case Outcome::ExpectedMiss: ++n.xfail; break;
      case Outcome::UnexpectedPass: ++n.xpass; break;
      case Outcome::Error: ++n.error; break;
    }
    const bool fitted = !r.c->fitted.empty();
    n.fitted += fitted;
    if (has_value(r)) {
      n.mean_abs += std::fabs(r.error_pct);
      n.max_abs = std::max(n.max_abs, std::fabs(r.error_pct));
      ++n.valued;
      if (!fitted) {
        n.unfitted_mean_abs += std::fabs(r.error_pct);
        ++n.unfitted_valued;
      }
    }
  }
  if (n.valued) n.mean_abs /= n.valued;
  if (n.unfitted_valued) n.unfitted_mean_abs /= n.unfitted_valued;
  return n;
}

// `with_fitted`: the mean without the fitted cases at the end (the plot
// puts it in its legend instead: a title line has no room for it).
std::string summary_line(std::size_t cases, const Counts& n, bool with_fitted) {
  std::ostringstream os;
  os << cases << " cases: " << n.pass << " pass, " << n.fail << " fail, " << n.xfail << " expected miss, " << n.xpass
     << " unexpected pass, " << n.error << " error";
  if (n.valued)
    os << "; mean |error| " << format_fixed(n.mean_abs, 1) << "%, max " << format_fixed(n.max_abs, 1) << "%";
  // Fitted cases pass by construction: the mean without them is the
  // suite's evidence.
  if (with_fitted && n.fitted && n.unfitted_valued)
    os << "; " << n.fitted << " fitted, the other " << n.unfitted_valued << ": mean |error| "
       << format_fixed(n.unfitted_mean_abs, 1) << "%";
  return os.str();
}

std::string summary_line(const std::vector<CaseResult>& results) {
  return summary_line(results.size(), count(results), true);
}

// The outcome as the tables show it: ", fitted" after a fitted case's.
std::string outcome_cell(const CaseResult& r) {
  return std::string(outcome_name(r.outcome)) + (r.c->fitted.empty() ? "" : ", fitted");
}

std::string note(const CaseResult& r) {
  switch (r.outcome) {
    case Outcome::UnexpectedPass: return "now within tolerance: remove its expect: miss";
    case Outcome::Error: return r.message;
    case Outcome::Pass:
    case Outcome::Fail:
    case Outcome::ExpectedMiss: return "";
  }
  return "";
}

}  // namespace

void write_table(std::ostream& os, const std::vector<CaseResult>& results) {
  std::size_t w = 4;
  for (const auto& r : results) w = std::max(w, r.c->id.size());
  os << std::left << std::setw(static_cast<int>(w)) << "case" << std::right << std::setw(11) << "measured"
     << std::setw(11) << "simulated"
     << "  " << std::left << std::setw(9) << "unit" << std::right << std::setw(8) << "error%" << std::setw(8) << "tol"
     << "  outcome\n";
  for (const auto& r : results) {
    const Case& c = *r.c;
    os << std::left << std::setw(static_cast<int>(w)) << c.id << std::right << std::setw(11) << num(c.measured)
       << std::setw(11) << (has_value(r) ? num(r.simulated) : "-") << "  " << std::left << std::setw(9) << c.metric.unit
       << std::right << std::setw(8) << (has_value(r) ? pct(r.error_pct) : "-") << std::setw(9) << tol(c) << "  "
       << outcome_cell(r);
    const std::string n = note(r);
    if (!n.empty()) os << " (" << n << ")";
    os << "\n";
  }
  os << summary_line(results) << "\n";
}

void write_markdown(std::ostream& os, const std::vector<CaseResult>& results) {
  os << "| case | metric | measured | simulated | error | tolerance | outcome |\n"
        "|---|---|---:|---:|---:|---:|---|\n";
  for (const auto& r : results) {
    const Case& c = *r.c;
    os << "| `" << c.id << "` | " << metric_kind_name(c.metric.kind) << " (" << c.metric.unit << ") | "
       << num(c.measured) << " | " << (has_value(r) ? num(r.simulated) : "-") << " | "
       << (has_value(r) ? pct(r.error_pct) + "%" : "-") << " | " << tol(c) << " | " << outcome_cell(r);
    const std::string n = note(r);
    if (!n.empty()) os << ": " << n;
    os << " |\n";
  }
  os << "\n" << summary_line(results) << "\n";
}

std::string csv_text(const std::vector<CaseResult>& results) {
  std::string out =
      sweep::csv_line({"id", "family", "title", "arch", "metric", "unit", "measured", "simulated", "error_pct",
                       "tolerance_pct", "within_tolerance", "expect", "outcome", "message", "fitted", "source"});
  for (const auto& r : results) {
    const Case& c = *r.c;
    const bool v = has_value(r);
    out += sweep::csv_line({c.id, c.family, c.title, c.arch, metric_kind_name(c.metric.kind), c.metric.unit,
                            format_real(c.measured), v ? format_real(r.simulated) : "",
                            v ? format_fixed(r.error_pct, 2) : "", format_real(c.tolerance * 100),
                            v ? (within_tolerance(c, r.simulated) ? "true" : "false") : "", c.expect_miss ? "miss" : "",
                            outcome_name(r.outcome), note(r), c.fitted, c.source});
  }
  return out;
}

std::string svg_plot(const std::vector<CaseResult>& results) {
  // Axes span every measured and simulated value (and tolerance ends), in
  // whole decades.
  double lo = INFINITY, hi = 0;
  for (const auto& r : results) {
    if (!has_value(r) || !(r.simulated > 0)) continue;
    const Case& c = *r.c;
    for (double v : {c.measured, r.simulated, c.measured * (1 - c.tolerance), c.measured * (1 + kBand)}) {
      if (v > 0) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
  }
  if (!(hi > 0)) lo = 1, hi = 10;
  const double d0 = std::floor(std::log10(lo)), d1 = std::max(std::ceil(std::log10(hi)), d0 + 1);
  const double W = 760, H = 650, L = 70, R = 20, T = 50, B = 60;
  const double pw = W - L - R, ph = H - T - B;
  auto X = [&](double v) { return L + (std::log10(v) - d0) / (d1 - d0) * pw; };
  auto Y = [&](double v) { return T + ph - (std::log10(v) - d0) / (d1 - d0) * ph; };
  const auto f = report::px;
  report::Svg doc(W, H);
  std::ostringstream s;
  s << "<text x=\"" << W / 2
    << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">tpusim validation: simulated vs "
       "measured (each case in its own unit)</text>\n";
  // ±25% band around y = x.
  const double a = std::pow(10, d0), b = std::pow(10, d1);
  s << "<polygon fill=\"#dfe9f5\" points=\"" << f(X(a)) << "," << f(Y(std::max(a * (1 - kBand), a))) << " " << f(X(b))
    << "," << f(Y(b * (1 - kBand))) << " " << f(X(b / (1 + kBand))) << "," << f(Y(b)) << " " << f(X(a)) << ","
    << f(Y(a * (1 + kBand))) << "\"/>\n";
  // Grid and decade labels.
  for (double d = d0; d <= d1; d += 1) {
    const double v = std::pow(10, d);
    s << "<line x1=\"" << f(X(v)) << "\" y1=\"" << T << "\" x2=\"" << f(X(v)) << "\" y2=\"" << T + ph
      << "\" stroke=\"#ccc\"/>\n<line x1=\"" << L << "\" y1=\"" << f(Y(v)) << "\" x2=\"" << L + pw << "\" y2=\""
      << f(Y(v)) << "\" stroke=\"#ccc\"/>\n"
      << "<text x=\"" << f(X(v)) << "\" y=\"" << T + ph + 16 << "\" text-anchor=\"middle\">1e" << d << "</text>\n"
      << "<text x=\"" << L - 6 << "\" y=\"" << f(Y(v) + 4) << "\" text-anchor=\"end\">1e" << d << "</text>\n";
  }
  s << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#333\"/>\n"
    << "<line x1=\"" << f(X(a)) << "\" y1=\"" << f(Y(a)) << "\" x2=\"" << f(X(b)) << "\" y2=\"" << f(Y(b))
    << "\" stroke=\"#333\" stroke-dasharray=\"5,4\"/>\n"
    << "<text x=\"" << L + pw / 2 << "\" y=\"" << H - 18
    << "\" text-anchor=\"middle\" font-size=\"13\">measured on "
       "a real TPU</text>\n"
    << "<text x=\"16\" y=\"" << T + ph / 2 << "\" text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(-90 16 "
    << T + ph / 2 << ")\">simulated by tpusim</text>\n";
  const auto color = [](Outcome o) {
    switch (o) {
      case Outcome::Pass: return "#1a9850";
      case Outcome::Fail: return "#d73027";
      case Outcome::ExpectedMiss: return "#f46d43";
      case Outcome::UnexpectedPass: return "#7b3294";
      case Outcome::Error: return "#999";
    }
    return "#999";
  };
  // A fitted case's point is a ring: a config key was solved from it.
  const auto point = [&](double x, double y, const char* fill, bool fitted) {
    s << "<circle cx=\"" << f(x) << "\" cy=\"" << f(y) << "\" r=\"4\" ";
    if (fitted)
      s << "fill=\"#fff\" stroke=\"" << fill << "\" stroke-width=\"2\"/>";
    else
      s << "fill=\"" << fill << "\"/>";
  };
  // Legend.
  const std::pair<Outcome, const char*> legend[] = {{Outcome::Pass, "pass"},
                                                    {Outcome::Fail, "fail"},
                                                    {Outcome::ExpectedMiss, "expected miss"},
                                                    {Outcome::UnexpectedPass, "unexpected pass"}};
  const Counts n = count(results);
  const bool any_fitted = n.fitted > 0;
  // In the lower right corner, away from the diagonal where points lie.
  const double lx = L + pw - 345;
  const double legend_h = any_fitted ? 125 : 95;
  double gy = T + ph - legend_h + 15;
  for (const auto& [o, name] : legend) {
    point(lx + 4, gy - 4, color(o), false);
    s << "<text x=\"" << lx + 14 << "\" y=\"" << gy << "\">" << name << "</text>\n";
    gy += 15;
  }
  if (any_fitted) {
    point(lx + 4, gy - 4, color(Outcome::Pass), true);
    s << "<text x=\"" << lx + 14 << "\" y=\"" << gy << "\">fitted (a config key solved from it): " << n.fitted
      << "</text>\n";
    gy += 15;
    if (n.unfitted_valued)
      s << "<text x=\"" << lx + 14 << "\" y=\"" << gy << "\">mean |error| of the other " << n.unfitted_valued << ": "
        << format_fixed(n.unfitted_mean_abs, 1) << "%</text>\n";
    gy += 15;
  }
  s << "<text x=\"" << lx << "\" y=\"" << gy
    << "\">dashed: y = x; band: ±25%; grey bar: the case's "
       "tolerance</text>\n";
  s << "<text x=\"" << W / 2 << "\" y=\"40\" text-anchor=\"middle\">"
    << xml_escape(summary_line(results.size(), n, false)) << "</text>\n";
  // Labels are placed right of their point (left of it near the right
  // edge), moved up or down in steps, on either side, until they overlap no
  // label placed before, the legend or the title lines and stay inside the
  // plot, with a leader line when moved. A label that finds no room is left
  // out (its point keeps its tooltip; a note under the plot counts them),
  // rather than drawn over others where it could not be read.
  struct Box {
    double x0, y0, x1, y1;
  };
  std::vector<Box> placed = {{lx - 5, T + ph - legend_h, L + pw, T + ph},  // the legend
                             {0, 0, W, T - 2}};                            // the title and the summary line
  auto overlaps = [&](const Box& b) {
    if (b.y0 < T || b.y1 > T + ph || b.x0 < L || b.x1 > L + pw) return true;
    for (const auto& p : placed)
      if (b.x0 < p.x1 && p.x0 < b.x1 && b.y0 < p.y1 && p.y0 < b.y1) return true;
    return false;
  };
  int omitted = 0;
  for (const auto& r : results) {
    if (!has_value(r) || !(r.simulated > 0)) continue;
    const Case& c = *r.c;
    const double x = X(c.measured);
    const double y = std::min(std::max(Y(r.simulated), T), T + ph);
    const double tw = 5.0 * static_cast<double>(c.id.size());  // ~9 px font
    const bool prefer_left = x + 6 + tw > L + pw;
    // Candidate offsets 0, -10, +10, -20, +20, ... px from beside the
    // point, the preferred side first at each.
    double ly = y - 4;
    bool left = prefer_left;
    Box b{};
    bool free = false;
    for (int k = 0; k < 61 && !free; ++k) {
      const int step = (k + 1) / 2;  // 0, 1, 1, 2, 2, ...
      ly = y - 4 + 10.0 * step * (k % 2 ? 1 : -1);
      for (bool side : {prefer_left, !prefer_left}) {
        left = side;
        b = Box{left ? x - 6 - tw : x + 6, ly - 9, left ? x - 6 : x + 6 + tw, ly + 2};
        free = !overlaps(b);
        if (free) break;
      }
    }
    if (free) placed.push_back(b);
    omitted += free ? 0 : 1;
    const bool moved = ly != y - 4 || left != prefer_left;
    s << "<g><title>"
      << xml_escape(c.id + ": measured " + num(c.measured) + " " + c.metric.unit + ", simulated " + num(r.simulated) +
                    " (" + pct(r.error_pct) + "%, " + outcome_cell(r) + ")")
      << "</title>\n"
      << "<line x1=\"" << f(x) << "\" y1=\"" << f(Y(c.measured * (1 + c.tolerance))) << "\" x2=\"" << f(x) << "\" y2=\""
      << f(Y(c.measured * (1 - c.tolerance))) << "\" stroke=\"#555\" stroke-width=\"3\" "
      << "stroke-opacity=\"0.35\"/>\n";
    point(x, y, color(r.outcome), !c.fitted.empty());
    s << "\n";
    if (free && moved)  // a leader line from the point to its displaced label
      s << "<line x1=\"" << f(x) << "\" y1=\"" << f(y) << "\" x2=\"" << f(left ? x - 6 : x + 6) << "\" y2=\""
        << f(ly - 3) << "\" stroke=\"#999\" stroke-width=\"0.6\"/>\n";
    if (free)
      s << "<text x=\"" << f(left ? x - 6 : x + 6) << "\" y=\"" << f(ly) << "\" font-size=\"9\""
        << (left ? " text-anchor=\"end\"" : "") << ">" << xml_escape(c.id) << "</text>";
    s << "</g>\n";
  }
  if (omitted > 0)
    s << "<text x=\"" << L << "\" y=\"" << H - 4 << "\" font-size=\"10\" class=\"omitted\">" << omitted
      << (omitted == 1 ? " label" : " labels")
      << " left out where points crowd: hover a point for its case, or see the table</text>\n";
  doc.raw(s.str());
  return doc.str();
}

std::string html_page(const std::vector<CaseResult>& results) {
  std::ostringstream s;
  s << "<p>" << xml_escape(summary_line(results)) << "</p>\n" << svg_plot(results);
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : results) {
    const Case& c = *r.c;
    const bool v = has_value(r);
    rows.push_back({c.id, c.title, num(c.measured), v ? num(r.simulated) : "-", c.metric.unit,
                    v ? pct(r.error_pct) + "%" : "-", tol(c), outcome_cell(r) + (note(r).empty() ? "" : ": " + note(r)),
                    c.source});
  }
  s << report::html_table({"case", "title", "measured", "simulated", "unit", "error", "tolerance", "outcome", "source"},
                          rows);
  return report::html_page("tpusim validation", s.str());
}

void write_reports(const std::string& dir, const std::vector<CaseResult>& results) {
  fs::create_directories(dir);
  const std::pair<const char*, std::string> files[] = {{"validation.csv", csv_text(results)},
                                                       {"validation.svg", svg_plot(results)},
                                                       {"validation.html", html_page(results)}};
  for (const auto& [name, text] : files) {
    const std::string path = (fs::path(dir) / name).string();
    std::ofstream f(path, std::ios::binary);
    f << text;
    if (!f) throw std::runtime_error("cannot write " + path);
  }
}

}  // namespace tpusim::sim::validate
