#include "sim/run/run.h"

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
  r.lowered = lower(wl, cfg, opt.lowering);
  r.sim = simulate(cfg, r.lowered.program, opt.sim);
  return r;
}

}  // namespace tpusim::sim
