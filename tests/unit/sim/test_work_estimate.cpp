// The up-front estimate of simulated work (sim/engine/work_estimate.h,
// issue 17 "a hard ceiling on simulated work"): events counted as the DMA
// engines plan requests, and a lower bound on simulated time from MXU work
// at peak and HBM traffic at peak bandwidth.
#include <gtest/gtest.h>

#include "arch/common/derived.h"
#include "sim/config/config_loader.h"
#include "sim/engine/work_estimate.h"

namespace tpusim::sim {
namespace {

arch::Instr dma(arch::MemSpace src, arch::MemSpace dst, std::uint64_t row_bytes, std::uint64_t rows) {
  arch::Instr in;
  in.unit = arch::UnitKind::dma;
  arch::DmaWork w;
  w.src = src;
  w.dst = dst;
  w.row_bytes = row_bytes;
  w.rows = rows;
  w.src_stride = w.dst_stride = row_bytes;
  in.work = w;
  return in;
}

// 3 rows of 1000 B from HBM: each row is ceil(1000 / 512) = 2 requests of
// v5e's 512 B; an on-chip copy of 1025 B: ceil(1025 / 512) = 3 requests;
// a 1024 x 2048 x 4096 matmul.
arch::Program two_copies_and_a_matmul() {
  arch::Program p;
  p.instrs.push_back(dma(arch::MemSpace::hbm, arch::MemSpace::vmem, 1000, 3));
  p.instrs.push_back(dma(arch::MemSpace::vmem, arch::MemSpace::vmem, 1025, 1));
  arch::Instr mm;
  mm.unit = arch::UnitKind::mxu;
  mm.work = arch::MxuWork{1024, 2048, 4096, arch::DType::bf16};
  p.instrs.push_back(mm);
  return p;
}

TEST(WorkEstimate, CountsInstructionsAndRequestsAsTheDmaEnginesPlanThem) {
  const arch::TpuConfig cfg = load_tpu_config("v5e");
  ASSERT_EQ(cfg.dma.request_bytes, 512u);
  const arch::Program p = two_copies_and_a_matmul();
  const WorkEstimate e = estimate_work(cfg, p);
  EXPECT_EQ(e.instructions, 3u);
  EXPECT_EQ(e.dma_requests, 6u + 3u);
  EXPECT_EQ(e.events(), 12u);
  // 1024 x 2048 x 4096 MACs at half the chip's bf16 peak FLOP/s.
  EXPECT_DOUBLE_EQ(e.mxu_seconds, 1024.0 * 2048 * 4096 / (arch::peak_flops(cfg, arch::DType::bf16) / 2));
  // Only the HBM side of the first copy counts: 3000 B at peak bandwidth.
  EXPECT_DOUBLE_EQ(e.hbm_seconds, 3000.0 / arch::hbm_peak_bandwidth(cfg.hbm));
  EXPECT_DOUBLE_EQ(e.min_seconds(), std::max(e.mxu_seconds, e.hbm_seconds));
  // --all-chips: every chip runs the program.
  const WorkEstimate e4 = estimate_work(cfg, p, 4);
  EXPECT_EQ(e4.events(), 48u);
  EXPECT_DOUBLE_EQ(e4.min_seconds(), e.min_seconds());
}

// The calibrated HBM model serves a transfer as a whole: each DMA counts
// as one event, whatever its requests (two_copies_and_a_matmul: 3
// instructions, 2 of them DMAs, 9 requests).
TEST(WorkEstimate, CalibratedHbmCountsTransfersNotRequests) {
  const arch::TpuConfig channel = load_tpu_config("v5e");
  const arch::TpuConfig calibrated = load_tpu_config("v5e", {"hbm.model=calibrated"});
  const arch::Program p = two_copies_and_a_matmul();
  const WorkEstimate e = estimate_work(calibrated, p), r = estimate_work(channel, p);
  EXPECT_FALSE(e.per_request);
  EXPECT_TRUE(r.per_request);
  EXPECT_EQ(e.dma_requests, 9u);
  EXPECT_EQ(e.dma_transfers, 2u);
  EXPECT_EQ(e.events(), 3u + 2u);
  EXPECT_EQ(r.events(), 3u + 9u);
  EXPECT_EQ(estimate_work(calibrated, p, 4).events(), 4u * 5u);
  EXPECT_DOUBLE_EQ(e.min_seconds(), r.min_seconds());
}

TEST(WorkEstimate, HbmToHbmCountsBothSidesAndHugeCountsSaturate) {
  const arch::TpuConfig cfg = load_tpu_config("v5e");
  arch::Program p;
  p.instrs.push_back(dma(arch::MemSpace::hbm, arch::MemSpace::hbm, 4096, 1));
  EXPECT_DOUBLE_EQ(estimate_work(cfg, p).hbm_seconds, 2 * 4096.0 / arch::hbm_peak_bandwidth(cfg.hbm));
  EXPECT_EQ(estimate_work(cfg, p).dma_requests, 8u);  // read and write side by side: 4096 / 512
  p.instrs.push_back(dma(arch::MemSpace::hbm, arch::MemSpace::vmem, 1ULL << 40, 1ULL << 40));
  EXPECT_EQ(estimate_work(cfg, p).dma_requests, ~0ULL);
  EXPECT_EQ(estimate_work(cfg, p, 64).events(), ~0ULL);
}

}  // namespace
}  // namespace tpusim::sim
