// Running and judging validation cases; see runner.h.
#include "sim/validate/runner.h"

#include <cmath>
#include <filesystem>
#include <map>

#include "sim/results/format.h"
#include "sim/sweep/child_pool.h"
#include "sim/sweep/results_table.h"

namespace tpusim::sim::validate {

namespace fs = std::filesystem;

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Pass: return "pass";
    case Outcome::Fail: return "fail";
    case Outcome::ExpectedMiss: return "xfail";
    case Outcome::UnexpectedPass: return "xpass";
    case Outcome::Error: return "error";
  }
  return "?";
}

bool within_tolerance(const Case& c, double simulated) {
  // |sim - measured| <= tol x measured, with a relative 1e-12 slack so that a
  // value exactly on the boundary (110 vs 100 at 10%) counts as inside
  // despite binary rounding.
  return std::isfinite(simulated) &&
         std::fabs(simulated - c.measured) <= c.tolerance * std::fabs(c.measured) * (1 + 1e-12);
}

Outcome judge(const Case& c, double simulated) {
  const bool in = within_tolerance(c, simulated);
  if (c.expect_miss) return in ? Outcome::UnexpectedPass : Outcome::ExpectedMiss;
  return in ? Outcome::Pass : Outcome::Fail;
}

std::vector<CaseResult> run_cases(const std::vector<Case>& cases, const ValidateRunOptions& opt) {
  std::vector<CaseResult> results(cases.size());
  fs::create_directories(opt.out_dir);
  auto dir_of = [&](std::size_t i) { return (fs::path(opt.out_dir) / "runs" / cases[i].id).string(); };
  sweep::ChildPoolOptions pool;
  pool.executable = opt.executable;
  pool.jobs = opt.jobs;
  pool.timeout = opt.case_timeout;
  std::size_t finished = 0;
  // Whole training steps first (the longest cases by far), the rest in
  // file order, so that with N jobs a long case does not start last and
  // run alone; results keep the file order.
  std::vector<std::size_t> order;
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t i = 0; i < cases.size(); ++i)
      if ((cases[i].workload.phase == "train") == (pass == 0)) order.push_back(i);
  sweep::run_children(
      cases.size(), pool,
      [&](std::size_t k) {
        const std::size_t i = order[k];
        sweep::ChildSpec s;
        s.dir = dir_of(i);
        for (const auto& d : opt.config_path) s.args.insert(s.args.end(), {"--config-path", d});
        const auto a = run_args(cases[i]);
        s.args.insert(s.args.end(), a.begin(), a.end());
        s.args.insert(s.args.end(), {"--out", s.dir});
        s.keep_stdout = opt.keep_runs;
        return s;
      },
      [&](std::size_t k, const sweep::ChildExit& e) {
        const std::size_t i = order[k];
        CaseResult& r = results[i];
        r.c = &cases[i];
        r.wall_seconds = e.seconds;
        r.message = sweep::child_failure(e, dir_of(i));
        if (r.message.empty()) {
          const auto rows = sweep::parse_csv(sweep::slurp_file(dir_of(i) + "/summary.csv"));
          if (rows.size() < 2 || rows[0].size() != rows[1].size()) {
            r.message = "the run exited 0 but wrote no readable summary.csv";
          } else {
            std::map<std::string, std::string> summary;
            for (std::size_t j = 0; j < rows[0].size(); ++j) summary[rows[0][j]] = rows[1][j];
            try {
              r.simulated = simulated_value(cases[i], summary);
              r.error_pct = 100.0 * (r.simulated / cases[i].measured - 1.0);
              r.outcome = judge(cases[i], r.simulated);
            } catch (const std::exception& ex) {
              r.message = ex.what();
            }
          }
        }
        if (!r.message.empty()) r.outcome = Outcome::Error;
        if (!opt.keep_runs) fs::remove_all(dir_of(i));
        ++finished;
        if (opt.progress) {
          *opt.progress << "validate: [" << finished << "/" << cases.size() << "] " << cases[i].id << ": "
                        << outcome_name(r.outcome);
          if (r.outcome != Outcome::Error)
            *opt.progress << " (" << format_real(r.simulated, 4) << " vs " << format_real(cases[i].measured, 4) << " "
                          << cases[i].metric.unit << ", " << format_fixed(e.seconds, 1) << " s)";
          else
            *opt.progress << ": " << r.message;
          *opt.progress << "\n";
          opt.progress->flush();
        }
      });
  std::error_code ec;
  if (!opt.keep_runs) fs::remove(fs::path(opt.out_dir) / "runs", ec);  // only if empty
  return results;
}

int exit_code(const std::vector<CaseResult>& results) {
  for (const auto& r : results)
    if (r.outcome != Outcome::Pass && r.outcome != Outcome::ExpectedMiss) return 1;
  return 0;
}

}  // namespace tpusim::sim::validate
