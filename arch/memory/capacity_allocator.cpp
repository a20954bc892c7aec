// Capacity accounting of an on-chip memory; see capacity_allocator.h.
#include "arch/memory/capacity_allocator.h"

#include <algorithm>
#include <cstdio>

namespace tpusim::arch {

std::string format_bytes(std::uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

CapacityAllocator::CapacityAllocator(std::string memory_name, std::uint64_t capacity_bytes, std::uint64_t granule_bytes)
    : memory_(std::move(memory_name)), capacity_(capacity_bytes), granule_(granule_bytes == 0 ? 1 : granule_bytes) {
  if (capacity_ == 0) throw ConfigError(memory_ + ".size_bytes: expected a positive capacity, found 0");
}

namespace {
const MemoryConfig& require_present(const std::string& name, const MemoryConfig& cfg) {
  if (!cfg.present) throw ConfigError(name + " is not present on this chip; nothing can be placed in it");
  return cfg;
}
}  // namespace

CapacityAllocator::CapacityAllocator(std::string memory_name, const MemoryConfig& cfg)
    : CapacityAllocator(memory_name, require_present(memory_name, cfg).size_bytes, cfg.granule_bytes) {}

std::uint64_t CapacityAllocator::rounded(std::uint64_t bytes) const {
  return (bytes + granule_ - 1) / granule_ * granule_;
}

CapacityAllocator::BufferId CapacityAllocator::allocate(std::string_view name, std::uint64_t bytes) {
  const std::uint64_t need = rounded(bytes);
  if (need > capacity_ - used_) throw_full(name, bytes, need);
  BufferId id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<BufferId>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[id];
  s.name.assign(name.data(), name.size());
  s.bytes = need;
  s.live = true;
  used_ += need;
  peak_ = std::max(peak_, used_);
  ++allocations_;
  ++live_;
  return id;
}

void CapacityAllocator::free(BufferId id) {
  const Slot& s = live_slot(id, "free");
  used_ -= s.bytes;
  slots_[id].live = false;
  free_ids_.push_back(id);
  ++frees_;
  --live_;
}

const CapacityAllocator::Slot& CapacityAllocator::live_slot(BufferId id, const char* who) const {
  if (id >= slots_.size() || !slots_[id].live)
    throw InternalError("CapacityAllocator(" + memory_ + ")::" + who + ": buffer id " + std::to_string(id) +
                        " is not live (never allocated or already freed)");
  return slots_[id];
}

const std::string& CapacityAllocator::buffer_name(BufferId id) const { return live_slot(id, "buffer_name").name; }

std::uint64_t CapacityAllocator::buffer_bytes(BufferId id) const { return live_slot(id, "buffer_bytes").bytes; }

void CapacityAllocator::throw_full(std::string_view name, std::uint64_t bytes, std::uint64_t need) const {
  std::string msg = memory_ + " capacity exceeded: buffer '" + std::string(name) + "' needs " + std::to_string(bytes) +
                    " bytes (" + format_bytes(bytes) + ")";
  if (need != bytes)
    msg += ", " + std::to_string(need) + " after rounding to " + std::to_string(granule_) + "-byte granules";
  msg += "; " + memory_ + " capacity is " + std::to_string(capacity_) + " bytes (" + format_bytes(capacity_) + "), " +
         std::to_string(used_) + " bytes (" + format_bytes(used_) + ") in use by " + std::to_string(live_) +
         " live buffer" + (live_ == 1 ? "" : "s") + ", " + std::to_string(capacity_ - used_) + " bytes free";
  // The largest live buffers say where the space went; only on this error path.
  std::vector<const Slot*> live;
  for (const Slot& s : slots_)
    if (s.live) live.push_back(&s);
  const std::size_t shown = std::min<std::size_t>(3, live.size());
  std::partial_sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(shown), live.end(),
                    [](const Slot* a, const Slot* b) { return a->bytes > b->bytes; });
  if (shown > 0) {
    msg += "; largest live:";
    for (std::size_t i = 0; i < shown; ++i)
      msg += std::string(i ? "," : "") + " '" + live[i]->name + "' " + format_bytes(live[i]->bytes);
  }
  throw CapacityError(msg, memory_, std::string(name), need, capacity_, used_);
}

StatList CapacityAllocator::stats() const {
  auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  return {
      {"capacity", d(capacity_), "bytes", "capacity of " + memory_},
      {"used", d(used_), "bytes", "bytes held by live buffers now"},
      {"peak_used", d(peak_), "bytes", "largest bytes held by live buffers at any time"},
      {"allocations", d(allocations_), "count", "buffers allocated"},
      {"frees", d(frees_), "count", "buffers freed"},
  };
}

}  // namespace tpusim::arch
