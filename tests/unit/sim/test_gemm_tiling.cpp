// The GEMM block-size search on its own (no steps emitted): every chosen
// block fits the VMEM budget and is a whole number of MXU tiles (or the
// padded extent), the estimate never beats the roofline, a larger budget
// never makes the estimate worse, and per-step costs push towards fewer,
// larger blocks.
#include <gtest/gtest.h>

#include "arch/common/derived.h"
#include "sim/config/config_loader.h"
#include "sim/lowering/gemm_tiling.h"

using namespace tpusim;
using sim::lowering::choose_gemm_tiling;
using sim::lowering::GemmShape;

namespace {

GemmShape square(std::int64_t n) {
  GemmShape g;
  g.m = g.k = g.n = n;
  return g;
}

sim::lowering::ChipFigures figures(const arch::TpuConfig& cfg) {
  sim::LoweringOptions opt;
  return sim::lowering::chip_figures(cfg, opt);
}

TEST(GemmTiling, BlocksFitTheBudgetAndAreWholeMxuTiles) {
  for (const char* arch_name : {"v5e", "v6e", "v7", "v4"}) {
    const arch::TpuConfig cfg = sim::load_tpu_config(arch_name);
    const auto f = figures(cfg);
    for (std::int64_t n : {256, 1000, 4096, 16384}) {
      const auto t = choose_gemm_tiling(square(n), f, f.cores);
      ASSERT_TRUE(t) << arch_name << " " << n;
      EXPECT_LE(t->vmem, f.vmem_budget) << arch_name << " " << n;
      EXPECT_EQ(t->bk % f.rows, 0) << arch_name << " " << n;
      EXPECT_EQ(t->bn % f.cols, 0) << arch_name << " " << n;
      EXPECT_EQ(t->bm % 8, 0) << arch_name << " " << n;
      EXPECT_LE(t->bm, (n + 7) / 8 * 8);
    }
  }
}

TEST(GemmTiling, EstimateNeverBeatsTheRoofline) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  const auto f = figures(cfg);
  for (std::int64_t n : {128, 512, 2048, 8192}) {
    const GemmShape g = square(n);
    const auto t = choose_gemm_tiling(g, f, f.cores);
    ASSERT_TRUE(t);
    const double macs = static_cast<double>(n) * n * n;
    const double bytes = 3.0 * n * n * 2;  // A, B and C once, bf16
    const double roofline = std::max(macs / f.peak_macs(arch::DType::bf16), bytes / f.hbm_bytes_per_cycle);
    EXPECT_GE(t->est_cycles, roofline) << n;
  }
}

TEST(GemmTiling, MoreVmemNeverMakesTheEstimateWorse) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  auto f = figures(cfg);
  double previous = 1e300;
  for (std::uint64_t budget : {1ull << 20, 4ull << 20, 16ull << 20, 64ull << 20}) {
    f.vmem_budget = budget;
    const auto t = choose_gemm_tiling(square(8192), f, f.cores);
    ASSERT_TRUE(t) << budget;
    EXPECT_LE(t->est_cycles, previous) << budget;
    previous = t->est_cycles;
  }
}

TEST(GemmTiling, NothingFitsATinyBudget) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  auto f = figures(cfg);
  // The smallest block (8 x 128 x 128 bf16, double buffered, f32 acc):
  // 2 x (2 KiB + 32 KiB) + 4 KiB + 2 x 2 KiB = 76 KiB.
  f.vmem_budget = 76 * 1024 - 1;
  EXPECT_FALSE(choose_gemm_tiling(square(1024), f, 1));
  f.vmem_budget = 76 * 1024;
  const auto t = choose_gemm_tiling(square(1024), f, 1);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->bm, 8);
  EXPECT_EQ(t->bk, 128);
  EXPECT_EQ(t->bn, 128);
}

TEST(GemmTiling, StepOverheadFavoursFewerSteps) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  auto f = figures(cfg);
  f.vmem_budget = 16ull << 20;
  auto steps = [](const sim::lowering::GemmTiling& t, std::int64_t n) {
    return ((n + t.bm - 1) / t.bm) * ((n + t.bk - 1) / t.bk) * ((n + t.bn - 1) / t.bn);
  };
  f.step_overhead = 0;
  const auto free = choose_gemm_tiling(square(4096), f, 1);
  f.step_overhead = 100000;  // a step costs more than any block's compute
  const auto costly = choose_gemm_tiling(square(4096), f, 1);
  ASSERT_TRUE(free && costly);
  EXPECT_LE(steps(*costly, 4096), steps(*free, 4096));
  EXPECT_GT(costly->est_cycles, free->est_cycles);
}

TEST(GemmTiling, DecodeRowsArePaddedToOneSublaneTile) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  const auto f = figures(cfg);
  GemmShape g;
  g.m = 1;
  g.k = 4096;
  g.n = 14336;
  const auto t = choose_gemm_tiling(g, f, 1);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->bm, 8);
}

// A block's K loop stays on one core, so a matmul with one output block
// runs on one core however many the chip has. On a two-core chip the
// search splits a decode matmul's N so that both cores stream weights
// (v7: one core's MXUs load weight tiles at 4 x 256 x 256 x 2 B per 256
// cycles, 4.5 TB/s at 2.2 GHz, below the chip's 7.4 TB/s of HBM).
TEST(GemmTiling, EveryCoreGetsAnOutputBlock) {
  for (const char* arch_name : {"v7", "v5p"}) {
    const arch::TpuConfig cfg = sim::load_tpu_config(arch_name);
    const auto f = figures(cfg);
    ASSERT_EQ(f.cores, 2) << arch_name;
    GemmShape g;
    g.m = 8;
    g.k = 8192;
    g.n = 28672;
    const auto t = choose_gemm_tiling(g, f, f.cores);
    ASSERT_TRUE(t) << arch_name;
    const std::int64_t out_blocks = ((g.m + t->bm - 1) / t->bm) * ((g.n + t->bn - 1) / t->bn);
    EXPECT_GE(out_blocks, 2) << arch_name << ": bm=" << t->bm << " bn=" << t->bn;
    // And the estimate counts one core's share: with one core it is no
    // smaller than with two.
    const auto one = choose_gemm_tiling(g, f, 1);
    ASSERT_TRUE(one);
    EXPECT_GE(one->est_cycles, t->est_cycles) << arch_name;
  }
}

}  // namespace

// A batched matmul whose entries are tiny (dense decode attention's PV: one
// row per sequence and KV head against a 2048 x 128 V block) puts several
// entries in a grid step, within the VMEM budget, so the step overhead is
// paid once per block of entries; one entry never is a block of more.
TEST(GemmTiling, TinyBatchedMatmulsShareAStep) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  const auto f = figures(cfg);
  GemmShape g;
  g.batch = 384;
  g.m = 1;
  g.k = 2048;
  g.n = 128;
  const auto t = choose_gemm_tiling(g, f, 1);
  ASSERT_TRUE(t);
  EXPECT_GT(t->bb, 1);
  EXPECT_LE(t->bb, g.batch);
  EXPECT_LE(t->vmem, f.vmem_budget);
  EXPECT_GE(t->bm, g.m);
  EXPECT_GE(t->bn, g.n);
  g.batch = 1;
  const auto one = choose_gemm_tiling(g, f, 1);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->bb, 1);
  // The 384 entries cost less than 384 separate single-entry matmuls.
  EXPECT_LT(t->est_cycles, 384 * one->est_cycles);
}

// Fixed blocks (a Pallas matmul's BlockSpecs, GemmShape::fixed_*) are the
// blocks the search returns, on the Pallas grid's order (M blocks outside
// N blocks) and one batch entry a step; the sizes left at 0 are searched,
// a block covering its dimension is the dimension padded to its unit, and
// fixed blocks that overflow the VMEM budget fit nowhere.
TEST(GemmTiling, FixedBlocksAreKept) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  const auto f = figures(cfg);
  GemmShape g = square(8192);
  const auto searched = choose_gemm_tiling(g, f, 1);
  ASSERT_TRUE(searched);
  g.fixed_bm = 128;
  g.fixed_bk = 128;
  g.fixed_bn = 128;
  const auto t = choose_gemm_tiling(g, f, 1);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->bm, 128);
  EXPECT_EQ(t->bk, 128);
  EXPECT_EQ(t->bn, 128);
  EXPECT_FALSE(t->n_outer);
  EXPECT_EQ(t->bb, 1);
  // 262,144 small steps cost more than the searched blocks.
  EXPECT_GT(t->est_cycles, searched->est_cycles);

  GemmShape part = square(8192);
  part.fixed_bk = 512;
  const auto p = choose_gemm_tiling(part, f, 1);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->bk, 512);
  EXPECT_FALSE(p->n_outer);
  EXPECT_EQ(p->bm % 8, 0);
  EXPECT_EQ(p->bn % f.cols, 0);

  GemmShape whole;
  whole.m = 100;
  whole.k = 300;
  whole.n = 200;
  whole.fixed_bm = 100;
  whole.fixed_bk = 1 << 20;
  whole.fixed_bn = 200;
  const auto w = choose_gemm_tiling(whole, f, 1);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->bm, 104);
  EXPECT_EQ(w->bk, 384);
  EXPECT_EQ(w->bn, 256);

  GemmShape huge = square(16384);
  huge.fixed_bm = huge.fixed_bk = huge.fixed_bn = 16384;
  EXPECT_FALSE(choose_gemm_tiling(huge, f, 1));

  GemmShape batched;
  batched.batch = 64;
  batched.m = 8;
  batched.k = 128;
  batched.n = 128;
  EXPECT_GT(choose_gemm_tiling(batched, f, 1)->bb, 1);
  batched.fixed_bn = 128;
  EXPECT_EQ(choose_gemm_tiling(batched, f, 1)->bb, 1);
}
