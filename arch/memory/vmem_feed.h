// The bound VMEM's bandwidth and access granule put on one unit's
// operation (VPU stream, MXU block, DMA copy): an operation that moves
// `accesses` accesses of `bytes` bytes each through VMEM cannot take
// fewer than
//   ceil(accesses x round_up(bytes, granule) / (vmem.bandwidth / clock))
// cycles, all ports together (a granule larger than an access moves the
// whole granule: VMEM is accessed in 4 KiB transactions, Pallas TPU docs).
// The units apply it as a floor on their own occupancy; on the shipped
// configs (4 ports x 4 KiB per cycle = the VPU's 3 load + 1 store slots)
// it never binds the VPU, whose slots it matches, nor the MXUs and DMA,
// whose traffic is far below it.
// Leaves out: contention between units for VMEM bandwidth (each
// operation is bounded on its own; their sum may exceed the bandwidth),
// banks and bank conflicts.
#pragma once

#include <cstdint>

#include "arch/common/chip_config.h"

namespace tpusim::arch {

class VmemFeed {
 public:
  VmemFeed() = default;  // unbounded
  // ConfigError when the bandwidth or clock is not positive.
  VmemFeed(const MemoryConfig& vmem, double clock_hz);
  // Floor in cycles; 0 for an unbounded feed or no accesses. Saturates.
  std::uint64_t cycles(std::uint64_t accesses, std::uint64_t bytes_each) const;
  // Bytes one access of `bytes` moves (rounded up to the granule).
  std::uint64_t access_bytes(std::uint64_t bytes) const;
  double bytes_per_cycle() const { return bytes_per_cycle_; }
  bool bounded() const { return bytes_per_cycle_ > 0; }

 private:
  double bytes_per_cycle_ = 0;
  std::uint64_t granule_ = 1;
};

}  // namespace tpusim::arch
