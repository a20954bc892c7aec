// Adapter popularity and the per-replica adapter cache (see adapters.h).
#include "sim/serve/adapters.h"

#include <cmath>
#include <stdexcept>

#include "sim/cli/cli.h"

namespace tpusim::sim::serve {

AdapterDist parse_adapter_dist(const std::string& what, const std::string& text) {
  AdapterDist d;
  d.text = text;
  if (text == "uniform") return d;
  if (text.rfind("zipf:", 0) == 0) {
    const std::string v = text.substr(5);
    double s = -1;
    try {
      std::size_t used = 0;
      s = std::stod(v, &used);
      if (used != v.size()) s = -1;
    } catch (const std::exception&) {
      s = -1;
    }
    if (s > 0 && s <= 10) {
      d.kind = AdapterDist::Kind::zipf;
      d.s = s;
      return d;
    }
  }
  throw UsageError(what + " '" + text + "': expected uniform or zipf:S with S in (0, 10]");
}

void assign_adapters(std::vector<Request>& reqs, std::int64_t count, const AdapterDist& dist, std::uint64_t seed) {
  if (count < 1) throw std::logic_error("assign_adapters: count < 1");
  std::vector<double> cum;
  double total = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    total += dist.kind == AdapterDist::Kind::uniform ? 1.0 : 1.0 / std::pow(static_cast<double>(i + 1), dist.s);
    cum.push_back(total);
  }
  // Streams 2s+1 and 2s+2 are the arrivals' and lengths' (synthesize).
  Rng rng(seed * 2 + 0x5eed0adaULL);
  for (auto& r : reqs) {
    const double u = rng.uniform() * total;
    std::int64_t a = 0;
    while (a + 1 < count && cum[static_cast<std::size_t>(a)] <= u) ++a;
    r.adapter = a;
  }
}

double AdapterCache::acquire(std::int64_t a, double now, const std::function<bool(std::int64_t)>& pinned) {
  auto it = slots_map_.find(a);
  if (it != slots_map_.end()) return it->second.ready;
  if (static_cast<std::int64_t>(slots_map_.size()) >= slots_) {
    auto victim = slots_map_.end();
    for (auto e = slots_map_.begin(); e != slots_map_.end(); ++e) {
      if (e->second.ready > now || pinned(e->first)) continue;
      if (victim == slots_map_.end() || e->second.last_use < victim->second.last_use) victim = e;
    }
    if (victim == slots_map_.end()) return kNever;
    slots_map_.erase(victim);
    ++evictions_;
  }
  const double start = std::max(now, link_free_);
  link_free_ = start + load_;
  slots_map_[a] = Entry{link_free_, ++clock_};
  ++loads_;
  return link_free_;
}

void AdapterCache::touch(std::int64_t a) {
  auto it = slots_map_.find(a);
  if (it == slots_map_.end()) throw std::logic_error("AdapterCache::touch: adapter not resident");
  it->second.last_use = ++clock_;
}

}  // namespace tpusim::sim::serve
