// The VPU and XLU timing models behind the chip sequencer's UnitTiming
// interface (arch/chip/unit_timing.h): one VpuUnitTiming per TensorCore,
// one XluUnitTiming per XLU (the sequencer picks the XLU index, so each
// adapter times one unit with its own busy-until).
// Models: the ISA's VpuWork maps field by field onto VpuStreamOp. XluWork
// carries only an element count, so it is timed as an array of
// [ceil(elements / lanes), lanes]: every vreg passes the XLU once and a
// reduce folds nothing on the VPU first (one column group).
// VPU streams are also bounded by VMEM's bandwidth and granule
// (arch/memory/vmem_feed.h): each vreg load and store is one access of a
// vreg's bytes, and an op whose accesses need more cycles than its
// occupancy holds the VPU that long (stat vmem_bound_ops).
// Leaves out: shapes for XLU work (an XluWork with rows/cols would let
// lane vs sublane reductions and folding be told apart; xlu_timing.h has them).
#pragma once

#include <cstdint>

#include "arch/chip/unit_timing.h"
#include "arch/memory/vmem_feed.h"
#include "arch/vpu/vpu_timing.h"
#include "arch/vpu/xlu_timing.h"

namespace tpusim::arch {

VpuStreamOp to_stream_op(const VpuWork& w);
XluArrayOp to_array_op(const XluWork& w, const VpuConfig& vpu);

class VpuUnitTiming : public UnitTiming {
 public:
  // `vmem`: the VMEM bound on every op (default: none).
  explicit VpuUnitTiming(const VpuConfig& cfg, VmemFeed vmem = {}) : timer_(cfg), vmem_(vmem) {}
  // InternalError if `in` does not carry VpuWork.
  Interval issue(const Instr& in, std::uint64_t ready) override;
  StatList stats() const override;
  const VpuTimer& timer() const { return timer_; }

 private:
  VpuTimer timer_;
  VmemFeed vmem_;
  std::uint64_t held_until_ = 0;  // end of the last op's VMEM traffic when it outlasted the op
  std::uint64_t vmem_bound_ops_ = 0;
};

class XluUnitTiming : public UnitTiming {
 public:
  // Times a single unit: xlu.count is taken as 1 here.
  XluUnitTiming(const XluConfig& xlu, const VpuConfig& vpu);
  // InternalError if `in` does not carry XluWork.
  Interval issue(const Instr& in, std::uint64_t ready) override;
  StatList stats() const override { return timer_.stats(); }

 private:
  VpuConfig vpu_;
  XluTimer timer_;
};

}  // namespace tpusim::arch
