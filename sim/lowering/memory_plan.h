// Where each tensor of a workload lives: its memory space and offset. Two
// passes, in the spirit of XLA's buffer and memory-space assignment:
//  * alternate memory (CMEM on v4/v4i, else the VMEM that kernels' scoped
//    allocations leave free): intermediate activations that fit, greedily
//    by HBM traffic saved per byte and per operator of lifetime, first fit
//    among tensors whose lifetimes overlap; a kernel reads and writes a
//    VMEM-resident tensor in place (no DMA);
//  * HBM for the rest, by liveness with buffer donation; the peak must fit.
// Leaves out: prefetching sources into the alternate memory ahead of use,
// and eviction (a tensor is in the alternate memory for its whole life or
// not at all).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "arch/chip/isa.h"
#include "arch/common/chip_config.h"
#include "sim/lowering/fusion.h"
#include "sim/lowering/lowering.h"
#include "workloads/ir/workload.h"

namespace tpusim::sim::lowering {

// A place in memory: a space and a byte offset in it. Offsets add, so a
// block of a tensor is `ref + offset`.
struct Ref {
  arch::MemSpace space = arch::MemSpace::hbm;
  std::uint64_t addr = 0;
  Ref operator+(std::uint64_t off) const { return {space, addr + off}; }
};

struct MemoryPlan {
  std::unordered_map<std::string, Ref> at;
  std::uint64_t hbm_peak_bytes = 0;  // HBM in use at the peak

  const Ref& of(const std::string& name) const { return at.at(name); }
  bool in(const std::string& name, arch::MemSpace s) const { return of(name).space == s; }
};

// `kernel_vmem`: VMEM per core reserved for kernels' blocks. Leaves out on
// multi-core chips: which core's VMEM holds a resident tensor (operators
// split over the cores are assumed to split its rows the same way).
MemoryPlan plan_memory(const workloads::Workload& wl, const workloads::TensorIndex& index, const FusionPlan& fusion,
                       const arch::TpuConfig& cfg, const LoweringOptions& opt, std::uint64_t kernel_vmem);

}  // namespace tpusim::sim::lowering
