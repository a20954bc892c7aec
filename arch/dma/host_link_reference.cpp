// See host_link_reference.h.
#include "arch/dma/host_link_reference.h"

#include <cmath>

#include "arch/dma/host_link.h"

namespace tpusim::arch {

std::vector<Ps> host_link_reference(double bandwidth, const std::vector<HostLinkRequest>& requests) {
  __extension__ typedef unsigned __int128 Work;
  const Work per_byte = static_cast<Work>(HostLinkTiming::kScale) * 1000000000000ULL;
  const Work all = static_cast<Work>(std::llround(bandwidth)) * HostLinkTiming::kScale;  // shares per ps
  std::vector<Work> left(requests.size());
  std::vector<Ps> done(requests.size(), HostLinkTiming::kNever);
  std::vector<bool> on(requests.size(), false);
  for (std::size_t i = 0; i < requests.size(); ++i) left[i] = static_cast<Work>(requests[i].bytes) * per_byte;
  std::size_t finished = 0;
  for (Ps t = 0; finished < requests.size(); ++t) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (done[i] == HostLinkTiming::kNever && requests[i].arrival <= t) on[i] = true;
      if (on[i]) ++n;
    }
    if (n == 0) continue;
    Work share = all / n;
    if (share == 0) share = 1;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (!on[i]) continue;
      left[i] = left[i] > share ? left[i] - share : 0;
      if (left[i] == 0) {  // served its last share in picosecond t
        on[i] = false;
        done[i] = t + 1;
        ++finished;
      }
    }
  }
  return done;
}

}  // namespace tpusim::arch
