// The chip's host link (PCIe): one pipe of `bandwidth` bytes/s per chip
// between HBM and host memory, shared equally by the transfers on it at
// each instant (processor sharing: n transfers each get bandwidth / n, as
// DMA requests of concurrent streams interleave on the link). Event-driven
// and exact in integers: work is counted in "shares" (1 byte = kScale *
// 1e12 shares, so that each transfer's share of one picosecond is a whole
// number for up to kExactUpTo concurrent transfers), time in picoseconds,
// and a transfer that ends inside a picosecond holds its share to the end
// of that picosecond (arch/dma/host_link_reference.h, the tick-by-tick
// twin, does the same and the tests prove the two equal).
// Leaves out: PCIe protocol overhead and latency (the configs' bandwidth is
// the usable figure), a direction-dependent bandwidth (full duplex links
// carry each direction at the full rate: here both share one pipe, which
// is exact for the offload traffic of a training step, whose writes and
// reads rarely overlap), the host memory's own bandwidth.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include <limits>

namespace tpusim::arch {

using Ps = std::int64_t;  // picoseconds (as arch/hbm/hbm_model.h)

class HostLinkTiming {
 public:
  static constexpr std::uint64_t kScale = 720720;  // lcm(1..16)
  static constexpr int kExactUpTo = 16;
  static constexpr Ps kNever = std::numeric_limits<Ps>::max();

  // `bandwidth`: bytes/s, a whole number (rounded), > 0.
  explicit HostLinkTiming(double bandwidth);

  // A transfer of `bytes` joins the link at `t` (not before the last
  // event). Returns its id.
  std::uint64_t add(Ps t, std::uint64_t bytes);
  // When the next transfer finishes (kNever if the link is idle).
  Ps next_completion() const;
  // Moves time to `t` (not past next_completion()) and returns the ids of
  // the transfers finished by then, in id order.
  std::vector<std::uint64_t> advance(Ps t);

  std::size_t active() const { return finish_.size(); }
  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t transfers() const { return next_id_; }
  Ps busy_ps() const { return busy_ps_; }

 private:
  __extension__ typedef unsigned __int128 Work;
  Work rate() const;  // shares per ps of each active transfer

  std::uint64_t bandwidth_;
  Ps now_ = 0;
  Work served_ = 0;                               // shares served to every active transfer so far (virtual time)
  std::multimap<Work, std::uint64_t> finish_;     // virtual finish -> id
  std::uint64_t next_id_ = 0, bytes_ = 0;
  Ps busy_ps_ = 0;
};

}  // namespace tpusim::arch
