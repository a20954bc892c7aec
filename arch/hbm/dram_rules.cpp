// See dram_rules.h.
#include "arch/hbm/dram_rules.h"

namespace tpusim::arch {

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

namespace {
// REF is placed by refresh, never scheduled after another command; the
// only rule over more than two commands modelled is tFAW's four-ACT window.
constexpr bool well_formed(const DramRule& r) {
  return r.after != DramCmd::REF &&
         (r.window == 1 || (r.window == ActWindow::kSize && r.scope == DramScope::PseudoChannel &&
                            r.before == DramCmd::ACT && r.after == DramCmd::ACT));
}
constexpr bool all_well_formed() {
  for (const DramRule& r : kDramRules)
    if (!well_formed(r)) return false;
  return true;
}
static_assert(all_well_formed(), "kDramRules: a row this model cannot apply");
}  // namespace

DramRules::DramRules(const DramTiming& tm) {
  for (auto& by_before : lat_)
    for (auto& by_after : by_before) by_after.fill(kLongAgo);
  for (const DramRule& r : kDramRules) {
    const Ps lat = r.latency(tm);
    Ps& v = r.window == 1 ? lat_[index(r.scope)][index(r.before)][index(r.after)] : window_;
    v = std::max(v, lat);
  }
}

}  // namespace tpusim::arch
