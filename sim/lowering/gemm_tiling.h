// The block-size search for matmul-shaped work (matmuls, convolutions as
// implicit GEMMs): pure, no steps emitted, so it can be tested on its own.
// Candidates are powers of two from the MXU tile up to the padded extent,
// kept when their double-buffered operand blocks, f32 accumulator and
// double-buffered output block fit the kernel's VMEM budget. Each is
// scored by an estimate of its pipeline: max(compute of the busiest core
// over its MXUs (output blocks are dealt to the cores, a block's K loop
// on one), HBM traffic with the loop order that re-reads less) + the exposed first
// load and last store + per-step costs (block latency and the scalar
// core's step overhead). A batched matmul whose entries each fit one block
// may also put several entries in a step (GemmTiling::bb), which divides
// the step count and multiplies the VMEM. Compute takes the cheaper MXU orientation: B's
// tiles stationary with A's rows streaming, or the reverse. Among blocks
// whose estimates are within 2% of each other, the one whose weight blocks
// come in the fewest contiguous DMA pieces wins. Fixed blocks
// (GemmShape::fixed_bm, ...) leave the search only the other sizes and the
// MXU orientation.
#pragma once

#include <cstdint>
#include <optional>

#include "arch/common/dtype.h"
#include "sim/lowering/chip_figures.h"

namespace tpusim::sim::lowering {

struct GemmShape {
  std::int64_t batch = 1, m = 1, k = 1, n = 1;
  arch::DType in_dtype = arch::DType::bf16, w_dtype = arch::DType::bf16;
  arch::DType out_dtype = arch::DType::bf16;
  bool b_batched = true;  // B differs per batch (else one B for all)
  // Bytes of A actually read for a block of bm rows x bk (convolutions
  // read an input window, not the im2col matrix).
  double a_read_factor = 1.0;
  // The dtype the MXU runs (gemm_quant.h); unset: in_dtype.
  std::optional<arch::DType> mxu_dtype;
  // Stored bits per B element when B is not plain w_dtype (N:M compressed
  // values, their metadata and quantization scales); 0: w_dtype's width.
  double b_bits = 0;
  // Fraction of K the MXU streams (an N:M sparse MXU: n/m).
  double mxu_k_fraction = 1.0;
  // The orientation when one is forced (the sparse operand of an N:M
  // sparse MXU must be the stationary one): the value of stream_b.
  std::optional<bool> stream_b;
  // Block sizes the kernel fixes (workloads::MatmulBlocks: a Pallas
  // matmul's BlockSpecs), 0 = searched. With any of them fixed the grid is
  // the Pallas matmul's (M/bm, N/bn, K/bk): M blocks outside N blocks, one
  // batch entry a step. A block at least the whole dimension is the
  // dimension padded to its unit, as the search's largest candidate.
  std::int64_t fixed_bm = 0, fixed_bk = 0, fixed_bn = 0;
  bool fixed_blocks() const { return fixed_bm > 0 || fixed_bk > 0 || fixed_bn > 0; }
};

struct GemmTiling {
  std::int64_t bm = 0, bk = 0, bn = 0;
  bool n_outer = false;  // loop over N blocks outside M blocks
  // The MXU holds the A block (activations) as its weights and streams B's
  // columns through it (C^T = B^T A^T), as XLA does when M is short: a
  // weight tile then serves bn rows instead of bm, so the array is not
  // bound by loading weight tiles that only a few rows use.
  bool stream_b = false;
  // Batch entries per grid step (batched matmuls whose every entry is one
  // block: bm, bk, bn cover M, K and N): a step loads and computes bb
  // entries' blocks, which amortizes the step overhead over them and, when
  // an entry's stationary tiles do not occupy every MXU, lets the entries
  // take different MXUs (lower_gemm.cpp).
  std::int64_t bb = 1;
  std::uint64_t vmem = 0;  // bytes per core
  double est_cycles = 0;   // the search's estimate
};

// nullopt when no block fits the VMEM budget. `cores`: TensorCores the
// work is split over.
std::optional<GemmTiling> choose_gemm_tiling(const GemmShape& g, const ChipFigures& f, int cores);

}  // namespace tpusim::sim::lowering
