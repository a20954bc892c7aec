// Shape and dtype inference for every op kind, through WorkloadBuilder.
#include <gtest/gtest.h>

#include "workloads/ir/builder.h"

using namespace tpusim::workloads;
using tpusim::arch::DType;

namespace {
// Runs f and returns the WorkloadError message ("" if nothing was thrown).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const WorkloadError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(ShapeInference, MatmulDefault2D) {
  WorkloadBuilder b("t");
  auto x = b.input("x", {8, 4096}, DType::bf16);
  auto w = b.weight("w", {4096, 1024}, DType::bf16);
  auto y = b.matmul("proj", x, w);
  EXPECT_EQ(y.shape, (Shape{8, 1024}));
  EXPECT_EQ(y.dtype, DType::bf16);
  EXPECT_EQ(y.name, "proj");
}

TEST(ShapeInference, MatmulRank3TimesRank2UsesLastDim) {
  WorkloadBuilder b("t");
  auto x = b.input("x", {2, 7, 64}, DType::bf16);
  auto w = b.weight("w", {64, 32}, DType::bf16);
  EXPECT_EQ(default_matmul_equation(3, 2), "amk,kn->amn");
  EXPECT_EQ(default_matmul_equation(2, 2), "mk,kn->mn");
  EXPECT_EQ(default_matmul_equation(1, 2), "k,kn->n");
  EXPECT_EQ(default_matmul_equation(4, 4), "abmk,abkn->abmn");
  EXPECT_THROW(default_matmul_equation(3, 4), WorkloadError);
  EXPECT_EQ(b.matmul("p", x, w).shape, (Shape{2, 7, 32}));
}

TEST(ShapeInference, MatmulBatchedEinsumAndOutDtype) {
  WorkloadBuilder b("t");
  auto x = b.input("x", {4, 8, 16}, DType::bf16);
  auto w = b.input("w", {4, 16, 32}, DType::bf16);
  auto y = b.matmul("bmm", x, w, "bmk,bkn->bmn", DType::f32);
  EXPECT_EQ(y.shape, (Shape{4, 8, 32}));
  EXPECT_EQ(y.dtype, DType::f32);
  // Output order is free: "bmk,bkn->nbm" permutes the result.
  EXPECT_EQ(b.matmul("bmm2", x, w, "bmk,bkn->nbm").shape, (Shape{32, 4, 8}));
}

TEST(ShapeInference, MatmulDotGeneralDims) {
  // lhs [b, m, k] dims 0,1,2; rhs [b, k, n]: batch (0,0), contracting (2,1).
  // Labels: batch a, contracting b, lhs free c, rhs free d.
  std::string eq = dot_general_equation(3, 3, {0}, {0}, {2}, {1});
  EXPECT_EQ(eq, "acb,abd->acd");
  WorkloadBuilder b("t");
  auto x = b.input("x", {4, 8, 16}, DType::bf16);
  auto w = b.input("w", {4, 16, 32}, DType::bf16);
  EXPECT_EQ(b.matmul("dg", x, w, eq).shape, (Shape{4, 8, 32}));
  auto dims = matmul_dims(MatmulAttrs{eq, std::nullopt, std::nullopt}, {4, 8, 16}, {4, 16, 32});
  EXPECT_EQ(dims.batch, 4);
  EXPECT_EQ(dims.m, 8);
  EXPECT_EQ(dims.k, 16);
  EXPECT_EQ(dims.n, 32);
}

TEST(ShapeInference, MatmulMismatchNamesBothShapes) {
  WorkloadBuilder b("t");
  auto x = b.input("x", {8, 4096}, DType::bf16);
  auto w = b.weight("w", {1024, 4096}, DType::bf16);
  std::string msg = error_of([&] { b.matmul("proj", x, w); });
  EXPECT_NE(msg.find("op 'proj'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[8, 4096]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[1024, 4096]"), std::string::npos) << msg;
}

TEST(ShapeInference, EinsumRejectsBadEquations) {
  EXPECT_THROW(parse_einsum("mk,kn"), WorkloadError);         // no arrow
  EXPECT_THROW(parse_einsum("mk,kn,nj->mj"), WorkloadError);  // three operands
  EXPECT_THROW(parse_einsum("mkk,kn->mn"), WorkloadError);    // repeated label
  EXPECT_THROW(parse_einsum("mk,kn->mz"), WorkloadError);     // z from nowhere
  EXPECT_THROW(parse_einsum("mkj,kn->mn"), WorkloadError);    // j summed in lhs only
  EinsumSpec s = parse_einsum("bmk,bnk->bmn");
  EXPECT_EQ(s.batch, "b");
  EXPECT_EQ(s.contracting, "k");
  EXPECT_EQ(s.lhs_free, "m");
  EXPECT_EQ(s.rhs_free, "n");
}

TEST(ShapeInference, Conv2dPaddingModes) {
  WorkloadBuilder b("t");
  auto x = b.input("x", {1, 224, 224, 3}, DType::bf16);
  auto w = b.weight("w", {7, 7, 3, 64}, DType::bf16);
  Conv2dAttrs a;
  a.stride_h = a.stride_w = 2;
  a.padding = PaddingMode::explicit_pads;
  a.pad_top = a.pad_bottom = a.pad_left = a.pad_right = 3;
  // (224 + 3 + 3 - 7) / 2 + 1 = 223 / 2 + 1 = 112
  EXPECT_EQ(b.conv2d("c_explicit", x, w, a).shape, (Shape{1, 112, 112, 64}));
  a.padding = PaddingMode::same;  // ceil(224 / 2) = 112
  EXPECT_EQ(b.conv2d("c_same", x, w, a).shape, (Shape{1, 112, 112, 64}));
  // same: total pad = (112-1)*2 + 7 - 224 = 5 -> top 2, bottom 3
  auto g = conv2d_geometry(a, 224, 224, 7, 7);
  EXPECT_EQ(g.pad_top, 2);
  EXPECT_EQ(g.pad_bottom, 3);
  a.padding = PaddingMode::valid;  // (224 - 7) / 2 + 1 = 109
  EXPECT_EQ(b.conv2d("c_valid", x, w, a).shape, (Shape{1, 109, 109, 64}));
}

TEST(ShapeInference, Conv2dDilationAndDepthwise) {
  WorkloadBuilder b("t");
  auto x = b.input("x", {2, 10, 12, 32}, DType::bf16);
  auto w = b.weight("w", {3, 3, 32, 8}, DType::bf16);
  Conv2dAttrs a;
  a.dilation_h = a.dilation_w = 2;  // receptive field (3-1)*2+1 = 5: 10-5+1 = 6, 12-5+1 = 8
  EXPECT_EQ(b.conv2d("dil", x, w, a).shape, (Shape{2, 6, 8, 8}));
  auto dw = b.weight("dw", {3, 3, 1, 32}, DType::bf16);
  Conv2dAttrs d;
  d.groups = 32;
  d.padding = PaddingMode::same;
  EXPECT_EQ(b.conv2d("depthwise", x, dw, d).shape, (Shape{2, 10, 12, 32}));
  auto bad = b.weight("bad", {3, 3, 16, 32}, DType::bf16);
  std::string msg = error_of([&] { b.conv2d("c_bad", x, bad, d); });
  EXPECT_NE(msg.find("[3, 3, 16, 32]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 10, 12, 32]"), std::string::npos) << msg;
}

TEST(ShapeInference, ElementwiseBroadcastCastSelect) {
  WorkloadBuilder b("t");
  auto a = b.input("a", {8, 1, 16}, DType::bf16);
  auto c = b.input("c", {4, 16}, DType::bf16);
  EXPECT_EQ(b.add("sum", a, c).shape, (Shape{8, 4, 16}));
  EXPECT_EQ(b.elementwise("act", "silu", {c}).shape, (Shape{4, 16}));
  auto f = b.cast("f", c, DType::f32);
  EXPECT_EQ(f.dtype, DType::f32);
  auto cond = b.input("cond", {16}, DType::int8);
  auto s = b.elementwise("sel", "select", {cond, a, c});
  EXPECT_EQ(s.shape, (Shape{8, 4, 16}));
  EXPECT_EQ(s.dtype, DType::bf16);
  auto bad = b.input("bad", {3, 16}, DType::bf16);
  std::string msg = error_of([&] { b.add("bad_add", c, bad); });
  EXPECT_NE(msg.find("[4, 16] and [3, 16]"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { b.add("mixed", c, f); }).find("dtype mismatch"), std::string::npos);
  EXPECT_NE(error_of([&] { b.elementwise("arity", "add", {c}); }).find("expected 2 inputs, found 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { b.elementwise("nope", "frobnicate", {c}); }).find("unknown elementwise kind"),
            std::string::npos);
}

TEST(ShapeInference, ReduceSoftmaxNorms) {
  WorkloadBuilder b("t");
  auto x = b.input("x", {4, 8, 16}, DType::f32);
  EXPECT_EQ(b.reduce("r", x, ReduceKind::sum, {-1}).shape, (Shape{4, 8}));
  EXPECT_EQ(b.reduce("rk", x, ReduceKind::mean, {0, 2}, true).shape, (Shape{1, 8, 1}));
  EXPECT_THROW(b.reduce("rbad", x, ReduceKind::max, {3}), WorkloadError);
  EXPECT_THROW(b.reduce("rdup", x, ReduceKind::max, {1, -2}), WorkloadError);
  EXPECT_EQ(b.softmax("sm", x, 1).shape, (Shape{4, 8, 16}));
  auto g = b.weight("g", {16}, DType::f32);
  auto be = b.weight("be", {16}, DType::f32);
  EXPECT_EQ(b.layer_norm("ln", x, g, be).shape, (Shape{4, 8, 16}));
  EXPECT_EQ(b.rms_norm("rms", x, g).shape, (Shape{4, 8, 16}));
  auto g2 = b.weight("g2", {8, 16}, DType::f32);
  EXPECT_EQ(b.layer_norm("ln2", x, g2, std::nullopt, 1).shape, (Shape{4, 8, 16}));
  std::string msg = error_of([&] { b.rms_norm("rms_bad", x, g2); });
  EXPECT_NE(msg.find("expected shape [16]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found [8, 16]"), std::string::npos) << msg;
}

TEST(ShapeInference, AttentionGqaAndErrors) {
  WorkloadBuilder b("t");
  auto q = b.input("q", {2, 128, 32, 128}, DType::bf16);
  auto k = b.kv_cache("k", {2, 256, 8, 128}, DType::bf16);
  auto v = b.kv_cache("v", {2, 256, 8, 64}, DType::bf16);
  EXPECT_EQ(b.attention("attn", q, k, v, true).shape, (Shape{2, 128, 32, 64}));
  auto k5 = b.kv_cache("k5", {2, 256, 5, 128}, DType::bf16);
  auto v5 = b.kv_cache("v5", {2, 256, 5, 64}, DType::bf16);
  EXPECT_NE(error_of([&] { b.attention("a5", q, k5, v5, false); }).find("not a multiple of kv_heads 5"),
            std::string::npos);
  auto kd = b.kv_cache("kd", {2, 256, 8, 64}, DType::bf16);
  std::string msg = error_of([&] { b.attention("ad", q, kd, v, false); });
  EXPECT_NE(msg.find("head_dim"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 128, 32, 128]"), std::string::npos) << msg;
}

TEST(ShapeInference, GatherAndLayoutOps) {
  WorkloadBuilder b("t");
  auto table = b.weight("emb", {32000, 4096}, DType::bf16);
  auto ids = b.input("ids", {8, 128}, DType::f32);
  auto e = b.gather("lookup", table, ids);
  EXPECT_EQ(e.shape, (Shape{8, 128, 4096}));
  EXPECT_EQ(e.dtype, DType::bf16);
  EXPECT_EQ(b.transpose("tr", e, {2, 0, 1}).shape, (Shape{4096, 8, 128}));
  EXPECT_THROW(b.transpose("trbad", e, {0, 0, 1}), WorkloadError);
  EXPECT_EQ(b.reshape("rs", e, {-1, 32, 128}).shape, (Shape{8 * 128, 32, 128}));
  EXPECT_THROW(b.reshape("rsbad", e, {3, -1}), WorkloadError);  // 4194304 not divisible by 3
  auto p = b.input("p", {8, 5, 4096}, DType::bf16);
  EXPECT_EQ(b.concat("cat", {e, p}, 1).shape, (Shape{8, 133, 4096}));
  EXPECT_THROW(b.concat("catbad", {e, p}, 0), WorkloadError);
  // dim 2: elements 0, 3, 6, 9 (< 10) -> 4
  EXPECT_EQ(b.slice("sl", e, {0, 0, 0}, {8, 64, 10}, {1, 2, 3}).shape, (Shape{8, 32, 4}));
  EXPECT_THROW(b.slice("slbad", e, {0, 0, 0}, {8, 129, 10}), WorkloadError);
}

TEST(ShapeInference, Collectives) {
  WorkloadBuilder b("t");
  b.mesh_axis("x", 4);
  b.mesh_axis("y", 2);
  auto t = b.input("t", {8, 16}, DType::bf16);
  EXPECT_EQ(b.all_gather("ag", t, {"x"}, 0).shape, (Shape{32, 16}));
  EXPECT_EQ(b.reduce_scatter("rs", t, {"x", "y"}, 1).shape, (Shape{8, 2}));  // 16 / (4*2)
  EXPECT_EQ(b.all_reduce("ar", t, {"y"}).shape, (Shape{8, 16}));
  EXPECT_EQ(b.all_to_all("a2a", t, {"x"}, 0, 1).shape, (Shape{2, 64}));
  EXPECT_EQ(b.collective_permute("cp", t, {"x"}, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}).shape, (Shape{8, 16}));
  EXPECT_EQ(b.broadcast("bc", t, {"x"}, 3).shape, (Shape{8, 16}));
  EXPECT_NE(error_of([&] { b.all_reduce("arz", t, {"z"}); }).find("unknown mesh axis 'z' (declared: x, y)"),
            std::string::npos);
  EXPECT_THROW(b.reduce_scatter("rs3", t, {"x"}, 0, ReduceKind::mean), WorkloadError);
  EXPECT_THROW(b.broadcast("bc9", t, {"x"}, 4), WorkloadError);
  EXPECT_THROW(b.collective_permute("cp9", t, {"y"}, {{0, 2}}), WorkloadError);
  auto odd = b.input("odd", {6, 16}, DType::bf16);
  EXPECT_THROW(b.reduce_scatter("rs_odd", odd, {"x"}, 0), WorkloadError);
}
