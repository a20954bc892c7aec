// The chip figures the lowering's tiling searches and roofline need, in
// TensorCore cycles, all derived from the config through arch::derive so
// that the peak formulas live in one place (arch/common/derived.cpp).
#pragma once

#include <cstdint>

#include "arch/common/chip_config.h"
#include "sim/lowering/lowering.h"

namespace tpusim::sim::lowering {

struct ChipFigures {
  int cores = 1;
  int mxus = 1;
  int rows = 128, cols = 128;
  int xlus = 2;
  double clock_hz = 1;
  double hbm_bytes_per_cycle = 1;
  double cmem_bytes_per_cycle = 0;  // 0: no CMEM
  // Cycles a block load waits before its first byte arrives: about one
  // unloaded HBM access (controller latency plus a row miss) and the issue
  // of its instructions. The tiling searches charge it per pipeline step.
  double block_latency = 200;
  // Cycles the scalar core spends per pipeline (grid) step on bookkeeping
  // (kernel.step_overhead), serial with the step's compute.
  double step_overhead = 0;
  // Cycles to start a kernel (kernel.launch_overhead).
  double launch_overhead = 0;
  // Bytes of VMEM per core that one kernel's blocks may use (the compiler's
  // scoped VMEM limit, kernel.scoped_vmem).
  std::uint64_t vmem_budget = 0;
  const arch::TpuConfig* cfg = nullptr;

  // MAC slots per PE per cycle for a dtype relative to bf16; 0 if the MXU
  // does not run it.
  double throughput(arch::DType t) const;
  // Peak MACs per cycle of the whole chip for a dtype (arch::peak_flops).
  double peak_macs(arch::DType t) const;
};

ChipFigures chip_figures(const arch::TpuConfig& cfg, const LoweringOptions& opt);

}  // namespace tpusim::sim::lowering
