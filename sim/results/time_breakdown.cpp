// Interval unions per class of unit and their differences; see
// time_breakdown.h.
#include "sim/results/time_breakdown.h"

#include <algorithm>
#include <utility>
#include <variant>

namespace tpusim::sim {

namespace {

using Intervals = std::vector<std::pair<std::uint64_t, std::uint64_t>>;  // [start, finish)

// Sorted, disjoint, non-empty intervals covering the same cycles (v holds
// no empty interval). Sorted by start only: the union does not depend on
// the order of intervals that start together.
Intervals merged(Intervals v) {
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Intervals out;
  for (const auto& iv : v) {
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

std::uint64_t length(const Intervals& v) {
  std::uint64_t n = 0;
  for (const auto& iv : v) n += iv.second - iv.first;
  return n;
}

// a minus b, both merged.
Intervals minus(const Intervals& a, const Intervals& b) {
  Intervals out;
  std::size_t j = 0;
  for (auto [s, e] : a) {
    while (j < b.size() && b[j].second <= s) ++j;
    std::size_t k = j;
    while (s < e && k < b.size() && b[k].first < e) {
      if (b[k].first > s) out.emplace_back(s, b[k].first);
      s = std::max(s, b[k].second);
      ++k;
    }
    if (s < e) out.emplace_back(s, e);
  }
  return out;
}

}  // namespace

TimeBreakdown time_breakdown(const arch::Program& prog, const std::vector<arch::InstrRecord>& records) {
  Intervals compute, ici, hbm;
  const std::size_t n = std::min(prog.instrs.size(), records.size());
  // Which class an instruction's interval joins (nullptr: none, or empty).
  auto class_of = [&](std::size_t i) -> Intervals* {
    if (records[i].finish <= records[i].start) return nullptr;
    const arch::Instr& in = prog.instrs[i];
    switch (in.unit) {
      case arch::UnitKind::mxu:
      case arch::UnitKind::vpu:
      case arch::UnitKind::xlu: return &compute;
      case arch::UnitKind::ici: return &ici;
      case arch::UnitKind::dma:
        if (const auto* d = std::get_if<arch::DmaWork>(&in.work))
          if (d->src == arch::MemSpace::hbm || d->dst == arch::MemSpace::hbm) return &hbm;
        break;
    }
    return nullptr;
  };
  // Sized first: a training step has millions of instructions.
  std::size_t n_compute = 0, n_ici = 0, n_hbm = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Intervals* c = class_of(i);
    n_compute += c == &compute;
    n_ici += c == &ici;
    n_hbm += c == &hbm;
  }
  compute.reserve(n_compute);
  ici.reserve(n_ici);
  hbm.reserve(n_hbm);
  for (std::size_t i = 0; i < n; ++i)
    if (Intervals* c = class_of(i)) c->emplace_back(records[i].start, records[i].finish);
  compute = merged(std::move(compute));
  ici = merged(std::move(ici));
  hbm = merged(std::move(hbm));
  TimeBreakdown t;
  t.compute_cycles = length(compute);
  t.ici_cycles = length(ici);
  const Intervals ici_exposed = minus(ici, compute);
  t.ici_exposed_cycles = length(ici_exposed);
  t.hbm_exposed_cycles = length(minus(minus(hbm, compute), ici));
  return t;
}

}  // namespace tpusim::sim
