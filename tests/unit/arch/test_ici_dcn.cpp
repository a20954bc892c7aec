// Multislice: "N*SHAPE" slices joined by the data-centre network (DCN).
// Collectives over the DCN dimension run as rings over the slices through
// each chip's NIC share (dcn_bandwidth, dcn_latency; collectives.h), in
// closed form when alone; over DCN and ICI axes together they are
// hierarchical, so only a 1/N_ici shard crosses the DCN.
#include <gtest/gtest.h>

#include <cmath>

#include "arch/common/errors.h"
#include "arch/ici/collectives.h"
#include "test_ici_util.h"

using namespace tpusim::arch;
using namespace tpusim::arch::ici;
using tpusim::arch::test::req;

namespace {

constexpr std::uint64_t MiB = 1ull << 20;

// v5e's ICI (test_ici_util.h) with a DCN of 3.125 GB/s per chip (200 Gb/s
// NIC per 8-chip host) and 20 us per message; no collective start-up, so
// the DCN's own costs are what the closed forms count.
IciConfig dcn_v5e() {
  IciConfig c = test::ici_v5e();
  c.dcn_bandwidth = 3.125e9;
  c.dcn_latency = 20e-6;
  return c;
}

// Picoseconds of one DCN step: the shard through the NIC, then the latency.
Ps step_ps(std::uint64_t shard) {
  return static_cast<Ps>(std::llround(static_cast<double>(shard) * 1e12 / 3.125e9)) + 20'000'000;
}

CollectiveResult run(const Slice& s, CollectiveKind k, std::uint64_t bytes, std::vector<std::string> axes,
                     Fidelity f = Fidelity::aggregated) {
  NetworkOptions o;
  o.fidelity = f;
  return run_collective(s, Mesh::physical(s), req(k, bytes, std::move(axes)), o);
}

}  // namespace

TEST(IciDcn, SliceCountParsesAndMultipliesTheChips) {
  const Slice s(dcn_v5e(), "4*4x4");
  EXPECT_EQ(s.num_slices(), 4);
  EXPECT_EQ(s.num_chips(), 16);  // one slice's chips are simulated
  EXPECT_EQ(s.total_chips(), 64);
  EXPECT_EQ(s.shape(), "4*4x4");
  EXPECT_EQ(s.rank(), 2);
  EXPECT_TRUE(s.is_dcn(s.dcn_axis()));
  EXPECT_EQ(s.axis_length(s.dcn_axis()), 4);
  EXPECT_EQ(Slice(dcn_v5e(), "4x4").num_slices(), 1);
  for (const char* bad : {"0*4x4", "*4x4", "a*4x4", "4x4*2", "5000*4x4", "2*", "2**4x4", "-2*4x4"})
    EXPECT_THROW(Slice(dcn_v5e(), bad), ConfigError) << bad;
  // A generation without a DCN has no multislice.
  EXPECT_THROW(Slice(test::ici_v5e(), "2*4x4"), ConfigError);
  EXPECT_NO_THROW(Slice(test::ici_v5e(), "1*4x4"));
}

TEST(IciDcn, PhysicalMeshPutsTheDcnFirst) {
  const Slice s(dcn_v5e(), "2*4x4");
  const Mesh m = Mesh::physical(s);
  ASSERT_EQ(m.axes().size(), 3u);
  EXPECT_EQ(m.axes()[0].first, "dcn");
  EXPECT_EQ(m.axes()[0].second, (std::vector<SubAxis>{{s.dcn_axis(), 1, s.num_slices()}}));
  // Without slices there is no DCN dimension to name.
  const Slice one(dcn_v5e(), "4x4");
  EXPECT_THROW(Mesh(one, {{"data", {one.dcn_axis()}}}), ConfigError);
}

TEST(IciDcn, RingOverTheSlicesInClosedForm) {
  // 4 slices: every collective is N - 1 = 3 ring steps (all_reduce 6) of
  // a quarter of the buffer, one after another through the NIC.
  const Slice s(dcn_v5e(), "4*4x4");
  const std::uint64_t B = 8 * MiB, shard = B / 4;
  for (auto [kind, steps] : {std::pair{CollectiveKind::all_gather, 3}, std::pair{CollectiveKind::reduce_scatter, 3},
                             std::pair{CollectiveKind::all_reduce, 6}}) {
    const CollectiveResult r = run(s, kind, B, {"dcn"});
    EXPECT_EQ(r.end - r.start, steps * step_ps(shard)) << to_string(kind);
    EXPECT_EQ(r.group_size, 4);
    EXPECT_NE(r.algorithm.find("dcn_ring(dcn=4)"), std::string::npos) << r.algorithm;
    // Every chip sends and receives its steps; nothing crosses an ICI link.
    for (int c = 0; c < s.num_chips(); ++c) {
      EXPECT_EQ(r.sent_per_chip[static_cast<std::size_t>(c)], steps * shard);
      EXPECT_EQ(r.received_per_chip[static_cast<std::size_t>(c)], steps * shard);
    }
    for (std::uint64_t b : r.bytes_per_link) EXPECT_EQ(b, 0u);
    // Reductions add what arrives in the reduce-scatter half.
    const std::uint64_t reduced = kind == CollectiveKind::all_gather ? 0 : 3 * shard;
    EXPECT_EQ(r.reduce_bytes_per_chip[0], reduced);
  }
}

TEST(IciDcn, BothNetworkFidelitiesAgreeOnTheDcn) {
  const Slice s(dcn_v5e(), "2*4x4");
  const auto a = run(s, CollectiveKind::all_reduce, 3 * MiB + 7, {"dcn"}, Fidelity::aggregated);
  const auto p = run(s, CollectiveKind::all_reduce, 3 * MiB + 7, {"dcn"}, Fidelity::packet);
  EXPECT_EQ(a.end, p.end);
}

TEST(IciDcn, HierarchicalAllReduceSendsOnlyTheIciShardOverTheDcn) {
  // all_reduce over x (16, a ring) and the DCN of 2 slices: reduce-scatter
  // over x, all-reduce of the 1/16 shard over the DCN, all-gather over x.
  const Slice s(dcn_v5e(), "2*16x2");
  const std::uint64_t B = 64 * MiB;
  const CollectiveResult h = run(s, CollectiveKind::all_reduce, B, {"x", "dcn"});
  EXPECT_EQ(h.group_size, 32);
  EXPECT_NE(h.algorithm.find("hierarchical"), std::string::npos) << h.algorithm;
  const CollectiveResult ici = run(s, CollectiveKind::all_reduce, B, {"x"});
  const CollectiveResult dcn = run(s, CollectiveKind::all_reduce, B / 16, {"dcn"});
  // The stages run one after another on each chip: the ICI all-reduce's
  // two halves around the DCN all-reduce of the shard.
  const double sum = ici.seconds() + dcn.seconds();
  EXPECT_NEAR(h.seconds(), sum, 0.02 * sum);
  EXPECT_GE(h.seconds(), dcn.seconds());
  // Bytes per chip: the ICI all-reduce's plus the DCN's 2 x (1/2) x B/16.
  EXPECT_EQ(h.sent_per_chip[5], ici.sent_per_chip[5] + B / 16);
  // The DCN alone over the whole buffer would move 16 times as much.
  const CollectiveResult flat = run(s, CollectiveKind::all_reduce, B, {"dcn"});
  EXPECT_GT(flat.seconds(), 10 * dcn.seconds());
}

TEST(IciDcn, HierarchicalGatherAndScatterOrderTheDcnByShardSize) {
  // all_gather crosses the DCN first (the smallest shard), reduce_scatter
  // last: both move B / 32 per DCN step on 2 x 16 chips.
  const Slice s(dcn_v5e(), "2*16x2");
  const std::uint64_t B = 32 * MiB;
  for (CollectiveKind k : {CollectiveKind::all_gather, CollectiveKind::reduce_scatter}) {
    const CollectiveResult h = run(s, k, B, {"x", "dcn"});
    const CollectiveResult ici_part = run(s, k, B, {"x"});
    EXPECT_EQ(h.sent_per_chip[3], ici_part.sent_per_chip[3] + B / 32) << to_string(k);
    EXPECT_GE(h.end - h.start, step_ps(B / 32)) << to_string(k);
  }
}

TEST(IciDcn, AllToAllAndPermuteOverTheDcnAlone) {
  const Slice s(dcn_v5e(), "4*4x4");
  const std::uint64_t B = 4 * MiB;
  // all_to_all: N - 1 pieces of B / N, all sent at once, one after another
  // through the NIC; the last lands one latency after it left.
  const CollectiveResult a = run(s, CollectiveKind::all_to_all, B, {"dcn"});
  EXPECT_EQ(a.end - a.start, 3 * (step_ps(B / 4) - 20'000'000) + 20'000'000);
  // A permute sends the whole buffer once.
  const CollectiveResult p = run(s, CollectiveKind::collective_permute, B, {"dcn"});
  EXPECT_EQ(p.end - p.start, step_ps(B));
  // Explicit pairs within the slices' ranks; a pair outside them is refused.
  CollectiveRequest r = req(CollectiveKind::collective_permute, B, {"dcn"});
  r.pairs = {{0, 1}, {1, 0}};
  EXPECT_EQ(run_collective(s, Mesh::physical(s), r).end, step_ps(B));
  r.pairs = {{0, 4}};
  EXPECT_THROW(run_collective(s, Mesh::physical(s), r), ConfigError);
}

TEST(IciDcn, UnmodelledDcnCollectivesAreRefused) {
  const Slice s(dcn_v5e(), "2*4x4");
  EXPECT_THROW(run(s, CollectiveKind::broadcast, MiB, {"dcn"}), ConfigError);
  EXPECT_THROW(run(s, CollectiveKind::all_to_all, MiB, {"x", "dcn"}), ConfigError);
  EXPECT_THROW(run(s, CollectiveKind::collective_permute, MiB, {"dcn", "y"}), ConfigError);
}

TEST(IciDcn, ConcurrentDcnCollectivesShareTheNic) {
  // Two all-gathers over the DCN started together take the NIC in turn:
  // the second ends about one collective's transmission later.
  const Slice s(dcn_v5e(), "2*4x4");
  IciSimulator sim(s, Mesh::physical(s));
  sim.start(req(CollectiveKind::all_gather, 8 * MiB, {"dcn"}), 0);
  sim.start(req(CollectiveKind::all_gather, 8 * MiB, {"dcn"}), 0);
  const auto done = sim.run_all();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].end, step_ps(4 * MiB));
  EXPECT_EQ(done[1].end, 2 * step_ps(4 * MiB) - 20'000'000);
  bool found = false;
  for (const Stat& st : sim.stats())
    if (st.name == "dcn.bytes_sent") {
      found = true;
      EXPECT_EQ(st.value, 2.0 * 16 * 4 * MiB);  // 16 chips, one 4 MiB step each, twice
    }
  EXPECT_TRUE(found);
}

TEST(IciDcn, DeferredStartCompletesEachChipOnItsOwn) {
  // Simulating every chip: a DCN-only collective's group is one chip (its
  // copies in the other slices start with it), so each chip's part starts
  // and ends on its own.
  const Slice s(dcn_v5e(), "2*4x4");
  IciSimulator sim(s, Mesh::physical(s));
  const std::uint64_t id = sim.start_deferred(req(CollectiveKind::all_gather, 2 * MiB, {"dcn"}));
  for (int c = 0; c < s.num_chips(); ++c) sim.chip_start(id, c, static_cast<Ps>(c) * 1'000'000);
  const auto done = sim.run_all();
  ASSERT_EQ(done.size(), 1u);
  for (int c = 0; c < s.num_chips(); ++c)
    EXPECT_EQ(done[0].end_per_chip[static_cast<std::size_t>(c)], static_cast<Ps>(c) * 1'000'000 + step_ps(MiB));
}
