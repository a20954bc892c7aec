// See host_link.h.
#include "arch/dma/host_link.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "arch/common/errors.h"

namespace tpusim::arch {

namespace {
__extension__ typedef unsigned __int128 Work128;
constexpr Work128 kSharesPerByte = static_cast<Work128>(HostLinkTiming::kScale) * 1000000000000ULL;
}

HostLinkTiming::HostLinkTiming(double bandwidth) : bandwidth_(static_cast<std::uint64_t>(std::llround(bandwidth))) {
  if (!(bandwidth >= 1)) throw ConfigError("host link: pcie_bandwidth must be positive to move data to or from host");
}

// bandwidth bytes/s = bandwidth * kScale shares per ps in all, split over
// the active transfers (exact up to kExactUpTo of them, floored beyond).
HostLinkTiming::Work HostLinkTiming::rate() const {
  const Work all = static_cast<Work>(bandwidth_) * kScale;
  const Work r = all / static_cast<Work>(finish_.size());
  return r > 0 ? r : 1;
}

std::uint64_t HostLinkTiming::add(Ps t, std::uint64_t bytes) {
  if (t < now_) throw InternalError("HostLinkTiming::add: time went backwards");
  advance(t);  // nothing can finish past next_completion: callers advance first
  const std::uint64_t id = next_id_++;
  bytes_ += bytes;
  finish_.emplace(served_ + static_cast<Work>(bytes) * kSharesPerByte, id);
  return id;
}

Ps HostLinkTiming::next_completion() const {
  if (finish_.empty()) return kNever;
  const Work left = finish_.begin()->first - served_;
  const Work r = rate();
  return now_ + static_cast<Ps>((left + r - 1) / r);
}

std::vector<std::uint64_t> HostLinkTiming::advance(Ps t) {
  std::vector<std::uint64_t> done;
  if (t < now_) throw InternalError("HostLinkTiming::advance: time went backwards");
  if (!finish_.empty()) {
    if (t > next_completion()) throw InternalError("HostLinkTiming::advance: past the next completion");
    served_ += rate() * static_cast<Work>(t - now_);
    busy_ps_ += t - now_;
    while (!finish_.empty() && finish_.begin()->first <= served_) {
      done.push_back(finish_.begin()->second);
      finish_.erase(finish_.begin());
    }
  }
  now_ = t;
  std::sort(done.begin(), done.end());
  return done;
}

}  // namespace tpusim::arch
