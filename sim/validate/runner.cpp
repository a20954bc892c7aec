// Running and judging validation cases; see runner.h.
#include "sim/validate/runner.h"

#include <array>
#include <cmath>
#include <filesystem>
#include <map>

#include "models/analysis.h"
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

std::map<std::string, std::string> extrapolate_summary(const std::map<std::string, std::string>& at_n,
                                                       const std::map<std::string, std::string>& at_2n, std::int64_t n,
                                                       std::int64_t layers, std::int64_t base) {
  std::map<std::string, std::string> out;
  for (const char* col : kSampledColumns) {
    const auto a = at_n.find(col), b = at_2n.find(col);
    if (a == at_n.end() || b == at_2n.end()) continue;
    const sweep::Value x = sweep::Value::from_text(a->second), y = sweep::Value::from_text(b->second);
    if (!x.is_number || !y.is_number) continue;
    out[col] = format_real(models::extrapolate_layers(x.number, y.number, n, layers, base), 17);
  }
  return out;
}

std::vector<CaseResult> run_cases(const std::vector<Case>& cases, const ValidateRunOptions& opt) {
  std::vector<CaseResult> results(cases.size());
  fs::create_directories(opt.out_dir);
  // One child per case, or two for a case with layer sampling (b + n and
  // b + 2n decoder layers, `tpusim run --layers`).
  struct Job {
    std::size_t c;
    std::int64_t layers;  // 0: the model's own
  };
  // Whole training steps first (the longest cases by far), the rest in
  // file order, so that with N jobs a long case does not start last and
  // run alone; results keep the file order.
  std::vector<Job> jobs;
  std::vector<int> pending(cases.size(), 0);
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if ((cases[i].workload.phase == "train") != (pass == 0)) continue;
      const Workload& w = cases[i].workload;
      if (w.sample_layers > 0) {
        jobs.push_back({i, w.sampled_run_layers(0)});
        jobs.push_back({i, w.sampled_run_layers(1)});
        pending[i] = 2;
      } else {
        jobs.push_back({i, 0});
        pending[i] = 1;
      }
    }
  auto case_dir = [&](std::size_t i) { return (fs::path(opt.out_dir) / "runs" / cases[i].id).string(); };
  auto dir_of = [&](const Job& j) {
    return j.layers > 0 ? (fs::path(case_dir(j.c)) / ("layers-" + std::to_string(j.layers))).string() : case_dir(j.c);
  };
  // Per case: the summaries of its runs (index 0: b + n layers or the
  // only run, 1: b + 2n layers).
  std::vector<std::array<std::map<std::string, std::string>, 2>> summaries(cases.size());
  sweep::ChildPoolOptions pool;
  pool.executable = opt.executable;
  pool.jobs = opt.jobs;
  pool.timeout = opt.case_timeout;
  std::size_t finished = 0;
  sweep::run_children(
      jobs.size(), pool,
      [&](std::size_t k) {
        const Job& j = jobs[k];
        sweep::ChildSpec s;
        s.dir = dir_of(j);
        for (const auto& d : opt.config_path) s.args.insert(s.args.end(), {"--config-path", d});
        const auto a = run_args(cases[j.c]);
        s.args.insert(s.args.end(), a.begin(), a.end());
        if (j.layers > 0) s.args.insert(s.args.end(), {"--layers", std::to_string(j.layers)});
        s.args.insert(s.args.end(), {"--out", s.dir});
        s.keep_stdout = opt.keep_runs;
        return s;
      },
      [&](std::size_t k, const sweep::ChildExit& e) {
        const Job& j = jobs[k];
        const std::size_t i = j.c;
        const Case& c = cases[i];
        CaseResult& r = results[i];
        r.c = &c;
        r.wall_seconds += e.seconds;
        std::string message = sweep::child_failure(e, dir_of(j));
        if (message.empty()) {
          auto summary = sweep::read_run_summary(dir_of(j));
          if (summary.empty())
            message = sweep::kNoSummary;
          else
            summaries[i][j.layers > 0 && j.layers == c.workload.sampled_run_layers(1) ? 1 : 0] = std::move(summary);
        }
        if (!message.empty() && r.message.empty())
          r.message = j.layers > 0 ? "the run of " + std::to_string(j.layers) + " layers: " + message : message;
        if (--pending[i] > 0) return;
        if (r.message.empty()) {
          try {
            const auto summary = c.workload.sample_layers > 0
                                     ? extrapolate_summary(summaries[i][0], summaries[i][1], c.workload.sample_layers,
                                                           c.workload.model_layers, c.workload.sample_base)
                                     : summaries[i][0];
            r.simulated = simulated_value(c, summary);
            r.error_pct = 100.0 * (r.simulated / c.measured - 1.0);
            r.outcome = judge(c, r.simulated);
          } catch (const std::exception& ex) {
            r.message = ex.what();
          }
        }
        if (!r.message.empty()) r.outcome = Outcome::Error;
        if (!opt.keep_runs) fs::remove_all(case_dir(i));
        ++finished;
        if (opt.progress) {
          *opt.progress << "validate: [" << finished << "/" << cases.size() << "] " << c.id << ": "
                        << outcome_name(r.outcome);
          if (r.outcome != Outcome::Error)
            *opt.progress << " (" << format_real(r.simulated, 4) << " vs " << format_real(c.measured, 4) << " "
                          << c.metric.unit << ", " << format_fixed(r.wall_seconds, 1) << " s)";
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
