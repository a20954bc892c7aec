// Builders for the instructions lowering rules put in their steps (DMA
// loads and stores between a tensor's memory and VMEM, MXU blocks, VPU
// streams, XLU passes), and the epilogue that ends an output block: the
// elementwise ops fused into the anchor (their VPU work and extra operand
// loads) and the store of the block.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "arch/chip/isa.h"
#include "sim/lowering/chip_figures.h"
#include "sim/lowering/memory_plan.h"
#include "sim/lowering/pipeline.h"

namespace tpusim::sim::lowering {

std::int64_t ceil_div(std::int64_t a, std::int64_t b);
std::int64_t round_up(std::int64_t a, std::int64_t b);
std::uint64_t bytes_of(arch::DType t, std::int64_t n);

// `rows` rows of `row_bytes` from `src` (rows `stride` bytes apart; 0 =
// contiguous) into VMEM.
arch::Instr load(Ref src, std::uint64_t row_bytes, std::uint64_t rows = 1, std::uint64_t stride = 0);
// A copy from `src` to `dst` without VMEM staging (HBM to HBM: the DMA
// engines read and write side by side).
arch::Instr copy(Ref src, Ref dst, std::uint64_t bytes);
// The same from VMEM to `dst`.
arch::Instr store(Ref dst, std::uint64_t row_bytes, std::uint64_t rows = 1, std::uint64_t stride = 0);
arch::Instr mxu(std::int64_t m, std::int64_t k, std::int64_t n, arch::DType t, int index);

// Rows of one HBM tile of a 2-D array in XLA's TPU layout: arrays are tiled
// in their last two dimensions as (8, 128) of 32-bit words, so (16, 128)
// for 16-bit and (32, 128) for 8-bit elements (Pallas TPU docs: "arrays
// are tiled as (8,128)"; narrower types pack along sublanes).
std::int64_t tile_rows(arch::DType t);

// A [rows, cols] block at (r0, c0) of a row-major [*, total_cols] array in
// the tiled HBM layout: each tile row of the block is one contiguous piece
// of tile_rows x cols elements (the block's tiles side by side), so a block
// is rows / tile_rows pieces, not `rows` pieces of `cols` elements. Blocks
// that do not cover whole tiles (fewer rows than a tile, a ragged column
// edge, a width that is not a whole number of 128-lane tiles) are read row
// by row as in a row-major layout.
struct Block2d {
  std::int64_t r0 = 0, c0 = 0, rows = 0, cols = 0, total_cols = 0;
};
arch::Instr load_block(Ref base, arch::DType t, const Block2d& b);
arch::Instr store_block(Ref base, arch::DType t, const Block2d& b);

// Appends an [m, k] x [k, n] matmul spread over the MXUs: by column tiles
// when there are at least as many as MXUs, else also by rows, or, for a few
// rows, by K tiles (each MXU a K range, then one VPU add of the partial
// sums: the last compute instruction appended). `after`: the
// step's compute instructions it waits for. Returns the MAC slots issued
// (padding to the MXU tile included).
std::uint64_t add_matmul(Step& s, const ChipFigures& f, std::int64_t m, std::int64_t k, std::int64_t n, arch::DType t,
                         const std::vector<int>& after = {}, int first_mxu = 0, int mxus = 0);
arch::Instr vpu(std::uint64_t elements, arch::DType t, double alu, double trans, int inputs, int outputs);
// Cross-lane work on an XLU over rows of `cols` elements (0: one vreg's
// lanes); a chip without XLUs (TPUv1) does it on the VPU as one extra ALU
// pass over the elements.
arch::Instr xlu(const ChipFigures& f, arch::XluOp op, std::uint64_t elements, arch::DType t, std::uint64_t cols = 0);

// How many chunks (pipeline steps) a streamed operator is cut into, never
// more than `cap`. Without a step overhead: at least `per_core` per
// TensorCore, so that the exposed first load and last store are small, and
// at most 4 MiB of traffic per chunk. With one, the count that minimises
// steps x overhead + the exposed first load and last store (2 x traffic /
// chunks): sqrt(2 x traffic time / overhead) per core, and enough chunks
// for two buffers of each to fit the VMEM budget.
std::uint64_t chunk_count(const ChipFigures& f, int cores, std::uint64_t per_core, std::uint64_t traffic_bytes,
                          std::uint64_t cap);

// Chunk `c` of `chunks` equal parts of `total` items: [begin, end) and the
// TensorCore that runs it (consecutive chunks on one core).
struct Chunk {
  std::uint64_t begin = 0, end = 0;
  int core = 0;
  bool empty() const { return end == begin; }
};
Chunk chunk_of(std::uint64_t total, std::uint64_t c, std::uint64_t chunks, int cores);

// The steps of an operator streamed in `chunks` chunks of `total` items:
// `fill` gets each non-empty chunk, its index, its step (core set) and the
// steps made so far.
std::vector<Step> chunked_steps(
    std::uint64_t total, std::uint64_t chunks, int cores,
    const std::function<void(const Chunk&, std::uint64_t, Step&, const std::vector<Step>&)>& fill);

// Whether a step is its core's first: operands every chunk needs whole
// (broadcast inputs, norm scales) are loaded once per core, with it.
bool first_on_core(std::uint64_t chunk, const Step& s, const std::vector<Step>& steps);

// Work of the elementwise ops fused into an anchor's epilogue, per output
// element, and the extra operands they read.
struct Epilogue {
  double alu = 0;
  double trans = 0;
  struct Extra {
    Ref at;
    std::uint64_t bytes = 0;  // whole tensor
    bool full = false;        // same element count as the output (read per block)
  };
  std::vector<Extra> extras;
  arch::DType out_dtype = arch::DType::bf16;
  Ref out;
};

// One output block: `rows` rows of `row_elems` elements, rows
// `row_stride_elems` apart in the output, starting `offset_elems` in.
struct OutBlock {
  std::uint64_t elems = 0;
  std::uint64_t row_elems = 0;
  std::uint64_t rows = 1;
  std::uint64_t row_stride_elems = 0;
  std::uint64_t offset_elems = 0;
  // The output is a 2-D array of rows of row_stride_elems in the tiled HBM
  // layout (see load_block).
  bool tiled = false;
};

// The anchor's own epilogue work per output element, before the fused
// ops': the accumulator's dtype, ALU and transcendental ops, and the VMEM
// streams it reads.
struct AnchorWork {
  arch::DType acc = arch::DType::f32;
  double alu = 0;
  double trans = 0;
  int inputs = 1;
};

// Appends the block's epilogue (a VPU pass when there is work or a cast)
// and its store; a second block of the same step starts a chain of its own
// (Step::epilogue_chains).
void add_epilogue(Step& s, const Epilogue& ep, const OutBlock& b, const AnchorWork& w);

// Extra operands of fused ops, loaded with the step that completes a block:
// operands as large as the output per block, the others whole with the
// first block.
void add_extra_loads(Step& s, const Epilogue& ep, std::uint64_t offset_elems, std::uint64_t elems,
                     std::uint64_t total_elems, bool first_block);

}  // namespace tpusim::sim::lowering
