// Serve points of a sweep (docs/sweeps.md, "Serve points"): a spec whose
// base or axes set any serve.* key runs `tpusim serve` at each point
// instead of `tpusim run`, so that a throughput-latency curve (rates,
// concurrencies, batch limits, slices) is one sweep, with one row per
// point holding the serve summary's columns (docs/serving.md).
// Keys (base short name -> canonical):
//   slice, mesh, replicas            the deployment of one replica
//   rate, concurrency, arrival       the arrival process (poisson, closed, offline)
//   requests, input, output, seed    the synthetic requests
//   max_batch, max_tokens, policy    the server's limits and budget order
//   slo                              latency limits (slo_met, goodput)
//   step_cache                       a step-cost cache file shared by the points
// Internal to sim/sweep.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tpusim::sim::sweep {

// (base short name, canonical key) of the serve keys.
const std::vector<std::pair<std::string, std::string>>& serve_keys();
bool is_serve_key(const std::string& key);

// An error message for a malformed value of a serve key (empty: fine).
std::string check_serve_value(const std::string& key, const std::string& text);

// The columns of the summary.csv `tpusim serve` writes that a sweep row
// keeps (setup and metrics of docs/serving.md).
const std::vector<std::string>& serve_summary_columns();

// The `tpusim serve` arguments of a point (without --out), from its
// parameters; `resolve` maps a relative path of the spec to a usable one.
// Throws std::runtime_error when the point cannot be served (no model, a
// `tpusim run`-only key such as phase or batch, a workload source).
std::vector<std::string> serve_point_args(const std::map<std::string, std::string>& params,
                                          const std::string& arch_name, const std::vector<std::string>& sets,
                                          const std::string& dtype, const std::string& model_path,
                                          const std::string& step_cache_path);

}  // namespace tpusim::sim::sweep
