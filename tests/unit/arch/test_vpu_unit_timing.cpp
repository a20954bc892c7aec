// Tests of the VPU/XLU adapters behind the sequencer's UnitTiming
// interface (arch/vpu/vpu_unit_timing.h).
#include "arch/vpu/vpu_unit_timing.h"

#include <gtest/gtest.h>

#include "arch/common/errors.h"

namespace tpusim::arch {
namespace {

VpuConfig v5() {
  VpuConfig c;
  c.alus_per_lane = 4;
  c.latency = 2;
  return c;
}

TEST(VpuUnitTiming, VpuWorkMapsFieldByField) {
  // bf16 add of 1M elements: store-bound, 512 vreg stores + latency 2 = 514
  // (derivation in test_vpu_timing.cpp, Bf16AddIsStoreBound). A second one
  // ready at 0 starts when the first frees the VPU, at 512.
  VpuUnitTiming u(v5());
  Instr in;
  in.unit = UnitKind::vpu;
  VpuWork w;
  w.elements = 1024 * 1024;
  w.dtype = DType::bf16;
  w.alu_ops = 1;
  w.inputs = 2;
  w.outputs = 1;
  in.work = w;
  const Interval a = u.issue(in, 0);
  EXPECT_EQ(a.start, 0u);
  EXPECT_EQ(a.finish, 514u);
  const Interval b = u.issue(in, 0);
  EXPECT_EQ(b.start, 512u);
  EXPECT_EQ(b.finish, 1026u);
  EXPECT_FALSE(u.stats().empty());
}

TEST(VpuUnitTiming, XluWorkPassesEveryVregOnce) {
  // f32 transpose of 1M elements = [8192,128] = 1024 vregs; one unit at 1
  // vreg/cycle with latency 8: 1032. The next one on the same unit waits.
  XluConfig x;
  x.count = 2;
  x.latency = 8;
  x.vregs_per_cycle = 1;
  XluUnitTiming u(x, v5());
  Instr in;
  in.unit = UnitKind::xlu;
  XluWork w;
  w.op = XluOp::transpose;
  w.elements = 1024 * 1024;
  w.dtype = DType::f32;
  in.work = w;
  const Interval a = u.issue(in, 0);
  EXPECT_EQ(a.finish, 1032u);
  EXPECT_EQ(u.issue(in, 0).start, 1024u);
  // A reduce of 100 bf16 elements still moves one whole vreg: 1 + 8.
  w.op = XluOp::reduce;
  w.elements = 100;
  w.dtype = DType::bf16;
  in.work = w;
  const Interval r = u.issue(in, 5000);
  EXPECT_EQ(r.finish - r.start, 9u);
}

TEST(VpuUnitTiming, WrongWorkIsAnInternalError) {
  VpuUnitTiming v(v5());
  XluUnitTiming x(XluConfig{}, v5());
  Instr in;
  in.work = MxuWork{};
  EXPECT_THROW(v.issue(in, 0), InternalError);
  EXPECT_THROW(x.issue(in, 0), InternalError);
}

}  // namespace
}  // namespace tpusim::arch
