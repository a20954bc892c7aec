// Collectives on the ICI network against the scaling book's costs
// (shared/tpu-specs.md, "Textbook formulas"), byte conservation, closed
// forms for simple patterns, agreement of the aggregated and packet-level
// network models, concurrent collectives, and request errors.
//
// W, as the scaling book defines it for one mesh axis: the bidirectional
// ICI bandwidth a chip has along that axis = 2 links (+ and - neighbour)
// x one-way link bandwidth when the axis wraps; v5e: 2 x 45 GB/s = 90 GB/s.
// (On an axis without wraparound the book keeps W and says the time
// roughly doubles.)
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

double run(const Slice& s, CollectiveKind k, std::uint64_t bytes, std::vector<std::string> axes,
           Fidelity f = Fidelity::aggregated) {
  NetworkOptions o;
  o.fidelity = f;
  return run_collective(s, Mesh::physical(s), req(k, bytes, std::move(axes)), o).seconds();
}

const double kW_v5e = 2 * 45e9;  // bidirectional bandwidth per axis, see top
const double kHop = 1e-6;        // scaling book: ~1 us per hop

}  // namespace

TEST(IciCollectives, AllGatherIsVOverWWhenBandwidthBound) {
  const Slice s(test::ici_v5e(), "16x2");  // x wraps (length 16)
  const double V = 256.0 * MiB;
  const double t = run(s, CollectiveKind::all_gather, 256 * MiB, {"x"});
  // Book: T = V / W independent of |X|; within 10%.
  EXPECT_NEAR(t, V / kW_v5e, 0.10 * V / kW_v5e);
  // Never faster than the links allow: a chip receives 15/16 of V over
  // its two links (the antipode's shard half each way: exactly that).
  EXPECT_GE(t, 15.0 / 16.0 * V / kW_v5e * 0.999);
  // ... and it does no worse: both directions carry 7.5 shards, the
  // farthest arrives after 8 hops.
  EXPECT_NEAR(t, 15.0 / 16.0 * V / kW_v5e + 8 * kHop, 0.001 * V / kW_v5e);
}

TEST(IciCollectives, SmallAllGatherIsLatencyBound) {
  const Slice s(test::ici_v5e(), "16x2");
  // 16 shards of 64 B: each shard needs |X|/2 = 8 hops on the bidirectional
  // ring; book: T = T_hop x |X| / 2 = 8 us when latency-bound. Transmission
  // adds 8 x 64 B / 45 GB/s = 11 ns.
  const double t = run(s, CollectiveKind::all_gather, 16 * 64, {"x"});
  EXPECT_GE(t, 8 * kHop);
  EXPECT_LE(t, 8 * kHop * 1.02);
}

TEST(IciCollectives, ReduceScatterCostsAsAllGatherAndAllReduceTwice) {
  const Slice s(test::ici_v5e(), "16x2");
  const double ag = run(s, CollectiveKind::all_gather, 128 * MiB, {"x"});
  const double rs = run(s, CollectiveKind::reduce_scatter, 128 * MiB, {"x"});
  const double ar = run(s, CollectiveKind::all_reduce, 128 * MiB, {"x"});
  EXPECT_NEAR(rs / ag, 1.0, 0.02);
  EXPECT_NEAR(ar / ag, 2.0, 0.1);  // book: AllReduce = 2 x AllGather
}

TEST(IciCollectives, ReduceScatterOnALineCostsAsItsAllGather) {
  // A line (no wraparound): every partial-sum chain of a direction starts
  // at the same end chip. Sent far first, the reduce-scatter takes the
  // n - 1 message times of the mirrored all-gather, the book's
  // (X - 1)/X x V/W for both; sent nearest first it would take 2n - 3.
  IciConfig line = test::ici_v5e();
  line.wraparound = "never";
  for (const char* shape : {"4x1", "16x2"}) {
    const Slice s(line, shape);
    const double ag = run(s, CollectiveKind::all_gather, 128 * MiB, {"x"});
    const double rs = run(s, CollectiveKind::reduce_scatter, 128 * MiB, {"x"});
    const double ar = run(s, CollectiveKind::all_reduce, 128 * MiB, {"x"});
    EXPECT_NEAR(rs / ag, 1.0, 0.02) << shape;
    EXPECT_NEAR(ar / ag, 2.0, 0.04) << shape;
  }
}

TEST(IciCollectives, AxisWithoutWraparoundIsAboutTwiceSlower) {
  IciConfig line = test::ici_v5e();
  line.wraparound = "never";
  const Slice torus(test::ici_v5e(), "16x2"), mesh(line, "16x2");
  const double t_torus = run(torus, CollectiveKind::all_gather, 128 * MiB, {"x"});
  const double t_line = run(mesh, CollectiveKind::all_gather, 128 * MiB, {"x"});
  // Ring: ceil(15/2) = 8 steps of V/16; line: 15 steps (the shard of an end
  // chip crosses the whole line): 15/8 = 1.875, "roughly doubles".
  EXPECT_GT(t_line / t_torus, 1.8);
  EXPECT_LT(t_line / t_torus, 2.1);
}

TEST(IciCollectives, SplittingOverTwoAxesIsAboutTwiceFaster) {
  const Slice s(test::ici_v5e(), "16x16");
  const double one = run(s, CollectiveKind::all_reduce, 256 * MiB, {"x"});
  const double two = run(s, CollectiveKind::all_reduce, 256 * MiB, {"x", "y"});
  // Book: over n axes divide by n. Each part's second stage works on 1/16
  // of its data, so the ideal ratio is (1 + 1/16) / 2 = 0.53.
  EXPECT_GT(two / one, 0.45);
  EXPECT_LT(two / one, 0.6);
  // And all_gather over both axes likewise.
  const double ag1 = run(s, CollectiveKind::all_gather, 256 * MiB, {"x"});
  const double ag2 = run(s, CollectiveKind::all_gather, 256 * MiB, {"x", "y"});
  EXPECT_GT(ag2 / ag1, 0.45);
  EXPECT_LT(ag2 / ag1, 0.6);
}

TEST(IciCollectives, SplittingOverThreeAxesIsAboutThreeTimesFaster) {
  const Slice s(test::ici_v5p(), "8x8x8");
  const double one = run(s, CollectiveKind::all_reduce, 96 * MiB, {"x"});
  const double three = run(s, CollectiveKind::all_reduce, 96 * MiB, {"x", "y", "z"});
  // Ideal (1 + 1/8 + 1/64) / 3 = 0.38.
  EXPECT_GT(three / one, 0.3);
  EXPECT_LT(three / one, 0.42);
}

TEST(IciCollectives, AllToAllIsAQuarterOfAllGather) {
  const Slice s(test::ici_v5e(), "16x2");
  // Book's V is the whole array: all_gather of V vs all_to_all where each
  // chip holds V/16 (CollectiveRequest::bytes = per-chip buffer).
  const double ag = run(s, CollectiveKind::all_gather, 256 * MiB, {"x"});
  const double a2a = run(s, CollectiveKind::all_to_all, 16 * MiB, {"x"});
  EXPECT_GT(a2a / ag, 0.22);
  EXPECT_LT(a2a / ag, 0.30);
}

TEST(IciCollectives, PermuteShiftIsOneHop) {
  const Slice s(test::ici_v5e(), "16x2");
  // Each chip sends 1 MiB to its +x neighbour (wrap included), all links
  // distinct: tx = 1048576 / 45e9 s, + 1 us hop. Per-packet rounding to
  // whole picoseconds (256 packets, < 0.5 ps each) stays under 1 ns.
  const double t = run(s, CollectiveKind::collective_permute, MiB, {"x"});
  EXPECT_NEAR(t, 1048576 / 45e9 + kHop, 1e-9);
  EXPECT_NEAR(run(s, CollectiveKind::collective_permute, MiB, {"x"}, Fidelity::packet), t, 1e-12);
}

TEST(IciCollectives, BroadcastReachesEveryChip) {
  const Slice s(test::ici_v5e(), "16x16");
  CollectiveRequest r = req(CollectiveKind::broadcast, 64 * MiB, {"x", "y"});
  r.root = 37;
  const CollectiveResult res = run_collective(s, Mesh::physical(s), r);
  const int root = s.chip_at({37 % 16, 37 / 16});
  for (int c = 0; c < s.num_chips(); ++c)
    EXPECT_EQ(res.received_per_chip[static_cast<std::size_t>(c)], c == root ? 0u : 64 * MiB) << c;
  // Lower bound: each axis stage moves half of V over each of the root
  // line's two links: V / W per axis stage.
  EXPECT_GT(res.seconds(), 64.0 * MiB / kW_v5e);
  EXPECT_LT(res.seconds(), 2 * 1.3 * 64.0 * MiB / kW_v5e);
}

TEST(IciCollectives, BytesConservedAndPerChipVolumes) {
  // 16x16 (both axes wrap) checks per-chip volumes; 8x8 (no wraparound:
  // chains along lines, so reductions are not spread evenly) only checks
  // conservation.
  for (const char* shape : {"16x16", "8x8"}) {
    const Slice s(test::ici_v5e(), shape);
    const Mesh mesh = Mesh::physical(s);
    const bool check_chips = std::string(shape) == "16x16";
    for (CollectiveKind k :
         {CollectiveKind::all_gather, CollectiveKind::reduce_scatter, CollectiveKind::all_reduce,
          CollectiveKind::all_to_all, CollectiveKind::collective_permute, CollectiveKind::broadcast}) {
      for (Fidelity f : {Fidelity::aggregated, Fidelity::packet}) {
        NetworkOptions o;
        o.fidelity = f;
        IciSimulator sim(s, mesh, o);
        const std::uint64_t V = 51200, N = 256;
        sim.start(req(k, V, {"x", "y"}), 0);
        const auto res = sim.run_all();
        ASSERT_EQ(res.size(), 1u);
        const CollectiveResult& r = res[0];
        EXPECT_EQ(r.total_sent(), r.total_received()) << to_string(k);
        std::uint64_t link_sum = 0;
        for (int l = 0; l < s.num_links(); ++l) {
          EXPECT_EQ(sim.network().link_stats(l).bytes_sent, sim.network().link_stats(l).bytes_received);
          EXPECT_EQ(sim.network().link_stats(l).bytes_sent, r.bytes_per_link[static_cast<std::size_t>(l)]);
          link_sum += r.bytes_per_link[static_cast<std::size_t>(l)];
        }
        EXPECT_GE(link_sum, r.total_sent());
        if (!check_chips) continue;
        // Reduce-scatter adds N-1 partial shards to its own: two parts of
        // V/2, each 15 shards of V/32 on its first axis and 15 of V/512 on
        // its second.
        const std::uint64_t reduce = 2 * (15 * (V / 32) + 15 * (V / 512));
        for (int c = 0; c < s.num_chips(); ++c) {
          const std::uint64_t got = r.received_per_chip[static_cast<std::size_t>(c)];
          const std::uint64_t red = r.reduce_bytes_per_chip[static_cast<std::size_t>(c)];
          switch (k) {
            case CollectiveKind::all_gather:
              EXPECT_EQ(got, V - V / N);  // every shard but its own
              EXPECT_EQ(red, 0u);
              break;
            case CollectiveKind::reduce_scatter:
              EXPECT_EQ(red, reduce);
              EXPECT_EQ(got, red);
              break;
            case CollectiveKind::all_reduce:
              EXPECT_EQ(red, reduce);
              EXPECT_EQ(got, 2 * red);
              break;
            case CollectiveKind::all_to_all: EXPECT_EQ(got, (N - 1) * (V / N)); break;
            case CollectiveKind::collective_permute: EXPECT_EQ(got, V); break;
            case CollectiveKind::broadcast: EXPECT_EQ(got, c == 0 ? 0 : V); break;
          }
        }
      }
    }
  }
}

namespace {
struct Case {
  const char* gen;
  const char* shape;
  bool twisted;
  CollectiveKind kind;
  std::uint64_t bytes;
  std::vector<std::string> axes;
};
IciConfig gen_config(const std::string& g) {
  return g == "v5e" ? test::ici_v5e() : g == "v5p" ? test::ici_v5p() : test::ici_v4();
}
}  // namespace

TEST(IciCollectives, AggregatedAndPacketModelsAgreeWithin2Percent) {
  const std::vector<Case> cases = {
      {"v5e", "16x2", false, CollectiveKind::all_gather, 16 * MiB, {"x"}},
      {"v5e", "16x2", false, CollectiveKind::all_gather, 4096 * 16, {"x"}},
      {"v5e", "16x2", false, CollectiveKind::reduce_scatter, 8 * MiB, {"x"}},
      {"v5e", "16x2", false, CollectiveKind::all_reduce, 16 * MiB, {"x"}},
      {"v5e", "16x2", false, CollectiveKind::all_to_all, 4 * MiB, {"x"}},
      {"v5e", "16x2", false, CollectiveKind::broadcast, 8 * MiB, {"x"}},
      {"v5e", "8x8", false, CollectiveKind::all_reduce, 4 * MiB, {"x", "y"}},
      {"v5e", "8x8", false, CollectiveKind::all_to_all, 2 * MiB, {"x", "y"}},
      {"v5e", "16x4", false, CollectiveKind::all_reduce, 8 * MiB, {"x", "y"}},
      {"v4", "4x4x4", false, CollectiveKind::all_reduce, 4 * MiB, {"x", "y", "z"}},
      {"v4", "4x4x4", false, CollectiveKind::all_to_all, 1 * MiB, {"x", "y", "z"}},
      {"v4", "4x4x8", true, CollectiveKind::all_gather, 4 * MiB, {"x"}},
      {"v4", "4x4x8", true, CollectiveKind::collective_permute, 1 * MiB, {"z"}},
  };
  for (const Case& c : cases) {
    const Slice s(gen_config(c.gen), c.shape, c.twisted);
    const double a = run(s, c.kind, c.bytes, c.axes, Fidelity::aggregated);
    const double p = run(s, c.kind, c.bytes, c.axes, Fidelity::packet);
    EXPECT_NEAR(a / p, 1.0, 0.02) << c.gen << " " << c.shape << " " << to_string(c.kind) << " " << c.bytes
                                  << " aggregated " << a << " packet " << p;
  }
}

TEST(IciCollectives, ConcurrentCollectivesContend) {
  const Slice s(test::ici_v5e(), "16x2");
  const Mesh mesh = Mesh::physical(s);
  const double alone = run(s, CollectiveKind::all_gather, 64 * MiB, {"x"});
  IciSimulator sim(s, mesh);
  sim.start(req(CollectiveKind::all_gather, 64 * MiB, {"x"}), 0);
  sim.start(req(CollectiveKind::all_gather, 64 * MiB, {"x"}), 0);
  const auto res = sim.run_all();
  ASSERT_EQ(res.size(), 2u);
  const double last = std::max(res[0].seconds(), res[1].seconds());
  // Both share every x link: the pair needs about twice the link time.
  EXPECT_GT(last, 1.9 * alone);
  EXPECT_LT(last, 2.1 * alone);
  // A collective on the other axis shares no link with an x collective.
  IciSimulator sim2(s, mesh);
  sim2.start(req(CollectiveKind::all_gather, 64 * MiB, {"x"}), 0);
  sim2.start(req(CollectiveKind::all_gather, 64 * MiB, {"y"}), 0);
  const auto res2 = sim2.run_all();
  ASSERT_EQ(res2.size(), 2u);
  for (const auto& r : res2) {
    if (r.id == 0) {
      EXPECT_DOUBLE_EQ(r.seconds(), alone);
    }
  }
}

TEST(IciCollectives, StartLaterAndIncrementalRun) {
  const Slice s(test::ici_v5e(), "16x2");
  const double alone = run(s, CollectiveKind::all_reduce, 8 * MiB, {"x"});
  IciSimulator sim(s, Mesh::physical(s));
  const Ps at = 5'000'000;
  sim.start(req(CollectiveKind::all_reduce, 8 * MiB, {"x"}), at);
  EXPECT_EQ(sim.next_event_time(), at);
  EXPECT_TRUE(sim.run_until(at + 1000).empty());
  std::vector<CollectiveResult> done;
  while (done.empty()) {
    const Ps t = sim.next_event_time();
    ASSERT_NE(t, kNeverPs);
    done = sim.run_until(t);
  }
  EXPECT_EQ(done[0].start, at);
  EXPECT_NEAR(done[0].seconds(), alone, 1e-12);
  EXPECT_TRUE(sim.idle());
}

TEST(IciCollectives, MeshAxesMapToSliceAxes) {
  const Slice s(test::ici_v5e(), "16x16");
  const Mesh m(s, {{"data", {1}}, {"model", {0}}});
  const CollectiveResult a = run_collective(s, m, req(CollectiveKind::all_gather, 16 * MiB, {"model"}));
  const CollectiveResult b = run_collective(s, Mesh::physical(s), req(CollectiveKind::all_gather, 16 * MiB, {"x"}));
  EXPECT_EQ(a.end, b.end);
  EXPECT_EQ(a.bytes_per_link, b.bytes_per_link);
  const Mesh both(s, {{"all", {0, 1}}});
  const CollectiveResult c = run_collective(s, both, req(CollectiveKind::all_reduce, 16 * MiB, {"all"}));
  EXPECT_EQ(c.group_size, 256);
  EXPECT_NE(c.algorithm.find("2-way split"), std::string::npos) << c.algorithm;
}

// ici.axis_split: on a torus (v5e 16x16, both axes wrap) the default
// splits an all-gather over x,y into two halves that use both axes' links
// at once; "never" runs the whole array over x, then over y. Each link
// then carries twice the bytes: stage x moves 15/16 of V/16 and stage y
// 15/16 of V, against 15/16 of (V/32 + V/2) on each axis at once, so
// "never" takes 2x the time (less the hops' latency) for 64 MiB.
TEST(IciCollectives, AxisSplitUsesBothAxesOfATorusAtOnce) {
  const Slice split(test::ici_v5e(), "16x16");
  IciConfig cfg = test::ici_v5e();
  cfg.axis_split = "never";
  const Slice serial(cfg, "16x16");
  const CollectiveResult a =
      run_collective(split, Mesh::physical(split), req(CollectiveKind::all_gather, 64 * MiB, {"x", "y"}));
  const CollectiveResult b =
      run_collective(serial, Mesh::physical(serial), req(CollectiveKind::all_gather, 64 * MiB, {"x", "y"}));
  EXPECT_EQ(a.algorithm, "all_gather: 2-way split over x,y; ring_bidir(x=16) ring_bidir(y=16)");
  EXPECT_EQ(b.algorithm, "all_gather: one axis after another over x,y; ring_bidir(x=16) ring_bidir(y=16)");
  EXPECT_NEAR(b.seconds() / a.seconds(), 2.0, 0.05) << a.seconds() << " vs " << b.seconds();
  EXPECT_EQ(a.total_received(), b.total_received());
  cfg.axis_split = "sometimes";
  EXPECT_THROW(Slice(cfg, "16x16"), ConfigError);
}

TEST(IciCollectives, GroupOfOneCompletesAtOnce) {
  const Slice s(test::ici_v4(), "4x4x1");
  const CollectiveResult r = run_collective(s, Mesh::physical(s), req(CollectiveKind::all_reduce, MiB, {"z"}));
  EXPECT_EQ(r.end, r.start);
  EXPECT_EQ(r.messages, 0u);
}

TEST(IciCollectives, BadRequestsAreConfigErrors) {
  const Slice s(test::ici_v5e(), "16x16");
  const Mesh m = Mesh::physical(s);
  EXPECT_THROW(plan_collective(s, m, req(CollectiveKind::all_reduce, MiB, {"w"})), ConfigError);
  EXPECT_THROW(plan_collective(s, m, req(CollectiveKind::all_reduce, MiB, {})), ConfigError);
  EXPECT_THROW(plan_collective(s, m, req(CollectiveKind::all_reduce, MiB, {"x", "x"})), ConfigError);
  EXPECT_THROW(plan_collective(s, m, req(CollectiveKind::all_reduce, 0, {"x"})), ConfigError);
  CollectiveRequest b = req(CollectiveKind::broadcast, MiB, {"x"});
  b.root = 16;
  EXPECT_THROW(plan_collective(s, m, b), ConfigError);
  CollectiveRequest p = req(CollectiveKind::collective_permute, MiB, {"x"});
  p.pairs = {{0, 3}, {1, 3}};
  EXPECT_THROW(plan_collective(s, m, p), ConfigError);
  EXPECT_THROW(Mesh(s, {{"a", {0}}, {"b", {0}}}), ConfigError);
  EXPECT_THROW(Mesh(s, {{"a", {2}}}), ConfigError);
  EXPECT_THROW(parse_collective_kind("allreduce"), ConfigError);
  EXPECT_EQ(parse_collective_kind("all_to_all"), CollectiveKind::all_to_all);
}
