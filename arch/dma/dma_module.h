// SystemC shell of a chip's DMA engines: turns descriptors into HBM
// transfers on the HbmModule (DmaEngineTiming plans them: setup, request
// pacing, outstanding window) and reports each descriptor's completion at
// the exact time its last byte lands. Copies between on-chip memories take
// bytes / the slower memory's bandwidth (when given), CMEM's bandwidth
// being one server shared by all engines. Implements the sequencer's
// DmaBackend; this is the engine's memory system (sim/engine/memory_system).
// Copies between HBM and host memory (MemSpace::host) also cross the
// chip's host link (HostLinkTiming: pcie_bandwidth per chip, shared by the
// transfers on it); such a copy completes when both its HBM side and its
// link transfer, which starts when the engine starts issuing, are done.
// start() returns at once; nothing ticks.
// Leaves out: VMEM/SMEM bank contention on the on-chip side of HBM copies
// (VMEM's bandwidth bounds each copy on its own),
// ICI (ConfigError), descriptor queues deeper than "in order per engine".
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <vector>

#include <systemc>

#include "arch/chip/dma_backend.h"
#include "arch/dma/dma_descriptor.h"
#include "arch/dma/dma_timing.h"
#include "arch/dma/host_link.h"
#include "arch/hbm/hbm_module.h"

namespace tpusim::arch {

// Bandwidths (bytes/s) of the on-chip memories, for copies that do not
// touch HBM; 0 = not modelled (such a copy then takes its issue time).
// VMEM's bandwidth and access granule (`vmem_granule`, 0 = bytes) also
// bound the VMEM side of an HBM copy: it cannot complete before its rows,
// each rounded up to whole granules, have passed VMEM at that bandwidth
// from the start of its issue (arch/memory/vmem_feed.h).
// `host`: the host link's bandwidth (bytes/s, the chip's pcie_bandwidth);
// 0 = no host link (a host copy is then a ConfigError).
struct OnChipBandwidth {
  double vmem = 0, smem = 0, cmem = 0;
  std::uint64_t vmem_granule = 0;
  double host = 0;
};

class DmaModule : public sc_core::sc_module, public DmaBackend, private HbmWaiter {
 public:
  // `clock_hz`: the engines' (TensorCore) clock, for issue rate and setup.
  // `ici_engines`: engines of the chip's ICI, beside the dma.engines the
  // sequencer uses, for collectives' own HBM traffic (start_collective).
  DmaModule(sc_core::sc_module_name name, const DmaConfig& dma, const HbmConfig& hbm_config, double clock_hz,
            HbmModule& hbm, OnChipBandwidth on_chip = {}, int ici_engines = 0);

  // Starts `d` on `engine` (0..engines-1; -1 = round robin); `on_done` runs
  // in a SystemC process at the completion time. Call from a SystemC process.
  void start(const DmaDescriptor& d, int engine, std::function<void()> on_done);
  // The same, notifying `done` (delta-notified at the completion time).
  void start(const DmaDescriptor& d, sc_core::sc_event& done, int engine = -1);
  // DmaBackend.
  void start(const DmaWork& work, int engine, std::function<void()> on_done) override;
  // On ICI engine `engine` % ici_engines (the sequencer's engines without any).
  void start_collective(const DmaWork& work, int engine, std::function<void()> on_done) override;
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
  // A descriptor in flight completes when its HBM transfers, its issue
  // (and its host-link transfer) are done: joins_[slot], slots reused.
  struct Join {
    std::size_t left = 0;
    Ps done = 0;
    Ps started = 0;
    std::function<void()> fn;
  };
  std::uint32_t new_join(std::size_t parts, Ps floor, Ps now, std::function<void()> fn);
  void part_done(std::uint32_t slot, Ps t);
  void hbm_done(std::uint64_t tag, Ps done) override { part_done(static_cast<std::uint32_t>(tag), done); }
  std::vector<Join> joins_;
  std::vector<std::uint32_t> free_joins_;
  DmaPlan plan_;  // start()'s scratch
  // The host link: a transfer joins at `t`; `fn` runs when it is done.
  void host_transfer(Ps t, std::uint64_t bytes, std::function<void(Ps)> fn);
  void host_wake();

  HbmModule& hbm_;
  Ps on_chip_end(const DmaDescriptor& d, const DmaPlan& p);

  std::vector<DmaEngineTiming> engines_;  // the sequencer's, then the ICI's
  std::size_t core_engines_ = 0;
  OnChipBandwidth on_chip_;
  Ps cmem_free_ = 0;  // CMEM busy until (one server for every engine)
  struct EngineStats {
    std::uint64_t descriptors = 0, bytes = 0;
    Ps issue_ps = 0;
  };
  std::vector<EngineStats> per_engine_;
  std::size_t next_engine_ = 0;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  std::uint64_t timer_seq_ = 0;
  sc_core::sc_event timer_wake_;
  std::uint64_t descriptors_ = 0, completed_ = 0, bytes_ = 0, hbm_bytes_ = 0, requests_ = 0;
  std::uint64_t vmem_bytes_ = 0, cmem_bytes_ = 0, host_bytes_ = 0;
  std::unique_ptr<HostLinkTiming> host_;  // null without a host link
  std::map<std::uint64_t, std::function<void(Ps)>> host_done_;
  std::uint64_t host_wake_gen_ = 0;
  double latency_sum_ = 0;
};

}  // namespace tpusim::arch
