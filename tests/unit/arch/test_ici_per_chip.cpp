// Per-chip views of a collective (what --all-chips runs need): each chip's
// own completion time (CollectiveResult::end_per_chip), collectives that
// chips start one by one (IciSimulator::start_deferred / chip_start, a
// group's traffic starts when its last chip has started), and the
// reduction bytes known from the plan at start.
//
// Closed form used below, v5e links (45 GB/s, 1 us per hop), 4 KiB
// packets: tx(4096 B) = round(4096 x 1e12 / 45e9) = round(91022.2) = 91022
// ps; a shard of 4 packets (16 KiB) takes 4 x 91022 = 364,088 ps on a link
// and one hop is delivered 364,088 + 1,000,000 = 1,364,088 ps (T) after it
// starts. An 8-chip axis of v5e does not wrap (only length 16 does), so an
// all_gather over it sends each shard to both ends of the line, one hop
// per step, forwarded on arrival; every link carries one shard per step
// (chip p's own shard at step 0, the shard from p-1 at step 1, ...), so
// chip j has its last shard, the one from the farther end, after
// max(j, 7-j) steps: end_per_chip[j] = max(j, 7 - j) x T.
#include <gtest/gtest.h>

#include <algorithm>

#include "arch/common/errors.h"
#include "arch/ici/collectives.h"
#include "test_ici_util.h"

using namespace tpusim::arch;
using namespace tpusim::arch::ici;
using tpusim::arch::test::req;

namespace {

constexpr Ps kT = 4 * 91022 + 1000000;  // one line step of a 16 KiB shard
constexpr std::uint64_t kShard = 4 * 4096;

int x_of(const Slice& s, int chip) { return s.coords(chip)[0]; }
int y_of(const Slice& s, int chip) { return s.coords(chip)[1]; }

}  // namespace

TEST(IciPerChip, LineAllGatherEndsPerChipInClosedForm) {
  const Slice s(test::ici_v5e(), "8x8");
  ASSERT_FALSE(s.wraps(0));
  const CollectiveResult r = run_collective(s, Mesh::physical(s), req(CollectiveKind::all_gather, 8 * kShard, {"x"}));
  ASSERT_EQ(r.end_per_chip.size(), 64u);
  for (int c = 0; c < 64; ++c) {
    const int j = x_of(s, c);
    EXPECT_EQ(r.end_per_chip[static_cast<std::size_t>(c)], std::max(j, 7 - j) * kT) << "chip " << c;
  }
  // The collective as a whole ends with its latest chip: the line's ends.
  EXPECT_EQ(r.end, 7 * kT);
  EXPECT_EQ(*std::max_element(r.end_per_chip.begin(), r.end_per_chip.end()), r.end);
}

TEST(IciPerChip, RingChipsAllEndTogether) {
  // A wrapping axis is symmetric: every chip's part ends with the whole.
  const Slice s(test::ici_v5e(), "16x2");
  ASSERT_TRUE(s.wraps(0));
  for (CollectiveKind k : {CollectiveKind::all_gather, CollectiveKind::reduce_scatter, CollectiveKind::all_reduce}) {
    const CollectiveResult r = run_collective(s, Mesh::physical(s), req(k, 1 << 20, {"x"}));
    for (Ps e : r.end_per_chip) EXPECT_EQ(e, r.end) << to_string(k);
  }
}

TEST(IciPerChip, ChipThatReceivesNothingEndsWhenItsSendsLand) {
  // Broadcast from rank 0 on a line: the root receives nothing, so its
  // part ends when its last piece reaches its neighbour, before that
  // neighbour (which still forwards) and the far end are done.
  const Slice s(test::ici_v5e(), "8x8");
  CollectiveRequest q = req(CollectiveKind::broadcast, 1 << 20, {"x"});
  const CollectiveResult r = run_collective(s, Mesh::physical(s), q);
  const int root = s.chip_at({0, 0}), next = s.chip_at({1, 0}), far = s.chip_at({7, 0});
  EXPECT_EQ(r.received_per_chip[static_cast<std::size_t>(root)], 0u);
  EXPECT_GT(r.end_per_chip[static_cast<std::size_t>(root)], 0);
  EXPECT_LE(r.end_per_chip[static_cast<std::size_t>(root)], r.end_per_chip[static_cast<std::size_t>(next)]);
  EXPECT_LT(r.end_per_chip[static_cast<std::size_t>(next)], r.end_per_chip[static_cast<std::size_t>(far)]);
  EXPECT_EQ(r.end_per_chip[static_cast<std::size_t>(far)], r.end);
}

TEST(IciPerChip, DeferredStartWithEveryChipAtOnceEqualsStart) {
  const Slice s(test::ici_v5e(), "8x8");
  for (CollectiveKind k : {CollectiveKind::all_reduce, CollectiveKind::all_to_all, CollectiveKind::broadcast}) {
    const CollectiveRequest q = req(k, 3 << 20, {"x", "y"});
    const CollectiveResult shared = run_collective(s, Mesh::physical(s), q);
    IciSimulator sim(s, Mesh::physical(s));
    const std::uint64_t id = sim.start_deferred(q);
    for (int c = s.num_chips() - 1; c >= 0; --c) sim.chip_start(id, c, 0);  // any order
    const std::vector<CollectiveResult> done = sim.run_all();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].end, shared.end) << to_string(k);
    EXPECT_EQ(done[0].end_per_chip, shared.end_per_chip) << to_string(k);
    EXPECT_EQ(done[0].received_per_chip, shared.received_per_chip) << to_string(k);
    EXPECT_EQ(sim.take_chip_completions().size(), static_cast<std::size_t>(s.num_chips()));
  }
}

TEST(IciPerChip, GroupWaitsForItsLastChipOtherGroupsDoNot) {
  // all_gather over x on 8x8: the groups are the rows. Chip (5, 2) starts
  // D late: row 2's traffic starts at D, so each of its chips ends D later
  // than in the closed form; the other rows are untouched.
  const Slice s(test::ici_v5e(), "8x8");
  IciSimulator sim(s, Mesh::physical(s));
  const std::uint64_t id = sim.start_deferred(req(CollectiveKind::all_gather, 8 * kShard, {"x"}));
  const Ps D = 500000;
  const int late = s.chip_at({5, 2});
  for (int c = 0; c < s.num_chips(); ++c)
    if (c != late) sim.chip_start(id, c, 0);
  sim.chip_start(id, late, D);
  std::vector<CollectiveResult> done;
  std::vector<IciSimulator::ChipDone> chips;
  // Chip completions are reported as they happen, before the whole ends.
  for (Ps t : {Ps{4 * kT}, kNeverPs}) {
    for (auto& r : sim.run_until(t)) done.push_back(r);
    for (auto& c : sim.take_chip_completions()) chips.push_back(c);
    if (t != kNeverPs) {
      EXPECT_TRUE(done.empty());
      // Rows other than 2: chips 3 and 4 of the line end at 4T.
      EXPECT_EQ(chips.size(), 14u);
    }
  }
  ASSERT_EQ(done.size(), 1u);
  const CollectiveResult& r = done[0];
  EXPECT_EQ(r.start, 0);
  EXPECT_EQ(r.end, D + 7 * kT);
  for (int c = 0; c < s.num_chips(); ++c) {
    const int j = x_of(s, c);
    const Ps expect = (y_of(s, c) == 2 ? D : 0) + std::max(j, 7 - j) * kT;
    EXPECT_EQ(r.end_per_chip[static_cast<std::size_t>(c)], expect) << "chip " << c;
  }
  ASSERT_EQ(chips.size(), 64u);
  for (const auto& c : chips) EXPECT_EQ(c.time, r.end_per_chip[static_cast<std::size_t>(c.chip)]);
  EXPECT_TRUE(std::is_sorted(chips.begin(), chips.end(), [](const auto& a, const auto& b) { return a.time < b.time; }));
}

TEST(IciPerChip, PlannedReduceBytesMatchWhatArrives) {
  // Known at start from the plan; the same bytes are added on arrival.
  const Slice s(test::ici_v5e(), "8x8");
  for (CollectiveKind k : {CollectiveKind::reduce_scatter, CollectiveKind::all_reduce, CollectiveKind::all_gather}) {
    IciSimulator sim(s, Mesh::physical(s));
    const std::uint64_t id = sim.start(req(k, 8 * kShard, {"x", "y"}), 0);
    std::vector<std::uint64_t> planned;
    for (int c = 0; c < s.num_chips(); ++c) planned.push_back(sim.planned_reduce_bytes(id, c));
    const std::vector<CollectiveResult> done = sim.run_all();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(planned, done[0].reduce_bytes_per_chip) << to_string(k);
    const bool reduces = k != CollectiveKind::all_gather;
    EXPECT_EQ(done[0].total_reduce_bytes() > 0, reduces) << to_string(k);
  }
}

TEST(IciPerChip, MisuseIsAnInternalError) {
  const Slice s(test::ici_v5e(), "8x8");
  IciSimulator sim(s, Mesh::physical(s));
  const std::uint64_t shared = sim.start(req(CollectiveKind::all_gather, kShard * 8, {"x"}), 0);
  EXPECT_THROW(sim.chip_start(shared, 0, 0), InternalError);  // not deferred
  const std::uint64_t id = sim.start_deferred(req(CollectiveKind::all_gather, kShard * 8, {"x"}));
  sim.chip_start(id, 0, 0);
  EXPECT_THROW(sim.chip_start(id, 0, 0), InternalError);   // twice
  EXPECT_THROW(sim.chip_start(id, 64, 0), InternalError);  // no such chip
  EXPECT_THROW(sim.chip_start(id + 1, 1, 0), InternalError);
  EXPECT_THROW(sim.start_deferred(req(CollectiveKind::all_gather, kShard, {"w"})), ConfigError);
}
