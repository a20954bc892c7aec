// Closed-form timing tests of the cross-lane unit model (arch/vpu/xlu_timing.h).
#include "arch/vpu/xlu_timing.h"

#include <gtest/gtest.h>

#include <string>

#include "arch/common/errors.h"

namespace tpusim::arch {
namespace {

// 2 XLUs per TC (tpu-specs.md), 8-cycle latency, 1 vreg per cycle each;
// vregs of 8 sublanes x 128 lanes.
XluConfig xlu() {
  XluConfig c;
  c.count = 2;
  c.latency = 8;
  c.vregs_per_cycle = 1.0;
  return c;
}
VpuConfig vpu() { return VpuConfig{}; }

XluArrayOp op(XluOpKind k, std::uint64_t rows, std::uint64_t cols, DType t = DType::f32, std::uint64_t batch = 1) {
  XluArrayOp o;
  o.kind = k;
  o.rows = rows;
  o.cols = cols;
  o.dtype = t;
  o.batch = batch;
  return o;
}

TEST(XluTiming, TransposePassesEveryVreg) {
  // f32 [1024,1024]: (1024/8) x (1024/128) = 128 x 8 = 1024 vregs, one pass
  // each at 1 vreg/cycle: 1024 + latency 8 = 1032.
  const XluCost c = xlu_cost(xlu(), vpu(), op(XluOpKind::transpose, 1024, 1024));
  EXPECT_EQ(c.array_vregs, 1024u);
  EXPECT_EQ(c.xlu_vregs, 1024u);
  EXPECT_EQ(c.occupancy, 1024u);
  EXPECT_EQ(c.cycles, 1032u);
  EXPECT_EQ(c.vpu_combine_ops, 0u);
}

TEST(XluTiming, Bf16VregsHoldSixteenRows) {
  // bf16 [1024,1024]: (1024/16) x 8 = 512 vregs -> 512 + 8 = 520.
  EXPECT_EQ(xlu_cost(xlu(), vpu(), op(XluOpKind::transpose, 1024, 1024, DType::bf16)).cycles, 520u);
}

TEST(XluTiming, LaneReduceFoldsColumnsOnTheVpuFirst) {
  // f32 [256,1024] -> [256]: 32 row groups x 8 column groups. The VPU folds
  // each row group's 8 vregs into 1 (7 ops x 32 = 224 vreg-ops), then 32
  // vregs cross the XLU: 32 + 8 = 40 cycles.
  const XluCost c = xlu_cost(xlu(), vpu(), op(XluOpKind::lane_reduce, 256, 1024));
  EXPECT_EQ(c.xlu_vregs, 32u);
  EXPECT_EQ(c.vpu_combine_ops, 224u);
  EXPECT_EQ(c.cycles, 40u);
}

TEST(XluTiming, SublaneReduceFoldsRowsOnTheVpuFirst) {
  // f32 [256,1024] -> [1024]: 8 column groups, each folding 32 vregs into 1
  // (31 x 8 = 248 vreg-ops), then 8 XLU passes: 8 + 8 = 16 cycles.
  const XluCost c = xlu_cost(xlu(), vpu(), op(XluOpKind::sublane_reduce, 256, 1024));
  EXPECT_EQ(c.xlu_vregs, 8u);
  EXPECT_EQ(c.vpu_combine_ops, 248u);
  EXPECT_EQ(c.cycles, 16u);
}

TEST(XluTiming, PartialTilesAndBatchRoundUp) {
  // f32 [9,129]: ceil(9/8) x ceil(129/128) = 2 x 2 = 4 vregs; batch 3 -> 12.
  const XluCost c = xlu_cost(xlu(), vpu(), op(XluOpKind::roll, 9, 129, DType::f32, 3));
  EXPECT_EQ(c.xlu_vregs, 12u);
  EXPECT_EQ(c.cycles, 12u + 8);
  // A permute of one vreg: 1 + 8.
  EXPECT_EQ(xlu_cost(xlu(), vpu(), op(XluOpKind::permute, 8, 128)).cycles, 9u);
}

TEST(XluTiming, ThroughputScalesOccupancy) {
  // At half a vreg per cycle, 1024 vregs occupy 2048 cycles: 2048 + 8.
  XluConfig cfg = xlu();
  cfg.vregs_per_cycle = 0.5;
  EXPECT_EQ(xlu_cost(cfg, vpu(), op(XluOpKind::transpose, 1024, 1024)).cycles, 2056u);
}

TEST(XluTiming, EmptyOpCostsNothing) { EXPECT_EQ(xlu_cost(xlu(), vpu(), op(XluOpKind::transpose, 0, 128)).cycles, 0u); }

TEST(XluTimer, TwoUnitsRunInParallel) {
  // Two 1024-vreg transposes ready at 0 take both units at once; a third
  // waits for the first unit to free at 1024.
  XluTimer t(xlu(), vpu());
  const XluArrayOp tr = op(XluOpKind::transpose, 1024, 1024);
  const XluIssue a = t.issue(tr, 0);
  const XluIssue b = t.issue(tr, 0);
  EXPECT_EQ(a.unit, 0);
  EXPECT_EQ(b.unit, 1);
  EXPECT_EQ(a.start, 0u);
  EXPECT_EQ(b.start, 0u);
  EXPECT_EQ(b.finish, 1032u);
  const XluIssue c = t.issue(tr, 0);
  EXPECT_EQ(c.unit, 0);
  EXPECT_EQ(c.start, 1024u);
  EXPECT_EQ(c.finish, 1024u + 1024 + 8);
}

TEST(XluTimer, FreeUnitIsPreferred) {
  // Unit 0 busy until 1024; a small op goes to idle unit 1 and starts at once.
  XluTimer t(xlu(), vpu());
  t.issue(op(XluOpKind::transpose, 1024, 1024), 0, 0);
  const XluIssue s = t.issue(op(XluOpKind::permute, 8, 128), 5);
  EXPECT_EQ(s.unit, 1);
  EXPECT_EQ(s.start, 5u);
}

TEST(XluTimer, BusyUntilIsTight) {
  // 100-vreg roll on unit 0 from 0: busy until 100.
  XluTimer t(xlu(), vpu());
  const XluArrayOp r = op(XluOpKind::roll, 800, 128);  // 100 vregs
  t.issue(r, 0, 0);
  EXPECT_EQ(t.busy_until(0), 100u);
  XluTimer t1 = t;
  EXPECT_EQ(t1.issue(r, 99, 0).start, 100u);  // ready at t-1 waits
  XluTimer t2 = t;
  EXPECT_EQ(t2.issue(r, 100, 0).start, 100u);  // ready at t starts at once
}

TEST(XluTimer, StatsAndReset) {
  // lane_reduce f32 [256,1024] (32 XLU vregs, 224 combine ops) + transpose
  // of 1024 vregs.
  XluTimer t(xlu(), vpu());
  t.issue(op(XluOpKind::lane_reduce, 256, 1024), 0);
  t.issue(op(XluOpKind::transpose, 1024, 1024), 0);
  double vregs = -1, combine = -1, busy = -1;
  for (const Stat& s : t.stats()) {
    if (s.name == "xlu_vregs") vregs = s.value;
    if (s.name == "vpu_combine_ops") combine = s.value;
    if (s.name == "busy_cycles") busy = s.value;
  }
  EXPECT_EQ(vregs, 1056);
  EXPECT_EQ(combine, 224);
  EXPECT_EQ(busy, 32 + 1024);
  t.reset();
  EXPECT_EQ(t.busy_until(0), 0u);
  EXPECT_EQ(t.busy_until(1), 0u);
}

TEST(XluTimer, BadUnitAndConfig) {
  XluTimer t(xlu(), vpu());
  EXPECT_THROW(t.issue(op(XluOpKind::roll, 8, 128), 0, 2), InternalError);
  EXPECT_THROW(t.busy_until(-1), InternalError);
  XluConfig cfg = xlu();
  cfg.count = 0;
  try {
    XluTimer bad(cfg, vpu());
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("xlu.count"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tpusim::arch
