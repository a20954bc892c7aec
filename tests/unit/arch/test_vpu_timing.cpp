// Closed-form timing tests of the VPU stream model (arch/vpu/vpu_timing.h).
#include "arch/vpu/vpu_timing.h"

#include <gtest/gtest.h>

#include <string>

#include "arch/common/errors.h"

namespace tpusim::arch {
namespace {

// v5-like VPU (tpu-specs.md): 8 sublanes x 128 lanes, 4 ALUs per lane,
// 2-cycle latency, 3 vreg loads and 1 store per cycle.
VpuConfig v5() {
  VpuConfig c;
  c.sublanes = 8;
  c.lanes = 128;
  c.alus_per_lane = 4;
  c.latency = 2;
  c.transcendental_rate = 1.0;
  c.vmem_loads_per_cycle = 3;
  c.vmem_stores_per_cycle = 1;
  c.packed_narrow_alu = false;
  return c;
}

TEST(VpuTiming, VregElementsPackNarrowTypes) {
  // 8 x 128 slots of 32 bits; bf16 packs 2, int8 4, int4 8 per slot.
  EXPECT_EQ(vreg_elements(v5(), DType::f32), 1024u);
  EXPECT_EQ(vreg_elements(v5(), DType::bf16), 2048u);
  EXPECT_EQ(vreg_elements(v5(), DType::int8), 4096u);
  EXPECT_EQ(vreg_elements(v5(), DType::int4), 8192u);
}

TEST(VpuTiming, Bf16AddIsStoreBound) {
  // add of two bf16 [1024,1024]: E = 1,048,576; a bf16 vreg holds 2048
  // values, so N_vregs = 512 per operand. Loads 2 x 512 = 1024 -> ceil(1024/3)
  // = 342 cycles; stores 512 / 1 = 512 cycles; ALU unpacked: 1024 f32-vregs
  // of work x 1 op / 4 ALUs = 256 cycles. Store-bound: 512 + latency 2 = 514.
  const VpuCost c = vpu_cost(v5(), vpu_elementwise(VpuOpKind::add, 1024 * 1024, DType::bf16));
  EXPECT_EQ(c.limit, VpuLimit::store);
  EXPECT_EQ(c.vreg_loads, 1024u);
  EXPECT_EQ(c.vreg_stores, 512u);
  EXPECT_EQ(c.load_cycles, 342u);
  EXPECT_EQ(c.store_cycles, 512u);
  EXPECT_EQ(c.alu_cycles, 256u);
  EXPECT_EQ(c.compute_vregs, 1024u);
  EXPECT_EQ(c.occupancy, 512u);
  EXPECT_EQ(c.cycles, 514u);
  EXPECT_DOUBLE_EQ(c.alu_element_ops, 1048576.0);
}

TEST(VpuTiming, PackedNarrowAluHalvesBf16AluWork) {
  // Same add with packed bf16 ALUs: 512 packed vregs x 1 op / 4 = 128 ALU
  // cycles (was 256); still store-bound at 512 + 2.
  VpuConfig cfg = v5();
  cfg.packed_narrow_alu = true;
  const VpuCost c = vpu_cost(cfg, vpu_elementwise(VpuOpKind::add, 1024 * 1024, DType::bf16));
  EXPECT_EQ(c.alu_cycles, 128u);
  EXPECT_EQ(c.cycles, 514u);
  // gelu on bf16 [1024,1024], packed: 512 x 5 / 4 = 640 ALU cycles vs 512
  // transcendental (512 x 1 / 1) and 512 stores -> ALU-bound, 642.
  const VpuCost g = vpu_cost(cfg, vpu_elementwise(VpuOpKind::gelu, 1024 * 1024, DType::bf16));
  EXPECT_EQ(g.limit, VpuLimit::alu);
  EXPECT_EQ(g.cycles, 642u);
}

TEST(VpuTiming, F32GeluIsAluBound) {
  // gelu (tanh form) = 5 ALU ops + 1 tanh per element, 1 input, 1 output.
  // f32 [1024,1024] = 1024 vregs. ALU 1024 x 5 / 4 = 1280; transcendental
  // 1024 x 1 / 1 = 1024; loads ceil(1024/3) = 342; stores 1024.
  // ALU-bound: 1280 + 2 = 1282.
  const VpuCost c = vpu_cost(v5(), vpu_elementwise(VpuOpKind::gelu, 1024 * 1024, DType::f32));
  EXPECT_EQ(c.limit, VpuLimit::alu);
  EXPECT_EQ(c.alu_cycles, 1280u);
  EXPECT_EQ(c.transcendental_cycles, 1024u);
  EXPECT_EQ(c.cycles, 1282u);
  EXPECT_DOUBLE_EQ(c.transcendental_element_ops, 1048576.0);
}

TEST(VpuTiming, V4HasHalfTheAlus) {
  // v4: 2 ALUs per lane (tpu-specs.md). The same gelu: 1024 x 5 / 2 = 2560 + 2.
  VpuConfig cfg = v5();
  cfg.alus_per_lane = 2;
  EXPECT_EQ(vpu_cost(cfg, vpu_elementwise(VpuOpKind::gelu, 1024 * 1024, DType::f32)).cycles, 2562u);
}

TEST(VpuTiming, ExpIsTranscendentalBound) {
  // exp of f32 [512,1024] = 512 vregs with a transcendental unit of 1/4 vreg
  // per cycle: 512 / 0.25 = 2048 cycles vs 512 stores, 171 loads, 0 ALU.
  // 2048 + 2 = 2050.
  VpuConfig cfg = v5();
  cfg.transcendental_rate = 0.25;
  const VpuCost c = vpu_cost(cfg, vpu_elementwise(VpuOpKind::exp, 512 * 1024, DType::f32));
  EXPECT_EQ(c.limit, VpuLimit::transcendental);
  EXPECT_EQ(c.transcendental_cycles, 2048u);
  EXPECT_EQ(c.alu_cycles, 0u);
  EXPECT_EQ(c.load_cycles, 171u);
  EXPECT_EQ(c.cycles, 2050u);
}

TEST(VpuTiming, TiesGoToTheFirstLimitInOrder) {
  // silu f32, 512 vregs at rate 1: transcendental 512 = stores 512 (ALU
  // 512/4 = 128, loads 171): the tie is reported as transcendental.
  const VpuCost c = vpu_cost(v5(), vpu_elementwise(VpuOpKind::silu, 512 * 1024, DType::f32));
  EXPECT_EQ(c.transcendental_cycles, 512u);
  EXPECT_EQ(c.store_cycles, 512u);
  EXPECT_EQ(c.limit, VpuLimit::transcendental);
  EXPECT_EQ(c.cycles, 514u);
}

TEST(VpuTiming, FourInputSumIsLoadBound) {
  // a+b+c+d over f32 [1024,1024]: 3 ALU ops, 4 inputs, 1 output, 1024 vregs.
  // Loads 4096 / 3 = 1365.33 -> 1366; stores 1024; ALU 1024 x 3 / 4 = 768.
  // Load-bound: 1366 + 2 = 1368.
  VpuStreamOp op;
  op.elements = 1024 * 1024;
  op.dtype = DType::f32;
  op.alu_ops = 3;
  op.inputs = 4;
  op.outputs = 1;
  const VpuCost c = vpu_cost(v5(), op);
  EXPECT_EQ(c.limit, VpuLimit::load);
  EXPECT_EQ(c.vreg_loads, 4096u);
  EXPECT_EQ(c.load_cycles, 1366u);
  EXPECT_EQ(c.cycles, 1368u);
}

TEST(VpuTiming, ConvertCountsEachSideInItsOwnDtype) {
  // f32 -> bf16 convert of 8192 elements: 8 f32 vregs loaded (ceil(8/3) = 3
  // cycles), 4 bf16 vregs stored (4 cycles), ALU 8 x 1 / 4 = 2. Store-bound 4 + 2.
  VpuStreamOp op = vpu_elementwise(VpuOpKind::convert, 8192, DType::f32);
  op.out_dtype = DType::bf16;
  const VpuCost c = vpu_cost(v5(), op);
  EXPECT_EQ(c.vreg_loads, 8u);
  EXPECT_EQ(c.vreg_stores, 4u);
  EXPECT_EQ(c.alu_cycles, 2u);
  EXPECT_EQ(c.limit, VpuLimit::store);
  EXPECT_EQ(c.cycles, 6u);
}

TEST(VpuTiming, PartialVregCostsAWholeOne) {
  // 1025 f32 elements need 2 vregs: 2 stores -> 2 cycles; 1024 need 1.
  EXPECT_EQ(vpu_cost(v5(), vpu_elementwise(VpuOpKind::add, 1025, DType::f32)).store_cycles, 2u);
  EXPECT_EQ(vpu_cost(v5(), vpu_elementwise(VpuOpKind::add, 1024, DType::f32)).store_cycles, 1u);
  // A single vreg add: every bound is 1 cycle (ALU ceil(1/4) = 1, loads
  // ceil(2/3) = 1, 1 store); 1 + 2 = 3.
  EXPECT_EQ(vpu_cost(v5(), vpu_elementwise(VpuOpKind::add, 1, DType::f32)).cycles, 3u);
}

TEST(VpuTiming, EmptyOpCostsNothing) {
  const VpuCost c = vpu_cost(v5(), vpu_elementwise(VpuOpKind::add, 0, DType::f32));
  EXPECT_EQ(c.cycles, 0u);
  EXPECT_EQ(c.limit, VpuLimit::none);
}

TEST(VpuTiming, ProfilesCountTheFormulas) {
  // gelu tanh form: x*x, fma, x*p, tanh, fma, x*h = 5 ALU + 1 transcendental.
  EXPECT_DOUBLE_EQ(vpu_op_profile(VpuOpKind::gelu).alu_ops, 5);
  EXPECT_DOUBLE_EQ(vpu_op_profile(VpuOpKind::gelu).transcendental_ops, 1);
  // silu = x * sigmoid(x).
  EXPECT_DOUBLE_EQ(vpu_op_profile(VpuOpKind::silu).alu_ops, 1);
  EXPECT_DOUBLE_EQ(vpu_op_profile(VpuOpKind::silu).transcendental_ops, 1);
  // select reads mask, on_true, on_false; fma reads a, b, c.
  EXPECT_EQ(vpu_op_profile(VpuOpKind::select).inputs, 3);
  EXPECT_EQ(vpu_op_profile(VpuOpKind::fma).inputs, 3);
  EXPECT_EQ(vpu_op_profile(VpuOpKind::rsqrt).inputs, 1);
  EXPECT_STREQ(vpu_op_name(VpuOpKind::reciprocal), "reciprocal");
  EXPECT_STREQ(vpu_limit_name(VpuLimit::transcendental), "transcendental");
}

TEST(VpuTimer, BusyUntilIsTight) {
  // One f32 vreg-row of 64 vregs of add: stores 64 -> occupancy 64.
  VpuTimer t(v5());
  const VpuStreamOp op = vpu_elementwise(VpuOpKind::add, 64 * 1024, DType::f32);
  const VpuIssue a = t.issue(op, 100);
  EXPECT_EQ(a.start, 100u);
  EXPECT_EQ(a.finish, 100u + 64 + 2);
  EXPECT_EQ(t.busy_until(), 164u);
  {
    VpuTimer t2 = t;  // ready at t-1 = 163: waits until 164
    EXPECT_EQ(t2.issue(op, 163).start, 164u);
  }
  {
    VpuTimer t2 = t;  // ready at t = 164: starts at once
    EXPECT_EQ(t2.issue(op, 164).start, 164u);
  }
  {
    VpuTimer t2 = t;  // ready at t+1: starts at t+1, idle cycle in between
    EXPECT_EQ(t2.issue(op, 165).start, 165u);
  }
}

TEST(VpuTimer, BackToBackOpsOverlapLatency) {
  // Two 64-cycle ops both ready at 0: the second starts at 64 and finishes
  // at 64 + 64 + 2 = 130, not 2 x 66 = 132: latency is paid once at the end.
  VpuTimer t(v5());
  const VpuStreamOp op = vpu_elementwise(VpuOpKind::add, 64 * 1024, DType::f32);
  t.issue(op, 0);
  const VpuIssue b = t.issue(op, 0);
  EXPECT_EQ(b.start, 64u);
  EXPECT_EQ(b.finish, 130u);
}

TEST(VpuTimer, EmptyOpDoesNotMoveBusyUntil) {
  VpuTimer t(v5());
  const VpuIssue a = t.issue(vpu_elementwise(VpuOpKind::add, 0, DType::f32), 7);
  EXPECT_EQ(a.start, 7u);
  EXPECT_EQ(a.finish, 7u);
  EXPECT_EQ(t.busy_until(), 0u);
}

double stat(const StatList& s, const std::string& name) {
  for (const Stat& x : s)
    if (x.name == name) return x.value;
  ADD_FAILURE() << "no stat " << name;
  return -1;
}

TEST(VpuTimer, StatsConserveCounts) {
  // bf16 add of 1M elements (1024 loads, 512 stores, 512 busy, store-bound)
  // plus f32 gelu of 1M (1024 loads, 1024 stores, 1280 busy, ALU-bound).
  VpuTimer t(v5());
  t.issue(vpu_elementwise(VpuOpKind::add, 1024 * 1024, DType::bf16), 0);
  t.issue(vpu_elementwise(VpuOpKind::gelu, 1024 * 1024, DType::f32), 0);
  const StatList s = t.stats();
  EXPECT_EQ(stat(s, "ops"), 2);
  EXPECT_EQ(stat(s, "vreg_loads"), 2048);
  EXPECT_EQ(stat(s, "vreg_stores"), 1536);
  EXPECT_EQ(stat(s, "busy_cycles"), 512 + 1280);
  EXPECT_EQ(stat(s, "alu_element_ops"), 1048576.0 + 5 * 1048576.0);
  EXPECT_EQ(stat(s, "store_bound_ops"), 1);
  EXPECT_EQ(stat(s, "alu_bound_ops"), 1);
  for (const Stat& x : s) {
    EXPECT_FALSE(x.unit.empty()) << x.name;
    EXPECT_FALSE(x.desc.empty()) << x.name;
  }
  t.reset();
  EXPECT_EQ(t.busy_until(), 0u);
  EXPECT_EQ(stat(t.stats(), "ops"), 0);
}

TEST(VpuTimer, BadConfigNamesTheKey) {
  VpuConfig cfg = v5();
  cfg.alus_per_lane = 0;
  try {
    VpuTimer t(cfg);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("vpu.alus_per_lane"), std::string::npos) << e.what();
  }
  cfg = v5();
  cfg.transcendental_rate = 0;
  EXPECT_THROW(VpuTimer{cfg}, ConfigError);
}

TEST(VpuTiming, NegativeCountsAreRejected) {
  VpuStreamOp op = vpu_elementwise(VpuOpKind::add, 10, DType::f32);
  op.alu_ops = -1;
  EXPECT_THROW(vpu_cost(v5(), op), ConfigError);
  op = vpu_elementwise(VpuOpKind::add, 10, DType::f32);
  op.inputs = -1;
  EXPECT_THROW(vpu_cost(v5(), op), ConfigError);
}

}  // namespace
}  // namespace tpusim::arch
