// The engine: elaborates one chip (arch::ChipModule with the real unit
// timers and the DMA/HBM model) for a lowered program and runs it to
// completion. SystemC elaborates once per process, so simulate() may be
// called once per process; a second call throws EngineError.
// Multi-chip: with a slice, the ICI network of the whole slice carries
// the collectives; one simulated chip stands for all (default) or every
// chip is simulated (SimOptions::all_chips). See docs/architecture.md,
// "Multi-chip runs".
// Leaves out: chips with different programs (pipeline parallelism),
// per-chip clock or start skew.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "arch/chip/isa.h"
#include "arch/common/chip_config.h"
#include "arch/common/stats.h"
#include "sim/engine/work_estimate.h"
#include "workloads/ir/mesh.h"

namespace tpusim::sim {

// One collective as the ICI network executed it.
struct CollectiveRecord {
  arch::InstrId instr = 0;
  std::string algorithm;
  std::uint64_t bytes = 0;  // per chip, as requested
  int group_size = 1;
  double seconds = 0;
  double achieved_bandwidth = 0;                     // bytes / seconds
  std::uint64_t bytes_sent = 0, bytes_received = 0;  // whole slice (conservation)
};

struct SimOptions {
  std::string vcd_path;  // empty: no VCD
  // Multi-chip: the slice shape ("4x4", "4x4x4"; empty = one chip), the
  // mesh axes over it (empty = physical x, y, z) and the twisted torus.
  // Every chip runs the same SPMD program; the compute of one chip is
  // simulated and stands for all (see docs/architecture.md), while every
  // chip's ICI traffic is simulated.
  std::string slice;
  workloads::MeshSpec mesh;
  bool twisted = false;
  // Multi-chip: simulate every chip of the slice (own ChipModule and
  // memory system each, the same program) instead of one standing for
  // all; each chip's collectives complete when its own part has landed.
  // At most kMaxAllChips chips (sim/engine/slice_setup.h).
  bool all_chips = false;
  // Report progress on stderr once a run has taken more than two seconds
  // of wall time (instructions completed, simulated time), once a second.
  bool progress = false;
  // Ceiling on simulated time, seconds: a run that has not finished by
  // then stops with SimLimitError instead of running on (a workload too
  // large to simulate, or a config that makes it crawl). 0 = none.
  double max_sim_seconds = 3600;
  // Ceiling on simulated work: instructions plus DMA memory requests of
  // every simulated chip (sim/engine/work_estimate.h), counted from the
  // lowered program before elaboration. A program above it, or one whose
  // lower bound on simulated time is above max_sim_seconds, is refused up
  // front with SimLimitError. 0 = none.
  std::uint64_t max_events = kDefaultMaxEvents;
};

// A run stopped at SimOptions::max_sim_seconds, or refused up front by
// max_events or max_sim_seconds: the user's workload or limit, not a bug
// (exit code 2).
class SimLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SimResult {
  std::vector<arch::InstrRecord> records;  // indexed like Program::instrs
  std::uint64_t end_cycle = 0;             // TensorCore cycles
  double clock_hz = 0;
  // Statistics of every block, by block path ("tc0.mxu0", "hbm", ...).
  std::vector<std::pair<std::string, arch::StatList>> block_stats;
  double wall_seconds = 0;                    // host time spent in elaboration and simulation
  std::vector<CollectiveRecord> collectives;  // in completion order
  int chips = 1;                              // chips of the simulated slice
  int num_slices = 1;                         // multislice: identical slices (the DCN joins them)
  // --all-chips: records and block_stats above are the slowest chip's
  // (records) and every chip's (blocks prefixed "chipN."); these hold
  // each chip's end and records. Empty otherwise.
  std::vector<std::uint64_t> chip_end_cycles;
  std::vector<std::vector<arch::InstrRecord>> chip_records;
  int slowest_chip = 0;
};

class EngineError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

SimResult simulate(const arch::TpuConfig& cfg, const arch::Program& program, const SimOptions& opt = {});

}  // namespace tpusim::sim
