// One simulation from a resolved config and a workload: lower, simulate,
// collect a RunReport for the writers. Once per process (SystemC).
#pragma once

#include <string>

#include "sim/engine/engine.h"
#include "sim/lowering/lowering.h"
#include "sim/results/run_report.h"

namespace tpusim::sim {

struct RunOptions {
  LoweringOptions lowering;
  SimOptions sim;
};

RunReport run_workload(const std::string& arch_name, const arch::TpuConfig& cfg, const workloads::Workload& wl,
                       const RunOptions& opt);

}  // namespace tpusim::sim
