// VPU/XLU timing behind the sequencer's UnitTiming; see vpu_unit_timing.h.
#include "arch/vpu/vpu_unit_timing.h"

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
  const VpuIssue r = timer_.issue(to_stream_op(*w), ready);
  return {r.start, r.finish};
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
