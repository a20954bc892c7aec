// What the sequencer needs from the inter-chip network: start a collective
// now and be called back when it completes (for the whole slice, or for
// this chip when every chip is simulated on its own). Like DMA,
// collectives are event-driven because they contend on shared links.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "arch/chip/isa.h"
#include "arch/common/stats.h"

namespace tpusim::arch {

// What the chip must do itself for a collective it has just started.
struct CollectiveStart {
  // Bytes of partial results this chip adds as they arrive (reduce_scatter,
  // all_reduce); the chip charges them to its VPU alongside the transfer.
  std::uint64_t reduce_bytes = 0;
  // The collective's own HBM traffic on this chip: its DMA engines read
  // from HBM every byte the chip sends and write to HBM every byte it
  // receives (forwarded ring shards included). The chip issues them when
  // it starts the collective, at the engines' rate, and the collective
  // completes only when they have.
  std::uint64_t hbm_read_bytes = 0;
  std::uint64_t hbm_write_bytes = 0;
};

class CollectiveBackend {
 public:
  virtual ~CollectiveBackend() = default;
  // Called from a SystemC process; `group` is the work's CollectiveGroup,
  // `instr` the instruction's id, for the backend's own records. `on_done`
  // runs at the completion time.
  virtual CollectiveStart start(const IciWork& work, const CollectiveGroup& group, InstrId instr,
                                std::function<void()> on_done) = 0;
  virtual std::vector<std::pair<std::string, StatList>> block_stats() const = 0;
};

}  // namespace tpusim::arch
