// DMA engine timing without SystemC: request pacing (issue rate vs the
// outstanding window), setup, in-order engines, and how descriptors of up
// to 4 dimensions become HBM transfers.
#include <gtest/gtest.h>

#include "arch/common/errors.h"
#include "arch/dma/dma_timing.h"
#include "hbm_test_util.h"

using namespace tpusim;
using namespace tpusim::arch;

namespace {
HbmConfig hbm() { return test::load_hbm_preset("hbm2e", 2); }
DmaConfig cfg(int issue, int outstanding, std::uint64_t req, int setup) {
  DmaConfig d;
  d.issue_per_cycle = issue;
  d.max_outstanding = outstanding;
  d.request_bytes = req;
  d.setup_cycles = setup;
  return d;
}
}  // namespace

// 1 GHz clock: a cycle is 1000 ps. Two requests per cycle -> 500 ps apart
// unless the window is tighter: 92.5 ns unloaded latency (64 B on HBM2e)
// over 64 outstanding = 1445.3 ps.
TEST(DmaTiming, IntervalIsIssueRateOrWindowWhicheverIsSlower) {
  EXPECT_DOUBLE_EQ(DmaEngineTiming(cfg(2, 1024, 64, 0), hbm(), 1e9).interval_ps(), 500.0);
  EXPECT_NEAR(DmaEngineTiming(cfg(2, 64, 64, 0), hbm(), 1e9).interval_ps(), 92500.0 / 64, 1e-9);
}

// Setup 100 cycles = 100 ns; 4 KiB in 64 B requests = 64 requests at 1 ns:
// issue runs [100 ns, 164 ns); the next descriptor on the engine starts its
// setup only then (in order per engine).
TEST(DmaTiming, SetupAndInOrderEngine) {
  DmaEngineTiming e(cfg(1, 4096, 64, 100), hbm(), 1e9);
  DmaDescriptor d;
  d.shape = {4096, 1, 1, 1};
  DmaPlan p = e.plan(d, 0);
  EXPECT_EQ(p.issue_start, 100000);
  EXPECT_EQ(p.issue_end, 164000);
  EXPECT_EQ(p.requests, 64u);
  ASSERT_EQ(p.hbm.size(), 1u);
  EXPECT_EQ(p.hbm[0].second, 100000);
  DmaPlan q = e.plan(d, 10000);
  EXPECT_EQ(q.issue_start, 164000 + 100000);
}

// 4-D: 256 B runs x 16 rows (4 KiB apart) x 4 x 8 -> 32 HBM slabs of 16
// rows each, arriving back to back: slab k after k x 16 x 4 requests.
TEST(DmaTiming, FourDimensionalDescriptorBecomesSlabs) {
  DmaEngineTiming e(cfg(1, 4096, 64, 0), hbm(), 1e9);
  DmaDescriptor d;
  d.dims = 4;
  d.shape = {256, 16, 4, 8};
  d.src_stride = {0, 4096, 1 << 20, 8 << 20};
  d.dst_stride = {0, 256, 4096, 16384};
  DmaPlan p = e.plan(d, 0);
  ASSERT_EQ(p.hbm.size(), 32u);
  EXPECT_EQ(p.requests, 32u * 16 * 4);
  const auto& [t5, a5] = p.hbm[5];  // i3 = 1, i2 = 1
  EXPECT_EQ(t5.base, (8u << 20) + (1u << 20));
  EXPECT_EQ(t5.rows, 16u);
  EXPECT_EQ(t5.stride, 4096u);
  EXPECT_FALSE(t5.write);
  EXPECT_EQ(a5, 5 * 16 * 4 * 1000);
}

// Rows laid end to end are one contiguous run; a write to HBM is a write.
TEST(DmaTiming, ContiguousRowsMergeAndDirectionFollowsHbmSide) {
  DmaEngineTiming e(cfg(1, 4096, 512, 0), hbm(), 1e9);
  DmaDescriptor d;
  d.src = MemSpace::vmem;
  d.dst = MemSpace::hbm;
  d.dims = 2;
  d.shape = {1024, 8, 1, 1};
  d.dst_stride = {0, 1024, 0, 0};
  DmaPlan p = e.plan(d, 0);
  ASSERT_EQ(p.hbm.size(), 1u);
  EXPECT_EQ(p.hbm[0].first.row_bytes, 8192u);
  EXPECT_EQ(p.hbm[0].first.rows, 1u);
  EXPECT_TRUE(p.hbm[0].first.write);
  EXPECT_EQ(p.requests, 16u);
}

TEST(DmaTiming, OnChipCopiesTakeIssueTimeOnly) {
  DmaEngineTiming e(cfg(1, 4096, 64, 0), hbm(), 1e9);
  DmaDescriptor d;
  d.src = MemSpace::vmem;
  d.dst = MemSpace::smem;
  d.shape = {640, 1, 1, 1};
  DmaPlan p = e.plan(d, 0);
  EXPECT_TRUE(p.hbm.empty());
  EXPECT_EQ(p.issue_end, 10 * 1000);
}

TEST(DmaTiming, RejectsBadInput) {
  EXPECT_THROW(DmaEngineTiming(cfg(0, 64, 64, 0), hbm(), 1e9), ConfigError);
  EXPECT_THROW(DmaEngineTiming(cfg(1, 64, 64, 0), hbm(), 0), ConfigError);
  DmaEngineTiming e(cfg(1, 64, 64, 0), hbm(), 1e9);
  DmaDescriptor d;
  d.dims = 2;
  d.shape = {64, 4, 1, 1};  // HBM source rows with stride 0
  EXPECT_THROW(e.plan(d, 0), ConfigError);
  d.dims = 0;
  EXPECT_THROW(e.plan(d, 0), ConfigError);
}
