// What a matmul-shaped operator's dtypes, quantization scales and N:M
// sparsity cost on a given chip, decided once per operator before its
// blocks are emitted (lower_gemm.cpp) and read again by the roofline and
// the results. Pure: no steps emitted.
//
// Models:
// - The dtype the MXU runs (`mxu`): the operands' stored dtypes, or the
//   `quantize` dtype of a dynamically quantized matmul, made common (the
//   wider one wins) and, where the MXU lacks it (mxu.throughput has no
//   entry), widened along int4 -> int8 -> bf16 -> f32 and fp8 -> bf16 -> f32
//   to the first dtype this MXU runs. No widening exists (v1's int8-only
//   MXU given bf16 operands): a LoweringError naming the chip and dtypes.
// - Each operand stored in another dtype than `mxu` is converted on the VPU
//   after its block is loaded (a cast, and a multiply by its per-block
//   scales: dequantization before the MXU). The MXU does not wait for it:
//   the compiler interleaves VPU and MXU bundles, the VPU casting the next
//   vregs while the MXU takes those already cast, so a step costs the
//   longer of the two, not their sum. An operand stored wider than a
//   `quantize` dtype is quantized dynamically: a max-abs reduction over its
//   elements (abs, max), then a multiply by the reciprocal scale and a cast.
// - Per-tensor and per-channel scales (and the scales of an operand that
//   reaches the MXU quantized) are applied to the f32 accumulator in the
//   epilogue: one multiply per output element; per-block (group) scales instead need the partial sum of every
//   K group scaled and added: two ops per output element per group.
// - Scale bytes are loaded with the operand's blocks (tensor: once;
//   channel: n scales per weight block; block: ceil(k/group) x n).
// - N:M sparsity: a sparse operand is stored compressed (Tensor::bytes);
//   the MXU skips its zeros only when the chip's mxu.sparsity pattern
//   matches the tensor's and the operand is the one mxu.sparse_operand
//   names: the MXU then streams the compressed K (k x n/m).
// Leaves out: the numerics of quantization, zero points (asymmetric
// quantization), packing int4 pairs on the VPU as a separate pass.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "arch/chip/isa.h"
#include "arch/common/chip_config.h"
#include "arch/vpu/vpu_timing.h"
#include "workloads/ir/tensor.h"

namespace tpusim::sim::lowering {

// The dtype this MXU runs for operands stored as `t`: t itself, or the
// first wider dtype it supports; nullopt when none.
std::optional<arch::DType> mxu_dtype_for(const arch::MxuConfig& mxu, arch::DType t);

struct OperandQuant {
  double ops = 0;        // VPU ALU ops per element loaded (cast, scale, dynamic quantization)
  bool dynamic = false;  // quantized dynamically in the kernel
  bool scaled = false;   // its scales reach the epilogue (applied to the accumulator)
};

struct GemmQuant {
  arch::DType mxu = arch::DType::bf16;
  OperandQuant a, b;
  double out_ops = 0;          // VPU ops per output element in the epilogue (rescale)
  double group_ops = 0;        // per output element per K group (block scales at the MXU)
  std::int64_t group = 0;      // K elements per scale of block scales applied per group
  double mxu_k_fraction = 1;   // the MXU streams k x this (N:M sparse MXU: n/m)
  bool sparse_mxu = false;     // the MXU skips the zeros of a sparse operand
  bool any() const { return a.ops > 0 || b.ops > 0 || out_ops > 0 || group_ops > 0; }
};

// Throws LoweringError (sim/lowering/lowering.h) when no MXU dtype exists.
GemmQuant plan_gemm_quant(const arch::TpuConfig& cfg, const workloads::Tensor& a, const workloads::Tensor& b,
                          std::optional<arch::DType> quantize, const std::string& op_name);

// Scale elements of `t` that a [k rows, n cols] block of it needs (the
// block's share of its per-channel or per-block scales; the one scale of a
// per-tensor one).
std::uint64_t block_scale_count(const workloads::Tensor& t, std::int64_t k, std::int64_t n);

// VPU cycles of a stream instruction on this chip (vpu_cost's cycles), for
// the quantization time reported per operator.
std::uint64_t vpu_cycles(const arch::VpuConfig& cfg, const arch::Instr& in);

}  // namespace tpusim::sim::lowering
