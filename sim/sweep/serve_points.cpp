// Serve points of a sweep; see serve_points.h.
#include "sim/sweep/serve_points.h"

#include <stdexcept>

#include "sim/cli/cli.h"
#include "sim/serve/report.h"
#include "sim/serve/request_workload.h"
#include "sim/sweep/expr.h"

namespace tpusim::sim::sweep {

const std::vector<std::pair<std::string, std::string>>& serve_keys() {
  static const std::vector<std::pair<std::string, std::string>> k = {
      {"slice", "serve.slice"},
      {"mesh", "serve.mesh"},
      {"replicas", "serve.replicas"},
      {"rate", "serve.rate"},
      {"concurrency", "serve.concurrency"},
      {"arrival", "serve.arrival"},
      {"requests", "serve.requests"},
      {"input", "serve.input"},
      {"output", "serve.output"},
      {"seed", "serve.seed"},
      {"max_batch", "serve.max_batch"},
      {"max_tokens", "serve.max_tokens"},
      {"policy", "serve.policy"},
      {"slo", "serve.slo"},
      {"attention_kernel", "serve.attention_kernel"},
      {"step_cache", "serve.step_cache"},
  };
  return k;
}

bool is_serve_key(const std::string& key) { return key.compare(0, 6, "serve.") == 0; }

std::string check_serve_value(const std::string& key, const std::string& text) {
  const Value v = Value::from_text(text);
  const bool integer =
      v.is_number && v.number >= 1 && v.number == static_cast<double>(static_cast<long long>(v.number));
  if (key == "serve.rate") {
    if (!v.is_number || !(v.number > 0)) return "a rate in requests per second, > 0";
  } else if (key == "serve.concurrency" || key == "serve.replicas" || key == "serve.requests" ||
             key == "serve.max_batch" || key == "serve.max_tokens" || key == "serve.seed") {
    if (!integer) return "an integer >= 1";
  } else if (key == "serve.arrival") {
    if (text != "poisson" && text != "closed" && text != "offline") return "poisson, closed or offline";
  } else if (key == "serve.attention_kernel") {
    if (text != "flash" && text != "batched") return "flash or batched";
  } else if (key == "serve.policy") {
    if (text != "decode-first" && text != "prefill-first") return "decode-first or prefill-first";
  } else if (key == "serve.input" || key == "serve.output") {
    try {
      serve::parse_length_dist(key, text);
    } catch (const UsageError&) {
      return "a length distribution: fixed:N, uniform:LO:HI, normal:MEAN:SD or hist:V=W,...";
    }
  } else if (key == "serve.slo") {
    try {
      serve::parse_slo(text);
    } catch (const UsageError&) {
      return "latency limits METRIC_STAT=TIME,..., e.g. ttft_p99=2s,tpot_p99=100ms";
    }
  }
  return "";
}

const std::vector<std::string>& serve_summary_columns() {
  static const std::vector<std::string> c = [] {
    std::vector<std::string> v = {"model",       "slice",      "mesh",           "replicas",  "arrival",   "rate",
                                  "concurrency", "max_batch",  "max_tokens",     "policy",    "slo",       "slo_met",
                                  "requests",    "duration_s", "throughput_rps", "input_tps", "output_tps"};
    for (const char* m : {"ttft", "tpot", "itl", "e2e", "queue"})
      for (const char* s : {"mean", "p50", "p90", "p99"}) v.push_back(std::string(m) + "_" + s + "_s");
    for (const char* k : {"goodput_rps", "good_fraction", "kv_util_mean", "kv_util_peak", "kv_pages", "preemptions",
                          "steps", "mean_in_system", "mean_waiting"})
      v.push_back(k);
    return v;
  }();
  return c;
}

std::vector<std::string> serve_point_args(const std::map<std::string, std::string>& params,
                                          const std::string& arch_name, const std::vector<std::string>& sets,
                                          const std::string& dtype, const std::string& model_path,
                                          const std::string& step_cache_path) {
  if (!params.count("model.name"))
    throw std::runtime_error("a serve point needs base.model (a decoder of the zoo or a model file)");
  for (const char* k : {"model.phase", "model.batch", "model.seq", "model.context", "model.image", "model.remat",
                        "model.moe_capacity_factor", "model.fused_attention_backward", "model.attention_kernel",
                        "model.attention_blocks", "model.optimizer_dtype", "model.training_quant", "workload.file",
                        "workload.gemm", "workload.conv", "workload.attention"})
    if (params.count(k))
      throw std::runtime_error(std::string("'") + k +
                               "' is a `tpusim run` key; a serve point's steps come from its requests "
                               "(serve.input, serve.output, serve.max_batch, ...)");
  std::vector<std::string> a = {"serve", "--quiet", "--arch", arch_name, "--model", model_path, "--dtype", dtype};
  for (const auto& s : sets) a.insert(a.end(), {"--set", s});
  auto get = [&](const char* k) {
    const auto it = params.find(k);
    return it == params.end() ? std::string() : it->second;
  };
  const std::string arrival = !get("serve.arrival").empty()       ? get("serve.arrival")
                              : !get("serve.rate").empty()        ? "poisson"
                              : !get("serve.concurrency").empty() ? "closed"
                                                                  : "offline";
  a.insert(a.end(), {"--arrival", arrival});
  if (arrival == "poisson" && get("serve.rate").empty())
    throw std::runtime_error("serve.arrival poisson needs serve.rate");
  for (const auto& [shortname, key] : serve_keys()) {
    if (key == "serve.arrival" || key == "serve.step_cache") continue;
    const std::string v = get(key.c_str());
    if (v.empty()) continue;
    std::string flag = "--" + shortname;
    for (char& ch : flag)
      if (ch == '_') ch = '-';
    a.insert(a.end(), {flag, v});
  }
  if (!step_cache_path.empty()) a.insert(a.end(), {"--step-cache", step_cache_path});
  return a;
}

}  // namespace tpusim::sim::sweep
