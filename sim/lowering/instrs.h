// Builders for the instructions lowering rules put in their steps (DMA
// loads and stores between a tensor's memory and VMEM, MXU blocks, VPU
// streams, XLU passes), and the epilogue that ends an output block: the
// elementwise ops fused into the anchor (their VPU work and extra operand
// loads) and the store of the block.
#pragma once

#include <cstdint>
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
// The same from VMEM to `dst`.
arch::Instr store(Ref dst, std::uint64_t row_bytes, std::uint64_t rows = 1, std::uint64_t stride = 0);
arch::Instr mxu(std::int64_t m, std::int64_t k, std::int64_t n, arch::DType t, int index);
arch::Instr vpu(std::uint64_t elements, arch::DType t, double alu, double trans, int inputs, int outputs);
// Cross-lane work on an XLU; a chip without XLUs (TPUv1) does it on the
// VPU as one extra ALU pass over the elements.
arch::Instr xlu(const ChipFigures& f, arch::XluOp op, std::uint64_t elements, arch::DType t);

// How many chunks a streamed operator is cut into: at least `per_core` per
// TensorCore, so that the exposed first load and last store are small, and
// at most 4 MiB of traffic per chunk; never more than `cap`.
std::uint64_t chunk_count(int cores, std::uint64_t per_core, std::uint64_t traffic_bytes, std::uint64_t cap);

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
// and its store.
void add_epilogue(Step& s, const Epilogue& ep, const OutBlock& b, const AnchorWork& w);

// Extra operands of fused ops, loaded with the step that completes a block:
// operands as large as the output per block, the others whole with the
// first block.
void add_extra_loads(Step& s, const Epilogue& ep, std::uint64_t offset_elems, std::uint64_t elems,
                     std::uint64_t total_elems, bool first_block);

}  // namespace tpusim::sim::lowering
