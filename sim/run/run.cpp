#include "sim/run/run.h"

#include "arch/ici/collectives.h"
#include "arch/ici/topology.h"
#include "sim/config/config_writer.h"
#include "sim/engine/slice_setup.h"
#include "sim/results/results_writer.h"

namespace tpusim::sim {

namespace {

// A chip without cross-lane units (xlu.count: 0, TPUv1) cannot reduce
// across lanes or transpose: a workload that needs it is refused, naming
// its first such operator, instead of being run on a unit the chip lacks.
// Whether it needs one is what the lowering emits for the same chip with
// one XLU, so the rule follows the lowering of every operator kind.
void refuse_cross_lane_work(const workloads::Workload& wl, const arch::TpuConfig& cfg, const LoweringOptions& lo) {
  arch::TpuConfig one = cfg;
  one.xlu.count = 1;
  const LoweredWorkload probe = lower(wl, one, lo);
  for (const arch::Instr& in : probe.program.instrs)
    if (in.unit == arch::UnitKind::xlu)
      throw LoweringError("operator '" + probe.program.op_names.at(in.op) +
                          "' needs cross-lane work (a reduction or transpose on an XLU), but " + cfg.chip.name +
                          " has no XLU (xlu.count: 0)");
}

}  // namespace

RunReport run_workload(const std::string& arch_name, const arch::TpuConfig& cfg, const workloads::Workload& wl,
                       const RunOptions& opt) {
  RunReport r;
  r.arch_name = arch_name;
  r.workload_name = wl.name;
  r.config = &cfg;
  r.workload = &wl;
  r.version = TPUSIM_VERSION;
  r.config_yaml = write_config(cfg);
  r.config_hash = config_hash(r.config_yaml);
  LoweringOptions lo = opt.lowering;
  if (!opt.sim.slice.empty()) {
    lo.multi_chip = true;
    const arch::ici::Slice slice(cfg.ici, opt.sim.slice, opt.sim.twisted);
    const workloads::MeshSpec mesh = opt.sim.mesh.empty() ? physical_mesh(slice) : opt.sim.mesh;
    for (const auto& a : mesh.axes) lo.mesh.emplace_back(a.name, a.size);  // LoweringOptions' (name, size) pairs
    const arch::ici::Mesh mapped = network_mesh(slice, opt.sim.mesh);      // as the ICI backend maps it
    for (const auto& [name, axes] : mapped.axes()) {
      std::vector<int> dims;
      int links = 0;
      for (const arch::ici::SubAxis& a : axes) {
        if (slice.is_dcn(a.axis)) {
          lo.dcn_axis = name;
          lo.num_slices = slice.num_slices();
          continue;
        }
        dims.push_back(a.length);
        if (a.length > 1) links += arch::ici::sub_wraps(slice, a) ? 2 : 1;
      }
      lo.mesh_links.emplace_back(name, links);
      if (lo.dcn_axis != name) lo.mesh_dims.emplace_back(name, std::move(dims));
    }
  }
  // A placement hint the chip cannot honour is the user's mistake, not a
  // hint to drop silently.
  for (const auto& t : wl.tensors)
    if (t.space == workloads::MemSpace::cmem && (!cfg.cmem.present || !lo.cmem))
      throw LoweringError("tensor '" + t.name + "'" + (t.loc.known() ? " (" + t.loc.str() + ")" : std::string()) +
                          " has space: cmem, but " +
                          (cfg.cmem.present ? std::string("--no-cmem is given") : cfg.chip.name + " has no CMEM") +
                          " (use space: hbm)");
  if (cfg.xlu.count == 0) refuse_cross_lane_work(wl, cfg, lo);
  r.lowered = lower(wl, cfg, lo);
  r.sim = simulate(cfg, r.lowered.program, opt.sim);
  return r;
}

}  // namespace tpusim::sim
