// Tick-by-tick twin of HostLinkTiming, for tests: every picosecond each
// transfer on the link is served its equal share of the link's bytes, in
// whole shares (1 byte = HostLinkTiming::kScale * 1e12 shares); a transfer
// joins at the start of its arrival picosecond and finishes at the end of
// the picosecond in which its last share is served. Slow (one loop turn
// per picosecond), exact, and written without HostLinkTiming's virtual
// time, so that agreement between the two means something.
#pragma once

#include <cstdint>
#include <vector>

#include "arch/dma/host_link.h"

namespace tpusim::arch {

struct HostLinkRequest {
  Ps arrival = 0;
  std::uint64_t bytes = 0;
};

// Completion time of each request, in request order. `bandwidth`: bytes/s.
std::vector<Ps> host_link_reference(double bandwidth, const std::vector<HostLinkRequest>& requests);

}  // namespace tpusim::arch
