// LoRA adapters in a serving simulation: which adapter each synthetic
// request uses (uniform or Zipf popularity, seeded), and the adapters one
// replica keeps in HBM (a fixed number of slots, least recently used
// evicted first), loaded from host memory over the chips' host links
// when a request needs one that is missing.
// Models: one load at a time per replica (the host link is serial; every
// chip of the replica loads its own shard of the adapter over its own
// link, in parallel, so a load takes per-chip adapter bytes /
// pcie_bandwidth); an adapter in use by a running sequence or still
// loading is never evicted.
// Leaves out: host-link contention with other traffic, load latency beyond
// bandwidth, adapters paged together with the KV cache (S-LoRA's unified
// paging, Sheng et al., MLSys 2024).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "sim/serve/request_workload.h"

namespace tpusim::sim::serve {

// Popularity of adapters: uniform, or Zipf with exponent s (adapter i,
// from 0, drawn with probability proportional to 1 / (i + 1)^s).
struct AdapterDist {
  enum class Kind { uniform, zipf };
  Kind kind = Kind::uniform;
  double s = 1;
  std::string text = "uniform";
};
// "uniform" or "zipf:S" (S in (0, 10]); UsageError naming `what`.
AdapterDist parse_adapter_dist(const std::string& what, const std::string& text);

// Sets every request's adapter (0 .. count-1) from its own stream of
// `seed`, so arrivals and lengths are those of the same seed without
// adapters.
void assign_adapters(std::vector<Request>& reqs, std::int64_t count, const AdapterDist& dist, std::uint64_t seed);

// The serving options of LoRA: slots per replica and a load's time.
struct LoraServing {
  std::int64_t slots = 0;   // adapters a replica holds in HBM; 0: LoRA off
  double load_seconds = 0;  // one adapter over the host link
  bool on() const { return slots > 0; }
};

// One replica's resident adapters (LRU) and its host link.
class AdapterCache {
 public:
  static constexpr double kNever = std::numeric_limits<double>::infinity();
  AdapterCache() = default;
  AdapterCache(std::int64_t slots, double load_seconds) : slots_(slots), load_(load_seconds) {}

  // The time adapter `a` is usable. Resident (loaded or loading): its
  // load's end. Missing: a load is queued on the host link (starting when
  // the link is free, at `now` at the earliest) into a free slot, or into
  // the slot of the least recently used adapter that is loaded and not
  // `pinned`; kNever when no slot can be had.
  double acquire(std::int64_t a, double now, const std::function<bool(std::int64_t)>& pinned);
  // Marks `a` the most recently used; it must be resident.
  void touch(std::int64_t a);
  bool resident(std::int64_t a) const { return slots_map_.count(a) != 0; }
  std::size_t size() const { return slots_map_.size(); }

  std::int64_t loads() const { return loads_; }
  std::int64_t evictions() const { return evictions_; }
  double link_busy() const { return static_cast<double>(loads_) * load_; }

 private:
  struct Entry {
    double ready = 0;            // end of its load
    std::uint64_t last_use = 0;  // LRU order
  };
  std::int64_t slots_ = 0;
  double load_ = 0;
  double link_free_ = 0;
  std::uint64_t clock_ = 0;
  std::map<std::int64_t, Entry> slots_map_;
  std::int64_t loads_ = 0, evictions_ = 0;
};

}  // namespace tpusim::sim::serve
