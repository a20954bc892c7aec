// Whole runs through the `channel` HBM model that once never ended: the
// v7 decode of models/examples/custom-3000.yaml (batch 8, context 2048,
// the default of `tpusim check`) brought a pseudo-channel to a frontier
// catching up with now by less than a double resolves at ~1.1e9 ps, so it
// was processed at the same time for ever (ChannelHbm::schedule). The run
// takes about a second of CPU; `timeout` turns a hang into a failure.
#include <gtest/gtest.h>

#include <string>

#include "cli_test_util.h"

namespace {

using tpusim::test::TmpDir;

TEST(CliHbmChannel, V7DecodeOfTheCustomModelEnds) {
  TmpDir d("tpusim_channel_");
  const std::string model = TPUSIM_SOURCE_DIR "/models/examples/custom-3000.yaml";
  const auto r = tpusim::test::run_tpusim_in(
      d.p.string(),
      "run --arch v7 --model " + model + " --phase decode --batch 8 --context 2048 --quiet --out " + (d / "out"),
      "TPUSIM_NO_CACHE=1 timeout 120");
  ASSERT_EQ(r.rc, 0) << (r.rc == 124 ? "did not end within 120 s" : r.err);
  EXPECT_NE(tpusim::test::slurp(d / "out/summary.csv").find("v7"), std::string::npos);
}

}  // namespace
