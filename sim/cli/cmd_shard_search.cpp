// `tpusim shard-search`: the ranked meshes of a model on a slice
// (sim/codesign/shard_search.h). `tpusim shard-search point` is the one
// simulation shard-search runs in each child process: a model on the
// slice with a mesh, remat policy and sequence parallelism, optionally
// with its layer count replaced (layer sampling).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "arch/ici/topology.h"
#include "models/analysis.h"
#include "models/sharding.h"
#include "models/zoo.h"
#include "sim/cli/cli.h"
#include "sim/cli/quant_options.h"
#include "sim/cli/step_options.h"
#include "sim/codesign/shard_search.h"
#include "sim/engine/slice_setup.h"
#include "sim/results/results_writer.h"
#include "sim/run/model_fit.h"
#include "sim/run/run.h"

namespace tpusim::sim {

namespace po = boost::program_options;

namespace {

void add_common(po::options_description& opts) {
  opts.add_options()("model", po::value<std::string>()->required(), "a zoo model name or a model file")(
      "arch", po::value<std::string>()->required(), "generation name or config file")(
      "slice", po::value<std::string>()->required(),
      "slice shape, e.g. 4x4x4; N*SHAPE for N slices over the data-centre network, e.g. 2*16x16")(
      "phase", po::value<std::string>()->default_value("train"),
      "train, prefill, decode or infer (default: train, or infer for a model that does not train)")(
      "batch", po::value<std::int64_t>()->default_value(8), "global batch (sequences)")(
      "seq", po::value<std::int64_t>()->default_value(2048), "sequence length (prefill, train)")(
      "context", po::value<std::int64_t>()->default_value(2048), "context length (decode)")(
      "set", po::value<std::vector<std::string>>()->composing(), "override a config key: key=value (repeatable)");
}

std::vector<std::string> sets_of(const po::variables_map& vm) {
  return vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
}

void check_sizes(const std::string& cmd, const po::variables_map& vm) {
  for (const char* k : {"batch", "seq", "context"})
    if (vm[k].as<std::int64_t>() < 1 || vm[k].as<std::int64_t>() > (std::int64_t{1} << 40))
      throw UsageError(cmd + ": --" + k + " must be in [1, 2^40], found " + std::to_string(vm[k].as<std::int64_t>()));
}

// --remat values: each a comma-separated list of policy names (or all:
// none, minimal, selective, full), or one custom[:name=place,...] (whose
// entries are comma-separated too). Each policy once, in its canonical
// spelling (PhaseOptions::remat_str).
std::vector<std::string> remat_list(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  auto add = [&](const std::string& item) {
    models::PhaseOptions p;
    const std::string err = models::parse_remat_spec(item, &p.remat, &p.remat_custom);
    if (!err.empty()) throw UsageError("shard-search: --remat: expected " + err + ", found '" + item + "'");
    if (std::find(out.begin(), out.end(), p.remat_str()) == out.end()) out.push_back(p.remat_str());
  };
  for (const auto& v : values) {
    if (v.compare(0, 6, "custom") == 0) {
      add(v);
      continue;
    }
    std::stringstream ss(v == "all" ? "none,minimal,selective,full" : v);
    std::string item;
    while (std::getline(ss, item, ',')) add(item);
  }
  if (out.empty()) throw UsageError("shard-search: --remat names no policy");
  return out;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path);
}

int shard_search_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("shard-search options");
  add_common(opts);
  add_kernel_options(opts);
  opts.add_options()("remat", po::value<std::vector<std::string>>()->composing(),
                     "train: remat policies to try: names, comma separated, or all (none,minimal,selective,full); "
                     "repeat the option for MaxText's custom:NAME=PLACE,... (default none)")(
      "no-sequence-parallel", po::bool_switch(), "do not try Megatron sequence parallelism with tensor > 1")(
      "split-dims", po::bool_switch(),
      "also try meshes whose axes take part of a slice dimension (one dimension split in two: fsdp=64,tensor=4 on "
      "16x16; or blocks of neighbours for the last axis: fsdp=64@x/2*y/2,tensor=4@x%2*y%2)")(
      "sample-layers", po::value<int>()->default_value(0),
      "simulate N and 2N decoder layers and extrapolate to the model's layer count (0 = every layer)")(
      "jobs", po::value<int>()->default_value(0), "simulations at a time (0 = all cores)")(
      "timeout", po::value<double>()->default_value(0), "seconds per simulation before it is stopped (0 = none)")(
      "out", po::value<std::string>()->default_value("results/shard-search"), "output directory")(
      "top", po::value<int>()->default_value(0), "rows of the ranking printed (0 = all)")(
      "report", po::bool_switch(), "write report.html (bar chart of step time per mesh)");
  po::positional_options_description pos;
  po::variables_map vm;
  if (!parse_command_args(
          "shard-search",
          "tpusim shard-search --model NAME|FILE --arch CFG --slice AxBxC --phase train --batch B --seq S", args, opts,
          pos, vm, ctx))
    return 0;
  check_sizes("shard-search", vm);
  codesign::ShardSearchOptions o;
  o.model = vm["model"].as<std::string>();
  o.arch = vm["arch"].as<std::string>();
  o.slice = vm["slice"].as<std::string>();
  o.sets = sets_of(vm);
  if (!models::parse_phase(vm["phase"].as<std::string>(), &o.phase))
    throw UsageError("shard-search: unknown --phase '" + vm["phase"].as<std::string>() +
                     "'; expected train, prefill, decode or infer");
  // Unsaid, train, or infer for a ResNet, DLRM or UNet (which do not train).
  if (vm["phase"].defaulted()) o.phase = models::default_phase(models::load_model(o.model).family, o.phase);
  o.batch = vm["batch"].as<std::int64_t>();
  o.seq = vm["seq"].as<std::int64_t>();
  o.context = vm["context"].as<std::int64_t>();
  if (vm.count("remat")) {
    if (o.phase != models::Phase::train) throw UsageError("shard-search: --remat applies to --phase train only");
    o.remats = remat_list(vm["remat"].as<std::vector<std::string>>());
  }
  models::PhaseOptions kernels;
  kernels.phase = o.phase;
  kernel_options("shard-search", vm, kernels);
  o.fused_attention_backward = kernels.fused_attention_backward;
  o.moe_capacity_factor = kernels.moe_capacity_factor;
  o.attention_kernel = kernels.attention_kernel;
  o.optimizer_dtype = kernels.optimizer_dtype;
  o.attention_blocks = kernels.attention_blocks;
  o.sequence_parallel_variants = !vm["no-sequence-parallel"].as<bool>();
  o.split_dims = vm["split-dims"].as<bool>();
  o.sample_layers = vm["sample-layers"].as<int>();
  if (o.sample_layers < 0 || o.sample_layers > 100000)
    throw UsageError("shard-search: --sample-layers must be in [0, 100000], found " + std::to_string(o.sample_layers));
  o.jobs = vm["jobs"].as<int>();
  if (o.jobs < 0 || o.jobs > 1024)
    throw UsageError("shard-search: --jobs must be in [0, 1024], found " + std::to_string(o.jobs));
  o.timeout = vm["timeout"].as<double>();
  if (!(o.timeout >= 0 && o.timeout <= 1e6))
    throw UsageError("shard-search: --timeout must be in [0, 1e6] seconds, found " + std::to_string(o.timeout));
  o.top = vm["top"].as<int>();
  if (o.top < 0) throw UsageError("shard-search: --top must be >= 0, found " + std::to_string(o.top));
  o.out_dir = vm["out"].as<std::string>();
  check_output_dir("shard-search: --out", o.out_dir);
  o.config_path = ctx.global.config_path;
  o.progress = &ctx.err;
  o.progress_tty = ::isatty(2) != 0;
  codesign::ShardSearchResult r;
  try {
    r = codesign::run_shard_search(o);
  } catch (const std::invalid_argument& e) {  // a slice shape the generation cannot build
    throw UsageError(std::string("shard-search: ") + e.what());
  }
  codesign::print_shard_search(r, ctx.out);
  std::filesystem::create_directories(o.out_dir);
  write_text(o.out_dir + "/shard_search.csv", codesign::shard_search_csv(r));
  std::string files = o.out_dir + "/shard_search.csv";
  if (vm["report"].as<bool>()) {
    write_text(o.out_dir + "/report.html", codesign::shard_search_html(r));
    files += ", " + o.out_dir + "/report.html";
  }
  ctx.out << "results: " << files << "\n";
  return 0;
}

int shard_point_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("shard-search point options");
  add_common(opts);
  add_kernel_options(opts);
  opts.add_options()("mesh", po::value<std::string>()->required(), "mesh axes over the slice, e.g. fsdp=16,tensor=4")(
      "remat", po::value<std::string>(), "a remat policy, as tpusim run --remat takes it")(
      "sequence-parallel", po::bool_switch(), "Megatron sequence parallelism on the tensor axis")(
      "layers", po::value<std::int64_t>(), "simulate this many decoder layers instead of the model's")(
      "out", po::value<std::string>()->required(), "output directory");
  po::positional_options_description pos;
  po::variables_map vm;
  if (!parse_command_args("shard-search point",
                          "tpusim shard-search point --model M --arch A --slice S --mesh X --out DIR", args, opts, pos,
                          vm, ctx))
    return 0;
  check_sizes("shard-search point", vm);
  const std::string out = vm["out"].as<std::string>();
  check_output_dir("shard-search point: --out", out);
  const std::string arch_name = vm["arch"].as<std::string>();
  const arch::TpuConfig cfg = load_tpu_config(arch_name, sets_of(vm), ctx.global.search_path());
  models::ModelSpec spec = models::load_model(vm["model"].as<std::string>());
  models::PhaseOptions p;
  read_phase_options(vm, "shard-search point", p);
  remat_option("shard-search point", vm, p);
  kernel_options("shard-search point", vm, p);
  p.sequence_parallel = vm["sequence-parallel"].as<bool>();
  p.mesh = workloads::parse_mesh(vm["mesh"].as<std::string>(), models::mesh_axis_names());
  RunOptions ro;
  ro.sim.progress = false;
  ro.sim.slice = vm["slice"].as<std::string>();
  const arch::ici::Slice slice(cfg.ici, ro.sim.slice, false);
  try {
    map_mesh(slice, p.mesh);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("shard-search point: ") + e.what());
  }
  ro.sim.mesh = p.mesh;
  // Fit is the full model's, whatever the layers simulated.
  const ModelFit fit = check_model_fit(spec, p, cfg);
  if (!fit.report.fits) throw UsageError("shard-search point: " + fit.report.message);
  if (vm.count("layers")) {
    const std::int64_t layers = vm["layers"].as<std::int64_t>();
    if (layers < 1 || layers > spec.transformer.layers)
      throw UsageError("shard-search point: --layers must be in [1, " + std::to_string(spec.transformer.layers) +
                       "], found " + std::to_string(layers));
    spec.transformer.layers = layers;
  }
  const workloads::Workload wl = models::generate(spec, p);
  RunReport r = run_workload(arch_name, cfg, wl, ro);
  if (p.phase == models::Phase::train || p.phase == models::Phase::prefill) r.tokens = p.batch * p.seq_len;
  if (p.phase == models::Phase::decode) r.tokens = p.batch;
  write_results(r, out, {});
  return 0;
}

}  // namespace

void register_shard_search_commands() {
  register_command("shard-search", "Rank the meshes (and remat policies) of a model on a slice by simulated step time",
                   shard_search_cmd);
  register_command("shard-search point", "(used by shard-search) simulate one mesh", shard_point_cmd);
}

}  // namespace tpusim::sim
