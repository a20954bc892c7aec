// `tpusim run`: one simulation of a workload (a file or a built-in
// micro-workload) on one chip, results written to --out and summarised on
// stdout.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "arch/ici/topology.h"
#include "models/sharding.h"
#include "models/zoo.h"
#include "sim/cli/cli.h"
#include "sim/cli/lora_options.h"
#include "sim/cli/quant_options.h"
#include "sim/cli/step_options.h"
#include "sim/engine/slice_setup.h"
#include "sim/report/run_html.h"
#include "sim/results/results_writer.h"
#include "sim/run/model_fit.h"
#include "sim/run/run.h"
#include "workloads/builtin.h"
#include "workloads/io/scalesim_csv.h"
#include "workloads/io/workload_file.h"

namespace tpusim::sim {

namespace po = boost::program_options;

namespace {

int run_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("run options");
  opts.add_options()("arch", po::value<std::string>()->default_value("v5e"), "TPU generation name or config file")(
      "workload", po::value<std::string>(), "workload file (YAML/JSON, or SCALE-Sim CSV)")(
      "gemm", po::value<std::string>(), "built-in matmul M,K,N, or m=,k=,n= with bm=,bk=,bn= (block sizes)")(
      "conv", po::value<std::string>(), "built-in conv2d N,H,W,C,KH,KW,OC,stride,pad")(
      "attention", po::value<std::string>(),
      "built-in attention b=,q=,kv=,h=,kvh=,d=,causal= (window=, bq=, bkv=, seqs=, latent=, dv=)")(
      "model", po::value<std::string>(), "a model of the zoo (tpusim model list)")(
      "phase", po::value<std::string>()->default_value("decode"),
      "model phase: prefill, decode, train, infer (default: decode, or infer for a model without decode)")(
      "batch", po::value<std::int64_t>()->default_value(1), "model batch")(
      "seq", po::value<std::int64_t>()->default_value(2048), "model sequence length (prefill, train)")(
      "context", po::value<std::int64_t>()->default_value(2048), "model context length (decode)")(
      "image", po::value<std::int64_t>()->default_value(0),
      "model image size in pixels (vit, resnet, unet; default 0: the model's own)")(
      "dtype", po::value<std::string>()->default_value("bf16"),
      "dtype of built-in workloads, --model (weights, activations and KV cache) and SCALE-Sim imports")(
      "set", po::value<std::vector<std::string>>()->composing(), "override a config key: key=value")(
      "out", po::value<std::string>()->default_value("results/run"), "output directory")(
      "trace", po::bool_switch(), "write trace.json (Chrome trace events, opens in Perfetto)")(
      "report", po::bool_switch(), "write report.html: timeline, roofline, time by kind, HBM bandwidth")(
      "vcd", po::value<std::string>(), "write a SystemC VCD of the main signals")(
      "slice", po::value<std::string>(),
      "multi-chip slice shape, e.g. 4x4 or 4x4x4; N*SHAPE is N slices joined by the data-centre network, "
      "e.g. 4*16x16 (default: one chip)")("mesh", po::value<std::string>(),
                                          "mesh axes over the slice, e.g. fsdp=16,tensor=4; an axis may take part of a "
                                          "dimension, and name=size@parts places it (fsdp=64@x/2*y/2,tensor=4@x%2*y%2; "
                                          "docs/ici.md) (default: x,y,z)")(
      "sequence-parallel", po::bool_switch(), "--model: Megatron sequence parallelism on the mesh's tensor axis")(
      "layers", po::value<std::int64_t>(),
      "--model (a decoder): simulate this many of its decoder layers; the fit check is the whole model's (layer "
      "sampling, docs/validation.md)")("recompute", po::bool_switch(), "--model train: the same as --remat full")(
      "remat", po::value<std::string>(),
      "--model train: rematerialization policy none|minimal|selective|full|qkv_proj_offloaded|minimal_offloaded, or "
      "MaxText's custom:NAME=PLACE,... (names decoder_layer_input, query_proj, key_proj, value_proj, qkv_proj, "
      "context, out_proj, mlpwi, mlpwi_0, mlpwi_1, mlpwo; places remat, device, offload; docs/remat.md)")(
      "twisted", po::bool_switch(), "twisted torus wiring (v4/v5p shapes where it applies)")(
      "all-chips", po::bool_switch(), "simulate every chip of the slice, not one standing for all")(
      "quiet", po::bool_switch(), "no progress lines on stderr for long runs")(
      "no-fusion", po::bool_switch(), "do not fuse elementwise ops into their producers")(
      "no-cmem", po::bool_switch(), "keep every tensor in HBM on chips with CMEM (v4, v4i)")(
      "no-collective-matmul", po::bool_switch(),
      "multi-chip: matmuls wait for their whole all-gather (and reduce-scatters for their whole matmul) "
      "instead of XLA's collective matmul (docs/architecture.md)")(
      "unidirectional-collective-matmul", po::bool_switch(),
      "multi-chip: collective matmul ring steps go one way round the ring only")(
      "collective-matmul-min-mib", po::value<double>()->default_value(256),
      "multi-chip: smallest collective (MiB, its larger side) lowered as a collective matmul (XLA's "
      "threshold_for_windowed_einsum_mib)")("top", po::value<int>()->default_value(10),
                                            "operators shown in the stdout table")(
      "max-sim-time", po::value<double>()->default_value(3600),
      "stop with an error once this many seconds are simulated and the run has not finished (0 = no limit)")(
      "max-events", po::value<double>()->default_value(static_cast<double>(kDefaultMaxEvents), "1e10"),
      "refuse, before simulating, a lowered program of more events (instructions plus DMA requests; DMA transfers with "
      "hbm.model=calibrated) "
      "than this (0 = no limit)");
  add_kernel_options(opts);
  add_quant_options(opts);
  add_lora_options(opts);
  po::variables_map vm;
  if (!parse_command_args("run",
                          "tpusim run --arch <name|file> (--workload FILE | --gemm M,K,N | "
                          "--conv ... | --attention ...) [options]",
                          args, opts, {}, vm, ctx))
    return 0;
  // Output paths are checked before anything is simulated: a mistake in
  // them must not cost a whole run and then end as an internal error.
  const std::string out = vm["out"].as<std::string>();
  check_output_dir("run: --out", out);
  if (vm.count("vcd")) check_vcd_path("run: --vcd", vm["vcd"].as<std::string>());
  // --image's default, 0, is the model's own size; given, it is a size.
  for (const char* k : {"batch", "seq", "context", "image"})
    if (!(std::string(k) == "image" && vm[k].defaulted()) &&
        (vm[k].as<std::int64_t>() < 1 || vm[k].as<std::int64_t>() > (std::int64_t{1} << 40)))
      throw UsageError(std::string("run: --") + k + " must be in [1, 2^40], found " +
                       std::to_string(vm[k].as<std::int64_t>()));
  const int sources = static_cast<int>(vm.count("workload") + vm.count("gemm") + vm.count("conv") +
                                       vm.count("attention") + vm.count("model"));
  if (sources != 1) throw UsageError("run: give exactly one of --workload, --model, --gemm, --conv, --attention");
  const auto dtype = arch::parse_dtype(vm["dtype"].as<std::string>());
  if (!dtype) throw UsageError("run: unknown --dtype '" + vm["dtype"].as<std::string>() + "'");
  if (!vm["dtype"].defaulted() && vm.count("workload") &&
      !workloads::is_scalesim_path(vm["workload"].as<std::string>()))
    throw UsageError(
        "run: --dtype applies to --model, --gemm, --conv, --attention and SCALE-Sim CSV topologies; "
        "a workload file gives each tensor its dtype");
  if (vm["top"].as<int>() < 0)
    throw UsageError("run: --top must be >= 0, found " + std::to_string(vm["top"].as<int>()));
  if (quant_options_given(vm) && !vm.count("model"))
    throw UsageError(
        "run: --weight-dtype, --act-dtype, --kv-dtype, --weight-scales, --act-quant, --int8-training, "
        "--training-quant and --sparsity need --model (workload files set them per tensor and op)");

  // --mesh, parsed once: the model zoo's sharding and the slice mapping
  // read the same MeshSpec; with --model only the zoo's axis names.
  workloads::MeshSpec mesh;
  if (vm.count("mesh")) {
    if (!vm.count("slice")) throw UsageError("run: --mesh needs --slice");
    const std::string text = vm["mesh"].as<std::string>();
    mesh = workloads::parse_mesh(text, vm.count("model") ? models::mesh_axis_names() : std::vector<std::string>{});
    if (mesh.empty()) throw UsageError("run: --mesh '" + text + "' names no axes (e.g. --mesh fsdp=16,tensor=4)");
  }

  const std::string arch_name = vm["arch"].as<std::string>();
  std::vector<std::string> sets;
  if (vm.count("set")) sets = vm["set"].as<std::vector<std::string>>();
  const arch::TpuConfig cfg = load_tpu_config(arch_name, sets, ctx.global.search_path());

  workloads::Workload wl;
  std::int64_t tokens = 0;  // RunReport::tokens
  if (vm.count("workload")) {
    const std::string f = vm["workload"].as<std::string>();
    check_input_file("run: --workload", f);
    const bool csv = workloads::is_scalesim_path(f);
    // SCALE-Sim topologies have no dtype: every tensor takes --dtype.
    workloads::ScaleSimOptions so;
    so.dtype = *dtype;
    wl = csv ? workloads::read_scalesim_csv(f, so) : workloads::read_workload_file(f);
  } else if (vm.count("model")) {
    models::ModelSpec spec = models::load_model(vm["model"].as<std::string>());
    models::PhaseOptions po;
    read_phase_options(vm, "run", po);
    // Unsaid, the phase is decode for a decoder, the family's own for the
    // others (infer for a ResNet or UNet, which have no decode).
    if (vm["phase"].defaulted()) po.phase = models::default_phase(spec.family, po.phase);
    read_quant_options(vm, "run", *dtype, po);
    // Sharded over the mesh: the per-chip program of every chip.
    po.mesh = mesh;
    po.sequence_parallel = vm["sequence-parallel"].as<bool>();
    kernel_options("run", vm, po);
    remat_option("run", vm, po);
    po.lora = read_lora_options(vm, "run");
    const ModelFit fit = check_model_fit(spec, po, cfg);
    if (!fit.report.fits) throw UsageError("run: " + fit.report.message);
    if (fit.plan_checked && !vm["quiet"].as<bool>()) ctx.err << "run: note: " << fit.note << "\n";
    if (vm.count("layers")) {
      const std::int64_t layers = vm["layers"].as<std::int64_t>();
      if (spec.family != models::Family::decoder)
        throw UsageError("run: --layers needs a decoder model; " + spec.name + " is a " +
                         models::family_name(spec.family));
      if (layers < 1 || layers > spec.transformer.layers)
        throw UsageError("run: --layers must be in [1, " + std::to_string(spec.transformer.layers) + "], found " +
                         std::to_string(layers));
      spec.transformer.layers = layers;
    }
    wl = models::generate(spec, po);
    // Tokens the run processes, for tokens per joule: one per sequence in
    // a decode step, every position in prefill and train; infer (CNNs,
    // encoders) counts none.
    if (po.phase == models::Phase::decode) tokens = po.batch;
    if (po.phase == models::Phase::prefill || po.phase == models::Phase::train) tokens = po.batch * po.seq_len;
  } else if (vm.count("gemm")) {
    wl = workloads::builtin::parse_gemm(vm["gemm"].as<std::string>(), *dtype);
  } else if (vm.count("conv")) {
    wl = workloads::builtin::parse_conv(vm["conv"].as<std::string>(), *dtype);
  } else {
    wl = workloads::builtin::parse_attention(vm["attention"].as<std::string>(), *dtype);
  }

  RunOptions ro;
  if (vm["sequence-parallel"].as<bool>() && !vm.count("model"))
    throw UsageError("run: --sequence-parallel needs --model");
  if (vm["recompute"].as<bool>() && !vm.count("model")) throw UsageError("run: --recompute needs --model");
  if (vm["fused-attention-backward"].as<bool>() && !vm.count("model"))
    throw UsageError("run: --fused-attention-backward needs --model");
  if (vm.count("remat") && !vm.count("model")) throw UsageError("run: --remat needs --model");
  if (vm.count("layers") && !vm.count("model")) throw UsageError("run: --layers needs --model");
  if (!vm["moe-capacity-factor"].defaulted() && !vm.count("model"))
    throw UsageError("run: --moe-capacity-factor needs --model");
  if (!vm["attention-kernel"].defaulted() && !vm.count("model"))
    throw UsageError("run: --attention-kernel needs --model");
  if (!vm["optimizer-dtype"].defaulted() && !vm.count("model"))
    throw UsageError("run: --optimizer-dtype needs --model");
  if (vm.count("attention-blocks") && !vm.count("model"))
    throw UsageError(
        "run: --attention-blocks needs --model (a workload sets block_q and block_kv on its attention "
        "op; --attention takes bq= and bkv=)");
  // The model's shape and LoRA flags mean nothing to a file or a built-in
  // workload: refused rather than ignored, so that `--gemm ... --batch 8`
  // or `--phase train` is not taken for what it did not do.
  for (const char* k : {"phase", "batch", "seq", "context", "image", "lora-rank", "lora-targets"})
    if (!vm[k].defaulted() && !vm.count("model")) throw UsageError(std::string("run: --") + k + " needs --model");
  if (vm["all-chips"].as<bool>() && !vm.count("slice")) throw UsageError("run: --all-chips needs --slice");
  if (vm.count("slice")) {
    ro.sim.slice = vm["slice"].as<std::string>();
    ro.sim.twisted = vm["twisted"].as<bool>();
    ro.sim.all_chips = vm["all-chips"].as<bool>();
    const arch::ici::Slice slice(cfg.ici, ro.sim.slice, ro.sim.twisted);  // arch::ConfigError
    // Refused before lowering, which can itself take a while.
    if (ro.sim.all_chips) check_all_chips(ro.sim.slice, slice.num_chips());  // arch::ConfigError
    if (!mesh.empty()) {
      try {
        map_mesh(slice, mesh);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("run: ") + e.what());
      }
      ro.sim.mesh = mesh;
    }
  }
  ro.lowering.fusion = !vm["no-fusion"].as<bool>();
  ro.lowering.cmem = !vm["no-cmem"].as<bool>();
  ro.lowering.collective_matmul = !vm["no-collective-matmul"].as<bool>();
  ro.lowering.collective_matmul_bidirectional = !vm["unidirectional-collective-matmul"].as<bool>();
  const double cm_mib = vm["collective-matmul-min-mib"].as<double>();
  if (!(cm_mib >= 0 && cm_mib <= 1e9))  // NaN fails both
    throw UsageError("run: --collective-matmul-min-mib must be a number of MiB in [0, 1e9], found " +
                     std::to_string(cm_mib));
  ro.lowering.collective_matmul_min_bytes = static_cast<std::uint64_t>(cm_mib * 1048576.0);
  ro.sim.progress = !vm["quiet"].as<bool>();
  if (vm.count("vcd")) ro.sim.vcd_path = vm["vcd"].as<std::string>();
  ro.sim.max_sim_seconds = vm["max-sim-time"].as<double>();
  if (!(ro.sim.max_sim_seconds >= 0 && ro.sim.max_sim_seconds <= 1e6))  // NaN fails both
    throw UsageError("run: --max-sim-time must be a number of seconds in [0, 1e6], found " +
                     std::to_string(ro.sim.max_sim_seconds));
  const double max_events = vm["max-events"].as<double>();
  if (!(max_events >= 0 && max_events <= 1e19 && max_events == std::floor(max_events)))  // NaN fails
    throw UsageError("run: --max-events must be a whole number in [0, 1e19], found " + std::to_string(max_events));
  ro.sim.max_events = static_cast<std::uint64_t>(max_events);
  RunReport r = run_workload(arch_name, cfg, wl, ro);
  r.tokens = tokens;
  WriteOptions wo;
  wo.trace = vm["trace"].as<bool>();
  // Computed once for the files, the report and the summary: on a whole
  // training step the metrics (time breakdown, energy profile) cost about
  // as much as a tenth of the simulation.
  const RunMetrics m = compute_metrics(r);
  write_results(r, m, out, wo);
  if (vm["report"].as<bool>()) write_run_report(r, m, out);
  print_summary(r, m, ctx.out, vm["top"].as<int>());
  ctx.out << "results: " << out << "\n";
  return 0;
}

}  // namespace

void register_run_command() {
  register_command("run", "Simulate a workload on one chip and write CSV results", run_cmd);
}

}  // namespace tpusim::sim
