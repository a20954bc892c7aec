// Bandwidth and port timing of an on-chip memory; see port_timing.h.
#include "arch/memory/port_timing.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "arch/common/errors.h"

namespace tpusim::arch {

MemoryPorts::MemoryPorts(std::string memory_name, const MemoryConfig& cfg, double clock_hz)
    : memory_(std::move(memory_name)) {
  if (!cfg.present) throw ConfigError(memory_ + " is not present on this chip; it has no ports to time");
  if (cfg.ports <= 0)
    throw ConfigError(memory_ + ".ports: expected a positive value, found " + std::to_string(cfg.ports));
  if (!(cfg.bandwidth > 0))
    throw ConfigError(memory_ + ".bandwidth: expected a positive value in bytes/s, found " +
                      std::to_string(cfg.bandwidth));
  if (!(clock_hz > 0))
    throw ConfigError(memory_ + ": the clock must be positive to convert bandwidth to bytes per cycle, found " +
                      std::to_string(clock_hz) + " Hz");
  if (cfg.latency < 0)
    throw ConfigError(memory_ + ".latency: expected a value >= 0, found " + std::to_string(cfg.latency));
  bytes_per_cycle_ = cfg.bandwidth / clock_hz / cfg.ports;
  granule_ = cfg.granule_bytes == 0 ? 1 : cfg.granule_bytes;
  latency_ = static_cast<std::uint64_t>(cfg.latency);
  busy_until_.assign(static_cast<std::size_t>(cfg.ports), 0);
}

std::uint64_t MemoryPorts::occupancy(std::uint64_t bytes) const {
  if (bytes == 0) return 0;
  const std::uint64_t b = (bytes + granule_ - 1) / granule_ * granule_;
  // The relative slack keeps an exact multiple (e.g. 4096 B at 4096 B/cycle
  // after a division that is off by one ulp) from costing an extra cycle.
  return static_cast<std::uint64_t>(std::ceil(static_cast<double>(b) / bytes_per_cycle_ * (1.0 - 1e-12)));
}

std::uint64_t MemoryPorts::busy_until(int port) const {
  if (port < 0 || port >= ports())
    throw InternalError("MemoryPorts(" + memory_ + ")::busy_until: port " + std::to_string(port) +
                        " out of range [0, " + std::to_string(ports()) + ")");
  return busy_until_[static_cast<std::size_t>(port)];
}

PortAccess MemoryPorts::access(std::uint64_t bytes, std::uint64_t ready, AccessKind kind, int port) {
  if (port < -1 || port >= ports())
    throw InternalError("MemoryPorts(" + memory_ + ")::access: port " + std::to_string(port) + " out of range [-1, " +
                        std::to_string(ports()) + ")");
  if (port < 0) {
    port = 0;
    for (int p = 1; p < ports(); ++p)
      if (busy_until_[static_cast<std::size_t>(p)] < busy_until_[static_cast<std::size_t>(port)]) port = p;
  }
  auto& busy = busy_until_[static_cast<std::size_t>(port)];
  PortAccess a;
  a.port = port;
  a.start = std::max(ready, busy);
  if (bytes == 0) {
    a.finish = a.start;
    return a;
  }
  a.occupancy = occupancy(bytes);
  busy = a.start + a.occupancy;
  a.finish = busy + latency_;
  busy_cycles_ += a.occupancy;
  if (kind == AccessKind::read) {
    bytes_read_ += bytes;
    ++reads_;
  } else {
    bytes_written_ += bytes;
    ++writes_;
  }
  return a;
}

void MemoryPorts::reset() {
  std::fill(busy_until_.begin(), busy_until_.end(), 0);
  bytes_read_ = bytes_written_ = reads_ = writes_ = busy_cycles_ = 0;
}

StatList MemoryPorts::stats() const {
  auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  return {
      {"bytes_read", d(bytes_read_), "bytes", "bytes read from " + memory_ + " through its ports"},
      {"bytes_written", d(bytes_written_), "bytes", "bytes written to " + memory_ + " through its ports"},
      {"reads", d(reads_), "count", "read accesses"},
      {"writes", d(writes_), "count", "write accesses"},
      {"busy_cycles", d(busy_cycles_), "cycles", "port-cycles occupied, summed over ports"},
  };
}

}  // namespace tpusim::arch
