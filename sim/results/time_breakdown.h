// Where a run's time went, from the instruction records: how long some
// compute unit (MXU, VPU or XLU) was busy, how long collectives were on the
// network, and how much of that communication and of the HBM traffic was
// exposed, i.e. not hidden behind compute. The step is partitioned, in
// this order of precedence, into compute (any MXU/VPU/XLU instruction
// running), exposed ICI (a collective running, no compute), exposed HBM
// (a DMA with an HBM end running, neither compute nor a collective) and
// the rest (idle: sequencer issue, latencies). `tpusim shard-search` names
// a run's bottleneck from these shares (docs/results.md, summary.csv).
// Intervals are unions over every core and unit, so overlapping
// instructions of one kind count once.
// Leaves out: which unit limits inside the compute share (an MXU waiting
// for its DMAs counts as compute while its instructions run).
#pragma once

#include <cstdint>
#include <vector>

#include "arch/chip/isa.h"

namespace tpusim::sim {

struct TimeBreakdown {
  std::uint64_t compute_cycles = 0;      // union of MXU, VPU, XLU instruction intervals
  std::uint64_t ici_cycles = 0;          // union of collective (ICI) instruction intervals
  std::uint64_t ici_exposed_cycles = 0;  // ICI union minus the compute union
  std::uint64_t hbm_exposed_cycles = 0;  // HBM-DMA union minus the compute and ICI unions
};

// `records` indexed like prog.instrs (SimResult::records).
TimeBreakdown time_breakdown(const arch::Program& prog, const std::vector<arch::InstrRecord>& records);

}  // namespace tpusim::sim
