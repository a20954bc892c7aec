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
#include "arch/common/collective_progress.h"
#include "arch/common/stats.h"

namespace tpusim::arch {

class CollectiveBackend {
 public:
  virtual ~CollectiveBackend() = default;
  // Called from a SystemC process; `group` is the work's CollectiveGroup,
  // `instr` the instruction's id, for the backend's own records. `on_done`
  // runs at the completion time, `on_progress` at each of the chip's
  // steps (every one before on_done).
  virtual void start(const IciWork& work, const CollectiveGroup& group, InstrId instr, std::function<void()> on_done,
                     std::function<void(const CollectiveProgress&)> on_progress) = 0;
  virtual std::vector<std::pair<std::string, StatList>> block_stats() const = 0;
};

}  // namespace tpusim::arch
