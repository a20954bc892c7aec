// Every shipped chip config, loaded through the config loader (which merges
// the configs/hbm presets under the chip's overrides), gives an HBM whose
// peak matches the chip's published bandwidth within 3% and whose detailed
// model streams at 88-96% of peak.
#include <gtest/gtest.h>

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
  const double eff =
      static_cast<double>(t.bytes()) / arch::ps_to_seconds(d.transfer(t, 0)) / d.peak_bandwidth();
  RecordProperty("efficiency", std::to_string(eff));
  EXPECT_GE(eff, 0.88);
  EXPECT_LE(eff, 0.96);
}

INSTANTIATE_TEST_SUITE_P(Chips, ShippedHbm,
                         ::testing::Values("v1", "v2", "v3", "v4", "v4i", "v5e", "v5p", "v6e", "v7"),
                         [](const auto& info) { return std::string(info.param); });
