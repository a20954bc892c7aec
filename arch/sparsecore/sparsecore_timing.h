// SparseCore timing: the vector subcores (tiles) of one SparseCore working
// through a stream of elements, as the embedding lookups the lowering puts
// on it (sim/lowering/lower_memory_ops.cpp) need: index arithmetic per
// looked-up row, rows moved into the output.
// A SparseCore is a scalar sequencer driving `tiles` vector subcores of
// `lanes` 32-bit lanes, each with its own scratch memory; the sequencer
// hands out work, the tiles run independently (openxla.org/xla/sparsecore;
// docs.jax.dev/en/latest/pallas/tpu/sparsecore.html). A stream of E
// elements with k ALU ops each is cut into ceil(E / lanes) vectors dealt
// round robin to the tiles; a tile spends ceil(k) cycles per vector, and
// the stream ends `latency` cycles after the busiest tile's last vector:
//   cycles = latency + ceil(ceil(E / lanes) / tiles) x ceil(k).
// Streams on one SparseCore run one after another (busy-until).
// `reference_cycles` deals the vectors one by one to per-tile counters and
// is the exact twin the tests hold the closed form to.
// Leaves out: the tiles' own DMA streams (the lookups' HBM traffic goes
// through the chip's DMA engines and HBM model, sim/engine), transcendental
// ops (none in lookups: counted as ALU ops), bank conflicts in the scratch
// memories, the cross-lane unit.
#pragma once

#include <cstdint>

#include "arch/chip/unit_timing.h"
#include "arch/common/chip_config.h"
#include "arch/common/stats.h"

namespace tpusim::arch {

class SparseCoreTimer {
 public:
  // ConfigError unless tiles, lanes and latency are positive.
  explicit SparseCoreTimer(const SparseCoreConfig& cfg);

  // Cycles of a stream of `elements` elements with `ops` ALU ops each.
  std::uint64_t cycles(std::uint64_t elements, double ops) const;
  // The same, dealing every vector to a tile one at a time (the twin).
  std::uint64_t reference_cycles(std::uint64_t elements, double ops) const;

  // Starts the stream when the SparseCore is free and `ready` has come.
  Interval issue(std::uint64_t elements, double ops, std::uint64_t ready);

  StatList stats() const;

 private:
  SparseCoreConfig cfg_;
  std::uint64_t busy_until_ = 0;
  std::uint64_t streams_ = 0, elements_ = 0, busy_cycles_ = 0;
};

// UnitTiming adapter: a SparseCore sequencer's vector work (VpuWork:
// elements and ALU ops per element) on its tiles.
class SparseCoreUnitTiming : public UnitTiming {
 public:
  explicit SparseCoreUnitTiming(const SparseCoreConfig& cfg) : timer_(cfg) {}
  // InternalError if `in` does not carry VpuWork.
  Interval issue(const Instr& in, std::uint64_t ready) override;
  StatList stats() const override { return timer_.stats(); }

 private:
  SparseCoreTimer timer_;
};

}  // namespace tpusim::arch
