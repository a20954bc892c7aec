// VPU/XLU timing behind the sequencer's UnitTiming; see vpu_unit_timing.h.
#include "arch/vpu/vpu_unit_timing.h"

#include <algorithm>
#include <variant>

#include "arch/common/errors.h"

namespace tpusim::arch {

VpuStreamOp to_stream_op(const VpuWork& w) {
  VpuStreamOp op;
  op.elements = w.elements;
  op.dtype = w.dtype;
  op.alu_ops = w.alu_ops;
  op.transcendental_ops = w.transcendental_ops;
  op.inputs = w.inputs;
  op.outputs = w.outputs;
  return op;
}

XluArrayOp to_array_op(const XluWork& w, const VpuConfig& vpu) {
  XluArrayOp op;
  switch (w.op) {
    case XluOp::reduce: op.kind = XluOpKind::lane_reduce; break;
    case XluOp::transpose: op.kind = XluOpKind::transpose; break;
    case XluOp::permute: op.kind = XluOpKind::permute; break;
  }
  const auto cols = w.cols > 0 ? w.cols : static_cast<std::uint64_t>(vpu.lanes);
  op.cols = w.elements == 0 ? 0 : cols;
  op.rows = (w.elements + cols - 1) / cols;
  op.dtype = w.dtype;
  return op;
}

Interval VpuUnitTiming::issue(const Instr& in, std::uint64_t ready) {
  const auto* w = std::get_if<VpuWork>(&in.work);
  if (!w) throw InternalError("VpuUnitTiming::issue: instruction carries no VpuWork");
  const VpuIssue r = timer_.issue(to_stream_op(*w), std::max(ready, held_until_));
  const VpuConfig& c = timer_.config();
  const std::uint64_t vreg_bytes = static_cast<std::uint64_t>(c.sublanes) * static_cast<std::uint64_t>(c.lanes) * 4;
  const std::uint64_t vmem = vmem_.cycles(r.cost.vreg_loads + r.cost.vreg_stores, vreg_bytes);
  if (vmem <= r.cost.occupancy) return {r.start, r.finish};
  ++vmem_bound_ops_;
  held_until_ = r.start + vmem;
  return {r.start, held_until_ + static_cast<std::uint64_t>(c.latency)};
}

StatList VpuUnitTiming::stats() const {
  StatList s = timer_.stats();
  s.push_back({"vmem_bound_ops", static_cast<double>(vmem_bound_ops_), "count",
               "ops whose occupancy was set by VMEM bandwidth and granule (vmem.bandwidth, vmem.granule)"});
  return s;
}

namespace {
XluConfig one_unit(XluConfig c) {
  c.count = 1;
  return c;
}
}  // namespace

XluUnitTiming::XluUnitTiming(const XluConfig& xlu, const VpuConfig& vpu) : vpu_(vpu), timer_(one_unit(xlu), vpu) {}

Interval XluUnitTiming::issue(const Instr& in, std::uint64_t ready) {
  const auto* w = std::get_if<XluWork>(&in.work);
  if (!w) throw InternalError("XluUnitTiming::issue: instruction carries no XluWork");
  const XluIssue r = timer_.issue(to_array_op(*w, vpu_), ready, 0);
  return {r.start, r.finish};
}

}  // namespace tpusim::arch
