// `tpusim sweep plot DIR --x KEY --y METRIC [--color KEY]`: a sweep's
// results.csv as a scatter plot with one line per colour group (points in
// x order) and the Pareto front marked: the ok points that no other point
// beats on both axes (lower x and lower y by default; --max-x / --max-y
// when larger is better). x values are numbers, quantities with a unit
// ("512 KiB", "1.5 GHz", "819 GB/s", "1 us": plotted in SI units), or
// else categories spaced evenly in the order they first appear; y must be
// numeric. Error rows and rows with an empty y are left out and counted.
// Leaves out: facets, more than one y column.
#pragma once

#include <string>
#include <vector>

namespace tpusim::sim::report {

struct SweepPlotOptions {
  std::string x, y, color;
  bool max_x = false, max_y = false;
  bool log_x = false, log_y = false;
};

struct PlotPoint {
  std::string id, x_text, group;
  double x = 0, y = 0;
  bool pareto = false;
};

struct SweepPlot {
  SweepPlotOptions options;
  std::vector<PlotPoint> points;
  std::vector<std::string> categories;  // x categories when x is not numeric
  std::size_t skipped = 0;              // error rows or empty y
};

// Reads results.csv text (file names the file in errors); throws
// std::invalid_argument naming a missing column (with the columns there
// are) or a non-numeric y.
SweepPlot make_sweep_plot(const std::string& csv_text, const std::string& file, const SweepPlotOptions& o);
// Marks the Pareto front among the points (exposed for tests).
void mark_pareto(std::vector<PlotPoint>& pts, bool max_x, bool max_y);

std::string sweep_plot_svg(const SweepPlot& p);
std::string sweep_plot_html(const SweepPlot& p, const std::string& title);

}  // namespace tpusim::sim::report
