// One TPU chip executing a lowered Program: per TensorCore a scalar
// sequencer (in-order issue, one instruction per cycle, blocking on the
// instructions each one waits for) and its compute units (MXUs, VPU, XLUs),
// plus the chip's DMA engines and memory system behind a DmaBackend.
//
// Communication style: compute units are loosely-timed targets (the
// sequencer calls UnitTiming::issue and gets start/finish cycles back, the
// unit's timer keeps its busy-until state); DMA transfers are event-driven
// (a callback at the completion time), because concurrent transfers
// contend in the memory system. Completions are posted on a board that the
// sequencers wait on. No clock is ticked: simulated time only advances to
// the next completion or issue slot.
// Collectives that reduce (reduce_scatter, all_reduce) also occupy the
// issuing core's VPU for the element-wise adds of the partial results that
// arrive, and every collective moves its own bytes through HBM: DMA reads
// of what the chip sends and writes of what it receives, each issued as
// its message starts (CollectiveProgress, collective_step). The
// instruction completes at max(network done, its writes done, VPU done).
// SparseCores (cfg.sparsecores) are further cores after the TensorCores,
// present when the program issues on them: a sequencer of its own (the
// SparseCore's scalar core) with one vector unit standing for its tiles
// (arch/sparsecore), sharing the DMA engines and HBM; their stats are
// named sc<N>.
// Leaves out: instruction fetch and scalar ALU work (one issue slot each),
// unit queue back-pressure (a unit's timer serialises what it is given),
// the add of the last partial shard after it lands (the reduction is
// timed as one VPU stream from the start), VMEM traffic of the reduction
// operands, the pacing of a collective's HBM traffic by its transfer
// (issued at once, at the engines' rate).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <systemc>

#include "arch/chip/collective_backend.h"
#include "arch/chip/dma_backend.h"
#include "arch/chip/isa.h"
#include "arch/chip/unit_timing.h"
#include "arch/common/chip_config.h"

namespace tpusim::arch {

using UnitFactory = std::function<std::unique_ptr<UnitTiming>(UnitKind kind, int core, int index)>;

class ChipModule : public sc_core::sc_module {
 public:
  // `ici` may be null for a single chip; a program with collectives then
  // fails at elaboration.
  ChipModule(sc_core::sc_module_name name, const TpuConfig& cfg, const Program& program, const UnitFactory& make_unit,
             DmaBackend& dma, CollectiveBackend* ici = nullptr);

  const std::vector<InstrRecord>& records() const { return records_; }
  // The records, moved out (one per instruction: for a large program,
  // hundreds of MB not to copy). records() is empty afterwards.
  std::vector<InstrRecord> take_records() { return std::move(records_); }
  // Cycle at which the last instruction finished (0 for an empty program).
  std::uint64_t end_cycle() const { return end_cycle_; }
  // True once every instruction has completed; false after sc_start means
  // the program deadlocked (a dependency that never completes).
  bool all_done() const { return completed_ == program_.instrs.size(); }
  std::size_t completed() const { return completed_; }
  // Per-unit statistics with their block paths ("tc0.mxu1", ...), the
  // sequencers' own, and the DMA backend's.
  std::vector<std::pair<std::string, StatList>> block_stats() const;

  double clock_hz() const { return clock_hz_; }

  // Records the main activity signals in a VCD file: per TensorCore the
  // number of MXU, VPU and XLU instructions in flight, the chip's DMA
  // copies in flight and the count of completed instructions. Call before
  // sc_start; costs an event per change, so meant for short runs.
  void trace_activity(sc_core::sc_trace_file* tf);

 private:
  static constexpr InstrId kNotWaiting = ~InstrId{0};
  struct Core {
    bool sparse = false;  // a SparseCore's sequencer (vector tiles only)
    std::vector<std::unique_ptr<UnitTiming>> mxu, vpu, xlu;
    std::vector<InstrId> instrs;  // this core's instructions, in order
    InstrId waiting_for = kNotWaiting;  // the instruction its sequencer is blocked on
    std::size_t next_mxu = 0, next_xlu = 0;
    std::uint64_t issued = 0, dep_stall_cycles = 0, scalar_cycles = 0;
    // Collective reductions charged to this core's VPU.
    std::uint64_t reductions = 0, reduction_cycles = 0;
    // HBM bytes the collectives this core started read and wrote (their
    // own DMA traffic, CollectiveProgress::sent / received).
    std::uint64_t collective_hbm_bytes = 0;
  };

  void sequencer(int core);
  void complete(InstrId id, std::uint64_t cycle);
  void completer();
  std::uint64_t now_cycles() const;
  mutable std::uint64_t now_value_ = 0, now_cycles_ = 0;  // now_cycles() of the last time stamp asked
  sc_core::sc_time at_cycle(std::uint64_t c) const;

  const TpuConfig& cfg_;
  const Program& program_;
  DmaBackend& dma_;
  CollectiveBackend* ici_;
  double clock_hz_;
  std::vector<Core> cores_;
  std::vector<InstrRecord> records_;
  std::vector<std::uint8_t> done_;
  std::size_t completed_ = 0;
  std::uint64_t end_cycle_ = 0;
  std::size_t next_dma_engine_ = 0;
  // A collective in flight completes when the network part and its own
  // HBM traffic (the DMA reads of what it sends, the writes of what it
  // receives, issued step by step: collective_step) are done, and not
  // before its reductions on the VPU end.
  struct CollectiveJoin {
    int left = 0;                 // parts still running (network, HBM DMAs, issue)
    std::uint64_t until = 0;      // cycle the reduction ends
    std::uint64_t last_done = 0;  // latest completion of those parts
    int core = 0;
  };
  std::unordered_map<InstrId, CollectiveJoin> collectives_;
  void collective_part_done(InstrId id);
  void collective_step(InstrId id, int core, DType dtype, std::uint32_t op, const CollectiveProgress& p);
  // Per core: notified when the instruction its sequencer waits for completes.
  std::vector<std::unique_ptr<sc_core::sc_event>> wake_;
  // Compute completions not yet posted, earliest first.
  using Pending = std::pair<std::uint64_t, InstrId>;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> pending_;
  sc_core::sc_event wake_completer_;
  // Its pending notification, if any: at cycle completer_at_ (the current
  // cycle for a delta notification).
  bool completer_armed_ = false;
  std::uint64_t completer_at_ = 0;
  void arm_completer();

  // VCD tracing (only when trace() was called).
  struct Activity {
    std::uint64_t cycle;
    int signal;
    int delta;
    bool operator>(const Activity& o) const {
      // Ends before starts at the same cycle, so levels never overshoot.
      if (cycle != o.cycle) return cycle > o.cycle;
      if (delta != o.delta) return delta > o.delta;
      return signal > o.signal;
    }
  };
  void note(std::uint64_t cycle, int signal, int delta);
  void tracer();
  std::vector<std::unique_ptr<sc_core::sc_signal<int>>> signals_;
  std::vector<int> levels_;
  std::priority_queue<Activity, std::vector<Activity>, std::greater<Activity>> activity_;
  sc_core::sc_event wake_tracer_;
  bool tracing_ = false;
  int signal_of(int core, UnitKind k) const {
    // The chip-wide DMA and ICI activity share signal 0 (copies in flight).
    return k == UnitKind::dma || k == UnitKind::ici ? 0
                                                    : 1 + core * 3 +
                                                          (k == UnitKind::mxu   ? 0
                                                           : k == UnitKind::vpu ? 1
                                                                                : 2);
  }
};

}  // namespace tpusim::arch
