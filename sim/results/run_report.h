// Everything one `tpusim run` produced, handed to the writers: the
// resolved config, the workload, what the lowering decided per operator,
// and what the engine measured.
#pragma once

#include <cstdint>
#include <string>

#include "arch/common/chip_config.h"
#include "sim/engine/engine.h"
#include "sim/lowering/lowering.h"
#include "workloads/ir/workload.h"

namespace tpusim::sim {

struct RunReport {
  std::string arch_name;
  std::string workload_name;
  const arch::TpuConfig* config = nullptr;
  const workloads::Workload* workload = nullptr;
  LoweredWorkload lowered;
  SimResult sim;
  std::string config_yaml;  // resolved config, as written to config.effective.yaml
  std::string config_hash;  // hex digest of config_yaml
  std::string version;      // tpusim version
  // Tokens the whole run processes (model runs: batch for a decode step,
  // batch x seq for prefill and train; 0 = not a token workload), for
  // tokens per joule.
  std::int64_t tokens = 0;
};

}  // namespace tpusim::sim
