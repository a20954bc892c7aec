// `tpusim validate`: runs the validation suite (configs/validation/, see
// docs/validation.md), prints measured vs simulated per case and writes
// validation.csv, validation.svg and validation.html.
// With --reference FILE, also compares the cases' rows with a committed
// validation.csv (reference_check.h).
// Exit code: 0 when every case passes or misses as its `expect: miss` says
// (and matches the reference), 1 when a case fails, errors, passes despite
// `expect: miss` or differs from the reference, 2 for bad case files or
// options.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "sim/cli/cli.h"
#include "sim/validate/case_file.h"
#include "sim/validate/reference_check.h"
#include "sim/validate/report.h"
#include "sim/validate/runner.h"

namespace tpusim::sim {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

int validate_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("validate options");
  opts.add_options()("cases",
                     po::value<std::vector<std::string>>()->multitoken()->default_value({validate::default_cases_dir()},
                                                                                        validate::default_cases_dir()),
                     "case files or folders of *.yaml case files, run as one suite (ids unique across them)")(
      "filter", po::value<std::string>(), "run only cases whose id matches this regular expression (search)")(
      "out", po::value<std::string>()->default_value("results/validation"),
      "output directory (validation.csv, .svg, .html)")("jobs,j", po::value<int>()->default_value(0),
                                                        "cases run in parallel (0 = all cores)")(
      "case-timeout", po::value<double>()->default_value(0), "seconds before a case's run is killed (0 = none)")(
      "keep-runs", po::bool_switch(), "keep each case's run folder under OUT/runs/<id>/")(
      "list", po::bool_switch(), "list the selected cases and run nothing")(
      "markdown", po::bool_switch(), "print the result table as Markdown (for docs/validation.md)")(
      "reference", po::value<std::string>(),
      "committed validation.csv to compare the cases' rows with (exit 1 on a difference)")(
      "quiet,q", po::bool_switch(), "no progress lines on stderr");
  po::variables_map vm;
  if (!parse_command_args("validate",
                          "tpusim validate [CASES...] [--filter RE] [--out DIR] [--jobs N] [--list] [--markdown] "
                          "[--reference FILE]",
                          args, opts, {{"cases", -1}}, vm, ctx))
    return 0;
  const int jobs = vm["jobs"].as<int>();
  if (jobs < 0) throw UsageError("validate: --jobs must be >= 0");
  if (vm["case-timeout"].as<double>() < 0) throw UsageError("validate: --case-timeout must be >= 0");
  std::string reference;  // the committed table's text
  if (vm.count("reference")) {
    std::ifstream f(vm["reference"].as<std::string>());
    if (!f) throw UsageError("validate: --reference " + vm["reference"].as<std::string>() + ": cannot read the file");
    std::ostringstream text;
    text << f.rdbuf();
    reference = text.str();
  }
  std::vector<validate::Case> all =
      validate::load_cases(vm["cases"].as<std::vector<std::string>>(), ctx.global.search_path());
  std::vector<validate::Case> cases;
  if (vm.count("filter")) {
    std::regex re;
    try {
      re = std::regex(vm["filter"].as<std::string>());
    } catch (const std::regex_error& e) {
      throw UsageError("validate: --filter '" + vm["filter"].as<std::string>() +
                       "' is not a regular expression: " + e.what());
    }
    for (auto& c : all)
      if (std::regex_search(c.id, re)) cases.push_back(std::move(c));
    if (cases.empty())
      throw UsageError("validate: no case id matches --filter '" + vm["filter"].as<std::string>() + "'");
  } else {
    cases = std::move(all);
  }
  if (vm["list"].as<bool>()) {
    for (const auto& c : cases)
      ctx.out << c.id << "  " << c.arch << "  " << c.title << (c.expect_miss ? "  [expect: miss]" : "")
              << (c.fitted.empty() ? "" : "  [fitted: " + c.fitted + "]") << "\n";
    ctx.out << cases.size() << " cases\n";
    return 0;
  }
  validate::ValidateRunOptions o;
  o.out_dir = vm["out"].as<std::string>();
  o.jobs = jobs;
  o.case_timeout = vm["case-timeout"].as<double>();
  o.keep_runs = vm["keep-runs"].as<bool>();
  o.config_path = ctx.global.config_path;
  if (!vm["quiet"].as<bool>()) o.progress = &ctx.err;
  const auto results = validate::run_cases(cases, o);
  if (vm["markdown"].as<bool>())
    validate::write_markdown(ctx.out, results);
  else
    validate::write_table(ctx.out, results);
  validate::write_reports(o.out_dir, results);
  // With --markdown, stdout is the table alone (pasted into docs).
  (vm["markdown"].as<bool>() ? ctx.err : ctx.out)
      << "results: " << (fs::path(o.out_dir) / "validation.csv").string() << ", validation.svg, validation.html\n";
  int code = validate::exit_code(results);
  if (vm.count("reference")) {
    const std::string& name = vm["reference"].as<std::string>();
    const auto diffs = validate::reference_differences(reference, name, results, !vm.count("filter"));
    if (!diffs.empty()) {
      ctx.err << "validate: " << diffs.size() << " case(s) differ from " << name << ":\n";
      for (const auto& d : diffs) ctx.err << "  " << d << "\n";
      ctx.err << "if the change is intended, run `make reference` and commit results/reference/ with the reason\n";
      code = std::max(code, 1);
    }
  }
  return code;
}

}  // namespace

void register_validate_command() {
  register_command("validate", "Run the validation suite: simulated vs measured on real TPUs", validate_cmd);
}

}  // namespace tpusim::sim
