// `tpusim check`: is a model TPU-friendly, and what would make it so
// (sim/codesign/check.h). `tpusim check point` is the one simulation of a
// check's point that check runs in a child process: a zoo model or model
// file with changes (--change key=value) and weight dtype applied.
#include <sstream>

#include "arch/ici/topology.h"
#include "models/sharding.h"
#include "models/zoo.h"
#include "sim/cli/cli.h"
#include "sim/cli/quant_options.h"
#include "sim/codesign/candidates.h"
#include "sim/codesign/check.h"
#include "sim/engine/slice_setup.h"
#include "sim/results/results_writer.h"
#include "sim/run/model_fit.h"
#include "sim/run/run.h"

namespace tpusim::sim {

namespace po = boost::program_options;

namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

void check_sizes(const char* cmd, const po::variables_map& vm) {
  for (const char* k : {"batch", "seq", "context"})
    if (vm[k].as<std::int64_t>() < 1 || vm[k].as<std::int64_t>() > (std::int64_t{1} << 40))
      throw UsageError(std::string(cmd) + ": --" + k + " must be in [1, 2^40], found " +
                       std::to_string(vm[k].as<std::int64_t>()));
}

void add_model_options(po::options_description& opts) {
  opts.add_options()("model", po::value<std::string>()->required(), "a zoo model name or a model file")(
      "batch", po::value<std::int64_t>()->default_value(8), "batch (sequences)")(
      "seq", po::value<std::int64_t>()->default_value(2048), "sequence length (prefill, train)")(
      "context", po::value<std::int64_t>()->default_value(2048), "context length (decode)")(
      "slice", po::value<std::string>(), "simulate on a slice, e.g. 2x2 (needs --mesh)")(
      "mesh", po::value<std::string>(), "mesh axes over the slice, e.g. tensor=4");
}

int check_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("check options");
  add_model_options(opts);
  opts.add_options()("arch", po::value<std::string>()->default_value("v5e,v6e,v7"),
                     "generations to check, comma separated (names or config files)")(
      "phase", po::value<std::string>()->default_value("decode"),
      "phases, comma separated: prefill, decode, train, infer (default: decode for a decoder, infer for other "
      "models)")("out", po::value<std::string>()->default_value("results/check"),
                 "output directory (check.csv, report.html)")("jobs", po::value<int>()->default_value(0),
                                                              "simulations at a time (0 = all cores)")(
      "timeout", po::value<double>()->default_value(0), "seconds per simulation before it is stopped (0 = none)")(
      "no-simulate", po::bool_switch(), "analysis only: simulate neither the model nor the candidates")(
      "report", po::bool_switch(), "write report.html (always written; accepted for symmetry with run)");
  po::variables_map vm;
  if (!parse_command_args("check", "tpusim check --model FILE|NAME [--arch v5e,v6e,v7] [--phase decode,prefill]", args,
                          opts, {}, vm, ctx))
    return 0;
  check_sizes("check", vm);
  codesign::CheckOptions o;
  o.model = vm["model"].as<std::string>();
  o.archs = split_list(vm["arch"].as<std::string>());
  if (o.archs.empty()) throw UsageError("check: --arch names no generation (e.g. --arch v5e,v6e)");
  // Unsaid, the phase is the one the model's family serves: decode for a
  // decoder, infer for the others (which have no decode).
  const auto phases =
      vm["phase"].defaulted()
          ? std::vector<std::string>{models::phase_name(
                models::default_phase(models::load_model(o.model).family, models::Phase::decode))}
          : split_list(vm["phase"].as<std::string>());
  if (phases.empty()) throw UsageError("check: --phase names no phase (e.g. --phase decode)");
  for (const auto& p : phases) {
    models::Phase ph;
    if (!models::parse_phase(p, &ph))
      throw UsageError("check: unknown --phase '" + p + "'; expected prefill, decode, train or infer");
    o.phases.push_back(ph);
  }
  o.batch = vm["batch"].as<std::int64_t>();
  o.seq = vm["seq"].as<std::int64_t>();
  o.context = vm["context"].as<std::int64_t>();
  if (vm.count("slice") != vm.count("mesh")) throw UsageError("check: --slice and --mesh go together");
  if (vm.count("slice")) {
    o.slice = vm["slice"].as<std::string>();
    o.mesh = vm["mesh"].as<std::string>();
    // Checked here, before any child runs: a bad mesh is one error, not
    // one per simulation.
    (void)workloads::parse_mesh(o.mesh, models::mesh_axis_names());  // workloads::MeshError
  }
  o.out_dir = vm["out"].as<std::string>();
  check_output_dir("check: --out", o.out_dir);
  o.jobs = vm["jobs"].as<int>();
  if (o.jobs < 0 || o.jobs > 1024)
    throw UsageError("check: --jobs must be in [0, 1024], found " + std::to_string(o.jobs));
  o.timeout = vm["timeout"].as<double>();
  if (!(o.timeout >= 0 && o.timeout <= 1e6))
    throw UsageError("check: --timeout must be in [0, 1e6] seconds, found " + std::to_string(o.timeout));
  o.simulate = !vm["no-simulate"].as<bool>();
  o.config_path = ctx.global.config_path;
  o.progress = &ctx.err;
  codesign::CheckResult r = codesign::run_check(o);
  codesign::print_check(r, ctx.out);
  codesign::write_check_reports(r, o.out_dir);
  ctx.out << "results: " << o.out_dir << "/check.csv, " << o.out_dir << "/report.html\n";
  return 0;
}

int check_point_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("check point options");
  add_model_options(opts);
  opts.add_options()("arch", po::value<std::string>()->required(), "generation name or config file")(
      "phase", po::value<std::string>()->required(), "prefill, decode, train or infer")(
      "change", po::value<std::vector<std::string>>()->composing(), "model change key=value (repeatable)")(
      "weight-dtype", po::value<std::string>(), "weight dtype (activations and KV cache stay bf16)")(
      "out", po::value<std::string>()->required(), "output directory");
  po::variables_map vm;
  if (!parse_command_args("check point", "tpusim check point --model M --arch A --phase P --out DIR [--change k=v]...",
                          args, opts, {}, vm, ctx))
    return 0;
  check_sizes("check point", vm);
  const std::string out = vm["out"].as<std::string>();
  check_output_dir("check point: --out", out);
  const std::string arch_name = vm["arch"].as<std::string>();
  const arch::TpuConfig cfg = load_tpu_config(arch_name, {}, ctx.global.search_path());
  std::vector<codesign::ModelChange> changes;
  if (vm.count("change"))
    for (const auto& c : vm["change"].as<std::vector<std::string>>()) changes.push_back(codesign::parse_change(c));
  const models::ModelSpec spec = codesign::apply_changes(models::load_model(vm["model"].as<std::string>()), changes);
  models::PhaseOptions p;
  read_phase_options(vm, "check point", p);
  if (vm.count("weight-dtype")) {
    const auto dt = arch::parse_dtype(vm["weight-dtype"].as<std::string>());
    if (!dt) throw UsageError("check point: unknown --weight-dtype '" + vm["weight-dtype"].as<std::string>() + "'");
    p.weight_dtype = *dt;
  }
  RunOptions ro;
  ro.sim.progress = false;
  if (vm.count("slice") != vm.count("mesh")) throw UsageError("check point: --slice and --mesh go together");
  if (vm.count("slice")) {
    p.mesh = workloads::parse_mesh(vm["mesh"].as<std::string>(), models::mesh_axis_names());
    ro.sim.slice = vm["slice"].as<std::string>();
    const arch::ici::Slice slice(cfg.ici, ro.sim.slice, false);
    try {
      map_mesh(slice, p.mesh);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("check point: ") + e.what());
    }
    ro.sim.mesh = p.mesh;
  }
  // The fit check `tpusim run` makes (the memory plan decides within the
  // closed form's margin), so that a what-if runs wherever run would.
  const models::FitReport fit = check_model_fit(spec, p, cfg).report;
  if (!fit.fits) throw UsageError("check point: " + fit.message);
  const workloads::Workload wl = models::generate(spec, p);
  const RunReport r = run_workload(arch_name, cfg, wl, ro);
  write_results(r, out, {});
  return 0;
}

}  // namespace

void register_check_commands() {
  register_command("check", "Is a model TPU-friendly: MXU shapes, fit, simulated suggestions", check_cmd);
  register_command("check point", "(used by check) simulate one changed model", check_point_cmd);
}

}  // namespace tpusim::sim
