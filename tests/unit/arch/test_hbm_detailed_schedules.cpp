// Schedule fingerprints of the detailed DRAM model: 24 scenarios (four
// presets, open and closed page, three kinds of traffic), each reduced to
// an FNV-1a hash of every completion (id, time) in order and of the command
// counters. They pin the exact schedule while the model's code is
// restructured (the timing rules as a table, enums, shared state).
//
// These are golden values, not derived ones: they were recorded from the
// model at commit 01f3e25, whose schedules the closed-form tests in
// test_hbm_detailed.cpp and test_dram_constraints.cpp check. A change that
// moves a schedule on purpose must say why in its commit and update the
// value here (print the new ones with TPUSIM_PRINT_SCHEDULES=1).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "arch/hbm/detailed_dram.h"
#include "hbm_test_util.h"

using namespace tpusim;
using arch::Ps;

namespace {

struct Fnv {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64-bit offset basis
  void add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 0x100000001b3ull;  // FNV 64-bit prime
    }
  }
};

enum class Traffic { Requests, Transfers, Mixed };

// A fixed pseudo-random workload fed over time, run to the end.
std::uint64_t fingerprint(const char* preset, bool closed, Traffic traffic) {
  arch::HbmConfig c = test::load_hbm_preset(preset, 1);
  if (closed) c.page_policy = "closed";
  c.refresh_postpone = traffic == Traffic::Mixed ? 4 : 1;
  arch::DetailedDram d(c);
  std::mt19937_64 rng(7);
  Fnv f;
  Ps now = 0;
  for (int step = 0; step < 60; ++step) {
    if (traffic != Traffic::Transfers)
      for (int i = 0; i < 40; ++i)
        d.submit_request((rng() % (1ull << 31)) & ~31ull, 32, rng() % 3 == 0, now + static_cast<Ps>(rng() % 200000));
    if (traffic != Traffic::Requests) {
      arch::HbmTransfer t;
      t.base = rng() % (1ull << 30);
      t.write = rng() % 2 == 0;
      if (rng() % 2) {
        t.row_bytes = 4096 + rng() % 200000;
        t.atom_bytes = 32ull << (rng() % 5);
        t.atom_interval_ps = static_cast<double>(rng() % 3) * 350.0;
      } else {
        t.row_bytes = 256ull << (rng() % 4);
        t.rows = 1 + rng() % 128;
        t.stride = t.row_bytes * (1 + rng() % 17);
      }
      d.submit(t, now);
    }
    // Gaps up to 4 us: idle stretches where postponed refreshes are paid.
    now += static_cast<Ps>(rng() % 4000000);
    for (const auto& x : d.run_until(now)) {
      f.add(x.id);
      f.add(static_cast<std::uint64_t>(x.time));
    }
  }
  for (const auto& x : d.run_until(arch::kNever / 4)) {
    f.add(x.id);
    f.add(static_cast<std::uint64_t>(x.time));
  }
  const auto& k = d.counters();
  for (std::uint64_t v : {k.row_hits, k.row_misses, k.row_conflicts, k.activates, k.precharges, k.refreshes,
                          k.column_cmds, static_cast<std::uint64_t>(k.refresh_ps)})
    f.add(v);
  return f.h;
}

struct Scenario {
  const char* preset;
  bool closed;
  Traffic traffic;
  std::uint64_t expected;
};

class HbmDetailedSchedule : public ::testing::TestWithParam<Scenario> {};

TEST_P(HbmDetailedSchedule, MatchesRecordedFingerprint) {
  const Scenario& s = GetParam();
  const std::uint64_t h = fingerprint(s.preset, s.closed, s.traffic);
  if (std::getenv("TPUSIM_PRINT_SCHEDULES"))
    std::printf("{\"%s\", %s, Traffic::%s, 0x%016llxull},\n", s.preset, s.closed ? "true" : "false",
                s.traffic == Traffic::Requests    ? "Requests"
                : s.traffic == Traffic::Transfers ? "Transfers"
                                                  : "Mixed",
                static_cast<unsigned long long>(h));
  EXPECT_EQ(h, s.expected);
}

std::string scenario_name(const ::testing::TestParamInfo<Scenario>& i) {
  const Scenario& s = i.param;
  return std::string(s.preset) + (s.closed ? "_closed_" : "_open_") +
         (s.traffic == Traffic::Requests    ? "requests"
          : s.traffic == Traffic::Transfers ? "transfers"
                                            : "mixed");
}

const Scenario kScenarios[] = {
#include "hbm_detailed_schedules.inc"
};

INSTANTIATE_TEST_SUITE_P(Recorded, HbmDetailedSchedule, ::testing::ValuesIn(kScenarios), scenario_name);

}  // namespace
