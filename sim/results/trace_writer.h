// The Chrome trace-event view of a run (chrome://tracing, ui.perfetto.dev):
// one complete event ("ph":"X") per instruction on a track per hardware
// unit (tc0.mxu0, tc0.vpu, tc0.xlu1, dma2, ...), plus metadata events that
// name the process (the chip) and the tracks and fix their order, and,
// when the run has an energy model, a "power (W)" counter track: one
// sample per profile window with each block's watts (energy.h).
// Timestamps are microseconds, with 6 decimals (picoseconds) so single
// cycles of a GHz clock stay distinct.
// Leaves out: flow arrows for dependencies, other counters, multiple chips.
#pragma once

#include <ostream>
#include <string>
#include <tuple>

#include "sim/results/energy.h"
#include "sim/results/run_report.h"

namespace tpusim::sim {

// The track an instruction ran on: "tc<core>.mxu<i>", "tc<core>.vpu",
// "tc<core>.xlu<i>" or "dma<i>" (DMA engines belong to the chip), where i
// is the engine the simulation chose (InstrRecord::unit_index).
std::string track_name(const arch::Instr& in, const arch::InstrRecord& rec);

// Sort key of a track: the TensorCores' units first (per core: MXUs, VPU,
// XLUs), then the chip's DMA engines, each by index.
using TrackKey = std::tuple<int, int, int, int>;  // group, core, unit order, index
TrackKey track_key(const arch::Instr& in, const arch::InstrRecord& rec);

// Writes the whole trace as one JSON object {"traceEvents":[...],...}.
// Throws arch::InternalError on an inconsistent report (see compute_metrics).
// `energy`: the run's energy figures (the power track), or none.
void write_chrome_trace(const RunReport& r, std::ostream& os, const EnergyMetrics* energy = nullptr);

}  // namespace tpusim::sim
