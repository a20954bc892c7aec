// One test per DRAM timing rule of dram_rules.h, named after it: issue the
// preceding command at t0, then the following command is blocked at
// t0 + latency - 1 ps and allowed at t0 + latency. The latency is derived
// here from the named timings (as the datasheet states the rule), not read
// from the table; the config raises the timing under test so that it binds.
// Bank 0 is the bank under test, bank 1 shares its bank group, bank 2 is in
// another group. A last test checks that every row of the table has a test.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>

#include "arch/hbm/dram_rules.h"
#include "hbm_test_util.h"

using namespace tpusim;
using arch::DramCmd;
using arch::DramScope;
using arch::Ps;

namespace {

using RuleId = std::tuple<std::string, DramScope, DramCmd, DramCmd>;
std::set<RuleId>& tested() {
  static std::set<RuleId> s;
  return s;
}
struct Register {
  Register(const char* name, DramScope s, DramCmd before, DramCmd after) { tested().insert({name, s, before, after}); }
};

constexpr double kLong = 500e-9;  // a raised timing: longer than every other one

// One pseudo-channel of 4 bank groups x 2 banks (bank b in group b / 2).
struct OnePc {
  arch::DramTiming tm;
  arch::DramRules rules;
  arch::EarliestNext pc, group[4], bank[8];
  arch::ActWindow acts;
  explicit OnePc(const arch::HbmConfig& c) : tm(c), rules(tm) {}
  void issue(DramCmd c, int b, Ps t) { rules.issue(c, t, pc, group[b / 2], bank[b], acts); }
  Ps earliest(DramCmd c, int b) const { return rules.earliest(c, pc, group[b / 2], bank[b], acts); }
};

arch::HbmConfig hbm2e(double arch::HbmTimings::*raise = nullptr, double to = kLong) {
  arch::HbmConfig c = test::load_hbm_preset("hbm2e", 1);
  if (raise) c.t.*raise = to;
  return c;
}

constexpr Ps t0 = 1000000;
constexpr int kBank = 0, kSameGroup = 1, kOtherGroup = 2;

// `after` at bank `b` is blocked 1 ps before t0 + latency and allowed at it.
void expect_bound(const OnePc& p, DramCmd after, int b, Ps latency) {
  EXPECT_GT(latency, 0);
  EXPECT_EQ(p.earliest(after, b), t0 + latency) << arch::to_string(after) << " at bank " << b;
}

#define RULE_TEST(test_name, rule, scope, before, after, target, config, latency_expr)     \
  const Register reg_##test_name{rule, DramScope::scope, DramCmd::before, DramCmd::after}; \
  TEST(DramRule, test_name) {                                                              \
    OnePc p(config);                                                                       \
    const arch::DramTiming& t = p.tm;                                                      \
    p.issue(DramCmd::before, kBank, t0);                                                   \
    expect_bound(p, DramCmd::after, target, latency_expr);                                 \
  }

using H = arch::HbmTimings;

// Same bank.
RULE_TEST(Bank_ACT_RD_tRCD, "tRCD", Bank, ACT, RD, kBank, hbm2e(&H::tRCD), t.RCD)
RULE_TEST(Bank_ACT_WR_tRCD, "tRCD", Bank, ACT, WR, kBank, hbm2e(&H::tRCD), t.RCD)
RULE_TEST(Bank_ACT_PRE_tRAS, "tRAS", Bank, ACT, PRE, kBank, hbm2e(&H::tRAS), t.RAS)
RULE_TEST(Bank_ACT_ACT_tRC, "tRC", Bank, ACT, ACT, kBank, hbm2e(&H::tRC), t.RC)
RULE_TEST(Bank_RD_PRE_tRTP, "tRTP", Bank, RD, PRE, kBank, hbm2e(&H::tRTP), t.RTP)
// Write recovery from the write's last data: tCWL + burst + tWR.
RULE_TEST(Bank_WR_PRE_tWR, "tWR", Bank, WR, PRE, kBank, hbm2e(&H::tWR), t.CWL + t.burst + t.WR)
RULE_TEST(Bank_PRE_ACT_tRP, "tRP", Bank, PRE, ACT, kBank, hbm2e(&H::tRP), t.RP)
RULE_TEST(Bank_REF_ACT_tRFC, "tRFC", Bank, REF, ACT, kBank, hbm2e(&H::tRFC), t.RFC)

// Same bank group, another bank.
RULE_TEST(BankGroup_ACT_ACT_tRRD_L, "tRRD_L", BankGroup, ACT, ACT, kSameGroup, hbm2e(&H::tRRD_L), t.RRD_L)
RULE_TEST(BankGroup_RD_RD_tCCD_L, "tCCD_L", BankGroup, RD, RD, kSameGroup, hbm2e(&H::tCCD_L), t.CCD_L)
RULE_TEST(BankGroup_RD_WR_tCCD_L, "tCCD_L", BankGroup, RD, WR, kSameGroup, hbm2e(&H::tCCD_L), t.CCD_L)
RULE_TEST(BankGroup_WR_RD_tCCD_L, "tCCD_L", BankGroup, WR, RD, kSameGroup, hbm2e(&H::tCCD_L), t.CCD_L)
RULE_TEST(BankGroup_WR_WR_tCCD_L, "tCCD_L", BankGroup, WR, WR, kSameGroup, hbm2e(&H::tCCD_L), t.CCD_L)
// Write to read from the write's last data: tCWL + burst + tWTR_L.
RULE_TEST(BankGroup_WR_RD_tWTR_L, "tWTR_L", BankGroup, WR, RD, kSameGroup, hbm2e(&H::tWTR_L), t.CWL + t.burst + t.WTR_L)

// Same pseudo-channel, another bank group.
RULE_TEST(PseudoChannel_ACT_ACT_tRRD_S, "tRRD_S", PseudoChannel, ACT, ACT, kOtherGroup, hbm2e(&H::tRRD_S), t.RRD_S)
RULE_TEST(PseudoChannel_RD_RD_tCCD_S, "tCCD_S", PseudoChannel, RD, RD, kOtherGroup, hbm2e(&H::tCCD_S), t.CCD_S)
RULE_TEST(PseudoChannel_RD_WR_tCCD_S, "tCCD_S", PseudoChannel, RD, WR, kOtherGroup, hbm2e(&H::tCCD_S), t.CCD_S)
RULE_TEST(PseudoChannel_WR_RD_tCCD_S, "tCCD_S", PseudoChannel, WR, RD, kOtherGroup, hbm2e(&H::tCCD_S), t.CCD_S)
RULE_TEST(PseudoChannel_WR_WR_tCCD_S, "tCCD_S", PseudoChannel, WR, WR, kOtherGroup, hbm2e(&H::tCCD_S), t.CCD_S)
RULE_TEST(PseudoChannel_WR_RD_tWTR_S, "tWTR_S", PseudoChannel, WR, RD, kOtherGroup, hbm2e(&H::tWTR_S),
          t.CWL + t.burst + t.WTR_S)
// The write's data starts tRTW after the read's ends: tCL + burst + tRTW - tCWL.
RULE_TEST(PseudoChannel_RD_WR_tRTW, "tRTW", PseudoChannel, RD, WR, kOtherGroup, hbm2e(&H::tRTW),
          t.CL + t.burst + t.RTW - t.CWL)
// The data bus: with tCCD_S = 0 one burst after the other (tCCD_S is raised
// to the burst, so the two rules meet there).
RULE_TEST(PseudoChannel_RD_RD_data_bus, "data bus", PseudoChannel, RD, RD, kOtherGroup, hbm2e(&H::tCCD_S, 0), t.burst)
RULE_TEST(PseudoChannel_WR_WR_data_bus, "data bus", PseudoChannel, WR, WR, kOtherGroup, hbm2e(&H::tCCD_S, 0), t.burst)
// Command buses: one row command and one column command per tCK.
RULE_TEST(PseudoChannel_ACT_ACT_row_bus, "row command bus", PseudoChannel, ACT, ACT, kOtherGroup, hbm2e(&H::tCK), t.tCK)
RULE_TEST(PseudoChannel_ACT_PRE_row_bus, "row command bus", PseudoChannel, ACT, PRE, kOtherGroup, hbm2e(&H::tCK), t.tCK)
RULE_TEST(PseudoChannel_PRE_ACT_row_bus, "row command bus", PseudoChannel, PRE, ACT, kOtherGroup, hbm2e(&H::tCK), t.tCK)
RULE_TEST(PseudoChannel_PRE_PRE_row_bus, "row command bus", PseudoChannel, PRE, PRE, kOtherGroup, hbm2e(&H::tCK), t.tCK)
RULE_TEST(PseudoChannel_REF_ACT_row_bus, "row command bus", PseudoChannel, REF, ACT, kOtherGroup, hbm2e(&H::tCK), t.tCK)
RULE_TEST(PseudoChannel_REF_PRE_row_bus, "row command bus", PseudoChannel, REF, PRE, kOtherGroup, hbm2e(&H::tCK), t.tCK)
RULE_TEST(PseudoChannel_RD_RD_column_bus, "column command bus", PseudoChannel, RD, RD, kOtherGroup, hbm2e(&H::tCK),
          t.tCK)
RULE_TEST(PseudoChannel_RD_WR_column_bus, "column command bus", PseudoChannel, RD, WR, kOtherGroup, hbm2e(&H::tCK),
          t.tCK)
RULE_TEST(PseudoChannel_WR_RD_column_bus, "column command bus", PseudoChannel, WR, RD, kOtherGroup, hbm2e(&H::tCK),
          t.tCK)
RULE_TEST(PseudoChannel_WR_WR_column_bus, "column command bus", PseudoChannel, WR, WR, kOtherGroup, hbm2e(&H::tCK),
          t.tCK)

// The fifth ACT waits tFAW past the first of four (10 ns apart, each to its
// own bank in a new group where possible, which tRRD_S/L allow).
const Register reg_faw{"tFAW", DramScope::PseudoChannel, DramCmd::ACT, DramCmd::ACT};
TEST(DramRule, PseudoChannel_ACT_ACT_tFAW) {
  OnePc p(hbm2e(&H::tFAW));
  const arch::DramTiming& t = p.tm;
  const Ps gap = 10000;
  ASSERT_GE(gap, std::max({t.RRD_L, t.RRD_S, t.tCK}));
  for (int i = 0; i < 4; ++i) p.issue(DramCmd::ACT, 2 * i, t0 + i * gap);
  expect_bound(p, DramCmd::ACT, 1, t.FAW);
  // With three ACTs in the window, the next one is not held by tFAW.
  OnePc q(hbm2e(&H::tFAW));
  for (int i = 0; i < 3; ++i) q.issue(DramCmd::ACT, 2 * i, t0 + i * gap);
  EXPECT_LT(q.earliest(DramCmd::ACT, 7), t0 + t.FAW);
}

// A command no rule relates leaves the following one free: a read does not
// hold an ACT, nor a PRE hold a read.
TEST(DramRule, UnrelatedCommandsDoNotWait) {
  OnePc p(hbm2e());
  p.issue(DramCmd::RD, kBank, t0);
  EXPECT_EQ(p.earliest(DramCmd::ACT, kOtherGroup), 0);
  p.issue(DramCmd::PRE, kOtherGroup, t0);
  EXPECT_LE(p.earliest(DramCmd::RD, 4), t0 + p.tm.CCD_S);
}

TEST(DramRule, EveryRuleHasATest) {
  std::set<RuleId> rows;
  for (const arch::DramRule& r : arch::kDramRules) rows.insert({r.name, r.scope, r.before, r.after});
  for (const RuleId& r : rows)
    EXPECT_TRUE(tested().count(r)) << "no test for rule " << std::get<0>(r) << " " << arch::to_string(std::get<2>(r))
                                   << " -> " << arch::to_string(std::get<3>(r));
  for (const RuleId& r : tested()) EXPECT_TRUE(rows.count(r)) << "tested rule not in the table: " << std::get<0>(r);
}

}  // namespace
