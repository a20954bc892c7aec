// The host link (PCIe) shared by concurrent transfers: closed-form
// completion times, and the event-driven model against its tick-by-tick
// twin (arch/dma/host_link_reference.h) on mixed arrivals, exactly.
#include <gtest/gtest.h>

#include <random>

#include "arch/common/errors.h"
#include "arch/dma/host_link.h"
#include "arch/dma/host_link_reference.h"

using namespace tpusim::arch;

namespace {

// Runs requests through HostLinkTiming as the DMA module does: at each
// arrival, first finish what ends by then, then join.
std::vector<Ps> run_fast(double bw, const std::vector<HostLinkRequest>& reqs) {
  HostLinkTiming link(bw);
  std::vector<Ps> done(reqs.size(), HostLinkTiming::kNever);
  std::vector<std::size_t> order(reqs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return reqs[a].arrival < reqs[b].arrival; });
  std::vector<std::size_t> of_id;
  auto drain_until = [&](Ps t) {
    while (link.next_completion() <= t) {
      const Ps c = link.next_completion();
      for (auto id : link.advance(c)) done[of_id[id]] = c;
    }
  };
  for (std::size_t i : order) {
    drain_until(reqs[i].arrival);
    of_id.push_back(i);
    link.add(reqs[i].arrival, reqs[i].bytes);
  }
  drain_until(HostLinkTiming::kNever - 1);
  return done;
}

}  // namespace

// 16 GB/s: a byte takes 62.5 ps. 1000 bytes alone: 62500 ps.
TEST(HostLink, OneTransferTakesBytesOverBandwidth) {
  EXPECT_EQ(run_fast(16e9, {{0, 1000}}), std::vector<Ps>{62500});
  EXPECT_EQ(run_fast(16e9, {{100, 1000}}), std::vector<Ps>{62600});
}

// Two of 1000 bytes together: each gets 8 GB/s, both end at 125000 ps.
// One of 1000 and one of 3000 bytes at 0: the short one ends at 125000 ps
// (2 x 1000 bytes served); the long one has 2000 bytes left, alone at
// 16 GB/s: 125000 + 125000 = 250000 ps (= 4000 bytes / 16 GB/s: the link
// never idles).
TEST(HostLink, ConcurrentTransfersShareTheLinkEqually) {
  EXPECT_EQ(run_fast(16e9, {{0, 1000}, {0, 1000}}), (std::vector<Ps>{125000, 125000}));
  EXPECT_EQ(run_fast(16e9, {{0, 1000}, {0, 3000}}), (std::vector<Ps>{125000, 250000}));
}

// A late joiner: 2000 bytes at 0, 1000 bytes at 62500 ps (the first has
// 1000 left then). Both have 1000 left and share: +125000 ps each.
TEST(HostLink, LateJoinerSharesFromItsArrival) {
  EXPECT_EQ(run_fast(16e9, {{0, 2000}, {62500, 1000}}), (std::vector<Ps>{187500, 187500}));
}

// A transfer ending inside a picosecond holds its share to the end of it:
// 3 bytes at 32 GB/s (31.25 ps a byte) is 93.75 ps -> done at 94.
TEST(HostLink, EndsAtTheFirstWholePicosecond) { EXPECT_EQ(run_fast(32e9, {{0, 3}}), std::vector<Ps>{94}); }

TEST(HostLink, RejectsNoBandwidth) { EXPECT_THROW(HostLinkTiming(0), ConfigError); }

TEST(HostLink, ReferenceAgreesOnTheClosedForms) {
  EXPECT_EQ(host_link_reference(16e9, {{0, 1000}, {0, 3000}}), (std::vector<Ps>{125000, 250000}));
  EXPECT_EQ(host_link_reference(16e9, {{0, 2000}, {62500, 1000}}), (std::vector<Ps>{187500, 187500}));
  EXPECT_EQ(host_link_reference(32e9, {{0, 3}}), std::vector<Ps>{94});
}

// Random mixes (up to 12 transfers overlapping, odd sizes, bandwidths that
// are not round) finish at exactly the same picosecond in both models.
TEST(HostLink, EqualsTickByTickReference) {
  std::mt19937_64 rng(7);
  for (double bw : {16e9, 32e9, 12.3456789e9}) {
    for (int trial = 0; trial < 6; ++trial) {
      std::vector<HostLinkRequest> reqs;
      const int n = 2 + static_cast<int>(rng() % 11);
      for (int i = 0; i < n; ++i) reqs.push_back({static_cast<Ps>(rng() % 200000), 1 + rng() % 4000});
      EXPECT_EQ(run_fast(bw, reqs), host_link_reference(bw, reqs)) << "bw " << bw << " trial " << trial;
    }
  }
}
