// SparseCore tile timing; see sparsecore_timing.h.
#include "arch/sparsecore/sparsecore_timing.h"

#include <algorithm>
#include <cmath>
#include <variant>
#include <vector>

#include "arch/common/errors.h"

namespace tpusim::arch {

namespace {
std::uint64_t per_vector(double ops) { return static_cast<std::uint64_t>(std::ceil(std::max(ops, 1.0))); }
}  // namespace

SparseCoreTimer::SparseCoreTimer(const SparseCoreConfig& cfg) : cfg_(cfg) {
  if (cfg.tiles <= 0 || cfg.lanes <= 0 || cfg.latency <= 0)
    throw ConfigError("sparsecore: tiles, lanes and latency must be positive");
}

std::uint64_t SparseCoreTimer::cycles(std::uint64_t elements, double ops) const {
  if (elements == 0) return 0;
  const std::uint64_t lanes = static_cast<std::uint64_t>(cfg_.lanes), tiles = static_cast<std::uint64_t>(cfg_.tiles);
  const std::uint64_t vectors = (elements + lanes - 1) / lanes;
  return static_cast<std::uint64_t>(cfg_.latency) + (vectors + tiles - 1) / tiles * per_vector(ops);
}

std::uint64_t SparseCoreTimer::reference_cycles(std::uint64_t elements, double ops) const {
  if (elements == 0) return 0;
  std::vector<std::uint64_t> tile_busy(static_cast<std::size_t>(cfg_.tiles), 0);
  std::size_t next = 0;
  for (std::uint64_t e = 0; e < elements; e += static_cast<std::uint64_t>(cfg_.lanes)) {
    tile_busy[next] += per_vector(ops);
    next = (next + 1) % tile_busy.size();
  }
  return static_cast<std::uint64_t>(cfg_.latency) + *std::max_element(tile_busy.begin(), tile_busy.end());
}

Interval SparseCoreTimer::issue(std::uint64_t elements, double ops, std::uint64_t ready) {
  const std::uint64_t start = std::max(ready, busy_until_);
  const std::uint64_t c = cycles(elements, ops);
  busy_until_ = start + c;
  ++streams_;
  elements_ += elements;
  busy_cycles_ += c;
  return {start, start + c};
}

StatList SparseCoreTimer::stats() const {
  return {
      {"streams", static_cast<double>(streams_), "count", "vector streams run on the tiles"},
      {"elements", static_cast<double>(elements_), "count", "elements processed"},
      {"busy_cycles", static_cast<double>(busy_cycles_), "cycles", "cycles the tiles were busy"},
  };
}

Interval SparseCoreUnitTiming::issue(const Instr& in, std::uint64_t ready) {
  const auto* w = std::get_if<VpuWork>(&in.work);
  if (!w) throw InternalError("SparseCoreUnitTiming::issue: instruction carries no VpuWork");
  return timer_.issue(w->elements, w->alu_ops + w->transcendental_ops, ready);
}

}  // namespace tpusim::arch
