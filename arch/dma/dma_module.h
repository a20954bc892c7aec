// SystemC shell of a chip's DMA engines: turns descriptors into HBM
// transfers on the HbmModule (DmaEngineTiming plans them) and reports each
// descriptor's completion at the exact time its last byte lands. Implements
// the sequencer's DmaBackend. start() returns at once; nothing ticks.
// Leaves out: on-chip memory contention (VMEM/SMEM/CMEM sides are free),
// ICI (ConfigError), descriptor queues deeper than "in order per engine".
#pragma once

#include <functional>
#include <queue>
#include <vector>

#include <systemc>

#include "arch/chip/dma_backend.h"
#include "arch/dma/dma_descriptor.h"
#include "arch/dma/dma_timing.h"
#include "arch/hbm/hbm_module.h"

namespace tpusim::arch {

class DmaModule : public sc_core::sc_module, public DmaBackend {
 public:
  // `clock_hz`: the engines' (TensorCore) clock, for issue rate and setup.
  DmaModule(sc_core::sc_module_name name, const DmaConfig& dma, const HbmConfig& hbm_config,
            double clock_hz, HbmModule& hbm);

  // Starts `d` on `engine` (0..engines-1; -1 = round robin); `on_done` runs
  // in a SystemC process at the completion time. Call from a SystemC process.
  void start(const DmaDescriptor& d, int engine, std::function<void()> on_done);
  // The same, notifying `done` (delta-notified at the completion time).
  void start(const DmaDescriptor& d, sc_core::sc_event& done, int engine = -1);
  // DmaBackend.
  void start(const DmaWork& work, int engine, std::function<void()> on_done) override;
  std::vector<std::pair<std::string, StatList>> block_stats() const override;

  StatList stats() const;
  int engines() const { return static_cast<int>(engines_.size()); }
  const DmaEngineTiming& engine(int i) const { return engines_[static_cast<std::size_t>(i)]; }

 private:
  struct Timer {
    Ps at;
    std::uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Timer& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  void at(Ps t, std::function<void()> fn);
  void timers();

  HbmModule& hbm_;
  std::vector<DmaEngineTiming> engines_;
  std::size_t next_engine_ = 0;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  std::uint64_t timer_seq_ = 0;
  sc_core::sc_event timer_wake_;
  std::uint64_t descriptors_ = 0, completed_ = 0, bytes_ = 0, hbm_bytes_ = 0, requests_ = 0;
  double latency_sum_ = 0;
};

}  // namespace tpusim::arch
