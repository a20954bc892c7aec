// Copies between HBM and host memory (OpKind::copy): an activation
// offloaded to host in forward, read back before backward. Direct DMAs
// from the source to the result, split over the DMA engines, no VMEM
// staging and no compute; their time is the host link's (arch/dma/
// host_link.h), shared with whatever else crosses it. The driver
// (lowering.cpp) emits them asynchronously, as XLA's host offloading
// does with its async copy-start/copy-done pairs: they wait for the
// tensor's producer only, and no kernel waits for them but the consumer.
#include "sim/lowering/op_lowering.h"

namespace tpusim::sim::lowering {

std::vector<Step> lower_host_copy(const LowerContext& cx, std::size_t i, const Epilogue& ep, OpPlan& plan) {
  (void)ep;  // nothing fuses into a copy
  const Op& op = cx.op(i);
  const Ref src = cx.ref(op.inputs[0]), dst = cx.ref(op.outputs[0]);
  const bool host = src.space == arch::MemSpace::host || dst.space == arch::MemSpace::host;
  if (!host || (src.space != arch::MemSpace::hbm && dst.space != arch::MemSpace::hbm))
    throw LoweringError("operator '" + op.name + "': a copy goes between HBM and host memory (found " +
                        arch::mem_space_name(src.space) + " to " + arch::mem_space_name(dst.space) + ")");
  if (!(cx.cfg.pcie_bandwidth > 0))
    throw LoweringError("operator '" + op.name + "': copying to or from host memory needs the chip's pcie_bandwidth");
  const std::uint64_t bytes = cx.tensor(op.outputs[0]).bytes();
  const std::uint64_t pieces = std::max<std::uint64_t>(1, std::min<std::uint64_t>(cx.cfg.dma.engines, bytes / 4096));
  std::vector<Step> steps;
  for (std::uint64_t p = 0; p < pieces; ++p) {
    const std::uint64_t b0 = bytes * p / pieces, b1 = bytes * (p + 1) / pieces;
    Step s;
    s.core = static_cast<int>(p % static_cast<std::uint64_t>(cx.cores()));
    s.epilogue.push_back(copy(src + b0, dst + b0, b1 - b0));
    s.epilogue.back().index = static_cast<std::int16_t>(p % static_cast<std::uint64_t>(cx.cfg.dma.engines));
    steps.push_back(std::move(s));
  }
  plan.blocking = std::string(src.space == arch::MemSpace::host ? "from host" : "to host") + ", " +
                  std::to_string(pieces) + " DMAs";
  // Bound: the HBM side at HBM's rate, the whole over the host link.
  plan.dma_bytes = bytes;
  plan.hbm_bytes = bytes;
  plan.memory_cycles = static_cast<double>(bytes) / cx.f.hbm_bytes_per_cycle;
  const double link_cycles = static_cast<double>(bytes) / cx.cfg.pcie_bandwidth * cx.cfg.chip.clock_hz;
  plan.roofline_cycles = std::max(plan.memory_cycles, link_cycles);
  return steps;
}

}  // namespace tpusim::sim::lowering
