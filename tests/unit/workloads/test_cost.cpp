// FLOP, MAC, transcendental and byte counts against hand-computed closed forms.
#include <gtest/gtest.h>

#include "workloads/ir/builder.h"
#include "workloads/ir/cost.h"

using namespace tpusim::workloads;
using tpusim::arch::DType;

namespace {
OpCost cost_of(const WorkloadBuilder& b, const std::string& op) { return op_cost(b.peek(), *b.peek().find_op(op)); }
}  // namespace

TEST(Cost, SquareGemm) {
  WorkloadBuilder b("t");
  auto x = b.input("x", {8192, 8192}, DType::bf16);
  auto w = b.weight("w", {8192, 8192}, DType::bf16);
  b.matmul("mm", x, w);
  OpCost c = cost_of(b, "mm");
  // MACs = M*K*N = 8192^3 = 549,755,813,888; FLOPs = 2x.
  EXPECT_EQ(c.macs, 549755813888ull);
  EXPECT_EQ(c.flops, 1099511627776ull);
  // Three 8192x8192 bf16 matrices: 3 * 67,108,864 * 2 bytes.
  EXPECT_EQ(c.bytes_read, 2ull * 134217728ull);
  EXPECT_EQ(c.bytes_written, 134217728ull);
  EXPECT_EQ(c.min_hbm_bytes(), 402653184ull);
}

TEST(Cost, BatchedEinsum) {
  WorkloadBuilder b("t");
  auto x = b.input("x", {4, 8, 16}, DType::f32);
  auto w = b.input("w", {4, 32, 16}, DType::f32);
  b.matmul("bmm", x, w, "bmk,bnk->bmn");
  // batch 4 * m 8 * n 32 * k 16 = 16384 MACs
  EXPECT_EQ(cost_of(b, "bmm").macs, 16384u);
  EXPECT_EQ(cost_of(b, "bmm").flops, 32768u);
}

TEST(Cost, ResNetStemConvAndDepthwise) {
  WorkloadBuilder b("t");
  auto x = b.input("x", {1, 224, 224, 3}, DType::bf16);
  auto w = b.weight("w", {7, 7, 3, 64}, DType::bf16);
  Conv2dAttrs a;
  a.stride_h = a.stride_w = 2;
  a.padding = PaddingMode::same;
  b.conv2d("stem", x, w, a);
  // Output 112*112*64 = 802,816 elements, each 7*7*3 = 147 MACs: 118,013,952.
  EXPECT_EQ(cost_of(b, "stem").macs, 118013952u);
  EXPECT_EQ(cost_of(b, "stem").flops, 236027904u);
  auto y = b.input("y", {1, 56, 56, 32}, DType::bf16);
  auto dw = b.weight("dw", {3, 3, 1, 32}, DType::bf16);
  Conv2dAttrs d;
  d.groups = 32;
  d.padding = PaddingMode::same;
  b.conv2d("dwc", y, dw, d);
  // 56*56*32 outputs * 9 MACs = 903,168 (one input channel per group).
  EXPECT_EQ(cost_of(b, "dwc").macs, 903168u);
}

TEST(Cost, ElementwiseReduceSoftmaxNorms) {
  WorkloadBuilder b("t");
  auto x = b.input("x", {4, 1024}, DType::bf16);
  b.elementwise("g", "gelu", {x});
  // tanh-form GELU: 8 flops + 1 tanh per element; 4096 elements.
  EXPECT_EQ(cost_of(b, "g").flops, 32768u);
  EXPECT_EQ(cost_of(b, "g").transcendentals, 4096u);
  auto s = b.input("s", {2, 10}, DType::f32);
  b.softmax("sm", s);
  // rows 2, r 10: max 9 + sub 10 + sum 9 + div 10 = 38 per row -> 76; 20 exps.
  EXPECT_EQ(cost_of(b, "sm").flops, 76u);
  EXPECT_EQ(cost_of(b, "sm").transcendentals, 20u);
  auto n = b.input("n", {4, 8}, DType::f32);
  auto g = b.weight("gamma", {8}, DType::f32);
  auto be = b.weight("beta", {8}, DType::f32);
  b.layer_norm("ln", n, g, be);
  // 32 elements * (5 + scale 1 + bias 1) = 224; one rsqrt per row: 4.
  EXPECT_EQ(cost_of(b, "ln").flops, 224u);
  EXPECT_EQ(cost_of(b, "ln").transcendentals, 4u);
  b.rms_norm("rms", n, g);
  EXPECT_EQ(cost_of(b, "rms").flops, 128u);  // 32 * (3 + 1)
  b.reduce("rsum", n, ReduceKind::sum, {-1});
  EXPECT_EQ(cost_of(b, "rsum").flops, 28u);  // 4 rows * 7 adds
  b.reduce("rmean", n, ReduceKind::mean, {-1});
  EXPECT_EQ(cost_of(b, "rmean").flops, 32u);  // 28 adds + 4 divides
  // int4: 3 elements -> 12 bits -> 2 bytes.
  auto q = b.input("q4", {3}, DType::int4);
  b.elementwise("neg4", "neg", {q});
  EXPECT_EQ(cost_of(b, "neg4").bytes_read, 2u);
}

TEST(Cost, AttentionScorePairs) {
  EXPECT_EQ(attention_score_pairs(4, 6, false), 24u);
  EXPECT_EQ(attention_score_pairs(4, 4, true), 10u);     // 1+2+3+4
  EXPECT_EQ(attention_score_pairs(2, 5, true), 9u);      // query 0 sees 4 keys, query 1 sees 5
  EXPECT_EQ(attention_score_pairs(1, 100, true), 100u);  // decode sees the whole cache
  EXPECT_EQ(attention_score_pairs(5, 3, true), 6u);      // 0+0+1+2+3
  // A window caps each query's keys: 1+2+3+3+3+3 for 6 queries, window 3.
  EXPECT_EQ(attention_score_pairs(6, 6, true, 3), 15u);
  EXPECT_EQ(attention_score_pairs(1, 100, true, 8), 8u);  // decode over a window
  // The closed form against counting every (query, key) pair, over query
  // and key lengths either way round and windows below, at and above both.
  for (std::int64_t q = 1; q <= 9; ++q)
    for (std::int64_t kv = 1; kv <= 9; ++kv)
      for (std::int64_t w = 0; w <= 11; ++w) {
        std::uint64_t n = 0;
        for (std::int64_t i = 0; i < q; ++i)
          for (std::int64_t j = 0; j < kv; ++j) {
            const std::int64_t diag = i + (kv - q);
            if (j <= diag && (w == 0 || j > diag - w)) ++n;
          }
        EXPECT_EQ(attention_score_pairs(q, kv, true, w), n) << q << " " << kv << " " << w;
      }
}

TEST(Cost, AttentionFlops) {
  WorkloadBuilder b("t");
  auto q = b.input("q", {1, 4, 2, 8}, DType::bf16);
  auto k = b.kv_cache("k", {1, 6, 1, 8}, DType::bf16);
  auto v = b.kv_cache("v", {1, 6, 1, 8}, DType::bf16);
  b.attention("a", q, k, v, false);
  OpCost c = cost_of(b, "a");
  // pairs = batch 1 * heads 2 * 4 * 6 = 48; MACs = 48 * (D 8 + Dv 8) = 768;
  // FLOPs = 2*768 + 5*48 = 1776; 48 exps.
  EXPECT_EQ(c.macs, 768u);
  EXPECT_EQ(c.flops, 1776u);
  EXPECT_EQ(c.transcendentals, 48u);
  // q 64 + k 48 + v 48 elements read, 64 written, 2 bytes each.
  EXPECT_EQ(c.bytes_read, 320u);
  EXPECT_EQ(c.bytes_written, 128u);
  auto qc = b.input("qc", {1, 4, 2, 8}, DType::bf16);
  auto kc = b.kv_cache("kc", {1, 4, 1, 8}, DType::bf16);
  b.attention("causal", qc, kc, kc, true);
  // 2 heads * 10 pairs = 20; MACs 20 * 16 = 320; FLOPs 640 + 100.
  EXPECT_EQ(cost_of(b, "causal").flops, 740u);
  // kc is read once even though it is both key and value: 64 + 32 elements.
  EXPECT_EQ(cost_of(b, "causal").bytes_read, 192u);
}

// Flash attention's backward kernels (AttentionPass), value width 4 to
// tell D from Dv: 48 pairs. grad_q (dO in q's place, K in V's) does
// S = QK^T, dP = dO V^T and dQ = dS K: 48 x (8 + 8 + 8) = 1152 MACs, S
// recomputed (384); grad_kv does S, dP = dO V^T, dV = P^T dO and
// dK = dS^T Q: 48 x 2 x (8 + 4) = 1152, S and dP recomputed (576). Both do
// 7 VPU ops per score; the forward recomputes nothing. The fused grad_qkv
// does S, dP, dV, dK and dQ: 48 x (3 x 8 + 2 x 4) = 1536, S recomputed.
TEST(Cost, BackwardAttentionKernels) {
  WorkloadBuilder b("t");
  auto q = b.input("q", {1, 4, 2, 8}, DType::bf16);
  auto k = b.kv_cache("k", {1, 6, 1, 8}, DType::bf16);
  auto v = b.kv_cache("v", {1, 6, 1, 4}, DType::bf16);
  b.attention("fwd", q, k, v, false);
  b.attention("dq", q, k, k, false, std::nullopt, AttentionPass::grad_q);
  b.attention("dkv", q, k, v, false, std::nullopt, AttentionPass::grad_kv);
  const OpCost fwd = cost_of(b, "fwd"), dq = cost_of(b, "dq"), dkv = cost_of(b, "dkv");
  EXPECT_EQ(fwd.macs, 576u);
  EXPECT_EQ(fwd.recompute_macs, 0u);
  EXPECT_EQ(dq.macs, 1152u);
  EXPECT_EQ(dq.recompute_macs, 384u);
  EXPECT_EQ(dq.flops, 2 * 1152u + 7 * 48u);
  EXPECT_EQ(dkv.macs, 1152u);
  EXPECT_EQ(dkv.recompute_macs, 576u);
  EXPECT_EQ(dkv.flops, 2 * 1152u + 7 * 48u);
  EXPECT_EQ(dq.transcendentals, 48u);
  b.attention("dqkv", q, k, v, false, std::nullopt, AttentionPass::grad_qkv);
  const OpCost dqkv = cost_of(b, "dqkv");
  EXPECT_EQ(dqkv.macs, 1536u);
  EXPECT_EQ(dqkv.recompute_macs, 384u);
  EXPECT_EQ(dqkv.flops, 2 * 1536u + 7 * 48u);
}

// Dense causal attention's matmuls (MatmulAttrs::causal): every pair is
// computed (macs), the masked ones are not useful (masked_macs). 6 queries
// aligned with the last of 6 keys keep 21 of 36 pairs; QK^T with head
// dim 8 over 2 heads: 2 x 36 x 8 = 576 MACs, 2 x 15 x 8 = 240 masked,
// the unmasked 336 = the causal attention operator's QK^T share.
TEST(Cost, CausalMatmulMasksPairs) {
  WorkloadBuilder b("t");
  auto q = b.input("q", {2, 6, 8}, DType::bf16);
  auto k = b.input("k", {2, 6, 8}, DType::bf16);
  b.matmul("s", q, k, "hqd,hkd->hqk", std::nullopt, "qk");
  b.matmul("full", q, k, "hqd,hkd->hqk");
  const OpCost s = cost_of(b, "s"), full = cost_of(b, "full");
  EXPECT_EQ(s.macs, 576u);
  EXPECT_EQ(s.flops, 2 * 576u);
  EXPECT_EQ(s.masked_macs, 240u);
  EXPECT_EQ(full.masked_macs, 0u);
  EXPECT_EQ(s.macs - s.masked_macs, 2 * attention_score_pairs(6, 6, true) * 8);
  // Four queries over six keys (the queries are the last four): 4 + 5 + 6 + ... kept.
  WorkloadBuilder c("t");
  auto q4 = c.input("q", {1, 4, 8}, DType::bf16);
  auto k6 = c.input("k", {1, 6, 8}, DType::bf16);
  c.matmul("s", q4, k6, "hqd,hkd->hqk", std::nullopt, "qk");
  const OpCost s4 = cost_of(c, "s");
  EXPECT_EQ(s4.macs - s4.masked_macs, attention_score_pairs(4, 6, true) * 8);
  EXPECT_EQ(attention_score_pairs(4, 6, true), 3u + 4u + 5u + 6u);
  // A window of 2 keys (local attention) keeps 1 + 2 x 5 = 11 of the 36
  // pairs per head: 2 x 11 x 8 = 176 useful MACs of the same 576.
  WorkloadBuilder l("t");
  auto ql = l.input("q", {2, 6, 8}, DType::bf16);
  auto kl = l.input("k", {2, 6, 8}, DType::bf16);
  l.matmul("s", ql, kl, "hqd,hkd->hqk", std::nullopt, "qk", 2);
  const OpCost sl = cost_of(l, "s");
  EXPECT_EQ(sl.macs, 576u);
  EXPECT_EQ(sl.macs - sl.masked_macs, 176u);
  EXPECT_EQ(attention_score_pairs(6, 6, true, 2), 11u);
}

TEST(Cost, GatherReadsOnlyLookedUpRows) {
  WorkloadBuilder b("t");
  auto table = b.weight("table", {1000, 64}, DType::bf16);
  auto ids = b.input("ids", {10}, DType::f32);
  b.gather("g", table, ids);
  OpCost c = cost_of(b, "g");
  // 10 rows * 64 * 2 bytes = 1280 from the table + 10 * 4 index bytes.
  EXPECT_EQ(c.bytes_read, 1320u);
  EXPECT_EQ(c.bytes_written, 1280u);
  EXPECT_EQ(c.flops, 0u);
  auto many = b.input("many", {5000}, DType::f32);
  b.gather("g2", table, many);
  // 5000 rows would exceed the table: read the table (128,000 B) + 20,000 index bytes.
  EXPECT_EQ(cost_of(b, "g2").bytes_read, 148000u);
}

TEST(Cost, WorkloadTotalIsSumOfOps) {
  WorkloadBuilder b("t");
  auto x = b.input("x", {2, 3}, DType::f32);
  auto w = b.weight("w", {3, 4}, DType::f32);
  auto y = b.matmul("mm", x, w);    // 24 MACs, 48 FLOPs
  b.elementwise("r", "relu", {y});  // 8 FLOPs
  OpCost t = workload_cost(b.build());
  EXPECT_EQ(t.flops, 56u);
  EXPECT_EQ(t.macs, 24u);
}
