// HBM placement by liveness (sim/lowering/memory_plan.cpp): a reshape's
// result is its input's bytes relabelled, so the two share one range, and
// that range is released after the last use of either, not kept for the
// whole step; an elementwise result writes over an operand of its size
// that dies where it reads it; an input lives from its first reader to its
// last.
#include <gtest/gtest.h>

#include <string>

#include "sim/config/config_loader.h"
#include "sim/lowering/lowering.h"
#include "workloads/ir/builder.h"

using namespace tpusim;

namespace {

constexpr std::int64_t kRows = 2048, kCols = 4096;  // 16 MiB of bf16 per tensor
constexpr std::uint64_t kBytes = static_cast<std::uint64_t>(kRows * kCols * 2);

sim::LoweringOptions hbm_only() {
  sim::LoweringOptions o;
  o.fusion = false;  // every intermediate materialised
  o.cmem = false;
  o.vmem_residency = false;  // every intermediate in HBM
  return o;
}

std::uint64_t peak(const workloads::Workload& wl) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  return sim::lower(wl, cfg, hbm_only()).hbm_peak_bytes;
}

}  // namespace

// x -> e0 [-> reshape r0] -> e1 -> e2 -> e3 (the result), in 16 MiB
// tensors.
namespace {
workloads::Workload chain(bool reshaped) {
  workloads::WorkloadBuilder b(reshaped ? "reshaped_chain" : "plain_chain");
  auto x = b.input("x", {kRows, kCols}, arch::DType::bf16);
  auto e0 = b.elementwise("e0", "exp", {x});
  auto e1 = b.elementwise("e1", "tanh", {reshaped ? b.reshape("r0", e0, {2 * kRows, kCols / 2}) : e0});
  auto e2 = b.elementwise("e2", "gelu", {e1});
  b.elementwise("e3", "silu", {e2});
  return b.build();
}
}  // namespace

// e0 reads the input x for the last time and has its size, so it writes
// in place (buffer donation: x and e0 share one range). e0 and its alias
// r0 die when e1 reads r0, so e1, elementwise and of their size, writes
// over their range (buffer sharing), as e2 does over e1's and e3 over
// e2's: one range for the whole chain. Keeping e0/r0 to the end, as the
// plan once did, makes it 2; allocating every result anew, 2 as well.
TEST(MemoryPlan, ReshapedActivationIsFreedAfterItsLastUse) { EXPECT_EQ(peak(chain(true)), kBytes); }

// The same chain without the reshape has the same peak: the alias costs
// nothing.
TEST(MemoryPlan, ReshapeCostsNoMoreThanTheChainWithoutIt) { EXPECT_EQ(peak(chain(false)), kBytes); }

// A result does not take the range of an operand read again later: e1
// reads e0, which e2 reads too, so e1 needs a range of its own; e2 then
// writes over e1's (e1 dies there, e0 does not), and e3 over e2's.
// x/e0 and e1/e2/e3: 2 ranges.
TEST(MemoryPlan, OperandReadLaterKeepsItsRange) {
  workloads::WorkloadBuilder b("shared_later");
  auto x = b.input("x", {kRows, kCols}, arch::DType::bf16);
  auto e0 = b.elementwise("e0", "exp", {x});
  auto e1 = b.elementwise("e1", "tanh", {e0});
  auto e2 = b.elementwise("e2", "add", {e1, e0});
  b.elementwise("e3", "silu", {e2});
  EXPECT_EQ(peak(b.build()), 2 * kBytes);
}

// A reshape of a source (a weight) or of the result is never released:
// reshaping the input x keeps x's range for the whole step (and so x is
// not donated to e0), and a reshape read later than its input keeps the
// class alive until that read.
TEST(MemoryPlan, AliasOfAnInputLivesThroughoutAndLateReadsExtendTheClass) {
  workloads::WorkloadBuilder b("late_read");
  auto x = b.input("x", {kRows, kCols}, arch::DType::bf16);
  auto rx = b.reshape("rx", x, {2 * kRows, kCols / 2});
  auto e0 = b.elementwise("e0", "exp", {rx});
  auto r0 = b.reshape("r0", e0, {2 * kRows, kCols / 2});
  auto e1 = b.elementwise("e1", "tanh", {e0});
  auto e2 = b.elementwise("e2", "gelu", {e1});
  // r0 (e0's bytes) is read here, so e0's range lives up to this point:
  // x, e0/r0 and e2 are live together, e2 having written over e1 and this
  // result writing over e2 (both die where they are read).
  b.elementwise("e3", "add", {e2, r0});
  EXPECT_EQ(peak(b.build()), 3 * kBytes);
}

// An input lives from its first reader to its last, as the big inputs of
// a generated step stand for values computed in place (a gradient's
// inverse indices, padding, masks). x is read by e0 and e1: e1 writes in
// place of x (read for the last time), e0 dies there too, e2 writes over
// e1; y comes in at e3 and takes e0's old range, e3 writes over e2 and e4
// over e3: 2 ranges. Holding y from the start, as the plan once did, puts
// x, e0 and y together at e1: 3.
TEST(MemoryPlan, InputLivesFromItsFirstReaderToItsLast) {
  workloads::WorkloadBuilder b("late_input");
  auto x = b.input("x", {kRows, kCols}, arch::DType::bf16);
  auto e0 = b.elementwise("e0", "exp", {x});
  auto e1 = b.elementwise("e1", "add", {e0, x});
  auto e2 = b.elementwise("e2", "gelu", {e1});
  auto y = b.input("y", {kRows, kCols}, arch::DType::bf16);
  auto e3 = b.elementwise("e3", "add", {e2, y});
  b.elementwise("e4", "add", {e3, y});
  EXPECT_EQ(peak(b.build()), 2 * kBytes);
}
