// `tpusim model list|show|export`: the model zoo from the command line.
// list prints the zoo's models; show prints a model's analytics (parameter
// counts, FLOPs per token or sample, KV-cache bytes per token, weight bytes
// per dtype); export writes the workload of a phase as YAML or JSON.
// Model errors (bad file, unknown model, options the model does not take)
// exit with code 2 like other configuration errors.
// Leaves out: running the exported workload (that is `tpusim run`).
#include <iomanip>
#include <iostream>
#include <sstream>

#include "models/quantize.h"
#include "models/sharding.h"
#include "models/zoo.h"
#include "sim/cli/cli.h"
#include "sim/cli/quant_options.h"
#include "sim/cli/step_options.h"
#include "workloads/io/workload_file.h"

namespace tpusim::sim {

namespace {

namespace po = boost::program_options;
using namespace tpusim::models;

std::string zoo_dir(const po::variables_map& vm) {
  return vm.count("zoo") ? vm["zoo"].as<std::string>() : default_zoo_dir();
}

std::string human(double x) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(3);
  if (x >= 1e12)
    s << x / 1e12 << " T";
  else if (x >= 1e9)
    s << x / 1e9 << " G";
  else if (x >= 1e6)
    s << x / 1e6 << " M";
  else if (x >= 1e3)
    s << x / 1e3 << " k";
  else
    s << x << " ";
  return s.str();
}

int report(const ModelError& e, CommandContext& ctx) {
  ctx.err << "tpusim: model error:\n" << e.what() << "\n";
  return 2;
}

arch::DType dtype_opt(const po::variables_map& vm, const char* key) {
  std::string s = vm[key].as<std::string>();
  auto d = arch::parse_dtype(s);
  if (!d)
    throw UsageError(std::string("--") + key + ": expected one of f32, bf16, fp8_e4m3, fp8_e5m2, int8, int4, found '" +
                     s + "'");
  return *d;
}

int list_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("Options");
  opts.add_options()("zoo", po::value<std::string>(), "model directory (default: the source tree's models/zoo)");
  po::variables_map vm;
  if (!parse_command_args("model list", "tpusim model list [--zoo DIR]", args, opts, {}, vm, ctx)) return 0;
  try {
    for (const auto& n : list_models(zoo_dir(vm))) {
      ModelSpec m = load_model(n, zoo_dir(vm));
      ctx.out << std::left << std::setw(16) << n << std::setw(9) << family_name(m.family)
              << human(static_cast<double>(count_params(m).total)) << "params\n";
    }
  } catch (const ModelError& e) {
    return report(e, ctx);
  }
  return 0;
}

int show_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("Options");
  opts.add_options()("model", po::value<std::string>()->required(), "zoo name or model file")(
      "zoo", po::value<std::string>(), "model directory")("context", po::value<std::int64_t>()->default_value(4096),
                                                          "decoders: KV-cache tokens for FLOPs per token")(
      "dtype", po::value<std::string>()->default_value("bf16"), "weights, activations and KV cache");
  add_quant_options(opts);
  po::variables_map vm;
  if (!parse_command_args("model show", "tpusim model show <name> [--context N]", args, opts, {{"model", 1}}, vm, ctx))
    return 0;
  try {
    ModelSpec m = load_model(vm["model"].as<std::string>(), zoo_dir(vm));
    ParamCounts c = count_params(m);
    auto& o = ctx.out;
    PhaseOptions q;
    q.phase = Phase::train;  // every quantization option applies (int8 training too)
    read_quant_options(vm, "model show", dtype_opt(vm, "dtype"), q);
    o << "model:            " << m.name << " (" << family_name(m.family) << ", " << m.file << ")\n";
    o << "parameters:       " << c.total << " (" << human(static_cast<double>(c.total)) << ")\n";
    // Transformers count per token; the other families per sample (an image, a query).
    const bool tokens = is_transformer(m.family);
    o << (tokens ? "active per token: " : "active / sample:  ") << c.active << " ("
      << human(static_cast<double>(c.active)) << "), " << c.active_compute() << " excluding lookup-only embeddings\n";
    if (m.family == Family::decoder) {
      std::int64_t ctxlen = vm["context"].as<std::int64_t>();
      o << "FLOPs per token:  " << human(flops_per_token(m, ctxlen)) << "FLOP at context " << ctxlen << " (attention "
        << human(attention_flops_per_token(m, ctxlen)) << "FLOP)\n";
      o << "KV cache / token: " << kv_cache_bytes_per_token(m, q.kv_dtype) << " bytes (" << arch::dtype_name(q.kv_dtype)
        << ")\n";
    } else {
      PhaseOptions p;
      p.phase = Phase::infer;
      p.seq_len = m.family == Family::encoder ? std::min<std::int64_t>(512, m.transformer.max_context) : p.seq_len;
      o << "FLOPs per sample: " << human(flops_per_sample(m, p)) << "FLOP";
      if (m.family == Family::encoder) o << " at sequence " << p.seq_len;
      o << "\n";
    }
    o << "weight bytes:    ";
    for (const auto& w : weight_bytes(m))
      o << " " << arch::dtype_name(w.dtype) << " " << human(static_cast<double>(w.bytes)) << "B;";
    o << "\n";
    {
      // The chosen weight dtype as stored: scales and N:M compression.
      const workloads::QuantScales sc = arch::dtype_bits(q.weight_dtype) <= 8
                                            ? q.quant.weight_scales.value_or(default_weight_scales(q.weight_dtype))
                                            : workloads::QuantScales{};
      o << "stored weights:   " << human(static_cast<double>(stored_weight_bytes(q, c.total, m.transformer.hidden)))
        << "B (" << arch::dtype_name(q.weight_dtype) << ", scales " << workloads::scale_kind_name(sc.kind);
      if (sc.kind == workloads::ScaleKind::block) o << ":" << sc.group;
      if (!q.quant.weight_sparsity.dense())
        o << ", " << q.quant.weight_sparsity.n << ":" << q.quant.weight_sparsity.m << " sparse";
      o << "; activations " << arch::dtype_name(q.activation_dtype) << ")\n";
    }
  } catch (const ModelError& e) {
    return report(e, ctx);
  }
  return 0;
}

int export_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("Options");
  opts.add_options()("model", po::value<std::string>()->required(), "zoo name or model file")(
      "zoo", po::value<std::string>(), "model directory")("phase", po::value<std::string>()->required(),
                                                          "prefill | decode | train | infer")(
      "batch", po::value<std::int64_t>()->default_value(1), "sequences / samples")(
      "seq", po::value<std::int64_t>()->default_value(2048), "prefill/train/encoder sequence length")(
      "context", po::value<std::int64_t>()->default_value(2048), "decode: tokens in the KV cache")(
      "image", po::value<std::int64_t>()->default_value(0), "vit/resnet/unet image size in pixels (0: the model's)")(
      "dtype", po::value<std::string>()->default_value("bf16"), "weights, activations and KV cache")(
      "recompute", po::bool_switch(), "train: the same as --remat full")(
      "remat", po::value<std::string>(),
      "train: rematerialization policy "
      "none|minimal|selective|full|qkv_proj_offloaded|minimal_offloaded|custom:NAME=PLACE,... (docs/remat.md)")(
      "mesh", po::value<std::string>(), "per-chip program over a device mesh, e.g. fsdp=4,tensor=4,sequence=2")(
      "sequence-parallel", po::bool_switch(), "Megatron sequence parallelism on the mesh's tensor axis")(
      "format", po::value<std::string>()->default_value("yaml"), "yaml | json");
  po::variables_map vm;
  add_kernel_options(opts);
  add_quant_options(opts);
  if (!parse_command_args(
          "model export",
          "tpusim model export <name> --phase decode --batch 8 --context 4096 [--seq N] [--format yaml|json]", args,
          opts, {{"model", 1}}, vm, ctx))
    return 0;
  PhaseOptions p;
  if (!parse_phase(vm["phase"].as<std::string>(), &p.phase))
    throw UsageError("--phase: expected prefill, decode, train or infer, found '" + vm["phase"].as<std::string>() +
                     "'");
  const std::string fmt = vm["format"].as<std::string>();
  if (fmt != "yaml" && fmt != "json") throw UsageError("--format: expected yaml or json, found '" + fmt + "'");
  p.batch = vm["batch"].as<std::int64_t>();
  p.seq_len = vm["seq"].as<std::int64_t>();
  p.context = vm["context"].as<std::int64_t>();
  p.image_size = vm["image"].as<std::int64_t>();
  read_quant_options(vm, "model export", dtype_opt(vm, "dtype"), p);
  remat_option("model export", vm, p);
  kernel_options("model export", vm, p);
  p.sequence_parallel = vm["sequence-parallel"].as<bool>();
  try {
    if (vm.count("mesh")) p.mesh = workloads::parse_mesh(vm["mesh"].as<std::string>(), mesh_axis_names());
    ModelSpec m = load_model(vm["model"].as<std::string>(), zoo_dir(vm));
    workloads::Workload w = generate(m, p);
    ctx.out << (fmt == "json" ? workloads::workload_to_json(w) : workloads::workload_to_yaml(w));
  } catch (const ModelError& e) {
    return report(e, ctx);
  }
  return 0;
}

}  // namespace

void register_model_commands() {
  register_command("model list", "List the reference models of the zoo", list_cmd);
  register_command("model show", "Show a model's parameters, FLOPs and memory figures", show_cmd);
  register_command("model export", "Write a model's workload for a phase (YAML or JSON)", export_cmd);
}

}  // namespace tpusim::sim
