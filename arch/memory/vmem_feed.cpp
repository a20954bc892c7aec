// See vmem_feed.h.
#include "arch/memory/vmem_feed.h"

#include <cmath>
#include <string>

#include "arch/common/errors.h"

namespace tpusim::arch {

VmemFeed::VmemFeed(const MemoryConfig& vmem, double clock_hz) {
  if (!(vmem.bandwidth > 0))
    throw ConfigError("vmem.bandwidth: expected a positive value in bytes/s, found " + std::to_string(vmem.bandwidth));
  if (!(clock_hz > 0)) throw ConfigError("chip.clock: expected a positive value, found " + std::to_string(clock_hz));
  bytes_per_cycle_ = vmem.bandwidth / clock_hz;
  granule_ = vmem.granule_bytes == 0 ? 1 : vmem.granule_bytes;
}

std::uint64_t VmemFeed::access_bytes(std::uint64_t bytes) const {
  if (bytes == 0) return 0;
  const std::uint64_t g = (bytes - 1) / granule_ + 1;
  return g > ~std::uint64_t{0} / granule_ ? ~std::uint64_t{0} : g * granule_;
}

std::uint64_t VmemFeed::cycles(std::uint64_t accesses, std::uint64_t bytes_each) const {
  if (!bounded() || accesses == 0 || bytes_each == 0) return 0;
  // The relative slack keeps an exact multiple from costing an extra cycle
  // after a division that is off by one ulp (as MemoryPorts::occupancy).
  const double c = std::ceil(static_cast<double>(accesses) * static_cast<double>(access_bytes(bytes_each)) /
                             bytes_per_cycle_ * (1.0 - 1e-12));
  return c >= 1.8e19 ? ~std::uint64_t{0} : static_cast<std::uint64_t>(c);
}

}  // namespace tpusim::arch
