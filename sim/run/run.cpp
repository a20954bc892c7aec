#include "sim/run/run.h"

#include "arch/ici/topology.h"
#include "sim/config/config_writer.h"
#include "sim/results/results_writer.h"

namespace tpusim::sim {

RunReport run_workload(const std::string& arch_name, const arch::TpuConfig& cfg,
                       const workloads::Workload& wl, const RunOptions& opt) {
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
    lo.mesh = opt.sim.mesh;
    if (lo.mesh.empty()) {
      // Physical axes: x, y (, z) with the slice's dimensions.
      const arch::ici::Slice slice(cfg.ici, opt.sim.slice, opt.sim.twisted);
      const char* names[] = {"x", "y", "z"};
      for (int d = 0; d < slice.rank(); ++d) lo.mesh.emplace_back(names[d], slice.dims()[static_cast<std::size_t>(d)]);
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
  r.lowered = lower(wl, cfg, lo);
  r.sim = simulate(cfg, r.lowered.program, opt.sim);
  return r;
}

}  // namespace tpusim::sim
