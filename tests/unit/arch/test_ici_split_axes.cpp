// Mesh axes on parts of a slice axis (SubAxis): the mesh's checks, the
// groups and rings the planner builds on a part, and the link traffic of
// rings whose steps skip chips (closed forms).
#include <gtest/gtest.h>

#include <set>

#include "arch/common/errors.h"
#include "arch/ici/collectives.h"
#include "test_ici_util.h"

using namespace tpusim::arch;
using namespace tpusim::arch::ici;
using tpusim::arch::test::req;

namespace {

constexpr std::uint64_t MiB = 1ull << 20;

// v5e 16x16: both axes wrap (length 16). fsdp = x and every fourth chip
// along y (y/4, a ring of 4 through the wraparound), tensor = the four
// neighbours along y (y%4, a line).
Mesh fsdp_tensor(const Slice& s) {
  return Mesh::split(s, {{"fsdp", {{0, 1, 16}, {1, 4, 4}}}, {"tensor", {{1, 1, 4}}}});
}

}  // namespace

TEST(IciSplitAxes, PartsAreNamedPositionedAndWrapOnlyWhenTheyCoverTheAxis) {
  const Slice s(test::ici_v5e(), "16x16");
  EXPECT_EQ(sub_axis_name(s, {1, 1, 16}), "y");
  EXPECT_EQ(sub_axis_name(s, {1, 1, 4}), "y%4");
  EXPECT_EQ(sub_axis_name(s, {1, 4, 4}), "y/4");
  EXPECT_EQ(sub_axis_name(s, {1, 2, 4}), "y/2%4");
  EXPECT_TRUE(sub_wraps(s, {1, 4, 4}));
  EXPECT_FALSE(sub_wraps(s, {1, 1, 4}));
  EXPECT_FALSE(sub_wraps(s, {1, 2, 4}));
  const int chip = s.chip_at({3, 13});
  EXPECT_EQ(sub_position(s, chip, {1, 1, 4}), 1);  // 13 % 4
  EXPECT_EQ(sub_position(s, chip, {1, 4, 4}), 3);  // 13 / 4
  EXPECT_EQ(sub_position(s, chip, {1, 2, 4}), 2);  // (13 / 2) % 4
  EXPECT_TRUE(fsdp_tensor(s).splits());
  EXPECT_FALSE(Mesh::physical(s).splits());
}

TEST(IciSplitAxes, MeshRefusesOverlappingOrIllFittingParts) {
  const Slice s(test::ici_v5e(), "16x16");
  // y%4 and y/2 overlap (position 2 of y%4 is position 1 of y/2).
  EXPECT_THROW(Mesh::split(s, {{"a", {{1, 1, 4}}}, {"b", {{1, 2, 8}}}}), ConfigError);
  // The same part twice, and a part beside the whole axis.
  EXPECT_THROW(Mesh::split(s, {{"a", {{1, 1, 4}}}, {"b", {{1, 1, 4}}}}), ConfigError);
  EXPECT_THROW(Mesh::split(s, {{"a", {{1, 1, 16}}}, {"b", {{1, 4, 4}}}}), ConfigError);
  // Stride x length beyond or not dividing the axis.
  EXPECT_THROW(Mesh::split(s, {{"a", {{0, 8, 4}}}}), ConfigError);
  EXPECT_THROW(Mesh::split(s, {{"a", {{0, 1, 3}}}}), ConfigError);
  EXPECT_THROW(Mesh::split(s, {{"a", {{0, 0, 4}}}}), ConfigError);
  // Separate digits with a gap between them are fine (x%2 and x/4).
  EXPECT_NO_THROW(Mesh::split(s, {{"a", {{0, 1, 2}}}, {"b", {{0, 4, 4}}}}));
  // The DCN dimension is never split.
  const Slice m(test::ici_v5e(), "4x4");
  EXPECT_THROW(Mesh::split(m, {{"a", {{2, 1, 1}}}}), ConfigError);
}

TEST(IciSplitAxes, GroupsOfAStridedPartAreEveryFourthChip) {
  const Slice s(test::ici_v5e(), "16x16");
  const Mesh m = fsdp_tensor(s);
  // A permute over tensor (y%4): rank r -> r + 1 within four neighbours:
  // 256 messages of one hop, three of every four going +y and the last
  // one back three hops.
  const CollectivePlan t = plan_collective(s, m, req(CollectiveKind::collective_permute, 1024, {"tensor"}));
  EXPECT_EQ(t.group_size, 4);
  EXPECT_EQ(t.messages(), 256u);
  std::set<int> dy;
  for (const PlanNode& n : t.nodes) dy.insert(((s.coord(n.dst, 1) - s.coord(n.src, 1)) % 16 + 16) % 16);
  EXPECT_EQ(dy, (std::set<int>{1, 13}));  // +1, or back from position 3 to 0
  // Over fsdp (x and y/4): groups of 64 whose members share y % 4.
  const CollectivePlan f = plan_collective(s, m, req(CollectiveKind::collective_permute, 1024, {"fsdp"}));
  EXPECT_EQ(f.group_size, 64);
  for (const PlanNode& n : f.nodes) EXPECT_EQ(s.coord(n.src, 1) % 4, s.coord(n.dst, 1) % 4);
  const CollectivePlan ag = plan_collective(s, m, req(CollectiveKind::all_gather, MiB, {"fsdp"}));
  EXPECT_NE(ag.algorithm.find("ring_bidir(y/4=4)"), std::string::npos) << ag.algorithm;
  const CollectivePlan tg = plan_collective(s, m, req(CollectiveKind::all_gather, MiB, {"tensor"}));
  EXPECT_NE(tg.algorithm.find("line_bidir(y%4=4)"), std::string::npos) << tg.algorithm;
}

TEST(IciSplitAxes, StridedRingSharesEveryLinkWithTheOtherOffsets) {
  // all_gather of V over y/4: rings of 4 whose steps are 4 chips long.
  // Bidirectional ring of 4: each shard (V/4) goes 1 step each way whole
  // and its half 1 step further each way (to the antipode), each step
  // over 4 links; the four offsets' rings together cover every y link of
  // a line: per line, each link of either direction carries 4 offsets x 4
  // shards x 1.5 steps x 4 links / 16 links = 6 shards = 1.5V; x links
  // nothing.
  const Slice s(test::ici_v5e(), "16x16");
  const Mesh m = Mesh::split(s, {{"ring", {{1, 4, 4}}}, {"near", {{1, 1, 4}}}, {"x", {{0, 1, 16}}}});
  const std::uint64_t V = 4 * MiB;
  const CollectiveResult r = run_collective(s, m, req(CollectiveKind::all_gather, V, {"ring"}));
  for (int l = 0; l < s.num_links(); ++l) {
    const Link& k = s.link(l);
    const std::uint64_t want = k.axis == 0 ? 0 : 3 * V / 2;
    EXPECT_EQ(r.bytes_per_link[static_cast<std::size_t>(l)], want) << s.link_name(l);
  }
  for (int c = 0; c < s.num_chips(); ++c) EXPECT_EQ(r.received_per_chip[static_cast<std::size_t>(c)], V - V / 4);
}

TEST(IciSplitAxes, NeighbourPartTimesLikeTheSameLineOnItsOwn) {
  // y%4 on a 16x16 v5e is a line of four neighbours, like y on a 4x4 v5e
  // (length 4 does not wrap there): the lines share no link, so the
  // collective takes exactly as long.
  const Slice big(test::ici_v5e(), "16x16");
  const Slice small(test::ici_v5e(), "4x4");
  for (CollectiveKind k : {CollectiveKind::all_gather, CollectiveKind::reduce_scatter, CollectiveKind::all_reduce}) {
    const CollectiveResult a = run_collective(big, fsdp_tensor(big), req(k, 8 * MiB, {"tensor"}));
    const CollectiveResult b = run_collective(small, Mesh::physical(small), req(k, 8 * MiB, {"y"}));
    EXPECT_EQ(a.end - a.start, b.end - b.start) << to_string(k);
  }
}

TEST(IciSplitAxes, DeferredGroupsFollowTheParts) {
  // Chips start one by one: a tensor group (four neighbours along y)
  // starts when its last chip has, independently of the other groups.
  const Slice s(test::ici_v5e(), "16x16");
  IciSimulator sim(s, fsdp_tensor(s));
  const std::uint64_t id = sim.start_deferred(req(CollectiveKind::all_reduce, MiB, {"tensor"}));
  const Ps late = 1'000'000'000;  // 1 ms
  for (int c = 0; c < s.num_chips(); ++c) sim.chip_start(id, c, s.coord(c, 1) < 4 && s.coord(c, 0) == 0 ? late : 0);
  const auto res = sim.run_all();
  ASSERT_EQ(res.size(), 1u);
  const CollectiveResult& r = res[0];
  for (int c = 0; c < s.num_chips(); ++c) {
    const bool slow_group = s.coord(c, 1) < 4 && s.coord(c, 0) == 0;
    if (slow_group)
      EXPECT_GT(r.end_per_chip[static_cast<std::size_t>(c)], late) << s.chip_name(c);
    else
      EXPECT_LT(r.end_per_chip[static_cast<std::size_t>(c)], late) << s.chip_name(c);
  }
}
