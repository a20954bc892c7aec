// What the sequencer needs from the inter-chip network: start a collective
// now and be called back when it completes on the whole slice. Like DMA,
// collectives are event-driven because they contend on shared links.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "arch/chip/isa.h"
#include "arch/common/stats.h"

namespace tpusim::arch {

class CollectiveBackend {
 public:
  virtual ~CollectiveBackend() = default;
  // Called from a SystemC process; `instr` is the instruction's id, for
  // the backend's own records. `on_done` runs at the completion time.
  virtual void start(const IciWork& work, InstrId instr, std::function<void()> on_done) = 0;
  virtual std::vector<std::pair<std::string, StatList>> block_stats() const = 0;
};

}  // namespace tpusim::arch
