// `tpusim sweep plot DIR --x KEY --y METRIC [--color KEY]`: DIR/results.csv
// as an HTML page with the plot (sim/report/sweep_plot.h).
#include <filesystem>
#include <fstream>

#include "sim/cli/cli.h"
#include "sim/report/sweep_plot.h"
#include "sim/sweep/child_pool.h"

namespace tpusim::sim {

namespace po = boost::program_options;

namespace {

int sweep_plot_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("sweep plot options");
  report::SweepPlotOptions o;
  opts.add_options()("dir", po::value<std::string>()->required(), "sweep output directory (holds results.csv)")(
      "x", po::value<std::string>(&o.x)->required(), "column on the x axis (an axis key or metric)")(
      "y", po::value<std::string>(&o.y)->required(), "numeric column on the y axis")(
      "color", po::value<std::string>(&o.color), "column whose values each get a colour and a line")(
      "max-x", po::bool_switch(&o.max_x), "Pareto front: larger x is better")(
      "max-y", po::bool_switch(&o.max_y), "Pareto front: larger y is better")(
      "log-x", po::bool_switch(&o.log_x), "logarithmic x axis")("log-y", po::bool_switch(&o.log_y), "logarithmic y axis")(
      "out", po::value<std::string>(), "HTML file to write (default DIR/plot.html)");
  po::variables_map vm;
  if (!parse_command_args("sweep plot", "tpusim sweep plot DIR --x KEY --y METRIC [--color KEY]", args, opts,
                          {{"dir", 1}}, vm, ctx))
    return 0;
  const std::string dir = vm["dir"].as<std::string>();
  const std::string csv = dir + "/results.csv";
  check_input_file("sweep plot: results", csv);
  report::SweepPlot p;
  try {
    p = report::make_sweep_plot(sweep::slurp_file(csv), csv, o);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("sweep plot: ") + e.what());
  }
  const std::string out = vm.count("out") ? vm["out"].as<std::string>() : dir + "/plot.html";
  std::ofstream f(out, std::ios::binary);
  f << report::sweep_plot_html(p, "tpusim sweep: " + dir);
  if (!f) throw UsageError("sweep plot: cannot write '" + out + "'");
  std::size_t front = 0;
  for (const auto& pt : p.points) front += pt.pareto ? 1 : 0;
  ctx.out << p.points.size() << " points (" << front << " on the Pareto front), " << p.skipped
          << " rows left out; plot: " << out << "\n";
  return 0;
}

}  // namespace

void register_sweep_plot_command() {
  register_command("sweep plot", "Plot a sweep's results.csv (--x, --y, --color) with the Pareto front", sweep_plot_cmd);
}

}  // namespace tpusim::sim
