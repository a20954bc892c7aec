// Runs validation cases: each case is one `tpusim run` child process
// (sweep/child_pool.h) in OUT/runs/<case id>/, up to `jobs` at a time; its
// summary.csv gives the simulated value of the case's metric, which is then
// judged against the measured value and the tolerance. A case with layer
// sampling is two children (OUT/runs/<id>/layers-<n>/ and -<2n>/) whose
// summaries are extrapolated to the model's layer count.
// Outcomes, like a test runner's strict expected failures:
//   pass     within tolerance
//   fail     outside tolerance
//   xfail    outside tolerance and marked `expect: miss` (fine)
//   xpass    within tolerance but marked `expect: miss` (the mark must go)
//   error    the run failed (exit code, crash, timeout, no summary.csv)
// Leaves out: reports (report.h), retries.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "sim/validate/case_file.h"

namespace tpusim::sim::validate {

enum class Outcome { Pass, Fail, ExpectedMiss, UnexpectedPass, Error };

// "pass", "fail", "xfail", "xpass", "error".
const char* outcome_name(Outcome o);

// Whether |simulated - measured| <= tolerance x measured.
bool within_tolerance(const Case& c, double simulated);

// The outcome of a case whose run produced `simulated`.
Outcome judge(const Case& c, double simulated);

struct CaseResult {
  const Case* c = nullptr;
  Outcome outcome = Outcome::Error;
  double simulated = 0;  // in c->metric.unit; meaningless for Error
  double error_pct = 0;  // 100 x (simulated / measured - 1)
  std::string message;   // why Error
  double wall_seconds = 0;
};

struct ValidateRunOptions {
  std::string out_dir;
  int jobs = 0;                          // 0 = all cores
  double case_timeout = 0;               // seconds; 0 = none
  bool keep_runs = false;                // keep OUT/runs/<id>/
  std::string executable;                // empty = the running tpusim
  std::vector<std::string> config_path;  // --config-path for the children
  std::ostream* progress = nullptr;      // one line per finished case
};

// Layer sampling (Workload::sample_layers = n, sample_base = b): the
// columns of the two runs' summaries extrapolated to the model's L layers,
// x(L) = x(b + n) + (L - b - n) (x(b + 2n) - x(b + n)) / n; the metric of
// a sampled case may read only these (others are not linear in the layer
// count).
inline constexpr const char* kSampledColumns[] = {"seconds", "total_flops", "model_flops", "hardware_flops"};
std::map<std::string, std::string> extrapolate_summary(const std::map<std::string, std::string>& at_n,
                                                       const std::map<std::string, std::string>& at_2n, std::int64_t n,
                                                       std::int64_t layers, std::int64_t base = 0);

// Results in the order of `cases`.
std::vector<CaseResult> run_cases(const std::vector<Case>& cases, const ValidateRunOptions& opt);

// 0 when every case passed or missed as expected, 1 otherwise.
int exit_code(const std::vector<CaseResult>& results);

}  // namespace tpusim::sim::validate
