// Derived chip figures in closed form, and the 3% published-figure check.
#include <gtest/gtest.h>

#include "arch/common/derived.h"

namespace tpusim::arch {
namespace {

// A v4-shaped chip built by hand (not loaded from YAML).
TpuConfig v4_like() {
  TpuConfig c;
  c.chip.tensorcores = 2;
  c.chip.clock_hz = 1.05e9;
  c.mxu.count = 4;
  c.mxu.rows = c.mxu.cols = 128;
  c.mxu.throughput = {{DType::bf16, 1.0}, {DType::int8, 2.0}};
  c.hbm.stacks = 4;
  c.hbm.channels = 8;
  c.hbm.pseudo_channels = 2;
  c.hbm.bus_width_bits = 64;
  c.hbm.data_rate = 2.4e9;
  c.hbm.capacity_bytes = 32ull << 30;
  c.ici.ports = 6;
  c.ici.link_bandwidth = 45e9;
  return c;
}

TEST(Derived, PeakFlopsPerDtype) {
  TpuConfig c = v4_like();
  // 2 TC x 4 MXU x 128 x 128 MAC x 2 FLOP x 1.05e9 = 275,251,200,000,000.
  EXPECT_DOUBLE_EQ(peak_flops(c, DType::bf16), 275251200000000.0);
  // int8 at throughput 2: twice that.
  EXPECT_DOUBLE_EQ(peak_flops(c, DType::int8), 2 * 275251200000000.0);
  // Absent from the map: unsupported, 0.
  EXPECT_EQ(peak_flops(c, DType::fp8_e4m3), 0.0);
}

TEST(Derived, HbmBandwidthAndRidge) {
  TpuConfig c = v4_like();
  // 4 stacks x 8 ch x 2 pc x 64 bit / 8 x 2.4e9 = 4 x 128 B x 2.4e9 = 1228.8e9.
  EXPECT_DOUBLE_EQ(hbm_peak_bandwidth(c.hbm), 1228.8e9);
  DerivedFigures d = derive(c);
  EXPECT_DOUBLE_EQ(d.hbm_bandwidth, 1228.8e9);
  EXPECT_EQ(d.hbm_capacity, 32ull << 30);
  // ridge = 275.2512e12 / 1228.8e9 = 224.0 FLOPs/byte.
  EXPECT_NEAR(d.ridge_point.at(DType::bf16), 224.0, 1e-9);
  EXPECT_EQ(d.peak_flops.size(), 2u);
  // ICI: 6 ports x 45 GB/s x 2 directions = 540 GB/s.
  EXPECT_DOUBLE_EQ(d.ici_chip_bandwidth, 540e9);
}

TEST(Derived, PublishedWithinThreePercentPasses) {
  TpuConfig c = v4_like();
  c.published.peak_flops[DType::bf16] = 275e12;  // 0.09% off
  c.published.hbm_bandwidth = 1200e9;            // 2.4% off
  c.published.ici_link_bandwidth = 45e9;
  EXPECT_TRUE(check_published(c).empty());
}

TEST(Derived, PublishedBeyondThreePercentFails) {
  TpuConfig c = v4_like();
  const double d = 275251200000000.0;
  // 2.9% below passes, 3.1% below fails: the tolerance is relative to the
  // published figure, |d - p| <= 0.03 p.
  c.published.peak_flops[DType::bf16] = d / 1.029;
  EXPECT_TRUE(check_published(c).empty());
  c.published.peak_flops[DType::bf16] = d / 1.031;
  auto m = check_published(c);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].key, "published.peak_tflops.bf16");
  EXPECT_DOUBLE_EQ(m[0].derived, d);
  c.published.peak_flops.clear();
  c.published.hbm_bandwidth = 819e9;
  c.published.ici_chip_bandwidth = 1200e9;
  m = check_published(c);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].key, "published.hbm_bandwidth");
  EXPECT_EQ(m[1].key, "published.ici_chip_bandwidth");
  EXPECT_DOUBLE_EQ(m[1].derived, 540e9);
}

TEST(Derived, PublishedPeakForUnsupportedDtypeFails) {
  TpuConfig c = v4_like();
  c.published.peak_flops[DType::fp8_e4m3] = 275e12;
  auto m = check_published(c);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].derived, 0.0);
  EXPECT_NE(m[0].how.find("no fp8_e4m3"), std::string::npos);
}

}  // namespace
}  // namespace tpusim::arch
