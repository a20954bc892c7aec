// What the sequencer needs from the DMA engines and the memory system
// behind them: start a copy now and be called back at the exact cycle its
// last byte lands. Transfers that run at the same time contend (HBM
// channels, engines), so this path is event-driven rather than a returned
// delay like the compute units'.
#pragma once

#include <functional>
#include <utility>

#include "arch/chip/isa.h"
#include "arch/common/stats.h"

namespace tpusim::arch {

class DmaBackend {
 public:
  virtual ~DmaBackend() = default;
  // Called from a SystemC process at the current simulation time. `engine`
  // is the DMA engine chosen by the sequencer. `on_done` is invoked from a
  // SystemC process at the completion time.
  virtual void start(const DmaWork& work, int engine, std::function<void()> on_done) = 0;
  // A collective's own HBM traffic (what it sends is read, what arrives is
  // written): on the ICI's DMA engines where the backend has them, so that
  // it contends with the kernels' copies for HBM but does not queue ahead
  // of them on the TensorCore's engines; else on `engine`.
  virtual void start_collective(const DmaWork& work, int engine, std::function<void()> on_done) {
    start(work, engine, std::move(on_done));
  }
  // Named statistics of the engines and the memory system, each name
  // prefixed with its block path (e.g. "hbm.row_hits").
  virtual std::vector<std::pair<std::string, StatList>> block_stats() const = 0;
};

}  // namespace tpusim::arch
