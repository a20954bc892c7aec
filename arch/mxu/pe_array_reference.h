// Cycle-by-cycle reference of one weight-stationary systolic MXU: an R x C
// grid of processing elements whose registers carry real values. Slow and
// exact; tests use it to prove arch/mxu/systolic_timing.h cycle-exact and
// numerically right.
//
// Models, per cycle, with register semantics (every register reads the
// previous cycle's values):
// - Each PE(i,j) holds an active weight W and (double-buffered) a shadow
//   weight S. A tile's weights shift in top-down through S (or W when
//   single-buffered), one row per cycle per column; column j runs j cycles
//   behind column 0 (the same skew as the LHS), and only rows the new tile
//   has reached shift (clock gating), so a load takes R shift steps.
//   Row k of step k is the first write of that row, where the hazard
//   checks sit. With weight_load_cycles = L > R the path stays busy and the
//   tile counts as loaded only after L cycles.
// - LHS beats (p rows of A, p = rows per beat of the dtype) enter PE(i,0) i
//   cycles after issue and move one PE right per cycle; the first beat of a
//   tile carries a flag that commits S into W as it passes (the switch
//   follows the data wavefront, so consecutive tiles stream with no gap).
// - Partial sums enter row 0 as zero and move one PE down per cycle: int8
//   inputs accumulate exactly in integers (int32 range checked), bf16 inputs
//   (rounded RNE from f32) multiply exactly and add in f32 in row order.
// - The bottom row's outputs are de-skewed into a full C-wide row, which is
//   added into the result buffer (accumulating over the K tiles, in order)
//   output_latency cycles after column C-1 produced it.
// - Controller: loads a tile when its op is ready, the weight path is free
//   and the target register is free (double-buffered: the previous tile has
//   begun streaming; single: its last beat is entering); streams a tile
//   when its load is complete, the previous tile's beats are in and
//   ready + input_latency has passed. Tiles go in op order, n-tile outer,
//   k-tile inner.
// - Every register carries the tile it belongs to; using weights that are
//   not fully loaded, overwriting weights not yet committed or still in use,
//   and colliding beats or loads throw PeHazardError.
// Leaves out: numbers outside int8/bf16 inputs, int32 wrap-around (an
// overflow throws), and everything systolic_timing.h leaves out.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "arch/common/chip_config.h"
#include "arch/common/errors.h"
#include "arch/mxu/systolic_timing.h"

namespace tpusim::arch {

// A schedule the array cannot execute correctly (a data hazard). With the
// built-in controller this is a bug; with a forced schedule it is the
// expected proof that the schedule was too early.
class PeHazardError : public InternalError {
 public:
  using InternalError::InternalError;
};

// One matmul A[m,k] @ B[k,n] for the reference.
struct RefMatmul {
  std::int64_t m = 0, k = 0, n = 0;
  DType dtype = DType::bf16;  // bf16 or int8
  // Row-major, m*k and k*n values. bf16: any floats (rounded to bf16 on
  // entry); int8: integers in [-128, 127].
  std::vector<float> a, b;
  MxuCycles ready = 0;
};

struct RefMatmulResult {
  std::vector<std::int32_t> out_i32;  // m*n, int8 ops
  std::vector<float> out_f32;         // m*n, bf16 ops
  MxuCycles start = 0;                // first weight-load cycle
  MxuCycles stream_start = 0;         // first beat issued into the array
  MxuCycles finish = 0;               // first cycle with the op's last row in the result buffer
};

// Overrides the controller for chosen tiles (global tile index over the run,
// in issue order): the tile's load or stream starts exactly at that cycle.
struct RefForcedSchedule {
  std::map<std::size_t, MxuCycles> load_start;
  std::map<std::size_t, MxuCycles> stream_start;
};

class PeArrayReference {
 public:
  // Throws ConfigError for an invalid config or more than kMaxLanes rows per
  // beat, or weight_load_cycles between 1 and rows-1 (R rows cannot shift
  // in fewer than R cycles).
  explicit PeArrayReference(const MxuConfig& cfg);
  static constexpr int kMaxLanes = 8;

  // Runs the ops back to back on an idle array. Throws ConfigError for bad
  // operands or dtypes, PeHazardError for a schedule that corrupts data.
  std::vector<RefMatmulResult> run(const std::vector<RefMatmul>& ops, const RefForcedSchedule& forced = {});

  std::uint64_t cycles_simulated() const { return cycles_; }
  // PE-cycles (R*C per simulated cycle), the unit of the bench.
  std::uint64_t pe_cycles_simulated() const { return cycles_ * static_cast<std::uint64_t>(g_.rows * g_.cols); }

 private:
  MxuGeometry g_;
  std::uint64_t cycles_ = 0;
};

}  // namespace tpusim::arch
