// See dram_rules.h.
#include "arch/hbm/dram_rules.h"

#include <string>

#include "arch/common/errors.h"

namespace tpusim::arch {

namespace {

using C = DramCmd;
using S = DramScope;
using T = const DramTiming&;

// JEDEC JESD235 (HBM) / JESD79-4 (DDR4) command timing, as DetailedDram
// applies it. A read's data occupies the bus from tCL after the command
// for one burst; a write's from tCWL.
const DramRule kRules[] = {
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

}  // namespace

const DramRule* dram_rules_begin() { return std::begin(kRules); }
const DramRule* dram_rules_end() { return std::end(kRules); }

const char* to_string(DramCmd c) {
  switch (c) {
    case DramCmd::RD: return "RD";
    case DramCmd::WR: return "WR";
    case DramCmd::ACT: return "ACT";
    case DramCmd::PRE: return "PRE";
    case DramCmd::REF: return "REF";
  }
  return "?";
}

DramRules::DramRules(const DramTiming& tm) {
  for (auto& by_before : lat_)
    for (auto& by_after : by_before) by_after.fill(kLongAgo);
  for (const DramRule* r = dram_rules_begin(); r != dram_rules_end(); ++r) {
    if (r->after == DramCmd::REF)
      throw InternalError(std::string("DRAM rule ") + r->name + ": REF is placed by refresh, not scheduled");
    const Ps lat = r->latency(tm);
    if (r->window == ActWindow::kSize && r->before == DramCmd::ACT && r->after == DramCmd::ACT &&
        r->scope == DramScope::PseudoChannel) {
      window_ = std::max(window_, lat);
    } else if (r->window == 1) {
      Ps& v = lat_[index(r->scope)][index(r->before)][index(r->after)];
      v = std::max(v, lat);
    } else {
      throw InternalError(std::string("DRAM rule ") + r->name + ": only tFAW's four-ACT window is modelled");
    }
  }
}

}  // namespace tpusim::arch
