// `tpusim compare A B`: two run directories side by side
// (sim/report/compare.h): text on stdout, compare.csv and report.html in --out.
// Either side may instead be run on the spot: --run-a / --run-b take the
// arguments of a `tpusim run` (split at white space), which runs as a child
// process (one simulation per process) into OUT/a or OUT/b.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/cli/cli.h"
#include "sim/report/compare.h"
#include "sim/sweep/child_pool.h"

namespace tpusim::sim {

namespace po = boost::program_options;

namespace {

int compare_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("compare options");
  opts.add_options()("a", po::value<std::string>(), "first run directory")(
      "b", po::value<std::string>(), "second run directory")(
      "run-a", po::value<std::string>(), "instead of A: arguments of a tpusim run to simulate now (into OUT/a)")(
      "run-b", po::value<std::string>(), "instead of B: arguments of a tpusim run to simulate now (into OUT/b)")(
      "out", po::value<std::string>()->default_value("results/compare"), "writes compare.csv and report.html here")(
      "top", po::value<int>()->default_value(10), "operators shown on stdout")(
      "report", po::bool_switch(), "write report.html (always written; accepted for symmetry with run)");
  po::variables_map vm;
  if (!parse_command_args("compare",
                          "tpusim compare RUN_DIR_A RUN_DIR_B [--out DIR]\n"
                          "       tpusim compare --run-a 'RUN ARGS' --run-b 'RUN ARGS' [--out DIR]",
                          args, opts, {{"a", 1}, {"b", 1}}, vm, ctx))
    return 0;
  const std::string out = vm["out"].as<std::string>();
  check_output_dir("compare: --out", out);
  // Each side: a folder, or a run to simulate now.
  std::string dirs[2];
  std::vector<std::size_t> to_run;
  std::vector<std::vector<std::string>> run_args(2);
  for (std::size_t i = 0; i < 2; ++i) {
    const std::string side = i ? "b" : "a", run = "run-" + side;
    if (vm.count(side) && vm.count(run))
      throw UsageError("compare: give " + side + " as a folder or as --" + run + ", not both");
    if (vm.count(run)) {
      std::stringstream ss(vm[run].as<std::string>());
      for (std::string w; ss >> w;) run_args[i].push_back(w);
      if (run_args[i].empty()) throw UsageError("compare: --" + run + " names no run arguments (e.g. '--arch v5e --gemm 1024,1024,1024')");
      for (const auto& w : run_args[i])
        if (w == "--out")
          throw UsageError("compare: --" + run + " must not set --out: the run goes to " + out + "/" + side);
      dirs[i] = out + "/" + side;
      to_run.push_back(i);
    } else if (vm.count(side)) {
      dirs[i] = vm[side].as<std::string>();
      if (!std::filesystem::is_directory(dirs[i]))
        throw UsageError("compare: '" + dirs[i] + "' is not a directory (give two tpusim run --out folders)");
    } else {
      throw UsageError("compare: give run " + side + " as a folder (positional) or as --" + run + " 'RUN ARGS'");
    }
  }
  if (!to_run.empty()) {
    std::string failure;
    sweep::run_children(
        to_run.size(), {},
        [&](std::size_t k) {
          const std::size_t i = to_run[k];
          sweep::ChildSpec s;
          s.dir = dirs[i];
          for (const auto& d : ctx.global.config_path) s.args.insert(s.args.end(), {"--config-path", d});
          s.args.push_back("run");
          s.args.insert(s.args.end(), run_args[i].begin(), run_args[i].end());
          s.args.insert(s.args.end(), {"--out", dirs[i], "--quiet"});
          return s;
        },
        [&](std::size_t k, const sweep::ChildExit& e) {
          const std::string f = sweep::child_failure(e, dirs[to_run[k]]);
          if (!f.empty()) failure += "compare: run " + std::string(to_run[k] ? "b" : "a") + " failed: " + f + "\n";
        });
    if (!failure.empty()) throw UsageError(failure.substr(0, failure.size() - 1));
  }
  report::Comparison c;
  try {
    c = report::compare_runs(dirs[0], dirs[1]);
  } catch (const std::runtime_error& e) {
    throw UsageError(std::string("compare: ") + e.what());
  }
  report::print_comparison(c, ctx.out, vm["top"].as<int>());
  const std::pair<const char*, std::string> files[] = {{"compare.csv", report::comparison_csv(c)},
                                                       {"report.html", report::comparison_html(c)}};
  for (const auto& [name, text] : files) {
    const std::string path = out + "/" + name;
    std::ofstream f(path, std::ios::binary);
    f << text;
    if (!f) throw std::runtime_error("cannot write " + path);
  }
  ctx.out << "results: " << out << "/compare.csv, " << out << "/report.html\n";
  return 0;
}

}  // namespace

void register_compare_command() {
  register_command("compare", "Two run directories side by side: totals, kinds, operators", compare_cmd);
}

}  // namespace tpusim::sim
