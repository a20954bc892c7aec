#include "sim/cli/serve_deployment.h"

#include <cstdio>

#include "arch/ici/topology.h"
#include "models/sharding.h"
#include "sim/cli/lora_options.h"
#include "sim/engine/slice_setup.h"
#include "sim/run/run.h"
#include "sim/serve/step_cost.h"

namespace tpusim::sim {

namespace po = boost::program_options;
using namespace serve;

// Options shared by `serve` and `serve step`: the deployment of one replica.
void add_deployment_options(po::options_description& opts) {
  opts.add_options()("arch", po::value<std::string>()->default_value("v5e"), "TPU generation name or config file")(
      "set", po::value<std::vector<std::string>>()->composing(), "override a config key: key=value")(
      "slice", po::value<std::string>(), "slice of one replica, e.g. 2x2 (default: one chip)")(
      "mesh", po::value<std::string>(), "mesh axes over the slice: tensor and expert only, e.g. tensor=4")(
      "twisted", po::bool_switch(), "twisted torus wiring (v4/v5p shapes where it applies)")(
      "model", po::value<std::string>()->required(), "a decoder of the zoo (tpusim model list) or a model file")(
      "dtype", po::value<std::string>()->default_value("bf16"), "weights, activations and KV cache dtype")(
      "attention-kernel", po::value<std::string>()->default_value("flash"),
      "the steps' attention: flash (one sequence a grid step, as the Pallas paged and ragged paged attention kernels) "
      "or batched (up to 16 sequences a grid step, tpu-inference's batched ragged paged attention)")(
      "max-sim-time", po::value<double>()->default_value(3600), "limit of simulated seconds per step simulation");
  add_lora_options(opts);
}


Deployment load_deployment(const std::string& cmd, const po::variables_map& vm, CommandContext& ctx) {
  Deployment d;
  auto& s = d.setup;
  s.arch = vm["arch"].as<std::string>();
  if (vm.count("set")) s.sets = vm["set"].as<std::vector<std::string>>();
  s.model = vm["model"].as<std::string>();
  s.dtype = vm["dtype"].as<std::string>();
  s.twisted = vm["twisted"].as<bool>();
  s.attention_kernel = vm["attention-kernel"].as<std::string>();
  if (!models::parse_attention_impl(s.attention_kernel, &d.attention_kernel) ||
      d.attention_kernel == models::AttentionImpl::dense)
    throw UsageError(cmd +
                     ": --attention-kernel: expected flash or batched (a serving step's attention is a fused "
                     "kernel), found '" +
                     s.attention_kernel + "'");
  s.max_sim_time = vm["max-sim-time"].as<double>();
  if (!(s.max_sim_time >= 0 && s.max_sim_time <= 1e6))
    throw UsageError(cmd + ": --max-sim-time must be a number of seconds in [0, 1e6]");
  const auto dt = arch::parse_dtype(s.dtype);
  if (!dt) throw UsageError(cmd + ": unknown --dtype '" + s.dtype + "'");
  d.dtype = *dt;
  d.cfg = load_tpu_config(s.arch, s.sets, ctx.global.search_path());
  d.spec = models::load_model(s.model);
  d.lora = read_lora_options(vm, cmd);
  s.lora_rank = d.lora.rank;
  s.lora_targets = models::lora_targets_text(d.lora.targets);
  if (d.spec.family != models::Family::decoder)
    throw UsageError(cmd + ": --model '" + s.model + "' is a " + models::family_name(d.spec.family) +
                     " model; serving needs a decoder");
  if (vm.count("mesh")) {
    if (!vm.count("slice")) throw UsageError(cmd + ": --mesh needs --slice");
    s.mesh = vm["mesh"].as<std::string>();
    d.mesh = workloads::parse_mesh(s.mesh, models::mesh_axis_names());
    for (const auto& a : d.mesh.axes)
      if (a.name != "tensor" && a.name != "expert")
        throw UsageError(cmd + ": --mesh '" + s.mesh + "': axis '" + a.name +
                         "' is not served; a replica shards over tensor and expert (use --replicas for data "
                         "parallelism)");
  }
  if (vm.count("slice")) {
    s.slice = vm["slice"].as<std::string>();
    const arch::ici::Slice slice(d.cfg.ici, s.slice, s.twisted);  // arch::ConfigError
    if (!d.mesh.empty()) {
      try {
        map_mesh(slice, d.mesh);
      } catch (const std::invalid_argument& e) {
        throw UsageError(cmd + ": " + e.what());
      }
    }
  }
  return d;
}

// --- serve step ----------------------------------------------------------

int serve_step_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("serve step options");
  add_deployment_options(opts);
  opts.add_options()("prefill", po::value<std::int64_t>()->default_value(0), "prefill tokens of the step")(
      "decode", po::value<std::int64_t>()->default_value(0), "sequences decoding one token")(
      "context", po::value<std::int64_t>()->default_value(1), "cached tokens of each decoding sequence")(
      "prefix", po::value<std::int64_t>()->default_value(0),
      "cached tokens of each prefill chunk's own sequence before it (chunked prefill)")(
      "chunks", po::value<std::int64_t>()->default_value(1),
      "prefill sequences the --prefill tokens are split among (several prompts in one step)")(
      "decode-tokens", po::value<int>()->default_value(1),
      "query tokens per decoding sequence (speculative verification: k + 1)")(
      "adapters", po::value<std::int64_t>()->default_value(0),
      "distinct LoRA adapters among the step's sequences (needs --lora-rank; 0: none)");
  po::variables_map vm;
  if (!parse_command_args(
          "serve step",
          "tpusim serve step --model NAME --prefill P [--prefix X --chunks N] --decode B --context C [options]", args,
          opts, {}, vm, ctx))
    return 0;
  const Deployment d = load_deployment("serve step", vm, ctx);
  GridPoint p{vm["prefill"].as<std::int64_t>(), vm["decode"].as<std::int64_t>(), vm["context"].as<std::int64_t>()};
  if (p.prefill < 0 || p.decode < 0 || p.context < 1 || p.prefill + p.decode < 1 || p.prefill > (1 << 24) ||
      p.decode > (1 << 24))
    throw UsageError("serve step: need --prefill >= 0, --decode >= 0 (not both 0, each <= 2^24) and --context >= 1");
  const int T = vm["decode-tokens"].as<int>();
  if (T < 1 || T > 65) throw UsageError("serve step: --decode-tokens must be in [1, 65]");
  p.prefix = vm["prefix"].as<std::int64_t>();
  if (p.prefix < 0 || p.prefix > (1 << 24) || (p.prefix > 0 && p.prefill == 0))
    throw UsageError("serve step: --prefix must be in [0, 2^24], and > 0 only with --prefill > 0");
  p.chunks = vm["chunks"].as<std::int64_t>();
  if (p.chunks < 1 || p.chunks > std::max<std::int64_t>(1, p.prefill))
    throw UsageError("serve step: --chunks must be in [1, --prefill] (1 without prefill)");
  p.adapters = vm["adapters"].as<std::int64_t>();
  if (p.adapters < 0 || (p.adapters > 0 && !d.lora.enabled()))
    throw UsageError("serve step: --adapters must be >= 0, and > 0 only with --lora-rank");
  models::PhaseOptions o = step_phase(p, d.mesh, d.dtype, T, d.lora);
  o.attention_kernel = d.attention_kernel;
  const workloads::Workload wl = models::generate(d.spec, o);
  RunOptions ro;
  ro.sim.progress = false;
  ro.sim.max_sim_seconds = d.setup.max_sim_time;
  // A grid cell is a cost probe: its corner (the largest batch at the
  // longest context) may hold more KV cache than HBM, which the serving
  // loop's KV budget never lets it form; its time is still defined.
  ro.lowering.check_hbm_capacity = false;
  if (!d.setup.slice.empty()) {
    ro.sim.slice = d.setup.slice;
    ro.sim.twisted = d.setup.twisted;
    ro.sim.mesh = d.mesh;
  }
  const RunReport r = run_workload(d.setup.arch, d.cfg, wl, ro);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(r.sim.end_cycle) / r.sim.clock_hz);
  ctx.out << "step_seconds " << buf << "\ncycles " << r.sim.end_cycle << "\n";
  return 0;
}

std::int64_t kv_pages_from_hbm(const Deployment& d, std::int64_t max_tokens, std::int64_t max_context,
                               std::int64_t page_tokens, std::string* note, const models::ModelSpec* draft,
                               double reserved_bytes) {
  models::PhaseOptions dec = step_phase({0, 1, max_context}, d.mesh, d.dtype);
  const models::FitReport fit = models::check_fit(d.spec, dec, d.cfg.hbm.capacity_bytes);
  models::PhaseOptions pre = step_phase({max_tokens, 0, 1}, d.mesh, d.dtype);
  const models::MemoryFootprint act = models::memory_footprint(d.spec, pre);
  double per_token = static_cast<double>(fit.footprint.kv_cache) / static_cast<double>(max_context);
  double free_bytes = static_cast<double>(d.cfg.hbm.capacity_bytes) - static_cast<double>(fit.footprint.weights) -
                      static_cast<double>(act.activations) - reserved_bytes;
  if (draft) {  // the draft's weights and its own KV cache share the chips
    const models::FitReport df = models::check_fit(*draft, dec, d.cfg.hbm.capacity_bytes);
    free_bytes -= static_cast<double>(df.footprint.weights);
    per_token += static_cast<double>(df.footprint.kv_cache) / static_cast<double>(max_context);
  }
  if (!(free_bytes > 0))
    throw UsageError("serve: " + d.spec.name + " does not leave HBM for a KV cache on this slice (weights " +
                     (reserved_bytes > 0 ? std::to_string(static_cast<std::int64_t>(reserved_bytes) >> 20) +
                                               " MiB of LoRA adapter slots, "
                                         : std::string()) +
                     std::to_string(fit.footprint.weights >> 20) + " MiB per chip); use a larger --slice/--mesh");
  const auto pages = static_cast<std::int64_t>(free_bytes / (per_token * static_cast<double>(page_tokens)));
  *note = "KV cache: " + std::to_string(static_cast<std::int64_t>(free_bytes / (1 << 20))) +
          " MiB free per chip after weights" +
          (reserved_bytes > 0 ? ", activations and adapter slots" : " and activations") + ", " +
          std::to_string(static_cast<std::int64_t>(per_token)) + " B per token per chip";
  return pages;
}


}  // namespace tpusim::sim
