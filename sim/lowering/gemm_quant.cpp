#include "sim/lowering/gemm_quant.h"

#include <algorithm>
#include <vector>

#include "arch/vpu/vpu_unit_timing.h"
#include "sim/lowering/lowering.h"

namespace tpusim::sim::lowering {

using arch::DType;
using workloads::ScaleKind;
using workloads::Tensor;

namespace {

bool runs(const arch::MxuConfig& mxu, DType t) {
  auto it = mxu.throughput.find(t);
  return it != mxu.throughput.end() && it->second > 0;
}

// Widening order: every dtype a value of `t` converts to without loss of
// range (int8 and fp8 values are exact in bf16; int4 in int8).
std::vector<DType> widenings(DType t) {
  switch (t) {
    case DType::int4: return {DType::int4, DType::int8, DType::bf16, DType::f32};
    case DType::int8: return {DType::int8, DType::bf16, DType::f32};
    case DType::fp8_e4m3: return {DType::fp8_e4m3, DType::bf16, DType::f32};
    case DType::fp8_e5m2: return {DType::fp8_e5m2, DType::bf16, DType::f32};
    case DType::bf16: return {DType::bf16, DType::f32};
    case DType::f32: return {DType::f32};
  }
  return {t};
}

bool is_integer(DType t) { return t == DType::int8 || t == DType::int4; }

// The common dtype two operands meet in before the MXU: the same dtype, or
// the wider one (an integer and an fp8 operand meet in bf16).
DType common_dtype(DType x, DType y) {
  if (x == y) return x;
  const bool fx = !is_integer(x), fy = !is_integer(y);
  const int bx = arch::dtype_bits(x), by = arch::dtype_bits(y);
  if (fx != fy && std::max(bx, by) <= 8) return DType::bf16;
  if (bx != by) return bx > by ? x : y;
  return DType::bf16;  // fp8_e4m3 with fp8_e5m2, or int8 with fp8
}

}  // namespace

std::optional<DType> mxu_dtype_for(const arch::MxuConfig& mxu, DType t) {
  for (DType w : widenings(t))
    if (runs(mxu, w)) return w;
  return std::nullopt;
}

GemmQuant plan_gemm_quant(const arch::TpuConfig& cfg, const Tensor& a, const Tensor& b, std::optional<DType> quantize,
                          const std::string& op_name) {
  GemmQuant q;
  // A dynamically quantized operand reaches the MXU at the quantize dtype
  // when it is stored wider; otherwise as stored.
  auto fed = [&](const Tensor& t) {
    return quantize && arch::dtype_bits(t.dtype) > arch::dtype_bits(*quantize) ? *quantize : t.dtype;
  };
  const DType want = common_dtype(fed(a), fed(b));
  const auto run = mxu_dtype_for(cfg.mxu, want);
  if (!run) {
    std::string have;
    for (const auto& [t, f] : cfg.mxu.throughput) have += (have.empty() ? "" : ", ") + std::string(arch::dtype_name(t));
    throw LoweringError(op_name + ": the MXU of " + cfg.chip.name + " runs " + (have.empty() ? "no dtype" : have) +
                        " and cannot take " + std::string(arch::dtype_name(want)) +
                        " operands (no wider dtype it runs exists to convert them to)");
  }
  q.mxu = *run;
  const bool int_mxu = arch::dtype_bits(q.mxu) <= 8;
  auto operand = [&](const Tensor& t, OperandQuant& o) {
    const bool has_scales = t.scales.kind != ScaleKind::none;
    if (quantize && arch::dtype_bits(t.dtype) > arch::dtype_bits(*quantize) && q.mxu == *quantize) {
      // abs + max for the scale, then multiply by 1/scale and cast.
      o.dynamic = true;
      o.ops = 4;
      o.scaled = true;
    } else if (t.dtype != q.mxu) {
      // Cast to the MXU dtype. Per-block scales vary along K and are
      // multiplied into the values here; per-tensor and per-channel ones
      // commute with the sum over K and go to the accumulator.
      o.ops = 1 + (t.scales.kind == ScaleKind::block ? 1 : 0);
      o.scaled = has_scales && t.scales.kind != ScaleKind::block;
    } else if (has_scales && int_mxu) {
      o.scaled = true;  // applied to the accumulator
    } else if (has_scales) {
      o.ops = 1;  // a float operand's scales multiplied in before the MXU
    }
  };
  operand(a, q.a);
  operand(b, q.b);
  // Scales that reach the accumulator: per-block weight scales need the
  // partial sum of each group scaled (multiply, add); the rest fold into one
  // multiply per output element.
  const bool b_groups = q.b.scaled && !q.b.dynamic && b.scales.kind == ScaleKind::block && b.dtype == q.mxu;
  if (b_groups) {
    q.group = b.scales.group;
    q.group_ops = 2;
  }
  if ((q.a.scaled) || (q.b.scaled && !b_groups)) q.out_ops = 1;

  const arch::MxuSparsityConfig& sp = cfg.mxu.sparsity;
  const bool b_sparse = !b.sparsity.dense(), a_sparse = !a.sparsity.dense();
  const Tensor* sparse = sp.operand == arch::SparseOperand::weights ? (b_sparse ? &b : nullptr)
                                                                     : (a_sparse ? &a : nullptr);
  // Each group of the MXU's m holds at most n non-zeros when the tensor's
  // groups are whole multiples of m with at most n non-zeros each.
  if (sp.n > 0 && sparse && sparse->sparsity.m % sp.m == 0 && sparse->sparsity.n <= sp.n) {
    q.sparse_mxu = true;
    q.mxu_k_fraction = static_cast<double>(sp.n) / sp.m;
  }
  return q;
}

std::uint64_t block_scale_count(const Tensor& t, std::int64_t k, std::int64_t n) {
  switch (t.scales.kind) {
    case ScaleKind::none: return 0;
    case ScaleKind::tensor: return 1;
    case ScaleKind::channel: return static_cast<std::uint64_t>(n);
    case ScaleKind::block:
      return static_cast<std::uint64_t>(n) *
             static_cast<std::uint64_t>((k + t.scales.group - 1) / std::max<std::int64_t>(1, t.scales.group));
  }
  return 0;
}

std::uint64_t vpu_cycles(const arch::VpuConfig& cfg, const arch::Instr& in) {
  const auto* w = std::get_if<arch::VpuWork>(&in.work);
  return w ? arch::vpu_cost(cfg, arch::to_stream_op(*w)).cycles : 0;
}

}  // namespace tpusim::sim::lowering
