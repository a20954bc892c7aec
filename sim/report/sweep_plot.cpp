// Sweep scatter/line plot with the Pareto front; see sweep_plot.h.
#include "sim/report/sweep_plot.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "sim/config/units.h"
#include "sim/report/svg.h"
#include "sim/results/format.h"
#include "sim/sweep/results_table.h"

namespace tpusim::sim::report {

namespace {

bool parse_number(const std::string& t, double* v) {
  if (t.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(t.c_str(), &end);
  if (*end == 0 && std::isfinite(*v)) return true;
  for (UnitKind k : {UnitKind::size, UnitKind::frequency, UnitKind::bandwidth, UnitKind::time, UnitKind::transfer_rate,
                     UnitKind::power}) {
    try {
      *v = parse_quantity(t, k);
      return true;
    } catch (const UnitError&) {
    }
  }
  return false;
}

}  // namespace

void mark_pareto(std::vector<PlotPoint>& pts, bool max_x, bool max_y) {
  // a beats b when it is at least as good on both axes and better on one.
  auto better = [&](double a, double b, bool max) { return max ? a > b : a < b; };
  for (auto& p : pts) {
    p.pareto = true;
    for (const auto& q : pts) {
      const bool no_worse = !better(p.x, q.x, max_x) && !better(p.y, q.y, max_y);
      const bool strictly = better(q.x, p.x, max_x) || better(q.y, p.y, max_y);
      if (no_worse && strictly) {
        p.pareto = false;
        break;
      }
    }
  }
}

SweepPlot make_sweep_plot(const std::string& csv_text, const std::string& file, const SweepPlotOptions& o) {
  const auto rows = sweep::parse_csv(csv_text);
  if (rows.empty()) throw std::invalid_argument(file + ": empty, no header row");
  const auto& h = rows[0];
  std::string cols;
  for (const auto& c : h) cols += (cols.empty() ? "" : ", ") + c;
  auto col = [&](const std::string& name, const char* flag) -> std::size_t {
    const auto it = std::find(h.begin(), h.end(), name);
    if (it == h.end())
      throw std::invalid_argument(file + ": " + flag + " '" + name + "' is not a column; the columns are: " + cols);
    return static_cast<std::size_t>(it - h.begin());
  };
  const std::size_t xc = col(o.x, "--x"), yc = col(o.y, "--y");
  const std::size_t cc = o.color.empty() ? h.size() : col(o.color, "--color");
  const auto st = std::find(h.begin(), h.end(), "status");
  const std::size_t sc = static_cast<std::size_t>(st - h.begin());
  auto idc = std::find(h.begin(), h.end(), "point");
  if (idc == h.end()) idc = std::find(h.begin(), h.end(), "id");
  SweepPlot p;
  p.options = o;
  bool numeric_x = true;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    if (row.size() != h.size() || (sc < h.size() && row[sc] != "ok") || row[yc].empty()) {
      ++p.skipped;
      continue;
    }
    PlotPoint pt;
    pt.id = idc != h.end() ? row[static_cast<std::size_t>(idc - h.begin())] : std::to_string(r);
    pt.x_text = row[xc];
    pt.group = cc < h.size() ? row[cc] : "";
    if (!parse_number(row[yc], &pt.y))
      throw std::invalid_argument(file + ":" + std::to_string(r + 1) + ": --y column '" + o.y + "' is not a number: '" +
                                  row[yc] + "'");
    if (!parse_number(row[xc], &pt.x)) numeric_x = false;
    p.points.push_back(pt);
  }
  if (!numeric_x)
    for (auto& pt : p.points) {
      auto it = std::find(p.categories.begin(), p.categories.end(), pt.x_text);
      if (it == p.categories.end()) it = p.categories.insert(p.categories.end(), pt.x_text);
      pt.x = static_cast<double>(it - p.categories.begin());
    }
  mark_pareto(p.points, o.max_x, o.max_y);
  return p;
}

std::string sweep_plot_svg(const SweepPlot& p) {
  const double W = 800, H = 520, L = 90, R = 160, T = 40, B = 60;
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  for (const auto& pt : p.points) {
    xlo = std::min(xlo, pt.x), xhi = std::max(xhi, pt.x);
    ylo = std::min(ylo, pt.y), yhi = std::max(yhi, pt.y);
  }
  if (p.points.empty()) xlo = ylo = 0, xhi = yhi = 1;
  const bool cat = !p.categories.empty();
  const bool logx = p.options.log_x && !cat && xlo > 0, logy = p.options.log_y && ylo > 0;
  Scale x = cat ? Scale{-0.5, static_cast<double>(p.categories.size()) - 0.5, L, W - R, false}
                : nice_scale(xlo, xhi, L, W - R, logx);
  const Scale y = nice_scale(ylo, yhi, H - B, T, logy);
  Svg s(W, H);
  s.text((L + W - R) / 2, 22, p.options.y + " vs " + p.options.x + (p.options.color.empty() ? "" : " by " + p.options.color),
         "text-anchor=\"middle\" font-size=\"14\"");
  if (cat) {
    Scale frame = x;
    // Category labels instead of numeric ticks.
    draw_axes(s, Scale{0, 0, L, W - R, false}, y, p.options.x, p.options.y);
    for (std::size_t i = 0; i < p.categories.size(); ++i)
      s.text(frame(static_cast<double>(i)), H - B + 16, p.categories[i], "text-anchor=\"middle\"");
  } else {
    draw_axes(s, x, y, p.options.x, p.options.y);
  }
  std::vector<std::string> groups;
  for (const auto& pt : p.points)
    if (std::find(groups.begin(), groups.end(), pt.group) == groups.end()) groups.push_back(pt.group);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    std::vector<const PlotPoint*> in;
    for (const auto& pt : p.points)
      if (pt.group == groups[g]) in.push_back(&pt);
    std::stable_sort(in.begin(), in.end(), [](const PlotPoint* a, const PlotPoint* b) { return a->x < b->x; });
    std::vector<std::pair<double, double>> line;
    for (const auto* pt : in) line.push_back({x(pt->x), y(pt->y)});
    if (line.size() > 1) s.polyline(line, std::string("stroke=\"") + palette(g) + "\" stroke-opacity=\"0.6\"");
    for (const auto* pt : in) {
      s.raw("<g><title>" + xml_escape(pt->id + ": " + p.options.x + " " + pt->x_text + ", " + p.options.y + " " +
                                      format_real(pt->y, 6) + (pt->pareto ? " (Pareto front)" : "")) +
            "</title>");
      s.circle(x(pt->x), y(pt->y), 4,
               std::string("fill=\"") + palette(g) + "\" data-id=\"" + xml_escape(pt->id) + "\" data-x=\"" +
                   xml_escape(pt->x_text) + "\" data-y=\"" + format_real(pt->y, 9) + "\" data-pareto=\"" +
                   (pt->pareto ? "1" : "0") + "\"");
      if (pt->pareto) s.circle(x(pt->x), y(pt->y), 8, "fill=\"none\" stroke=\"#d62728\" stroke-width=\"1.5\"");
      s.raw("</g>\n");
    }
    if (!p.options.color.empty()) {
      s.circle(W - R + 20, T + 10 + 16 * static_cast<double>(g), 4, std::string("fill=\"") + palette(g) + "\"");
      s.text(W - R + 30, T + 14 + 16 * static_cast<double>(g), groups[g]);
    }
  }
  // The front as a dashed step line in x order.
  std::vector<const PlotPoint*> front;
  for (const auto& pt : p.points)
    if (pt.pareto) front.push_back(&pt);
  std::stable_sort(front.begin(), front.end(), [](const PlotPoint* a, const PlotPoint* b) { return a->x < b->x; });
  std::vector<std::pair<double, double>> fl;
  for (const auto* pt : front) fl.push_back({x(pt->x), y(pt->y)});
  if (fl.size() > 1) s.polyline(fl, "stroke=\"#d62728\" stroke-dasharray=\"5,4\"");
  const double ly = T + 20 + 16 * static_cast<double>(p.options.color.empty() ? 0 : groups.size());
  s.circle(W - R + 20, ly, 8, "fill=\"none\" stroke=\"#d62728\" stroke-width=\"1.5\"");
  s.text(W - R + 32, ly + 4, "Pareto front");
  return s.str();
}

std::string sweep_plot_html(const SweepPlot& p, const std::string& title) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& pt : p.points)
    rows.push_back({pt.id, pt.x_text, format_real(pt.y, 9), pt.group, pt.pareto ? "yes" : ""});
  std::string body = "<p>" + std::to_string(p.points.size()) + " points plotted, " + std::to_string(p.skipped) +
                     " rows left out (error status or empty " + xml_escape(p.options.y) + ").</p>\n" + sweep_plot_svg(p) +
                     html_table({"id", p.options.x, p.options.y, p.options.color.empty() ? "group" : p.options.color,
                                 "Pareto front"},
                                rows);
  return html_page(title, body);
}

}  // namespace tpusim::sim::report
