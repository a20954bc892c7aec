// A small SVG plotting module for the self-contained HTML reports
// (validation, check, compare, run reports): an SVG document builder,
// linear and log10 scales with tick choice, axes with grid and labels,
// grouped horizontal bar charts, scatter plots, and an HTML page wrapper.
// Every plotted mark carries its value in a data-value attribute so tests
// can read the numbers back and compare them with the CSV they come from.
// Leaves out: JavaScript, interactivity beyond <title> tooltips, fonts.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tpusim::sim::report {

// &, <, >, " escaped for XML/HTML text and attributes.
std::string xml_escape(const std::string& s);
// A coordinate with one decimal ("12.5"), the precision marks are drawn at.
std::string px(double v);

// Maps data values onto pixels [px0, px1] (px1 < px0 for a y axis).
struct Scale {
  double lo = 0, hi = 1;  // data range (for log: both > 0)
  double px0 = 0, px1 = 1;
  bool log = false;
  double operator()(double v) const;
  // Tick values: whole decades for log, 1/2/5 x 10^k steps for linear.
  std::vector<double> ticks() const;
};
// A scale spanning [lo, hi] with some headroom: linear from min(0, lo) to a
// nice value above hi; log from the decade below lo to the decade above hi.
Scale nice_scale(double lo, double hi, double px0, double px1, bool log);

class Svg {
 public:
  Svg(double width, double height);
  double width() const { return w_; }
  double height() const { return h_; }
  // Each element; `attrs` is extra attribute text (e.g. "fill=\"red\"").
  Svg& text(double x, double y, const std::string& s, const std::string& attrs = "");
  Svg& line(double x1, double y1, double x2, double y2, const std::string& attrs = "stroke=\"#333\"");
  Svg& rect(double x, double y, double w, double h, const std::string& attrs);
  Svg& circle(double cx, double cy, double r, const std::string& attrs);
  Svg& polyline(const std::vector<std::pair<double, double>>& pts, const std::string& attrs);
  Svg& raw(const std::string& s);
  // The document, closed.
  std::string str() const;

 private:
  double w_, h_;
  std::string body_;
};

// Frame, grid lines and tick labels of both scales, axis titles.
void draw_axes(Svg& s, const Scale& x, const Scale& y, const std::string& xlabel, const std::string& ylabel);
// A tick label: 1e3-style for log scales, compact decimals otherwise.
std::string tick_label(double v, bool log);

// Grouped horizontal bars: one group per category, one bar per series.
struct BarSeries {
  std::string name;
  std::string color;
  std::vector<double> values;  // one per category (NaN = no bar)
};
std::string bar_chart(const std::string& title, const std::vector<std::string>& categories,
                      const std::vector<BarSeries>& series, const std::string& unit, double width = 760);

// Palette for categorical colours (cycles).
const char* palette(std::size_t i);

// A self-contained page: the title as <h1>, then `body` (HTML).
std::string html_page(const std::string& title, const std::string& body);
// An HTML table from a header and rows (cells escaped); numeric-looking
// cells right-aligned.
std::string html_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

}  // namespace tpusim::sim::report
