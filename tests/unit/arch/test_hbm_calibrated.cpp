// Calibrated HBM model against the detailed one: transfer times within 2%
// over sizes 4 KiB - 256 MiB, sequential and strided, and concurrent streams
// sharing bandwidth; plus that calibration is reused (O(1) per transfer).
// Memory: TPU v5e's, 2 stacks of HBM2e (shipped preset).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "arch/hbm/calibrated_hbm.h"
#include "arch/hbm/detailed_dram.h"
#include "hbm_test_util.h"

using namespace tpusim;
using arch::Ps;

namespace {

arch::HbmConfig v5e() { return test::load_hbm_preset("hbm2e", 2); }

// Completion time of each transfer, all submitted at t = 0, in submit order.
std::vector<Ps> run_all(arch::HbmModel& m, const std::vector<arch::HbmTransfer>& ts) {
  std::vector<test::HbmJob> jobs;
  for (const auto& t : ts) jobs.push_back({t, 0});
  return test::run_hbm_jobs(m, jobs);
}

void expect_close(const std::vector<arch::HbmTransfer>& ts, double tol = 0.02) {
  arch::DetailedDram det(v5e());
  arch::CalibratedHbm cal(v5e());
  const auto d = run_all(det, ts);
  const auto c = run_all(cal, ts);
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const double err = std::abs(static_cast<double>(c[i] - d[i])) / static_cast<double>(d[i]);
    EXPECT_LE(err, tol) << "transfer " << i << " of " << ts[i].bytes() << " bytes: detailed " << d[i]
                        << " ps, calibrated " << c[i] << " ps";
  }
}

arch::HbmTransfer seq(std::uint64_t bytes, std::uint64_t base = 0) {
  arch::HbmTransfer t;
  t.base = base;
  t.row_bytes = bytes;
  return t;
}

}  // namespace

class CalibratedSequential : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(CalibratedSequential, WithinTwoPercentOfDetailed) { expect_close({seq(GetParam())}); }

// Powers of two hit calibration points; the others test interpolation
// (5 KiB, 100 KiB, 3 MiB) and extrapolation beyond 8 MiB (48, 256 MiB).
INSTANTIATE_TEST_SUITE_P(Sizes, CalibratedSequential,
                         ::testing::Values(4096ull, 5120ull, 100ull << 10, 1ull << 20, 3ull << 20, 48ull << 20,
                                           256ull << 20));

TEST(CalibratedStrided, RowsOfHalfAKibEveryFourKib) {
  arch::HbmTransfer t;
  t.row_bytes = 512;
  t.stride = 4096;
  for (std::uint64_t rows : {24ull, 3000ull, 40000ull}) {
    t.rows = rows;
    expect_close({t});
  }
}

TEST(CalibratedStrided, TwoKibRowsOneMibApart) {
  arch::HbmTransfer t;
  t.row_bytes = 2048;
  t.stride = 1 << 20;
  t.rows = 6000;
  expect_close({t});
}

// Concurrent streams share bandwidth: three 8 MiB reads started together
// each take about three times as long as one alone, and the calibrated
// fair share matches the detailed interleaving. Bases are offset by 7 (and
// 3) interleave units per pseudo-channel so the streams use different banks.
// (Longer concurrent streams drift into each other's banks: 3 x 24 MiB
// measured 5% slower in detailed than calibrated; see docs/hbm.md.)
TEST(CalibratedConcurrent, ThreeStreamsShareBandwidth) {
  std::vector<arch::HbmTransfer> ts;
  for (int i = 0; i < 3; ++i)
    ts.push_back(seq(8ull << 20, static_cast<std::uint64_t>(i) * ((3ull << 30) + (224ull << 10))));
  expect_close(ts);
  arch::CalibratedHbm cal(v5e());
  const Ps alone = cal.alone_time(ts[0]);
  const Ps together = run_all(cal, ts)[0];
  EXPECT_GT(together, 2.8 * static_cast<double>(alone));
}

TEST(CalibratedConcurrent, TwoStreamsOfDifferentSizes) {
  expect_close({seq(8ull << 20), seq(32ull << 20, (4ull << 30) + (96ull << 10))});
}

TEST(Calibrated, CalibrationIsMeasuredOnceAndReused) {
  arch::CalibratedHbm cal(v5e());
  cal.alone_time(seq(100ull << 20));
  const auto runs = cal.detailed_runs();
  EXPECT_GT(runs, 0u);
  for (std::uint64_t mib : {50ull, 300ull, 65536ull}) cal.alone_time(seq(mib << 20));
  EXPECT_EQ(cal.detailed_runs(), runs);
}

// The chips of an --all-chips run each build a calibrated model of the same
// config: the second finds every figure measured by the first and gives
// the same times; a config that differs in any field measures anew.
TEST(Calibrated, InstancesWithTheSameConfigShareTheCalibration) {
  const auto t = seq(3ull << 20);
  arch::CalibratedHbm first(v5e());
  const Ps alone = first.alone_time(t);
  const double eff = first.steady_efficiency(t);
  EXPECT_GT(first.detailed_runs(), 0u);
  arch::CalibratedHbm second(v5e());
  EXPECT_EQ(second.alone_time(t), alone);
  EXPECT_EQ(second.steady_efficiency(t), eff);
  EXPECT_EQ(second.detailed_runs(), 0u);
  for (auto change : std::vector<void (*)(arch::HbmConfig&)>{
           [](arch::HbmConfig& c) { c.t.tRFC *= 2; }, [](arch::HbmConfig& c) { c.refresh_postpone = 0; },
           [](arch::HbmConfig& c) { c.address_hash = false; }, [](arch::HbmConfig& c) { c.queue_depth = 8; }}) {
    arch::HbmConfig cfg = v5e();
    change(cfg);
    arch::CalibratedHbm other(cfg);
    other.alone_time(t);
    EXPECT_GT(other.detailed_runs(), 0u);
  }
}

// An issue-rate limit slower than HBM makes the last atom's arrival the
// bound: n atoms 10 ns apart finish at (n-1) x 10 ns + one atom's latency.
TEST(Calibrated, IssueRateLimitBoundsCompletion) {
  arch::CalibratedHbm cal(v5e());
  arch::HbmTransfer t = seq(64 * 1000);
  t.atom_interval_ps = 10000;
  const Ps expect = 999 * 10000 + cal.atom_latency(t);
  EXPECT_EQ(cal.transfer(t, 0), expect);
  arch::DetailedDram det(v5e());
  const double d = static_cast<double>(det.transfer(t, 0));
  EXPECT_NEAR(static_cast<double>(expect), d, 0.02 * d);
}

// The energy model's row activations: the calibrated model estimates one
// per DRAM row a transfer covers; the detailed model counts its ACTs. A
// 3 MiB sequential read covers 3 MiB / 1 KiB rows = 3072 rows; the
// detailed controller opens each once (open page, sequential within a
// row) plus the rows refresh closed mid-stream, a few percent at most.
TEST(Calibrated, ActivationEstimateMatchesTheDetailedCountOnAStream) {
  auto activates = [](const arch::StatList& st) {
    for (const auto& s : st)
      if (s.name == "activates") return s.value;
    return -1.0;
  };
  const auto t = seq(3ull << 20);
  arch::CalibratedHbm cal(v5e());
  cal.transfer(t, 0);
  EXPECT_EQ(activates(cal.stats()), 3072.0);
  arch::DetailedDram det(v5e());
  det.transfer(t, 0);
  const double d = activates(det.stats());
  EXPECT_GE(d, 3072.0);
  EXPECT_LE(d, 3072.0 * 1.05);
}
