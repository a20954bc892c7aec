// The ICI SystemC shell: a collective's callback runs at exactly the time
// the plain IciSimulator computes, and two overlapping collectives contend
// (each finishes at the time the plain simulator gives for the same start
// times, later than it would alone). Both fidelities. Chips joining a
// deferred collective one by one get their own completion callbacks.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include <gtest/gtest.h>

#include <algorithm>
#include <systemc>

#include "arch/ici/ici_module.h"
#include "tests/unit/arch/test_ici_util.h"

using namespace tpusim::arch;
using namespace tpusim::arch::ici;

namespace {

CollectiveRequest ar(std::uint64_t bytes, std::vector<std::string> axes) {
  CollectiveRequest r;
  r.kind = CollectiveKind::all_reduce;
  r.bytes = bytes;
  r.axes = std::move(axes);
  return r;
}

}  // namespace

TEST(IciModule, OneCollectiveCompletesAtTheModelsTime) {
  const Slice s(test::ici_v5e(), "16x2");
  NetworkOptions o;
  o.fidelity = Fidelity::packet;
  IciModule ici("ici", s, Mesh::physical(s), o);
  const Ps start = 3'000'000;  // 3 us
  Ps done_at = -1;
  sc_core::sc_spawn([&] {
    sc_core::wait(sc_core::sc_time(3, sc_core::SC_US));
    ici.start_collective(ar(4 << 20, {"x"}), [&] { done_at = IciModule::now_ps(); });
  });
  sc_core::sc_start();
  IciSimulator plain(s, Mesh::physical(s), o);
  plain.start(ar(4 << 20, {"x"}), start);
  const auto res = plain.run_all();
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(done_at, res[0].end);
  EXPECT_GT(res[0].end, start);
  // Link statistics are exposed with units.
  const StatList st = ici.stats();
  bool found = false;
  for (const Stat& x : st)
    if (x.name == "ici.link.0-0.+x.bytes_sent") {
      found = true;
      EXPECT_EQ(x.unit, "bytes");
      EXPECT_GT(x.value, 0);
    }
  EXPECT_TRUE(found);
}

TEST(IciModule, OverlappingCollectivesContend) {
  const Slice s(test::ici_v5e(), "16x2");
  const Mesh m = Mesh::physical(s);
  IciModule ici("ici", s, m);
  Ps done[2] = {-1, -1};
  sc_core::sc_spawn([&] {
    ici.start_collective(ar(32 << 20, {"x"}), [&] { done[0] = IciModule::now_ps(); });
    sc_core::wait(sc_core::sc_time(50, sc_core::SC_US));
    ici.start_collective(ar(32 << 20, {"x"}), [&] { done[1] = IciModule::now_ps(); });
  });
  sc_core::sc_start();
  IciSimulator plain(s, m);
  plain.start(ar(32 << 20, {"x"}), 0);
  plain.start(ar(32 << 20, {"x"}), 50'000'000);
  Ps want[2] = {0, 0};
  for (const auto& r : plain.run_all()) want[r.id] = r.end;
  EXPECT_EQ(done[0], want[0]);
  EXPECT_EQ(done[1], want[1]);
  const double alone = run_collective(s, m, ar(32 << 20, {"x"})).seconds();
  // Sharing every x link, the two together take about twice the link time:
  // the first is slowed, the later one ends near 2 x alone from t = 0.
  EXPECT_GT(static_cast<double>(done[0]) * 1e-12, 1.2 * alone);
  EXPECT_GT(static_cast<double>(done[1]) * 1e-12, 1.9 * alone);
}

// Per-chip view: chips join a deferred collective from their own
// processes at their own times; each chip's callback runs at the time the
// plain simulator gives for that chip with the same joins, the whole
// collective's at its end. An 8-chip line (v5e 8x2, no wraparound) has
// per-chip ends that differ, so the callbacks are told apart.
TEST(IciModule, ChipsJoinAndCompleteOneByOne) {
  const Slice s(test::ici_v5e(), "8x2");
  const Mesh m = Mesh::physical(s);
  IciModule ici("ici", s, m);
  CollectiveRequest q;
  q.kind = CollectiveKind::all_gather;
  q.bytes = 1 << 20;
  q.axes = {"x"};
  const int n = s.num_chips();
  // Chip c joins at c x 100 ns.
  auto join_at = [](int c) { return static_cast<Ps>(c) * 100'000; };
  std::vector<Ps> chip_done(static_cast<std::size_t>(n), -1);
  Ps all_done = -1;
  const std::uint64_t id = ici.start_deferred(q, [&](const CollectiveResult&) { all_done = IciModule::now_ps(); });
  for (int c = 0; c < n; ++c)
    sc_core::sc_spawn([&, c] {
      sc_core::wait(sc_core::sc_time(static_cast<double>(join_at(c)), sc_core::SC_PS));
      ici.chip_start(id, c, [&, c] { chip_done[static_cast<std::size_t>(c)] = IciModule::now_ps(); });
    });
  sc_core::sc_start();
  IciSimulator plain(s, m);
  const std::uint64_t pid = plain.start_deferred(q);
  for (int c = 0; c < n; ++c) plain.chip_start(pid, c, join_at(c));
  const auto res = plain.run_all();
  ASSERT_EQ(res.size(), 1u);
  for (int c = 0; c < n; ++c)
    EXPECT_EQ(chip_done[static_cast<std::size_t>(c)], res[0].end_per_chip[static_cast<std::size_t>(c)]) << c;
  EXPECT_EQ(all_done, res[0].end);
  EXPECT_LT(*std::min_element(chip_done.begin(), chip_done.end()), all_done);
}
