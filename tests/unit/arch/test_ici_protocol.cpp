// ICI link protocol efficiency (IciConfig::link_efficiency) and the
// start-up latency of every collective (IciConfig::collective_latency):
// closed forms where a collective of V bytes over one hop takes
// latency + V / (efficiency x bandwidth) + hop, in both network
// fidelities, exact to the picosecond; deferred per-chip starts; groups
// of one chip; and the errors for out-of-range values.
#include <gtest/gtest.h>

#include "arch/common/errors.h"
#include "arch/ici/collectives.h"
#include "test_ici_util.h"

using namespace tpusim::arch;
using namespace tpusim::arch::ici;
using tpusim::arch::test::req;

namespace {

// Round figures so that every closed form is exact in picoseconds:
// 100 GB/s x 0.5 = 50 GB/s of payload = 20 ps per byte; a 4096-byte
// packet takes 81,920 ps; hop 1 us; start-up 10 us.
IciConfig protocol_config() {
  IciConfig c = test::ici_v5e();
  c.link_bandwidth = 100e9;
  c.link_efficiency = 0.5;
  c.hop_latency = 1e-6;
  c.collective_latency = 10e-6;
  return c;
}

NetworkOptions opts(Fidelity f) {
  NetworkOptions o;
  o.fidelity = f;
  return o;
}

class Protocol : public ::testing::TestWithParam<Fidelity> {};

}  // namespace

TEST_P(Protocol, MessageMovesAtEfficiencyTimesBandwidth) {
  const Slice s(protocol_config(), "4x4");
  auto net = make_network(s, opts(GetParam()));
  // 1 MiB over one hop: 1,048,576 B x 20 ps = 20,971,520 ps (at the
  // nominal 100 GB/s it would be half), + 1 us hop latency.
  net->send(s.chip_at({0, 0}), s.chip_at({1, 0}), 1 << 20, 0);
  std::vector<Delivery> d;
  net->advance_to(kNeverPs - 1, d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].time, 20971520 + 1000000);
}

TEST_P(Protocol, PermuteTakesLatencyPlusBytesOverUsableBandwidth) {
  // 2x1: one line of two chips (no wraparound on v5e below 16), one link
  // each way. A permute of V = 2 MiB (rank 0 -> 1, 1 -> 0): each chip
  // sends V on its own link. T = 10 us start-up + 2,097,152 B x 20 ps
  // (41,943,040 ps) + 1 us hop = 52,943,040 ps.
  const Slice s(protocol_config(), "2x1");
  const CollectiveResult r =
      run_collective(s, Mesh::physical(s), req(CollectiveKind::collective_permute, 2 << 20, {"x"}), opts(GetParam()));
  EXPECT_EQ(r.start, 0);
  EXPECT_EQ(r.end, 10000000 + 41943040 + 1000000);
}

TEST_P(Protocol, AllGatherOverTwoChipsClosedForm) {
  // all_gather of V = 4 MiB output over a line of 2: each chip's shard of
  // V/2 = 2 MiB crosses its one link, in both directions at once.
  // T = 10 us + 2,097,152 x 20 ps + 1 us = 52,943,040 ps; without the two
  // mechanisms (efficiency 1, no start-up) it is 20,971,520 + 1e6.
  const Slice s(protocol_config(), "2x1");
  const CollectiveResult r =
      run_collective(s, Mesh::physical(s), req(CollectiveKind::all_gather, 4 << 20, {"x"}), opts(GetParam()));
  EXPECT_EQ(r.end - r.start, 10000000 + 41943040 + 1000000);
  IciConfig nominal = protocol_config();
  nominal.link_efficiency = 1;
  nominal.collective_latency = 0;
  const Slice n(nominal, "2x1");
  const CollectiveResult rn =
      run_collective(n, Mesh::physical(n), req(CollectiveKind::all_gather, 4 << 20, {"x"}), opts(GetParam()));
  EXPECT_EQ(rn.end - rn.start, 20971520 + 1000000);
}

TEST_P(Protocol, StartUpIsPaidOncePerCollectiveNotPerStage) {
  // all_gather over x,y of a 2x2 (lines of two on both axes), split as on
  // a torus (ici.axis_split always): two parts of V/2 run concurrently,
  // part p first on one axis (shard V/8), then on the other (shard V/4),
  // so each link carries V/8 then V/4 back to back after its stage-1
  // message arrived. V = 8 MiB: stage 1 1 MiB = 20,971,520 ps + 1 us;
  // stage 2 2 MiB = 41,943,040 ps + 1 us. T = 10 us + 20,971,520 + 1e6 +
  // 41,943,040 + 1e6 = 74,914,560 ps.
  IciConfig split = protocol_config();
  split.axis_split = "always";
  const Slice s(split, "2x2");
  const CollectiveResult r =
      run_collective(s, Mesh::physical(s), req(CollectiveKind::all_gather, 8 << 20, {"x", "y"}), opts(GetParam()));
  EXPECT_EQ(r.end - r.start, 10000000 + 20971520 + 1000000 + 41943040 + 1000000);
}

TEST_P(Protocol, MeshAxesRunOneAfterAnother) {
  // The same all_gather with the default ici.axis_split (tori): a 2x2's
  // axes do not wrap, so the whole V goes over x (shard V/4 = 2 MiB:
  // 41,943,040 ps + 1 us), then over y (shard V/2 = 4 MiB: 83,886,080 ps +
  // 1 us), one start-up: T = 10 us + 41,943,040 + 1e6 + 83,886,080 + 1e6 =
  // 137,829,120 ps. "never" on a torus gives the same order.
  const Slice s(protocol_config(), "2x2");
  const CollectiveResult r =
      run_collective(s, Mesh::physical(s), req(CollectiveKind::all_gather, 8 << 20, {"x", "y"}), opts(GetParam()));
  EXPECT_EQ(r.end - r.start, 10000000 + 41943040 + 1000000 + 83886080 + 1000000);
  EXPECT_EQ(r.algorithm, "all_gather: one axis after another over x,y; line_bidir(x=2) line_bidir(y=2)");
}

INSTANTIATE_TEST_SUITE_P(IciProtocol, Protocol, ::testing::Values(Fidelity::aggregated, Fidelity::packet),
                         [](const auto& i) { return std::string(to_string(i.param)); });

TEST(IciProtocol, DeferredGroupStartsOneLatencyAfterItsLastChip) {
  // Two groups (rows) of a 2x2, permute over x. Row 0's chips join at 0
  // and 5 us, row 1's both at 0. Each row's traffic starts 10 us after its
  // last chip: row 0 ends at 5 + 10 + 41.943040 + 1 us, row 1 5 us earlier.
  const Slice s(protocol_config(), "2x2");
  IciSimulator sim(s, Mesh::physical(s));
  const std::uint64_t id = sim.start_deferred(req(CollectiveKind::collective_permute, 2 << 20, {"x"}));
  sim.chip_start(id, s.chip_at({0, 0}), 0);
  sim.chip_start(id, s.chip_at({0, 1}), 0);
  sim.chip_start(id, s.chip_at({1, 1}), 0);
  sim.chip_start(id, s.chip_at({1, 0}), 5000000);
  const auto res = sim.run_all();
  ASSERT_EQ(res.size(), 1u);
  const Ps body = 10000000 + 41943040 + 1000000;
  EXPECT_EQ(res[0].end_per_chip[static_cast<std::size_t>(s.chip_at({0, 0}))], 5000000 + body);
  EXPECT_EQ(res[0].end_per_chip[static_cast<std::size_t>(s.chip_at({1, 0}))], 5000000 + body);
  EXPECT_EQ(res[0].end_per_chip[static_cast<std::size_t>(s.chip_at({0, 1}))], body);
  EXPECT_EQ(res[0].end_per_chip[static_cast<std::size_t>(s.chip_at({1, 1}))], body);
  EXPECT_EQ(res[0].end, 5000000 + body);
}

TEST(IciProtocol, GroupOfOneChipPaysNoStartUp) {
  // A collective over an axis of length 1 sends nothing: it ends when it
  // starts, with or without a start-up latency configured.
  const Slice s(protocol_config(), "2x1");
  const CollectiveResult r = run_collective(s, Mesh::physical(s), req(CollectiveKind::all_reduce, 1 << 20, {"y"}));
  EXPECT_EQ(r.messages, 0u);
  EXPECT_EQ(r.end, r.start);
}

TEST(IciProtocol, OutOfRangeValuesAreConfigErrors) {
  IciConfig c = protocol_config();
  c.link_efficiency = 1.5;
  EXPECT_THROW(Slice(c, "2x2"), ConfigError);
  c.link_efficiency = 0;
  EXPECT_THROW(Slice(c, "2x2"), ConfigError);
  c = protocol_config();
  c.collective_latency = -1e-6;
  EXPECT_THROW(Slice(c, "2x2"), ConfigError);
}
