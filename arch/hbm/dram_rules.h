// DRAM timing rules as data. Each JEDEC constraint between two commands is
// one row of dram_rules(): scope (same bank, same bank group, same
// pseudo-channel), preceding command, following command and the latency in
// named timings, so the table can be checked against the datasheet line by
// line (the form of Ramulator 2's HBM timing tables; DRAMSys keeps the same
// "earliest next command" state per bank, bank group and channel).
// DramRules compiles the rows of one DramTiming into dense latency tables
// [scope][preceding][following]; a command issuing at t raises the
// EarliestNext entries of its bank, its bank group and its pseudo-channel
// (PC) to t + latency. The four-activate window (tFAW) is the one rule over
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

// Every rule, in datasheet order: bank, bank group, pseudo-channel.
const DramRule* dram_rules_begin();
const DramRule* dram_rules_end();

// Earliest time each scheduled command may issue, as far as one bank, one
// bank group or one PC is concerned (0 before any command).
struct EarliestNext {
  Ps at[kScheduledCmds] = {0, 0, 0, 0};
  Ps operator[](DramCmd c) const { return at[index(c)]; }
  // A command that issued at t, with latencies `lat` to each scheduled command.
  void after(const Ps* lat, Ps t) {
    for (std::size_t i = 0; i < kScheduledCmds; ++i) at[i] = std::max(at[i], t + lat[i]);
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

  // Latency from `before` to each scheduled command within `scope`
  // (kLongAgo where no rule applies), the largest of the rules' rows.
  const Ps* after(DramScope scope, DramCmd before) const { return lat_[index(scope)][index(before)].data(); }
  Ps window_latency() const { return window_; }  // tFAW: 5th ACT after the 1st of four

  // `c` issued at t: raises the earliest next times of its PC, bank group
  // and bank, and records an ACT in the window.
  void issue(DramCmd c, Ps t, EarliestNext& pc, EarliestNext& group, EarliestNext& bank, ActWindow& acts) const {
    bank.after(after(DramScope::Bank, c), t);
    group.after(after(DramScope::BankGroup, c), t);
    pc.after(after(DramScope::PseudoChannel, c), t);
    if (c == DramCmd::ACT) acts.push(t);
  }
  // Earliest time scheduled command `c` may issue to a bank with these states.
  Ps earliest(DramCmd c, const EarliestNext& pc, const EarliestNext& group, const EarliestNext& bank,
              const ActWindow& acts) const {
    Ps t = std::max({pc[c], group[c], bank[c]});
    if (c == DramCmd::ACT) t = std::max(t, acts.oldest() + window_);
    return t;
  }

 private:
  std::array<std::array<std::array<Ps, kScheduledCmds>, kDramCmds>, kDramScopes> lat_;
  Ps window_ = kLongAgo;
};

}  // namespace tpusim::arch
