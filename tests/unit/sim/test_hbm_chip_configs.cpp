// Every shipped chip config, loaded through the config loader (which merges
// the configs/hbm presets under the chip's overrides), gives an HBM whose
// peak matches the chip's published bandwidth within 3% and whose detailed
// model streams at 88-96% of peak; and whose DMA engines can together keep
// that HBM busy (Little's law and issue rate).
#include <gtest/gtest.h>

#include "arch/dma/dma_timing.h"
#include "arch/hbm/detailed_dram.h"
#include "sim/config/config_loader.h"

using namespace tpusim;

class ShippedHbm : public ::testing::TestWithParam<const char*> {};

TEST_P(ShippedHbm, LoadsPeakMatchesAndStreams) {
  const arch::TpuConfig cfg = sim::load_tpu_config(GetParam());
  arch::DetailedDram d(cfg.hbm);
  if (cfg.published.hbm_bandwidth) {
    const double pub = *cfg.published.hbm_bandwidth;
    EXPECT_NEAR(d.peak_bandwidth(), pub, 0.03 * pub);
  }
  // ~40 us of streaming: ten refresh intervals per pseudo-channel.
  arch::HbmTransfer t;
  t.row_bytes = (static_cast<std::uint64_t>(d.peak_bandwidth() * 40e-6) >> 16) << 16;
  t.atom_bytes = 256;
  const double eff = static_cast<double>(t.bytes()) / arch::ps_to_seconds(d.transfer(t, 0)) / d.peak_bandwidth();
  RecordProperty("efficiency", std::to_string(eff));
  EXPECT_GE(eff, 0.88);
  EXPECT_LE(eff, 0.96);
}

// Each engine issues one request of request_bytes every
// max(cycle / issue_per_cycle, L / max_outstanding), L the unloaded latency
// of one request (Little's law: bytes in flight = bandwidth x latency).
// Together the engines must offer at least 1.2x the HBM peak, so that a
// copy split over them is bound by HBM rather than by issue: the margin
// covers latency above unloaded under load.
TEST_P(ShippedHbm, DmaEnginesCanSaturateHbm) {
  const arch::TpuConfig cfg = sim::load_tpu_config(GetParam());
  const arch::DmaEngineTiming e(cfg.dma, cfg.hbm, cfg.chip.clock_hz);
  const double per_engine = static_cast<double>(cfg.dma.request_bytes) / (e.interval_ps() * 1e-12);
  const double total = per_engine * cfg.dma.engines;
  RecordProperty("dma_over_hbm", std::to_string(total / arch::hbm_peak_bandwidth(cfg.hbm)));
  EXPECT_GE(total, 1.2 * arch::hbm_peak_bandwidth(cfg.hbm))
      << cfg.dma.engines << " engines x " << per_engine / 1e9 << " GB/s";
}

INSTANTIATE_TEST_SUITE_P(Chips, ShippedHbm, ::testing::Values("v1", "v2", "v3", "v4", "v4i", "v5e", "v5p", "v6e", "v7"),
                         [](const auto& info) { return std::string(info.param); });
