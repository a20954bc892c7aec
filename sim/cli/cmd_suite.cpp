// `tpusim suite run FILE --out DIR`: runs a benchmark suite's scenarios
// (sim/serve/suite.h), each one `tpusim serve` child process sharing one
// step-cost cache, and writes their table (DIR/suite.csv, and the
// terminal); `--reference CSV` diffs it against a committed table.
// `tpusim suite diff A.csv B.csv`: the cells that differ; exit 1 when any.
#include <filesystem>
#include <iostream>
#include <regex>

#include "sim/cli/cli.h"
#include "sim/serve/suite.h"
#include "sim/sweep/child_pool.h"

namespace tpusim::sim {

namespace po = boost::program_options;
using namespace serve;

namespace {

int print_diff(const std::vector<std::string>& d, const std::string& a, const std::string& b, std::ostream& out) {
  if (d.empty()) {
    out << "suite tables agree: " << a << " and " << b << "\n";
    return 0;
  }
  out << d.size() << " difference(s) between " << a << " and " << b << ":\n";
  for (const auto& l : d) out << "  " << l << "\n";
  return 1;
}

double parse_tolerance(const po::variables_map& vm, const std::string& cmd) {
  const double t = vm["tolerance"].as<double>();
  if (!(t >= 0 && t < 1)) throw UsageError(cmd + ": --tolerance must be a relative difference in [0, 1)");
  return t;
}

int suite_run_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("suite run options");
  opts.add_options()("file", po::value<std::string>()->required(), "suite file (configs/suites/*.yaml)")(
      "out", po::value<std::string>()->default_value("results/suite"), "output directory")(
      "filter", po::value<std::string>(), "run only scenarios whose name matches this regular expression")(
      "step-cache", po::value<std::string>(),
      "step-cost cache file shared by the scenarios (default: OUT/steps.cache)")(
      "jobs", po::value<int>()->default_value(0), "step simulations at a time (0: all cores)")(
      "reference", po::value<std::string>(), "a suite.csv to diff the table against (exit 1 on a difference)")(
      "tolerance", po::value<double>()->default_value(0), "relative difference a number may have against --reference")(
      "quiet", po::bool_switch(), "only the table");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_command_args("suite run", "tpusim suite run FILE [--out DIR] [--filter RE] [--reference CSV]", args, opts,
                          pos, vm, ctx))
    return 0;
  const std::string out = vm["out"].as<std::string>();
  check_output_dir("suite run: --out", out);
  const double tol = parse_tolerance(vm, "suite run");
  const int jobs = vm["jobs"].as<int>();
  if (jobs < 0 || jobs > 1024) throw UsageError("suite run: --jobs must be in [0, 1024]");
  const Suite suite = load_suite(vm["file"].as<std::string>());
  std::vector<const SuiteScenario*> run;
  if (vm.count("filter")) {
    std::regex re;
    try {
      re = std::regex(vm["filter"].as<std::string>());
    } catch (const std::regex_error& e) {
      throw UsageError("suite run: --filter '" + vm["filter"].as<std::string>() + "': " + e.what());
    }
    for (const auto& s : suite.scenarios)
      if (std::regex_search(s.name, re)) run.push_back(&s);
    if (run.empty())
      throw UsageError("suite run: --filter '" + vm["filter"].as<std::string>() + "' matches no scenario of " +
                       suite.file);
  } else {
    for (const auto& s : suite.scenarios) run.push_back(&s);
  }
  std::filesystem::create_directories(out);
  const std::string cache = vm.count("step-cache") ? vm["step-cache"].as<std::string>()
                                                   : (std::filesystem::path(out) / "steps.cache").string();
  const bool quiet = vm["quiet"].as<bool>();

  SuiteTable table;
  table.columns = suite_columns();
  std::string failure;
  // One scenario at a time: each serve run simulates its own step shapes in
  // parallel (--jobs), and later scenarios reuse the cache's points.
  sweep::ChildPoolOptions opt;
  opt.jobs = 1;
  auto dir = [&](std::size_t i) { return (std::filesystem::path(out) / run[i]->name).string(); };
  sweep::run_children(
      run.size(), opt,
      [&](std::size_t i) {
        sweep::ChildSpec c;
        c.args = run[i]->serve_args();
        c.args.insert(c.args.end(),
                      {"--out", dir(i), "--quiet", "--step-cache", cache, "--jobs", std::to_string(jobs)});
        c.dir = dir(i) + "/log";
        std::filesystem::create_directories(c.dir);
        c.keep_stdout = true;
        if (!quiet) ctx.out << "scenario " << run[i]->name << " (" << run[i]->kind << ") ..." << std::endl;
        return c;
      },
      [&](std::size_t i, const sweep::ChildExit& e) {
        const std::string why = sweep::child_failure(e, dir(i) + "/log");
        if (!why.empty()) {
          if (failure.empty()) failure = "scenario " + run[i]->name + ": tpusim serve failed: " + why;
          return;
        }
        const std::string summary = dir(i) + "/summary.csv";
        table.rows.push_back(suite_row(suite, *run[i], sweep::slurp_file(summary), summary));
      });
  if (!failure.empty()) throw UsageError("suite run: " + suite.file + ": " + failure);
  const std::string csv = (std::filesystem::path(out) / "suite.csv").string();
  write_suite_table(csv, table);
  ctx.out << "suite " << suite.name << " (" << table.rows.size() << " scenarios): " << csv << "\n"
          << format_suite_table(table);
  if (vm.count("reference")) {
    const std::string ref = vm["reference"].as<std::string>();
    return print_diff(diff_suite_tables(read_suite_table(ref), table, tol), ref, csv, ctx.out);
  }
  return 0;
}

int suite_diff_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("suite diff options");
  opts.add_options()("a", po::value<std::string>()->required(), "first suite.csv (e.g. the reference)")(
      "b", po::value<std::string>()->required(), "second suite.csv")("tolerance", po::value<double>()->default_value(0),
                                                                     "relative difference a number may have (0: none)");
  po::positional_options_description pos;
  pos.add("a", 1).add("b", 1);
  po::variables_map vm;
  if (!parse_command_args("suite diff", "tpusim suite diff A.csv B.csv [--tolerance REL]", args, opts, pos, vm, ctx))
    return 0;
  const double tol = parse_tolerance(vm, "suite diff");
  const std::string a = vm["a"].as<std::string>(), b = vm["b"].as<std::string>();
  return print_diff(diff_suite_tables(read_suite_table(a), read_suite_table(b), tol), a, b, ctx.out);
}

}  // namespace

void register_suite_commands() {
  register_command("suite run", "Run a benchmark suite of serving scenarios (configs/suites/) into one table",
                   suite_run_cmd);
  register_command("suite diff", "Compare two suite tables; exit 1 when a number differs", suite_diff_cmd);
}

}  // namespace tpusim::sim
