// Capacity accounting of one on-chip memory (VMEM or SMEM of a TensorCore,
// CMEM of a chip) for the lowering that places buffers in it.
// Models: live bytes, each buffer rounded up to the memory's granule (VMEM:
// 4 KiB transactions / one (8,128) tile), peak usage, and a clear error when
// a buffer does not fit. O(1) per allocate/free.
// Leaves out: addresses and fragmentation (capacity only: any set of
// buffers whose rounded sizes sum to at most the capacity fits), banks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arch/common/chip_config.h"
#include "arch/common/errors.h"
#include "arch/common/stats.h"

namespace tpusim::arch {

// A buffer that does not fit: the user's workload or tiling is too large
// for the configured memory. what() names the buffer, its size, the memory,
// its capacity, the bytes in use and the largest live buffers.
class CapacityError : public ConfigError {
 public:
  CapacityError(const std::string& message, std::string memory, std::string buffer, std::uint64_t requested,
                std::uint64_t capacity, std::uint64_t used)
      : ConfigError(message),
        memory(std::move(memory)),
        buffer(std::move(buffer)),
        requested(requested),
        capacity(capacity),
        used(used) {}
  std::string memory;
  std::string buffer;
  std::uint64_t requested;  // bytes after rounding to the granule
  std::uint64_t capacity;
  std::uint64_t used;
};

class CapacityAllocator {
 public:
  using BufferId = std::uint32_t;

  // granule_bytes 0 or 1 = byte granular. Throws ConfigError if capacity is 0.
  CapacityAllocator(std::string memory_name, std::uint64_t capacity_bytes, std::uint64_t granule_bytes = 0);
  // From a memory's config (size_bytes, granule_bytes); ConfigError if the
  // memory is not present.
  CapacityAllocator(std::string memory_name, const MemoryConfig& cfg);

  // Reserves `bytes` (rounded up to the granule) for buffer `name`; throws
  // CapacityError when it does not fit. Names need not be unique.
  BufferId allocate(std::string_view name, std::uint64_t bytes);
  // InternalError for an id that is not live.
  void free(BufferId id);

  bool fits(std::uint64_t bytes) const { return rounded(bytes) <= capacity_ - used_; }
  std::uint64_t rounded(std::uint64_t bytes) const;
  std::uint64_t used() const { return used_; }
  std::uint64_t peak() const { return peak_; }
  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t available() const { return capacity_ - used_; }
  std::size_t live_buffers() const { return live_; }
  const std::string& memory_name() const { return memory_; }
  const std::string& buffer_name(BufferId id) const;
  std::uint64_t buffer_bytes(BufferId id) const;  // rounded size

  // capacity, used, peak_used, allocations, frees.
  StatList stats() const;

 private:
  struct Slot {
    std::string name;
    std::uint64_t bytes = 0;
    bool live = false;
  };
  const Slot& live_slot(BufferId id, const char* who) const;
  [[noreturn]] void throw_full(std::string_view name, std::uint64_t bytes, std::uint64_t need) const;

  std::string memory_;
  std::uint64_t capacity_;
  std::uint64_t granule_;
  std::uint64_t used_ = 0;
  std::uint64_t peak_ = 0;
  std::uint64_t allocations_ = 0;
  std::uint64_t frees_ = 0;
  std::size_t live_ = 0;
  std::vector<Slot> slots_;
  std::vector<BufferId> free_ids_;
};

// "12.0 MiB", "512 B", for messages.
std::string format_bytes(std::uint64_t bytes);

}  // namespace tpusim::arch
