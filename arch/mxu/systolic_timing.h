// Fast, exact timing of ONE weight-stationary systolic MXU (R x C PEs) at
// weight-tile granularity, in O(1) per call (closed form; never a loop over
// cycles or tiles).
//
// Models (the microarchitecture that arch/mxu/pe_array_reference.h
// simulates PE by PE, and that tests prove this model equal to):
// - A[M,K] @ B[K,N] is cut into T = ceil(K/R) * ceil(N/C) weight tiles,
//   each padded to R x C (partial tiles cost a full tile). For each tile the
//   weights are shifted into the array, then all M rows of A stream through
//   it; the result buffer accumulates over the K tiles.
// - Dtype throughput f (MACs per PE per cycle relative to bf16, from
//   MxuConfig::throughput): f = p >= 1 (integer) means each PE has p
//   multipliers sharing its weight, so one "beat" carries p LHS rows;
//   f = 1/q means a beat (one row) enters every q cycles. A tile streams
//   B = ceil(M/p) beats occupying the array input for B*q cycles.
// - Weight load: L = weight_load_cycles (0 = R) cycles on the weight path,
//   skewed by column like the LHS so that it can follow the LHS wavefront.
// - Recurrence per tile t (l = load start, s = first beat enters PE(0,0)):
//     l_t >= ready, l_t >= l_{t-1} + L                       (weight path)
//     double-buffered: l_t >= s_{t-1}   (shadow register committed by the
//                                        first beat of the previous tile)
//     single-buffered: l_t >= s_{t-1} + (B_{t-1}-1)*q  (last beat has used
//                                        the weights being overwritten)
//     s_t >= l_t + L, s_t >= s_{t-1} + B_{t-1}*q, s_t >= ready + input_latency
//     finish_t = s_t + (B_t-1)*q + (R-1) + (C-1) + 1 + output_latency
//   (a beat entering PE(0,0) at cycle x reaches PE(R-1,C-1) at x+R+C-2 and
//   is in the result buffer from the next cycle, plus output_latency).
// - Closed form within an op (all its tiles have the same B): tile 0 from
//   the recurrence, then s_t = s_0 + t*P with
//     P = max(B*q, L)              double-buffered
//     P = (B-1)*q + max(q, L)      single-buffered
//   so finish = s_0 + (T-1)*P + (B-1)*q + R + C - 1 + output_latency.
// Leaves out: the supply of LHS rows and weights from VMEM/vregs (assumed
// ready at `ready`), result-buffer capacity and read-out to the VPU,
// reuse of weights already resident from a previous op, dtype-dependent
// weight-load time. N:M sparsity (MxuConfig::sparsity, a what-if): a
// sparse op's k is the compressed K the lowering passes, and its weight
// tiles also shift in R*C kept values' metadata (ceil(log2 m) bits each)
// at metadata_bytes_per_cycle, so L becomes max(L, ceil(metadata / rate)).
// One MXU per timer: a TensorCore with
// MxuConfig::count MXUs holds that many timers.
#pragma once

#include <array>
#include <cstdint>

#include "arch/common/chip_config.h"
#include "arch/common/dtype.h"
#include "arch/common/stats.h"

namespace tpusim::arch {

using MxuCycles = std::uint64_t;

// A[m,k] @ B[k,n] on one MXU (same fields as arch/chip/isa.h MxuWork).
struct MxuOp {
  std::int64_t m = 0, k = 0, n = 0;
  DType dtype = DType::bf16;
  bool sparse = false;  // k is the compressed K of an N:M sparse operand
};

struct MxuOpTiming {
  MxuCycles ready = 0;                 // cycle the op was issued with
  MxuCycles start = 0;                 // first weight-load cycle of the op
  MxuCycles stream_start = 0;          // first LHS beat enters the array
  MxuCycles finish = 0;                // first cycle at which every result is in the result buffer
  MxuCycles cycles = 0;                // finish - ready (latency seen by the issuer)
  std::uint64_t useful_macs = 0;       // m*k*n
  std::uint64_t issued_mac_slots = 0;  // T * B*p * R*C: every PE lane of every beat
  std::uint64_t wasted_macs = 0;       // issued_mac_slots - useful_macs (padding)
  std::uint64_t weight_tiles = 0;      // T
  MxuCycles weight_load_cycles = 0;    // T * L
  // Cycles by which weight loads delayed the LHS stream beyond what the
  // stream's other constraints (ready + input_latency, the previous tile's
  // beats) allowed; hidden = weight_load_cycles - exposed.
  MxuCycles weight_load_exposed = 0;
  MxuCycles weight_load_hidden = 0;
  MxuCycles stream_cycles = 0;  // T * B * q: cycles the array input is occupied
  // R + C - 2 + output_latency: cycles from the end of the last beat's entry
  // cycle until finish (pipeline fill/drain not overlapped with streaming).
  MxuCycles fill_drain_cycles = 0;
};

// Per-dtype rate derived from MxuConfig::throughput.
struct MxuRate {
  bool supported = false;
  std::int64_t rows_per_beat = 1;    // p
  std::int64_t cycles_per_beat = 1;  // q
};

// Validated, precomputed view of an MxuConfig. Throws ConfigError for an
// invalid config (rows/cols < 1, negative cycles, a throughput that is
// neither a positive integer nor 1/integer).
struct MxuGeometry {
  explicit MxuGeometry(const MxuConfig& cfg);
  std::int64_t rows = 0, cols = 0;
  std::int64_t load_cycles = 0;  // L
  std::int64_t sparse_load_cycles = 0;  // L of a sparse op's tile (metadata included)
  bool double_buffer = true;
  std::int64_t input_latency = 0, output_latency = 0;
  std::array<MxuRate, 6> rate{};  // indexed by DType
  // Throws ConfigError naming the dtype and the supported ones.
  const MxuRate& rate_of(DType t) const;
  // R*C*f MACs per cycle for dtype t (throws if unsupported).
  double peak_macs_per_cycle(DType t) const;
  // T * B*p * R*C PE MAC slots an op occupies (MxuOpTiming::issued_mac_slots),
  // which do not depend on what ran before it. Throws like rate_of and for
  // m, k, n < 1.
  std::uint64_t issued_mac_slots(const MxuOp& op) const;
};

// Stateful timer of one MXU: "busy until" per resource, O(1) per issue.
class MxuTimer {
 public:
  explicit MxuTimer(const MxuConfig& cfg);

  // Runs `op` with operands ready at `ready` after everything issued before.
  // Throws ConfigError for an unsupported dtype or m, k, n < 1.
  MxuOpTiming issue(const MxuOp& op, MxuCycles ready);

  // Earliest cycle the next op's first weight load could start and the
  // earliest its first beat could enter (resource state, for schedulers).
  MxuCycles weight_path_free() const { return load_free_; }
  MxuCycles array_input_free() const { return stream_free_; }
  MxuCycles drain_busy_until() const { return drain_free_; }

  void reset();
  const MxuGeometry& geometry() const { return g_; }

  // Totals over all ops issued since construction/reset.
  struct Totals {
    std::uint64_t ops = 0, tiles = 0;
    std::uint64_t useful_macs = 0, issued_mac_slots = 0;
    // issued_mac_slots by the dtype the array ran (indexed by DType): the
    // energy model charges each dtype its own energy per MAC.
    std::array<std::uint64_t, 6> mac_slots_by_dtype{};
    // Operand and result bytes through VMEM (mxu_operand_bytes per op).
    std::uint64_t operand_bytes = 0;
    MxuCycles stream_cycles = 0, weight_load_cycles = 0, weight_load_exposed = 0;
    MxuCycles last_finish = 0;
  };
  const Totals& totals() const { return tot_; }
  // Named statistics of the totals (arch/common/stats.h).
  StatList stats() const;

 private:
  MxuGeometry g_;
  DType accumulator_ = DType::f32;
  // Earliest next load start: max(previous load start + L, shadow/array-weight free).
  MxuCycles load_free_ = 0;
  MxuCycles stream_free_ = 0;  // array input free (previous beats all entered)
  MxuCycles drain_free_ = 0;   // last result of everything issued landed
  Totals tot_;
};

// Bytes one op moves between VMEM and the array, for the energy model: the
// LHS streams once per column of weight tiles (ceil(n/C) x m x k), the
// weights load once (k x n), and the results leave the result buffer once
// in the accumulator dtype (m x n), with the accumulation over K inside
// the buffer. Unpadded: padding lanes carry no data. `cols`: the array's C.
std::uint64_t mxu_operand_bytes(std::int64_t cols, DType accumulator, const MxuOp& op);

// Timing of `op` alone on an idle MXU with ready = 0.
MxuOpTiming mxu_block_timing(const MxuConfig& cfg, const MxuOp& op);

}  // namespace tpusim::arch
