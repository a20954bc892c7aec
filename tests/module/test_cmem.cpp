// CMEM placement in the lowering (TPU v4/v4i have a 128 MiB CMEM): which
// tensors go there, that the program's DMAs follow, that the capacity and
// overlapping lifetimes are respected, and that a simulated run stays at or
// above each operator's roofline while moving less through HBM.
// Each TEST is its own process (one SystemC elaboration at most).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "arch/common/derived.h"
#include "sim/config/config_loader.h"
#include "sim/lowering/lowering.h"
#include "sim/results/metrics.h"
#include "sim/run/run.h"
#include "workloads/ir/builder.h"

using namespace tpusim;
using arch::DmaWork;
using arch::MemSpace;

namespace {

constexpr std::int64_t kRows = 2048, kCols = 4096;  // 16 MiB of bf16 per tensor
constexpr std::uint64_t kBytes = static_cast<std::uint64_t>(kRows * kCols * 2);

// x -> exp -> tanh -> gelu -> y: with fusion off, the three intermediates
// are materialised, each written once and read once.
workloads::Workload chain(int links) {
  workloads::WorkloadBuilder b("chain");
  auto t = b.input("x", {kRows, kCols}, arch::DType::bf16);
  const char* kinds[] = {"exp", "tanh", "gelu", "silu", "exp", "tanh"};
  for (int i = 0; i < links; ++i) t = b.elementwise("e" + std::to_string(i), kinds[i % 6], {t});
  return b.build();
}

sim::LoweringOptions no_fusion(bool cmem) {
  sim::LoweringOptions o;
  o.fusion = false;
  o.cmem = cmem;
  return o;
}

struct Traffic {
  std::uint64_t hbm = 0, cmem = 0;
  // Byte ranges each tensor's CMEM DMAs touch, by operator index.
  std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> cmem_range;
};

Traffic traffic(const sim::LoweredWorkload& lw) {
  Traffic t;
  for (const arch::Instr& in : lw.program.instrs) {
    const auto* w = std::get_if<DmaWork>(&in.work);
    if (!w) continue;
    if (w->src == MemSpace::hbm || w->dst == MemSpace::hbm) t.hbm += w->bytes();
    if (w->src == MemSpace::cmem || w->dst == MemSpace::cmem) {
      t.cmem += w->bytes();
      // Stores into CMEM name the produced tensor's range.
      if (w->dst == MemSpace::cmem) {
        auto& r = t.cmem_range.try_emplace(in.op, ~0ull, 0ull).first->second;
        r.first = std::min(r.first, w->dst_addr);
        r.second = std::max(r.second, w->dst_addr + w->bytes());
      }
    }
  }
  return t;
}

}  // namespace

TEST(Cmem, IntermediatesMoveFromHbmToCmem) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v4", {"hbm.model=detailed"});
  ASSERT_TRUE(cfg.cmem.present);
  const auto wl = chain(4);  // x -> e0 -> e1 -> e2 -> e3 (output)
  const auto with = sim::lower(wl, cfg, no_fusion(true));
  const auto without = sim::lower(wl, cfg, no_fusion(false));
  const Traffic a = traffic(with), b = traffic(without);
  // Without CMEM every op reads its input and writes its output in HBM:
  // 4 ops x 2 x 16 MiB. With it, e0, e1 and e2 (written once, read once)
  // live in CMEM: 3 x 2 x 16 MiB move over; x and e3 stay in HBM.
  EXPECT_EQ(b.hbm, 8 * kBytes);
  EXPECT_EQ(b.cmem, 0u);
  EXPECT_EQ(a.cmem, 6 * kBytes);
  EXPECT_EQ(a.hbm, 2 * kBytes);
  // The plans say the same: the first op reads x from HBM and writes e0 to
  // CMEM; the last reads e2 from CMEM and writes e3 to HBM.
  EXPECT_EQ(with.ops[0].hbm_bytes, kBytes);
  EXPECT_EQ(with.ops[0].cmem_bytes, kBytes);
  EXPECT_EQ(with.ops[1].hbm_bytes, 0u);
  EXPECT_EQ(with.ops[1].cmem_bytes, 2 * kBytes);
  EXPECT_EQ(with.ops[3].hbm_bytes, kBytes);
  EXPECT_EQ(with.ops[3].cmem_bytes, kBytes);
  // Memory bound: the slower of the two paths. Op 1 moves 32 MiB over CMEM.
  const double cmem_per_cycle = cfg.cmem.bandwidth / cfg.chip.clock_hz;
  EXPECT_DOUBLE_EQ(with.ops[1].memory_cycles, 2.0 * kBytes / cmem_per_cycle);
  // HBM peaks: without CMEM, e0 is written in place of the donated input
  // x and each later op over its dying operand, so the chain holds one
  // 16 MiB range; with it, e0..e2 take no HBM, x lives only while e0
  // reads it and the result e3 takes its range: one as well.
  EXPECT_EQ(without.hbm_peak_bytes, kBytes);
  EXPECT_EQ(with.hbm_peak_bytes, kBytes);
}

TEST(Cmem, ChipsWithoutCmemKeepEverythingInHbm) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=detailed"});
  ASSERT_FALSE(cfg.cmem.present);
  sim::LoweringOptions o = no_fusion(true);
  o.vmem_residency = false;
  const Traffic t = traffic(sim::lower(chain(4), cfg, o));
  EXPECT_EQ(t.cmem, 0u);
  EXPECT_EQ(t.hbm, 8 * kBytes);
}

// Without CMEM, the VMEM that kernels' scoped blocks leave free (v5e: 128
// MiB - 16 MiB) holds the chain's three 16 MiB intermediates: only the
// input is read from HBM and the output written, and nothing goes to CMEM.
TEST(Cmem, ChipsWithoutCmemKeepIntermediatesInFreeVmem) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  ASSERT_FALSE(cfg.cmem.present);
  const auto lw = sim::lower(chain(4), cfg, no_fusion(true));
  const Traffic t = traffic(lw);
  EXPECT_EQ(t.cmem, 0u);
  EXPECT_EQ(t.hbm, 2 * kBytes);
  // The same with only 16 MiB free: one intermediate at a time fits and
  // neighbours along the chain are alive together, so the first and the
  // last are resident and the middle one is written to and read from HBM.
  arch::TpuConfig small = cfg;
  small.vmem.size_bytes = cfg.kernel.scoped_vmem + kBytes;
  EXPECT_EQ(traffic(sim::lower(chain(4), small, no_fusion(true))).hbm, 2 * kBytes + 2 * kBytes);
}

TEST(Cmem, CapacityAndOverlappingLifetimesAreRespected) {
  arch::TpuConfig cfg = sim::load_tpu_config("v4", {"hbm.model=detailed"});
  // Room for two 16 MiB tensors (plus a little): along a chain at most two
  // intermediates are alive at once (producer's output and its input), so
  // all five fit, reusing the space as lifetimes end.
  cfg.cmem.size_bytes = 2 * kBytes + 4096;
  const auto lw = sim::lower(chain(6), cfg, no_fusion(true));
  const Traffic t = traffic(lw);
  ASSERT_EQ(t.cmem_range.size(), 5u);  // e0..e4 stored into CMEM
  for (const auto& [op, r] : t.cmem_range) {
    EXPECT_LE(r.second, cfg.cmem.size_bytes) << "op " << op;
    EXPECT_EQ(r.second - r.first, kBytes) << "op " << op;
  }
  // Consecutive intermediates are alive together (e_i is read while e_i+1
  // is written), so their ranges must be disjoint.
  for (std::uint32_t op = 0; op + 1 < 5; ++op) {
    const auto& a = t.cmem_range.at(op);
    const auto& b = t.cmem_range.at(op + 1);
    EXPECT_TRUE(a.second <= b.first || b.second <= a.first) << "ops " << op << " and " << op + 1;
  }
  // One byte less than a tensor: nothing fits, everything stays in HBM.
  cfg.cmem.size_bytes = kBytes - 1;
  EXPECT_EQ(traffic(sim::lower(chain(6), cfg, no_fusion(true))).cmem, 0u);
}

TEST(Cmem, SimulatedRunStaysAboveRooflineAndUsesLessHbm) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v4", {"hbm.model=detailed"});
  sim::RunOptions ro;
  ro.lowering = no_fusion(true);
  const auto wl = chain(4);
  const sim::RunReport r = sim::run_workload("v4", cfg, wl, ro);
  const sim::RunMetrics m = sim::compute_metrics(r);
  for (std::size_t i = 0; i < m.ops.size(); ++i) {
    ASSERT_TRUE(m.ops[i].has_instrs);
    EXPECT_GE(static_cast<double>(m.ops[i].cycles), r.lowered.ops[i].roofline_cycles) << i;
  }
  EXPECT_EQ(m.hbm_bytes, 2 * kBytes);
  // The middle ops move 32 MiB over CMEM only; CMEM's bandwidth (shared by
  // the DMA engines) bounds them from below, and since CMEM is 2x HBM on
  // v4 they finish faster than the same bytes could cross HBM.
  const double hbm_per_cycle = arch::hbm_peak_bandwidth(cfg.hbm) / cfg.chip.clock_hz;
  EXPECT_LT(static_cast<double>(m.ops[1].cycles), 2.0 * kBytes / hbm_per_cycle);
}
