// What a quantized or N:M sparse matmul costs on each generation
// (sim/lowering/gemm_quant.h): the dtype the MXU runs, the VPU work of
// conversion, dynamic quantization and rescaling, the scales a block
// loads, and the stored bytes of scaled and compressed tensors.
#include <gtest/gtest.h>

#include "sim/config/config_loader.h"
#include "sim/lowering/gemm_quant.h"
#include "sim/lowering/lowering.h"

using namespace tpusim;
using arch::DType;
using sim::lowering::GemmQuant;
using sim::lowering::plan_gemm_quant;
using workloads::ScaleKind;
using workloads::Tensor;

namespace {

Tensor tensor(DType t, std::int64_t k, std::int64_t n) {
  Tensor x;
  x.name = "t";
  x.shape = {k, n};
  x.dtype = t;
  return x;
}

GemmQuant plan(const char* arch, const Tensor& a, const Tensor& b, std::optional<DType> q = std::nullopt) {
  return plan_gemm_quant(sim::load_tpu_config(arch), a, b, q, "op");
}

}  // namespace

TEST(GemmQuant, NativeDtypesRunAsStoredWithoutVpuWork) {
  // configs/v5e.yaml lists int8; v7 lists fp8; bf16 everywhere but v1.
  EXPECT_EQ(plan("v5e", tensor(DType::int8, 8, 8), tensor(DType::int8, 8, 8)).mxu, DType::int8);
  EXPECT_EQ(plan("v7", tensor(DType::fp8_e4m3, 8, 8), tensor(DType::fp8_e4m3, 8, 8)).mxu, DType::fp8_e4m3);
  const GemmQuant bf = plan("v5e", tensor(DType::bf16, 8, 8), tensor(DType::bf16, 8, 8));
  EXPECT_EQ(bf.mxu, DType::bf16);
  EXPECT_FALSE(bf.any());
  EXPECT_EQ(bf.mxu_k_fraction, 1.0);
}

TEST(GemmQuant, Fp8OnV5eIsConvertedToBf16OnTheVpu) {
  // v5e's MXU has no fp8 (configs/v5e.yaml): both operands take one cast.
  const GemmQuant q = plan("v5e", tensor(DType::fp8_e4m3, 8, 8), tensor(DType::fp8_e4m3, 8, 8));
  EXPECT_EQ(q.mxu, DType::bf16);
  EXPECT_EQ(q.a.ops, 1);
  EXPECT_EQ(q.b.ops, 1);
  EXPECT_EQ(q.out_ops, 0);
}

TEST(GemmQuant, Int8OnV7WidensToBf16) {
  // v7 lists no integer dtype: int8 x int8 runs as bf16 after two casts.
  const GemmQuant q = plan("v7", tensor(DType::int8, 8, 8), tensor(DType::int8, 8, 8));
  EXPECT_EQ(q.mxu, DType::bf16);
  EXPECT_EQ(q.a.ops + q.b.ops, 2);
}

TEST(GemmQuant, V1CannotTakeBf16) {
  // v1's MXU runs int8 only: nothing wider exists to convert bf16 into.
  try {
    plan("v1", tensor(DType::bf16, 8, 8), tensor(DType::bf16, 8, 8));
    FAIL() << "no error";
  } catch (const sim::LoweringError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot take bf16"), std::string::npos) << e.what();
  }
}

TEST(GemmQuant, WeightOnlyInt8DequantizesBeforeTheMxu) {
  // w8a16 with per-channel scales: a cast per weight, the scales on the
  // accumulator (one multiply per output element).
  Tensor w = tensor(DType::int8, 4096, 4096);
  w.scales.kind = ScaleKind::channel;
  const GemmQuant q = plan("v5e", tensor(DType::bf16, 8, 4096), w);
  EXPECT_EQ(q.mxu, DType::bf16);
  EXPECT_EQ(q.b.ops, 1);
  EXPECT_EQ(q.out_ops, 1);
  EXPECT_EQ(q.group_ops, 0);
}

TEST(GemmQuant, Int4GroupScalesAreMultipliedIntoTheValues) {
  Tensor w = tensor(DType::int4, 4096, 4096);
  w.scales = {ScaleKind::block, 128, DType::bf16};
  const GemmQuant q = plan("v5e", tensor(DType::bf16, 8, 4096), w);
  EXPECT_EQ(q.b.ops, 2);  // cast + scale
  EXPECT_EQ(q.out_ops, 0);
  EXPECT_EQ(sim::lowering::block_scale_count(w, 1024, 512), 512u * 8);  // 8 groups of 128 in K = 1024
}

TEST(GemmQuant, Int8GroupScalesAtAnInt8MxuScaleEachGroupsPartialSum) {
  Tensor w = tensor(DType::int8, 4096, 4096);
  w.scales = {ScaleKind::block, 128, DType::f32};
  const GemmQuant q = plan("v5e", tensor(DType::int8, 8, 4096), w);
  EXPECT_EQ(q.mxu, DType::int8);
  EXPECT_EQ(q.group, 128);
  EXPECT_EQ(q.group_ops, 2);  // multiply, add per group per output element
}

TEST(GemmQuant, DynamicQuantizationCostsTheReductionAndRescale) {
  // bf16 activations quantized to int8 in the kernel: abs, max, multiply,
  // cast per element; the product of the scales on the accumulator.
  Tensor w = tensor(DType::int8, 4096, 4096);
  w.scales.kind = ScaleKind::channel;
  const GemmQuant q = plan("v5e", tensor(DType::bf16, 8, 4096), w, DType::int8);
  EXPECT_EQ(q.mxu, DType::int8);
  EXPECT_TRUE(q.a.dynamic);
  EXPECT_EQ(q.a.ops, 4);
  EXPECT_EQ(q.b.ops, 0);
  EXPECT_EQ(q.out_ops, 1);
  // The int8 training recipe: both bf16 operands quantized.
  const GemmQuant t = plan("v5p", tensor(DType::bf16, 8, 8), tensor(DType::bf16, 8, 8), DType::int8);
  EXPECT_EQ(t.mxu, DType::int8);
  EXPECT_TRUE(t.a.dynamic && t.b.dynamic);
}

TEST(GemmQuant, SparseWeightsSpeedUpOnlyOnASparseMxu) {
  Tensor w = tensor(DType::bf16, 4096, 4096);
  w.sparsity = {2, 4};
  EXPECT_FALSE(plan("v5e", tensor(DType::bf16, 8, 4096), w).sparse_mxu);  // shipped: no sparse mode
  arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  cfg.mxu.sparsity.n = 2;
  cfg.mxu.sparsity.m = 4;
  const GemmQuant q = plan_gemm_quant(cfg, tensor(DType::bf16, 8, 4096), w, std::nullopt, "op");
  EXPECT_TRUE(q.sparse_mxu);
  EXPECT_EQ(q.mxu_k_fraction, 0.5);
  // 1:4 fits a 2:4 MXU (at most 2 per group of 4); 4:8 does not.
  w.sparsity = {1, 4};
  EXPECT_TRUE(plan_gemm_quant(cfg, tensor(DType::bf16, 8, 4096), w, std::nullopt, "op").sparse_mxu);
  w.sparsity = {4, 8};
  EXPECT_FALSE(plan_gemm_quant(cfg, tensor(DType::bf16, 8, 4096), w, std::nullopt, "op").sparse_mxu);
  // An MXU whose sparse operand is the activations ignores sparse weights.
  w.sparsity = {2, 4};
  cfg.mxu.sparsity.operand = arch::SparseOperand::activations;
  EXPECT_FALSE(plan_gemm_quant(cfg, tensor(DType::bf16, 8, 4096), w, std::nullopt, "op").sparse_mxu);
}

TEST(TensorStorage, ScalesAndCompressionCountInItsBytes) {
  Tensor w = tensor(DType::int8, 4096, 1024);
  EXPECT_EQ(w.bytes(), 4096u * 1024);
  w.scales.kind = ScaleKind::channel;  // 1024 f32 scales
  EXPECT_EQ(w.scale_bytes(), 1024u * 4);
  EXPECT_EQ(w.bytes(), 4096u * 1024 + 4096);
  w.dtype = DType::int4;
  w.scales = {ScaleKind::block, 128, DType::bf16};  // 32 groups x 1024 x 2 B
  EXPECT_EQ(w.scale_bytes(), 32u * 1024 * 2);
  EXPECT_EQ(w.bytes(), 4096u * 1024 / 2 + 65536);
  Tensor s = tensor(DType::bf16, 4096, 1024);
  s.sparsity = {2, 4};
  // Half the values kept (2 B each) plus 2 bits of position per kept value.
  EXPECT_EQ(s.value_bytes(), 2048u * 1024 * 2);
  EXPECT_EQ(s.metadata_bytes(), 2048u * 1024 * 2 / 8);
  EXPECT_EQ(s.bytes(), 2048u * 1024 * 2 + 2048u * 1024 / 4);
}
