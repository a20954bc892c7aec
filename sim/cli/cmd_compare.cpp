// `tpusim compare A B`: two run directories side by side
// (sim/report/compare.h): text on stdout, compare.csv and report.html in --out.
#include <filesystem>
#include <fstream>

#include "sim/cli/cli.h"
#include "sim/report/compare.h"

namespace tpusim::sim {

namespace po = boost::program_options;

namespace {

int compare_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("compare options");
  opts.add_options()("a", po::value<std::string>()->required(), "first run directory")(
      "b", po::value<std::string>()->required(), "second run directory")(
      "out", po::value<std::string>()->default_value("results/compare"), "writes compare.csv and report.html here")(
      "top", po::value<int>()->default_value(10), "operators shown on stdout")(
      "report", po::bool_switch(), "write report.html (always written; accepted for symmetry with run)");
  po::variables_map vm;
  if (!parse_command_args("compare", "tpusim compare RUN_DIR_A RUN_DIR_B [--out DIR]", args, opts, {{"a", 1}, {"b", 1}},
                          vm, ctx))
    return 0;
  const std::string out = vm["out"].as<std::string>();
  for (const char* k : {"a", "b"})
    if (!std::filesystem::is_directory(vm[k].as<std::string>()))
      throw UsageError("compare: '" + vm[k].as<std::string>() + "' is not a directory (give two tpusim run --out folders)");
  report::Comparison c;
  try {
    c = report::compare_runs(vm["a"].as<std::string>(), vm["b"].as<std::string>());
  } catch (const std::runtime_error& e) {
    throw UsageError(std::string("compare: ") + e.what());
  }
  check_output_dir("compare: --out", out);
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
