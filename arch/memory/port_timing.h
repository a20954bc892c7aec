// Bandwidth and port timing of one on-chip memory (VMEM, SMEM, CMEM) as its
// clients other than the VPU see it (DMA engines, MXU operand feed).
// Models: `ports` independent ports, each moving
//   bytes_per_cycle_per_port = bandwidth / clock_hz / ports
// bytes per cycle of the given clock (the TensorCore clock for VMEM/SMEM,
// taken as a constructor argument because MemoryConfig holds no clock); an
// access of B bytes (rounded up to the memory's granule) occupies one port
// for ceil(B / bytes_per_cycle_per_port) cycles from
// start = max(ready, port busy-until), and completes `latency` cycles after
// its last byte. Busy-until state per port, O(ports) per access.
// Leaves out: banks and bank conflicts, read/write turnaround, priorities
// between clients, the VPU's own vreg load/store slots (modelled in
// arch/vpu/vpu_timing.h, not double-charged here).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/common/chip_config.h"
#include "arch/common/stats.h"

namespace tpusim::arch {

enum class AccessKind : std::uint8_t { read, write };

struct PortAccess {
  std::uint64_t start = 0;      // cycle the port starts moving bytes
  std::uint64_t finish = 0;     // cycle the access completes (after latency)
  std::uint64_t occupancy = 0;  // cycles the port was busy
  int port = 0;
};

class MemoryPorts {
 public:
  // ConfigError when the memory is absent, or bandwidth, ports or clock_hz
  // are not positive, or latency is negative.
  MemoryPorts(std::string memory_name, const MemoryConfig& cfg, double clock_hz);

  // port = -1 takes the port that frees first (lowest index on a tie); a
  // port >= 0 must be < ports() (InternalError otherwise). A 0-byte access
  // occupies nothing and finishes at its start.
  PortAccess access(std::uint64_t bytes, std::uint64_t ready, AccessKind kind, int port = -1);

  // Cycles one port is busy for `bytes` (after granule rounding); O(1).
  std::uint64_t occupancy(std::uint64_t bytes) const;
  double bytes_per_cycle_per_port() const { return bytes_per_cycle_; }
  std::uint64_t busy_until(int port) const;
  int ports() const { return static_cast<int>(busy_until_.size()); }
  const std::string& memory_name() const { return memory_; }
  void reset();

  // bytes_read, bytes_written, reads, writes, busy_cycles (summed over ports).
  StatList stats() const;

 private:
  std::string memory_;
  double bytes_per_cycle_ = 0;
  std::uint64_t granule_ = 1;
  std::uint64_t latency_ = 0;
  std::vector<std::uint64_t> busy_until_;
  std::uint64_t bytes_read_ = 0;
  std::uint64_t bytes_written_ = 0;
  std::uint64_t reads_ = 0;
  std::uint64_t writes_ = 0;
  std::uint64_t busy_cycles_ = 0;
};

}  // namespace tpusim::arch
