// Validation cases (docs/validation.md): measured figures of real TPUs, each
// with its source, how the source defines the metric, the chip config and
// workload that reproduce it in tpusim, the measured value and a relative
// tolerance. One YAML file per family under configs/validation/; a file's
// `defaults:` map is merged into each of its cases (a key of the case
// replaces the default's whole value).
// Loading checks everything up front (unknown keys with a suggestion, types,
// duplicate ids across files, missing workload files, unknown models, chip
// configs and `set:` overrides that do not resolve) and reports every problem
// as file:line:col: key (ConfigError).
// Leaves out: running the cases (runner.h), reporting (report.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/analysis.h"
#include "sim/config/config_loader.h"
#include "sim/sweep/expr.h"

namespace tpusim::sim::validate {

enum class MetricKind { Time, Tflops, Bandwidth, TokensPerSecond, SamplesPerSecond, Mfu };

// "time", "tflops", "bandwidth", "tokens_per_second", "samples_per_second",
// "mfu".
const char* metric_kind_name(MetricKind k);

// How the simulated value is computed from the run's summary.csv
// (`seconds` = simulated time of the whole workload):
//   time               seconds / unit            (unit s, ms or us)
//   tflops             flops / seconds / 1e12     (flops default: total_flops)
//   bandwidth          bytes / seconds / unit     (unit GB/s = 1e9 or TB/s = 1e12)
//   tokens_per_second  tokens / seconds
//   samples_per_second samples / seconds   (images, queries: MLPerf's samples/s)
//   mfu                100 x flops / seconds / (peak_tflops x 1e12)   (percent)
// flops, bytes, tokens and samples are numbers or expressions (sim/sweep/expr.h)
// over numbers and summary.csv columns, e.g. "2 * 4096 * 4096 * 4096" or
// "hbm_bytes".
struct Metric {
  MetricKind kind = MetricKind::Time;
  std::string unit;       // display unit of measured and simulated values
  double unit_scale = 1;  // SI value / unit_scale = value in `unit`
  std::optional<sweep::Expr> flops, bytes, tokens, samples;
  double peak_tflops = 0;  // mfu only
};

struct Workload {
  std::string source;  // gemm, conv, attention, file or model
  std::string value;   // its argument (M,K,N / spec / file path resolved / model name)
  std::string dtype;   // empty = tpusim run's default (bf16)
  // model only (empty = run's default)
  std::string phase, batch, seq, context, image;
  std::string weight_dtype, act_dtype, kv_dtype;  // --weight-dtype etc. (empty: dtype)
  bool sequence_parallel = false;
  bool recompute = false;
  bool fused_attention_backward = false;  // --fused-attention-backward
  std::string moe_capacity_factor;        // --moe-capacity-factor, as written; empty: dropless
  std::string attention_kernel;           // --attention-kernel (flash, dense or batched); empty: flash
  std::string attention_blocks;           // --attention-blocks (MaxText's sa_block_*); empty: searched
  std::string optimizer_dtype;            // --optimizer-dtype (f32 or bf16); empty: f32
  std::string training_quant;             // --training-quant (int8, fp8 or none); empty: none
  std::string remat;                      // empty = run's default (none, or full with recompute)
  // Layer sampling (models::layer_sampling_obstacle): > 0 runs the case as
  // two simulations of b + n and b + 2n decoder layers (`tpusim run
  // --layers`; b = models::layer_sampling_base, the leading layers unlike
  // the rest) and extrapolates its extensive figures to the model's layer
  // count (runner.h); 0 simulates every layer.
  std::int64_t sample_layers = 0;
  std::int64_t sample_base = 0;   // b, with sample_layers
  std::int64_t model_layers = 0;  // the model's decoder layers, with sample_layers
  std::int64_t sampled_run_layers(int run) const { return models::sampled_run_layers(sample_base, sample_layers, run); }
  bool fusion = true;
  bool cmem = true;
};

struct Case {
  std::string file;  // case file path
  int line = 0;      // line of the case's entry
  std::string family;
  std::string id, title, source, source_metric, notes;
  std::string arch;
  std::vector<std::string> sets;  // key=value
  std::string slice, mesh;
  Workload workload;
  Metric metric;
  double measured = 0;   // in metric.unit
  double tolerance = 0;  // relative, e.g. 0.15
  bool expect_miss = false;
  std::string reason;  // why it is expected to miss
  // The config keys solved from this case's measurement (e.g.
  // "ici.link_efficiency, ici.collective_latency (v5p)"); empty for an
  // independent check. A fitted case passes by construction: the reports
  // mark it and give the mean error over the other cases too.
  std::string fitted;
};

// Reads every *.yaml of `dir` (sorted by name), or one file when `path` is a
// file. Throws ConfigError listing every problem found.
std::vector<Case> load_cases(const std::string& path, const ConfigSearchPath& search);
// Several case files or folders as one suite (ids unique across them all).
std::vector<Case> load_cases(const std::vector<std::string>& paths, const ConfigSearchPath& search);

// The same from text (`file` names it in messages and resolves relative
// workload paths).
std::vector<Case> parse_case_file(const std::string& text, const std::string& file, const ConfigSearchPath& search);

// The `tpusim run` arguments of a case, without --out and the executable.
std::vector<std::string> run_args(const Case& c);

// The simulated value of the case's metric (in metric.unit) from a
// summary.csv row (column -> text). Throws std::runtime_error when a needed
// column is missing or not a number, or seconds is not positive.
double simulated_value(const Case& c, const std::map<std::string, std::string>& summary);

// The default folder of the suite: <source tree>/configs/validation.
std::string default_cases_dir();

}  // namespace tpusim::sim::validate
