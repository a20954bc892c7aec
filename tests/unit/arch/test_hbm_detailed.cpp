// Detailed DRAM model: closed-form single-bank timing, tFAW, refresh
// blocking, FR-FCFS order and its starvation cap, address mapping, and the
// bandwidth/latency figures expected of HBM, on the shipped presets.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>

#include "arch/common/errors.h"
#include "arch/hbm/detailed_dram.h"
#include "hbm_test_util.h"

using namespace tpusim;
using arch::Ps;

namespace {

arch::HbmConfig hbm2e_no_refresh() {
  arch::HbmConfig c = test::load_hbm_preset("hbm2e", 1);
  c.t.tREFI = 0;  // closed-form tests look at one command sequence at a time
  // They place requests on chosen banks and pseudo-channels through the
  // plain field mapping (addr_of), so the controller's address hash is off.
  c.address_hash = false;
  return c;
}

// HBM2e, 1 stack, mapping RoBaBgChPcCo: address of (pc, bg, ba, row), column 0.
// Field radices from least significant: Co = 1 KiB / 32 B = 32 bursts,
// Pc = 2, Ch = 8, Bg = 4, Ba = 4, Ro = rest.
std::uint64_t addr_of(std::uint64_t pc, std::uint64_t bg, std::uint64_t ba, std::uint64_t row) {
  const std::uint64_t ch = pc / 2, p = pc % 2;
  return ((((row * 4 + ba) * 4 + bg) * 8 + ch) * 2 + p) * 32 * 32;
}

Ps ps(double s) { return arch::seconds_to_ps(s); }

// Steps event by event so that later submissions stay possible.
Ps finish(arch::DetailedDram& d, std::uint64_t id) {
  for (Ps next = d.next_event_time(); next != arch::kNever; next = d.next_event_time())
    for (const auto& c : d.run_until(next))
      if (c.id == id) return c.time;
  ADD_FAILURE() << "request " << id << " never completed";
  return -1;
}

}  // namespace

TEST(HbmAddressMapping, DecodesFieldsMostToLeastSignificant) {
  arch::AddressMapping m(hbm2e_no_refresh());
  EXPECT_EQ(m.interleave_bytes(), 1024u);  // Co lowest: one 1 KiB row slice per PC
  const arch::DramCoord d = m.decode(addr_of(13, 2, 3, 77) + 5 * 32 + 7);
  EXPECT_EQ(d.pc, 13u);
  EXPECT_EQ(d.bank, 2u * 4 + 3);
  EXPECT_EQ(d.row, 77u);
  EXPECT_EQ(d.col, 5u);
  // Consecutive 1 KiB slices walk pseudo-channels first.
  EXPECT_EQ(m.decode(1024).pc, 1u);
  EXPECT_EQ(m.decode(2048).pc, 2u);
}

TEST(HbmAddressMapping, BurstInterleaveWhenColumnIsNotLowest) {
  arch::HbmConfig c = hbm2e_no_refresh();
  c.address_mapping = "RoBaBgCoChPc";
  arch::AddressMapping m(c);
  EXPECT_EQ(m.interleave_bytes(), 32u);
  EXPECT_EQ(m.decode(32).pc, 1u);
  EXPECT_EQ(m.decode(32 * 16).col, 1u);
}

// decode() divides by shifts where a field's count is a power of two. The
// plain mixed-radix arithmetic of the mapping (written out here for two field
// orders, with the hash as address_mapping.h describes it) must give the
// same coordinates on power-of-two and other geometries, hashed or not.
TEST(HbmAddressMapping, DecodeMatchesPlainMixedRadixArithmetic) {
  struct Geometry {
    int stacks, bank_groups, banks_per_group;
    std::uint64_t row_bytes;
  };
  for (const Geometry g : {Geometry{1, 4, 4, 1024}, Geometry{3, 3, 4, 1024}, Geometry{2, 4, 3, 96 * 32}})
    for (const char* mapping : {"RoBaBgChPcCo", "RoBaBgCoChPc"})
      for (bool hash : {false, true}) {
        arch::HbmConfig c = hbm2e_no_refresh();
        c.stacks = g.stacks;
        c.bank_groups = g.bank_groups;
        c.banks_per_group = g.banks_per_group;
        c.row_bytes = g.row_bytes;
        c.address_mapping = mapping;
        c.address_hash = hash;
        const arch::AddressMapping m(c);
        const std::uint64_t bb = 32, cols = g.row_bytes / bb, pcs = 2, chs = 8ull * g.stacks;
        const std::uint64_t bgs = g.bank_groups, bas = g.banks_per_group, banks = bgs * bas;
        const bool co_lowest = std::string(mapping) == "RoBaBgChPcCo";
        const std::uint64_t interleave = co_lowest ? bb * cols : bb;
        std::mt19937_64 rng(3);
        for (int i = 0; i < 20000; ++i) {
          const std::uint64_t addr = i < 10000 ? rng() % (64ull << 30) : rng();
          std::uint64_t v = addr / bb, co, pc, ch;
          if (co_lowest) {
            co = v % cols, v /= cols;
            pc = v % pcs, v /= pcs;
            ch = v % chs, v /= chs;
          } else {
            pc = v % pcs, v /= pcs;
            ch = v % chs, v /= chs;
            co = v % cols, v /= cols;
          }
          const std::uint64_t bg = v % bgs, ba = (v / bgs) % bas, row = v / bgs / bas;
          std::uint64_t gpc = ch * pcs + pc, bank = bg * bas + ba;
          if (hash) {
            const std::uint64_t h = ((addr / (interleave * pcs * chs)) * 0x9E3779B97F4A7C15ull) >> 32;
            gpc = (gpc + h % (pcs * chs)) % (pcs * chs);
            bank = (bank + row % banks) % banks;
          }
          const arch::DramCoord d = m.decode(addr);
          ASSERT_EQ(d.col, co) << mapping << " " << addr;
          ASSERT_EQ(d.row, row) << mapping << " " << addr;
          ASSERT_EQ(d.pc, gpc) << mapping << " " << addr;
          ASSERT_EQ(d.bank, bank) << mapping << " " << addr;
        }
      }
}

TEST(HbmAddressMapping, RejectsBadStrings) {
  arch::HbmConfig c = hbm2e_no_refresh();
  for (const char* bad : {"RoBaBgChPc", "RoBaBgChPcCoCo", "RoBaXxChPcCo", "RoBaBgChPcC"}) {
    c.address_mapping = bad;
    EXPECT_THROW(arch::AddressMapping{c}, arch::ConfigError) << bad;
  }
  c.address_mapping = "BaRoBgChPcCo";  // Ro not on top needs a capacity
  EXPECT_THROW(arch::AddressMapping{c}, arch::ConfigError);
}

// One 32-byte read (one BL4 burst) to each state of a bank. Completion is
// when the last byte is on the bus plus the fixed controller latency:
//   hit:      RD at arrival                -> tCL + burst
//   miss:     ACT at arrival, RD at +tRCD  -> tRCD + tCL + burst
//   conflict: PRE, ACT at +tRP, RD at +tRCD -> tRP + tRCD + tCL + burst
TEST(HbmDetailed, SingleBankHitMissConflictClosedForm) {
  arch::DetailedDram d(hbm2e_no_refresh());
  const auto& t = d.timing();
  EXPECT_EQ(t.burst, 1250);  // 4 transfers / 3.2 GT/s
  const Ps tail = t.CL + t.burst + t.controller;
  auto a = d.submit_request(addr_of(0, 1, 2, 10), 32, false, 0);
  EXPECT_EQ(finish(d, a), t.RCD + tail);
  const Ps t1 = ps(1e-6);
  auto b = d.submit_request(addr_of(0, 1, 2, 10) + 64, 32, false, t1);
  EXPECT_EQ(finish(d, b), t1 + tail);
  const Ps t2 = ps(2e-6);
  auto c = d.submit_request(addr_of(0, 1, 2, 11), 32, false, t2);
  EXPECT_EQ(finish(d, c), t2 + t.RP + t.RCD + tail);
  EXPECT_EQ(d.counters().row_hits, 1u);
  EXPECT_EQ(d.counters().row_misses, 1u);
  EXPECT_EQ(d.counters().row_conflicts, 1u);
  EXPECT_EQ(d.counters().bytes_read, 96u);
}

// Two transfers that arrive together on one PC are admitted from two
// streams, which are dropped once both are drained; the PC must then still
// take later requests (admission once divided by the stream count there).
// The later request goes to a bank the transfers never opened: a miss,
// ACT at arrival, RD at +tRCD -> tRCD + tCL + burst + controller latency.
TEST(HbmDetailed, PseudoChannelServesRequestsAfterConcurrentTransfersDrain) {
  arch::DetailedDram d(hbm2e_no_refresh());
  const auto& t = d.timing();
  arch::HbmTransfer a, b;
  a.row_bytes = b.row_bytes = 1024;  // one row slice: stays on PC 0
  a.base = addr_of(0, 0, 0, 1);
  b.base = addr_of(0, 1, 0, 1);
  const auto ia = d.submit(a, 0), ib = d.submit(b, 0);
  std::map<std::uint64_t, Ps> done;
  for (const auto& c : d.run_until(ps(0.5e-6))) done[c.id] = c.time;
  EXPECT_EQ(done.size(), 2u);
  EXPECT_GT(done[ia], 0);
  EXPECT_GT(done[ib], 0);
  const Ps t1 = ps(1e-6);
  const auto r = d.submit_request(addr_of(0, 2, 0, 5), 32, false, t1);
  EXPECT_EQ(finish(d, r), t1 + t.RCD + t.CL + t.burst + t.controller);
}

// A conflict right behind an ACT waits for tRAS before its PRE:
// ACT0 at 0, PRE at tRAS (> tRCD + tRTP), ACT1 at tRAS + tRP (= tRC here),
// RD at + tRCD.
TEST(HbmDetailed, ConflictWaitsForTras) {
  arch::DetailedDram d(hbm2e_no_refresh());
  const auto& t = d.timing();
  d.submit_request(addr_of(0, 0, 0, 1), 32, false, 0);
  auto b = d.submit_request(addr_of(0, 0, 0, 2), 32, false, 0);
  ASSERT_GT(t.RAS, t.RCD + t.RTP);
  EXPECT_EQ(finish(d, b), std::max(t.RAS + t.RP, t.RC) + t.RCD + t.CL + t.burst + t.controller);
}

// Five reads to five closed banks of one PC, all arriving at 0, banks in
// bank groups 0,1,2,3,0. ACTs go at 0, tRRD_S, 2 tRRD_S, 3 tRRD_S; the
// fifth must wait for the four-activate window: max(4 tRRD_S, tFAW,
// tRRD_L) = tFAW (20 ns > 10 ns). Without tFAW it would go at 4 tRRD_S.
TEST(HbmDetailed, FourActivateWindowLimitsTheFifthActivate) {
  for (bool faw : {true, false}) {
    arch::HbmConfig c = hbm2e_no_refresh();
    if (!faw) c.t.tFAW = 0;
    arch::DetailedDram d(c);
    const auto& t = d.timing();
    std::uint64_t last = 0;
    for (int i = 0; i < 5; ++i) last = d.submit_request(addr_of(0, i % 4, i / 4, 3), 32, false, 0);
    const Ps act5 = faw ? std::max({4 * t.RRD_S, t.FAW, t.RRD_L}) : std::max(4 * t.RRD_S, t.RRD_L);
    EXPECT_EQ(finish(d, last), act5 + t.RCD + t.CL + t.burst + t.controller) << "tFAW on: " << faw;
    EXPECT_EQ(d.counters().activates, 5u);
  }
}

// PC 0 of one stack (16 PCs) refreshes first at tREFI * 1/16. A read that
// arrives exactly then finds the PC refreshing: the row left open by the
// first read is precharged at `due` (tRAS long past), REF at due + tRP, and
// the read activates at due + tRP + tRFC. PC 1 refreshes later (2/16
// tREFI): the same read there is not delayed.
TEST(HbmDetailed, RefreshBlocksThePseudoChannel) {
  arch::HbmConfig c = test::load_hbm_preset("hbm2e", 1);
  c.address_hash = false;  // addr_of places requests through the plain mapping
  arch::DetailedDram d(c);
  const auto& t = d.timing();
  const Ps due = t.REFI / 16;
  auto a = d.submit_request(addr_of(0, 0, 0, 1), 32, false, 0);
  EXPECT_EQ(finish(d, a), t.RCD + t.CL + t.burst + t.controller);
  auto b = d.submit_request(addr_of(0, 1, 0, 1), 32, false, due);
  auto e = d.submit_request(addr_of(1, 1, 0, 1), 32, false, due);
  std::map<std::uint64_t, Ps> done;
  while (done.size() < 2)
    for (const auto& x : d.run_until(d.next_event_time())) done[x.id] = x.time;
  EXPECT_EQ(done[b], due + t.RP + t.RFC + t.RCD + t.CL + t.burst + t.controller);
  EXPECT_EQ(done[e], due + t.RCD + t.CL + t.burst + t.controller);
  EXPECT_EQ(d.counters().refreshes, 1u);
  EXPECT_EQ(d.counters().refresh_ps, t.RP + t.RFC);
}

// Flexible refresh. PC 0 of one stack falls due at tREFI / 16 = `due`. A
// read b arrives 1 ps before: its ACT goes at due - 1, its column command
// at due - 1 + tRCD finds the refresh due.
//  * refresh_postpone 1: the read waits, so the refresh is postponed; b
//    completes as if unloaded. Then the PC idles and pays the refresh at
//    once: PRE when tRAS allows (due - 1 + tRAS), REF tRP later (= due - 1 +
//    tRC here, also the bank's tRC), blocking until + tRFC. A read c to
//    another bank arriving just after b's column command activates at that
//    end.
//  * refresh_postpone 0: the refresh goes first: PRE at due - 1 + tRAS,
//    REF at due - 1 + tRC, and b re-activates its row after tRFC.
TEST(HbmDetailed, RefreshPostponedWhileBusyAndPaidWhenIdle) {
  for (int postpone : {1, 0}) {
    arch::HbmConfig cfg = test::load_hbm_preset("hbm2e", 1);
    cfg.address_hash = false;
    cfg.refresh_postpone = postpone;
    arch::DetailedDram d(cfg);
    const auto& t = d.timing();
    const Ps due = t.REFI / 16;
    ASSERT_EQ(t.RAS + t.RP, t.RC);
    ASSERT_GT(t.RAS, t.RCD + t.RTP);
    const Ps tail = t.CL + t.burst + t.controller;
    const Ps ref_end = due - 1 + t.RC + t.RFC;
    auto b = d.submit_request(addr_of(0, 0, 0, 1), 32, false, due - 1);
    if (postpone == 1) {
      auto c = d.submit_request(addr_of(0, 1, 0, 1), 32, false, due - 1 + t.RCD + 1);
      std::map<std::uint64_t, Ps> done;
      while (done.size() < 2)
        for (const auto& x : d.run_until(d.next_event_time())) done[x.id] = x.time;
      EXPECT_EQ(done[b], due - 1 + t.RCD + tail);
      EXPECT_EQ(done[c], ref_end + t.RCD + tail);
    } else {
      EXPECT_EQ(finish(d, b), ref_end + t.RCD + tail);
    }
    EXPECT_EQ(d.counters().refreshes, 1u) << "postpone " << postpone;
  }
}

// A stream longer than one tREFI still pays one refresh per tREFI and
// pseudo-channel when refreshes may be postponed: a 48 MiB read (about
// 65 us on two HBM2e stacks, 16 tREFI) meets at least 15 refreshes per PC,
// (16 due less the one still postponed at the end, less one for the
// stagger), and is no more than 1% faster than with no postponing.
TEST(HbmDetailed, PostponingKeepsTheLongRunRefreshCost) {
  std::map<int, Ps> end;
  for (int postpone : {0, 1}) {
    arch::HbmConfig cfg = test::load_hbm_preset("hbm2e", 2);
    cfg.refresh_postpone = postpone;
    arch::DetailedDram d(cfg);
    arch::HbmTransfer x;
    x.row_bytes = 48ull << 20;
    end[postpone] = d.transfer(x, 0);
    if (postpone == 1) {
      EXPECT_GE(d.counters().refreshes, 15u * 32u);
    }
  }
  EXPECT_LE(end[1], end[0]);
  EXPECT_GE(static_cast<double>(end[1]), 0.99 * static_cast<double>(end[0]));
}

// FR-FCFS: with row A open, an older request to row B of the same bank
// waits while younger row-A hits are served, but only for
// kHitStreakCap column commands; then row B gets its PRE.
TEST(HbmDetailed, RowHitsFirstWithStarvationCap) {
  arch::DetailedDram d(hbm2e_no_refresh());
  finish(d, d.submit_request(addr_of(0, 0, 0, 5), 32, false, 0));
  const Ps t0 = arch::seconds_to_ps(1e-6);
  auto miss = d.submit_request(addr_of(0, 0, 0, 6), 32, false, t0);
  std::vector<std::uint64_t> hits;
  const int n = arch::DetailedDram::kHitStreakCap + 8;
  for (int i = 0; i < n; ++i)
    hits.push_back(d.submit_request(addr_of(0, 0, 0, 5) + 32 * static_cast<std::uint64_t>(i % 32), 32, false, t0));
  std::map<std::uint64_t, Ps> done;
  while (done.size() < hits.size() + 1)
    for (const auto& c : d.run_until(d.next_event_time())) done[c.id] = c.time;
  EXPECT_GT(done[miss], done[hits.front()]);  // hit served before the older miss
  int before = 0;
  for (auto h : hits) before += done[h] < done[miss];
  EXPECT_EQ(before, arch::DetailedDram::kHitStreakCap);
}

// The scheduler caches each bank's next command and skips empty banks; the
// reference scan re-plans and scans every bank at every decision (the
// obvious form). A fixed random mix of transfers (contiguous and strided,
// reads and writes, paced and not) and single requests, on three presets,
// open and closed page, must complete every transfer at the same time.
TEST(HbmDetailed, CachedSchedulerMatchesReferenceScan) {
  for (const char* preset : {"hbm2e", "hbm3", "ddr3"})
    for (bool closed : {false, true}) {
      arch::HbmConfig c = test::load_hbm_preset(preset, 2);
      if (closed) c.page_policy = "closed";
      c.queue_depth = closed ? 64 : 16;
      std::vector<std::pair<std::uint64_t, Ps>> out[2];
      for (int ref = 0; ref < 2; ++ref) {
        arch::DetailedDram d(c);
        d.set_reference_scan(ref == 1);
        std::mt19937_64 rng(11);
        Ps now = 0;
        for (int step = 0; step < 150; ++step) {
          const auto k = rng() % 4;
          arch::HbmTransfer t;
          t.base = rng() % (1ull << 30);
          if (k == 0) {
            t.row_bytes = 1 + rng() % 70000;
            t.write = rng() % 3 == 0;
            t.atom_bytes = 32ull << (rng() % 4);
            t.atom_interval_ps = static_cast<double>(rng() % 2) * 700.0;
            d.submit(t, now);
          } else if (k == 1) {
            t.row_bytes = 512ull << (rng() % 3);
            t.rows = 1 + rng() % 64;
            t.stride = t.row_bytes * (1 + rng() % 9);
            t.write = rng() % 2 == 0;
            d.submit(t, now);
          } else {
            for (int i = 0; i < 50; ++i)
              d.submit_request((rng() % (4ull << 30)) & ~63ull, 64, rng() % 4 == 0,
                               now + static_cast<Ps>(rng() % 100000));
          }
          now += static_cast<Ps>(rng() % 400000);
          for (const auto& x : d.run_until(now)) out[ref].push_back({x.id, x.time});
        }
        for (const auto& x : d.run_until(arch::kNever / 4)) out[ref].push_back({x.id, x.time});
      }
      ASSERT_GT(out[0].size(), 3000u);
      EXPECT_TRUE(out[0] == out[1]) << preset << (closed ? " closed" : " open");
    }
}

// Sequential streaming: 88-96% of peak on every preset (refresh takes
// tRFC/tREFI, 4.5-9%, the rest is row switches). 48 MiB spans several
// refresh intervals on two stacks of any preset.
class HbmPresetStream : public ::testing::TestWithParam<const char*> {};

TEST_P(HbmPresetStream, SequentialReadEfficiency) {
  arch::DetailedDram d(test::load_hbm_preset(GetParam(), 2));
  arch::HbmTransfer t;
  t.row_bytes = 48ull << 20;
  const double eff = static_cast<double>(t.bytes()) / arch::ps_to_seconds(d.transfer(t, 0)) / d.peak_bandwidth();
  RecordProperty("efficiency", std::to_string(eff));
  EXPECT_GE(eff, 0.88);
  EXPECT_LE(eff, 0.96);
  EXPECT_EQ(d.counters().bytes_read, t.bytes());  // conservation
  EXPECT_GT(d.counters().row_hits, 10 * (d.counters().row_misses + d.counters().row_conflicts));
}

// Random 64-byte reads: each needs an ACT (and usually a PRE), so tFAW,
// tRRD and tRC cap the rate far below peak.
TEST_P(HbmPresetStream, RandomReadsFarBelowPeak) {
  arch::DetailedDram d(test::load_hbm_preset(GetParam(), 2));
  std::mt19937_64 rng(42);
  const std::uint64_t n = 50000;
  for (std::uint64_t i = 0; i < n; ++i) d.submit_request((rng() % (8ull << 30)) & ~63ull, 64, false, 0);
  Ps last = 0;
  for (const auto& c : d.run_until(arch::kNever / 4)) last = std::max(last, c.time);
  const double eff = n * 64.0 / arch::ps_to_seconds(last) / d.peak_bandwidth();
  RecordProperty("efficiency", std::to_string(eff));
  EXPECT_LT(eff, 0.7);
  EXPECT_GT(eff, 0.2);
  EXPECT_GT(d.counters().row_conflicts + d.counters().row_misses, n * 9 / 10);
}

TEST_P(HbmPresetStream, UnloadedReadLatencyIsHbmLike) {
  arch::DetailedDram d(test::load_hbm_preset(GetParam(), 2));
  arch::HbmTransfer t;
  t.row_bytes = 64;
  const double ns = arch::ps_to_seconds(d.transfer(t, 0)) * 1e9;
  EXPECT_GE(ns, 80);
  EXPECT_LE(ns, 200);
}

INSTANTIATE_TEST_SUITE_P(Presets, HbmPresetStream, ::testing::Values("hbm2", "hbm2e", "hbm3", "hbm3e", "ddr3"));

// Turnarounds on one open row of one bank (same bank group):
//  write then read: RD waits until write data ends + tWTR_L:
//    RD at T + tCWL + burst + tWTR_L, done + tCL + burst + controller;
//  read then write: write data may start tRTW after read data ends:
//    WR data at T + tCL + burst + tRTW, done + burst + controller.
TEST(HbmDetailed, ReadWriteTurnaroundsClosedForm) {
  arch::DetailedDram d(hbm2e_no_refresh());
  const auto& t = d.timing();
  const std::uint64_t row = addr_of(0, 2, 1, 9);
  finish(d, d.submit_request(row, 32, false, 0));  // opens the row
  const Ps t1 = ps(1e-6);
  auto w = d.submit_request(row + 32, 32, true, t1);
  auto r = d.submit_request(row + 64, 32, false, t1);
  std::map<std::uint64_t, Ps> done;
  while (done.size() < 2)
    for (const auto& c : d.run_until(d.next_event_time())) done[c.id] = c.time;
  EXPECT_EQ(done[w], t1 + t.CWL + t.burst + t.controller);
  EXPECT_EQ(done[r], t1 + t.CWL + t.burst + t.WTR_L + t.CL + t.burst + t.controller);
  const Ps t2 = ps(2e-6);
  auto r2 = d.submit_request(row + 96, 32, false, t2);
  auto w2 = d.submit_request(row + 128, 32, true, t2);
  done.clear();
  while (done.size() < 2)
    for (const auto& c : d.run_until(d.next_event_time())) done[c.id] = c.time;
  EXPECT_EQ(done[r2], t2 + t.CL + t.burst + t.controller);
  EXPECT_EQ(done[w2], t2 + t.CL + t.burst + t.RTW + t.burst + t.controller);
  EXPECT_EQ(d.counters().bytes_written, 64u);
}

TEST(HbmDetailed, RejectsBadConfigAndMisuse) {
  arch::HbmConfig c = hbm2e_no_refresh();
  c.page_policy = "adaptive";
  EXPECT_THROW(arch::DetailedDram{c}, arch::ConfigError);
  c = hbm2e_no_refresh();
  c.t.tRCD = 0;
  EXPECT_THROW(arch::DetailedDram{c}, arch::ConfigError);
  arch::DetailedDram d(hbm2e_no_refresh());
  EXPECT_THROW(d.submit_request(1000, 64, false, 0), arch::InternalError);  // crosses 1 KiB
  d.run_until(1000);
  EXPECT_THROW(d.submit_request(0, 64, false, 10), arch::InternalError);  // in the past
}

TEST(HbmDetailed, ClosedPagePolicyTurnsHitsIntoMisses) {
  arch::HbmConfig c = hbm2e_no_refresh();
  c.page_policy = "closed";
  arch::DetailedDram d(c);
  d.submit_request(addr_of(0, 0, 0, 1), 32, false, 0);
  auto b = d.submit_request(addr_of(0, 0, 0, 1) + 32, 32, false, arch::seconds_to_ps(1e-6));
  const auto& t = d.timing();
  EXPECT_EQ(finish(d, b), arch::seconds_to_ps(1e-6) + t.RCD + t.CL + t.burst + t.controller);
  EXPECT_EQ(d.counters().row_hits, 0u);
}
