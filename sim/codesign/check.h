// `tpusim check`: a TPU-friendliness report of a model on one or more
// generations. For each generation and phase it generates the workload and
// reports every layer type as the MXU sees it (model_check.h), simulates
// the model and each candidate change (candidates.h) in child processes
// (`tpusim check point`, one simulation per process as SystemC requires,
// `jobs` at a time), and compares the changed models' step times, parameter
// counts and memory with the original.
// Ranking: a candidate's score is its step-time gain in percent (mean over
// the phases) divided by the share of parameters it changes in percent,
// counted as at least 1%: changes that move almost no parameters (int8
// weights, a rounded vocab) rank by their gain alone.
// Leaves out: combinations of candidates, candidates for non-transformers
// other than 8-bit weights.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "arch/common/chip_config.h"
#include "models/model_spec.h"
#include "sim/codesign/candidates.h"
#include "sim/codesign/model_check.h"

namespace tpusim::sim::codesign {

struct CheckOptions {
  std::string model;               // zoo name or file
  std::vector<std::string> archs;  // generation names or config files
  std::vector<models::Phase> phases;
  std::int64_t batch = 8, seq = 2048, context = 2048;
  std::string slice, mesh;  // both or neither: simulations run sharded on the slice
  std::string out_dir;
  int jobs = 0;        // 0 = all cores
  double timeout = 0;  // seconds per simulation; 0 = none (an overrun is that point's error)
  bool simulate = true;
  std::vector<std::string> config_path;  // --config-path for the children
  std::ostream* progress = nullptr;
};

// One operator row of a simulated run's ops.csv.
struct OpTime {
  std::string name, kind, bound;
  double cycles = 0;
};

// One simulation: a (generation, phase, candidate) point.
struct SimPoint {
  std::string arch;
  models::Phase phase = models::Phase::decode;
  int candidate = -1;  // index into CheckResult::candidates; -1 = the model as given
  bool ok = false;
  std::string error;
  double seconds = 0;  // simulated step time
  double wall = 0;     // host seconds of the child
  std::vector<OpTime> ops;
};

// A layer type's share of the simulated step: its operators' cycles over
// the cycles of every timed operator.
struct TimeShare {
  std::string type;  // layer_type(), or "other" for the rest
  double share = 0;
};

struct ArchCheck {
  std::string arch;
  arch::TpuConfig config;
  std::map<models::Phase, std::vector<LayerTypeCheck>> layers;
  std::map<models::Phase, std::vector<TimeShare>> shares;
  std::map<models::Phase, std::vector<FitRow>> fit;
  KvFit kv;
  std::vector<DimFinding> dims;  // on this generation's MXU
};

struct Suggestion {
  int candidate = 0;
  std::string arch;
  std::map<models::Phase, double> before, after;  // step seconds (phases that simulated)
  double gain_pct = 0;                            // mean over phases of 100 x (before - after) / before
  std::int64_t params_delta = 0;
  double params_delta_pct = 0;
  std::int64_t memory_delta = 0;  // bytes, footprint of the first phase
  double score = 0;
  std::string error;  // a failed simulation
};

struct CheckResult {
  models::ModelSpec model;
  CheckOptions options;
  std::uint64_t params = 0;
  std::vector<Divisibility> divisibility;
  std::vector<Candidate> candidates;
  std::vector<ArchCheck> archs;
  std::vector<SimPoint> points;
  std::vector<Suggestion> suggestions;  // ranked per arch, best first
  double wall_seconds = 0;
};

// Throws ModelError / ConfigError for the user's mistakes.
CheckResult run_check(const CheckOptions& o);

// Reports (check_report.cpp): the terminal summary, check.csv and report.html.
void print_check(const CheckResult& r, std::ostream& os);
std::string check_csv(const CheckResult& r);
std::string check_html(const CheckResult& r);
void write_check_reports(const CheckResult& r, const std::string& dir);

}  // namespace tpusim::sim::codesign
