// DRAM timing rules as data. Each JEDEC constraint between two commands is
// one row of kDramRules: scope (same bank, same bank group, same
// pseudo-channel), preceding command, following command and the latency in
// named timings, so the table can be checked against the datasheet line by
// line (the form of Ramulator 2's HBM timing tables; DRAMSys keeps the same
// "earliest next command" state per bank, bank group and channel).
// DramRules compiles the rows for one DramTiming into latency tables
// [scope][preceding][following]; a command issuing at t raises the
// EarliestNext entries of its bank, its bank group and its pseudo-channel
// (PC) to t + latency, only the entries some row relates (the table is
// constexpr, so which ones is known at compile time). The four-activate window (tFAW) is the one rule over
// more than two commands: a row with window 4, kept as the PC's last four
// ACT times (ActWindow).
// Leaves out: the preconditions of REF (every bank precharged for tRP, tRC
// past its last ACT), which the refresh procedure of DetailedDram applies
// when it places a refresh; per-bank refresh; rank/stack-ID switching.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "arch/hbm/dram_timing.h"
#include "arch/hbm/hbm_model.h"

namespace tpusim::arch {

// DRAM commands. The first four are the ones the scheduler chooses among,
// in the order of EarliestNext and of DetailedDram's per-class tables;
// REF is placed by refresh and only precedes.
enum class DramCmd : std::uint8_t { RD, WR, ACT, PRE, REF };
inline constexpr std::size_t kDramCmds = 5;
inline constexpr std::size_t kScheduledCmds = 4;  // RD, WR, ACT, PRE
constexpr std::size_t index(DramCmd c) { return static_cast<std::size_t>(c); }
constexpr bool is_column(DramCmd c) { return c == DramCmd::RD || c == DramCmd::WR; }
const char* to_string(DramCmd c);

enum class DramScope : std::uint8_t { Bank, BankGroup, PseudoChannel };
inline constexpr std::size_t kDramScopes = 3;
constexpr std::size_t index(DramScope s) { return static_cast<std::size_t>(s); }

// The time of a command that never issued, and the latency between two
// commands that no rule relates: far enough below 0 that adding any timing
// leaves it below every real time, far enough from the range's end that
// nothing overflows (2^50 ps is about 19 minutes).
inline constexpr Ps kLongAgo = -(1LL << 50);

struct DramRule {
  const char* name;  // the timing that binds, e.g. "tRCD" (tests are named after it)
  DramScope scope;
  DramCmd before, after;
  // 1: `after` waits `latency` past the last `before`; 4: past the fourth
  // last (tFAW).
  int window;
  Ps (*latency)(const DramTiming&);
};

// The rows. Short names for the table only.
namespace dram_rule_names {
using C = DramCmd;
using S = DramScope;
using T = const DramTiming&;

// JEDEC JESD235 (HBM) / JESD79-4 (DDR4) command timing, as DetailedDram
// applies it. A read's data occupies the bus from tCL after the command
// for one burst; a write's from tCWL.
inline constexpr DramRule kDramRules[] = {
    // Same bank.
    {"tRCD", S::Bank, C::ACT, C::RD, 1, [](T t) { return t.RCD; }},
    {"tRCD", S::Bank, C::ACT, C::WR, 1, [](T t) { return t.RCD; }},
    {"tRAS", S::Bank, C::ACT, C::PRE, 1, [](T t) { return t.RAS; }},
    {"tRC", S::Bank, C::ACT, C::ACT, 1, [](T t) { return t.RC; }},
    {"tRTP", S::Bank, C::RD, C::PRE, 1, [](T t) { return t.RTP; }},
    // Write recovery counts from the write's last data.
    {"tWR", S::Bank, C::WR, C::PRE, 1, [](T t) { return t.CWL + t.burst + t.WR; }},
    {"tRP", S::Bank, C::PRE, C::ACT, 1, [](T t) { return t.RP; }},
    {"tRFC", S::Bank, C::REF, C::ACT, 1, [](T t) { return t.RFC; }},
    // Same bank group.
    {"tRRD_L", S::BankGroup, C::ACT, C::ACT, 1, [](T t) { return t.RRD_L; }},
    {"tCCD_L", S::BankGroup, C::RD, C::RD, 1, [](T t) { return t.CCD_L; }},
    {"tCCD_L", S::BankGroup, C::RD, C::WR, 1, [](T t) { return t.CCD_L; }},
    {"tCCD_L", S::BankGroup, C::WR, C::RD, 1, [](T t) { return t.CCD_L; }},
    {"tCCD_L", S::BankGroup, C::WR, C::WR, 1, [](T t) { return t.CCD_L; }},
    // Write to read counts from the write's last data.
    {"tWTR_L", S::BankGroup, C::WR, C::RD, 1, [](T t) { return t.CWL + t.burst + t.WTR_L; }},
    // Same pseudo-channel.
    {"tRRD_S", S::PseudoChannel, C::ACT, C::ACT, 1, [](T t) { return t.RRD_S; }},
    {"tFAW", S::PseudoChannel, C::ACT, C::ACT, 4, [](T t) { return t.FAW; }},
    {"tCCD_S", S::PseudoChannel, C::RD, C::RD, 1, [](T t) { return t.CCD_S; }},
    {"tCCD_S", S::PseudoChannel, C::RD, C::WR, 1, [](T t) { return t.CCD_S; }},
    {"tCCD_S", S::PseudoChannel, C::WR, C::RD, 1, [](T t) { return t.CCD_S; }},
    {"tCCD_S", S::PseudoChannel, C::WR, C::WR, 1, [](T t) { return t.CCD_S; }},
    {"tWTR_S", S::PseudoChannel, C::WR, C::RD, 1, [](T t) { return t.CWL + t.burst + t.WTR_S; }},
    // Read to write: the write's data starts tRTW after the read's ends.
    {"tRTW", S::PseudoChannel, C::RD, C::WR, 1, [](T t) { return t.CL + t.burst + t.RTW - t.CWL; }},
    // One data bus: a burst starts when the previous one has ended (between
    // a read and a write tRTW and tWTR_S, both >= 0, already keep it apart).
    {"data bus", S::PseudoChannel, C::RD, C::RD, 1, [](T t) { return t.burst; }},
    {"data bus", S::PseudoChannel, C::WR, C::WR, 1, [](T t) { return t.burst; }},
    // HBM's separate row and column command buses: one command each per tCK.
    {"row command bus", S::PseudoChannel, C::ACT, C::ACT, 1, [](T t) { return t.tCK; }},
    {"row command bus", S::PseudoChannel, C::ACT, C::PRE, 1, [](T t) { return t.tCK; }},
    {"row command bus", S::PseudoChannel, C::PRE, C::ACT, 1, [](T t) { return t.tCK; }},
    {"row command bus", S::PseudoChannel, C::PRE, C::PRE, 1, [](T t) { return t.tCK; }},
    {"row command bus", S::PseudoChannel, C::REF, C::ACT, 1, [](T t) { return t.tCK; }},
    {"row command bus", S::PseudoChannel, C::REF, C::PRE, 1, [](T t) { return t.tCK; }},
    {"column command bus", S::PseudoChannel, C::RD, C::RD, 1, [](T t) { return t.tCK; }},
    {"column command bus", S::PseudoChannel, C::RD, C::WR, 1, [](T t) { return t.tCK; }},
    {"column command bus", S::PseudoChannel, C::WR, C::RD, 1, [](T t) { return t.tCK; }},
    {"column command bus", S::PseudoChannel, C::WR, C::WR, 1, [](T t) { return t.tCK; }},
};

}  // namespace dram_rule_names
// Every rule, in datasheet order: bank, bank group, pseudo-channel.
using dram_rule_names::kDramRules;

// Whether a rule of window 1 relates `before` to `after` within `scope`
// (DramRules::raise() updates only these entries).
constexpr bool has_rule(DramScope scope, DramCmd before, DramCmd after) {
  for (const DramRule& r : kDramRules)
    if (r.window == 1 && r.scope == scope && r.before == before && r.after == after) return true;
  return false;
}

// Whether any rule within `scope` holds back `after` (else that scope's
// earliest time for it stays 0 and need not be read).
constexpr bool scope_holds(DramScope scope, DramCmd after) {
  for (const DramRule& r : kDramRules)
    if (r.window == 1 && r.scope == scope && r.after == after) return true;
  return false;
}

// Earliest time each scheduled command may issue, as far as one bank, one
// bank group or one PC is concerned (0 before any command).
struct EarliestNext {
  Ps at[kScheduledCmds] = {0, 0, 0, 0};
  Ps operator[](DramCmd c) const { return at[index(c)]; }
  // The later of t and this scope's earliest time for C.
  template <DramScope scope, DramCmd C>
  Ps later(Ps t) const {
    if constexpr (scope_holds(scope, C))
      return std::max(t, at[index(C)]);
    else
      return t;
  }
};

// A PC's last four ACT times, oldest at `acts[next]`.
struct ActWindow {
  static constexpr int kSize = 4;
  Ps acts[kSize] = {kLongAgo, kLongAgo, kLongAgo, kLongAgo};
  int next = 0;
  Ps oldest() const { return acts[next]; }
  void push(Ps t) {
    acts[next] = t;
    next = (next + 1) & (kSize - 1);
  }
};

class DramRules {
 public:
  explicit DramRules(const DramTiming& tm);

  Ps window_latency() const { return window_; }  // tFAW: 5th ACT after the 1st of four

  // `before` issued at t: raises the earliest next times within `scope`,
  // only where a rule applies (known at compile time: the scheduler's
  // hottest path).
  template <DramScope scope, DramCmd before>
  void raise(EarliestNext& e, Ps t) const {
    raise_one<scope, before, DramCmd::RD>(e, t);
    raise_one<scope, before, DramCmd::WR>(e, t);
    raise_one<scope, before, DramCmd::ACT>(e, t);
    raise_one<scope, before, DramCmd::PRE>(e, t);
  }
  // `C` issued at t: raises the earliest next times of its PC, bank group
  // and bank, and records an ACT in the window.
  template <DramCmd C>
  void issue(Ps t, EarliestNext& pc, EarliestNext& group, EarliestNext& bank, ActWindow& acts) const {
    raise<DramScope::Bank, C>(bank, t);
    raise<DramScope::BankGroup, C>(group, t);
    raise<DramScope::PseudoChannel, C>(pc, t);
    if constexpr (C == DramCmd::ACT) acts.push(t);
  }
  void issue(DramCmd c, Ps t, EarliestNext& pc, EarliestNext& group, EarliestNext& bank, ActWindow& acts) const {
    switch (c) {
      case DramCmd::RD: return issue<DramCmd::RD>(t, pc, group, bank, acts);
      case DramCmd::WR: return issue<DramCmd::WR>(t, pc, group, bank, acts);
      case DramCmd::ACT: return issue<DramCmd::ACT>(t, pc, group, bank, acts);
      case DramCmd::PRE: return issue<DramCmd::PRE>(t, pc, group, bank, acts);
      case DramCmd::REF: return issue<DramCmd::REF>(t, pc, group, bank, acts);
    }
  }
  // Earliest time scheduled command `c` may issue to a bank with these states.
  Ps earliest(DramCmd c, const EarliestNext& pc, const EarliestNext& group, const EarliestNext& bank,
              const ActWindow& acts) const {
    Ps t = std::max({pc[c], group[c], bank[c]});
    if (c == DramCmd::ACT) t = std::max(t, acts.oldest() + window_);
    return t;
  }

 private:
  template <DramScope scope, DramCmd before, DramCmd after>
  void raise_one(EarliestNext& e, Ps t) const {
    if constexpr (has_rule(scope, before, after)) {
      Ps& at = e.at[index(after)];
      at = std::max(at, t + lat_[index(scope)][index(before)][index(after)]);
    }
  }

  std::array<std::array<std::array<Ps, kScheduledCmds>, kDramCmds>, kDramScopes> lat_;
  Ps window_ = kLongAgo;
};

}  // namespace tpusim::arch
