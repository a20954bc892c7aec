// Timing of one DMA engine, no SystemC: how a descriptor becomes HBM
// transfers and when their requests are issued. An engine handles its
// descriptors in order; each costs setup_cycles, then issues requests of
// request_bytes at issue_per_cycle per engine cycle, but no faster than
// max_outstanding requests per unloaded HBM latency (Little's law stands
// in for the outstanding-request window: open loop, so a loaded HBM's
// longer latency does not slow issue further). The HBM side of a copy is
// cut into 2-D slabs (dims 0-1, merged when contiguous), one HBM transfer
// each; HBM-to-HBM copies issue the read and the write side together.
// Copies between on-chip spaces take the issue time only.
// Leaves out: the closed-loop outstanding window, on-chip memory bank
// conflicts, ICI (ConfigError), descriptor prefetch.
#pragma once

#include <algorithm>
#include <vector>

#include "arch/common/chip_config.h"
#include "arch/dma/dma_descriptor.h"
#include "arch/hbm/hbm_model.h"

namespace tpusim::arch {

struct DmaPlan {
  Ps issue_start = 0;  // after setup
  Ps issue_end = 0;    // last request issued + one interval
  double interval_ps = 0;
  std::uint64_t requests = 0;
  std::vector<std::pair<HbmTransfer, Ps>> hbm;  // transfer and its arrival
};

class DmaEngineTiming {
 public:
  DmaEngineTiming(const DmaConfig& dma, const HbmConfig& hbm, double clock_hz);
  // Plans a descriptor handed to this engine at `now`; the engine is then
  // busy issuing until the plan's issue_end.
  DmaPlan plan(const DmaDescriptor& d, Ps now);
  // The same into `out`, reusing its storage (no allocation once warm).
  void plan(const DmaDescriptor& d, Ps now, DmaPlan& out);
  double interval_ps() const { return interval_ps_; }
  Ps free_at() const { return free_at_; }
  // The engine stays busy until `t` (it moves an on-chip copy's data).
  void occupy_until(Ps t) { free_at_ = std::max(free_at_, t); }

 private:
  DmaConfig dma_;
  double interval_ps_;
  Ps setup_ps_;
  Ps free_at_ = 0;
  std::vector<HbmTransfer> rd_, wr_;  // plan()'s scratch
};

// Unloaded latency of one request of `bytes` on this HBM (row miss):
// controller + tRCD + tCL + its bursts. Used for the outstanding window.
Ps hbm_unloaded_latency(const HbmConfig& hbm, std::uint64_t bytes);

}  // namespace tpusim::arch
