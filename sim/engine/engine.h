// The engine: elaborates one chip (arch::ChipModule with the real unit
// timers and the DMA/HBM model) for a lowered program and runs it to
// completion. SystemC elaborates once per process, so simulate() may be
// called once per process; a second call throws EngineError.
// Leaves out: multiple chips (the ICI work adds them).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "arch/chip/isa.h"
#include "arch/common/chip_config.h"
#include "arch/common/stats.h"

namespace tpusim::sim {

struct SimOptions {
  std::string vcd_path;  // empty: no VCD
  // Report progress on stderr once a run has taken more than two seconds
  // of wall time (instructions completed, simulated time), once a second.
  bool progress = false;
};

struct SimResult {
  std::vector<arch::InstrRecord> records;  // indexed like Program::instrs
  std::uint64_t end_cycle = 0;             // TensorCore cycles
  double clock_hz = 0;
  // Statistics of every block, by block path ("tc0.mxu0", "hbm", ...).
  std::vector<std::pair<std::string, arch::StatList>> block_stats;
  double wall_seconds = 0;  // host time spent in elaboration and simulation
};

class EngineError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

SimResult simulate(const arch::TpuConfig& cfg, const arch::Program& program,
                   const SimOptions& opt = {});

}  // namespace tpusim::sim
