// No operator is ever simulated faster than its roofline bound: for every
// shipped generation and every operator kind, 100 operators of seeded
// random shapes run in one workload (independent of each other, so none is
// fused away) and each one's measured cycles (first instruction start to
// last instruction finish) must be >= max(MACs / chip peak, bytes / HBM
// bandwidth). Each (generation, kind) is its own process: SystemC
// elaborates once per process.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "sim/config/config_loader.h"
#include "sim/results/metrics.h"
#include "sim/run/run.h"
#include "workloads/ir/builder.h"

using namespace tpusim;
using workloads::TensorRef;
using workloads::WorkloadBuilder;

namespace {

constexpr int kShapes = 100;

struct Rng {
  std::mt19937_64 g;
  explicit Rng(std::uint64_t seed) : g(seed) {}
  // Log-uniform integer in [lo, hi], so small and large sizes both occur.
  std::int64_t dim(std::int64_t lo, std::int64_t hi) {
    std::uniform_real_distribution<double> u(std::log(double(lo)), std::log(double(hi) + 1));
    return std::min(hi, std::max(lo, static_cast<std::int64_t>(std::exp(u(g)))));
  }
  std::int64_t pick(std::initializer_list<std::int64_t> v) {
    std::uniform_int_distribution<std::size_t> u(0, v.size() - 1);
    return *(v.begin() + static_cast<long>(u(g)));
  }
  bool coin() { return std::uniform_int_distribution<int>(0, 1)(g) == 1; }
};

// A dtype the generation's MXU supports: bf16, else int8 (TPUv1).
arch::DType mxu_dtype(const arch::TpuConfig& cfg) {
  return cfg.mxu.throughput.count(arch::DType::bf16) ? arch::DType::bf16 : arch::DType::int8;
}

void add_op(WorkloadBuilder& b, const std::string& kind, int i, Rng& r, arch::DType t) {
  const std::string p = kind + std::to_string(i);
  const std::string in = p + ".x";
  if (kind == "matmul") {
    const std::int64_t m = r.dim(1, 1024), k = r.dim(1, 1024), n = r.dim(1, 1024);
    if (r.coin()) {
      const std::int64_t bt = r.dim(1, 4);
      auto x = b.input(in, {bt, m, k}, t);
      auto w = b.weight(p + ".w", {bt, k, n}, t);
      b.matmul(p, x, w, "bmk,bkn->bmn");
    } else {
      auto x = b.input(in, {m, k}, t);
      auto w = b.weight(p + ".w", {k, n}, t);
      b.matmul(p, x, w);
    }
  } else if (kind == "conv2d") {
    const std::int64_t n = r.pick({1, 2}), h = r.dim(7, 56), c = r.dim(3, 128);
    const std::int64_t kh = std::min<std::int64_t>(h, r.pick({1, 3, 5, 7}));
    workloads::Conv2dAttrs a;
    a.stride_h = a.stride_w = r.pick({1, 2});
    a.padding = r.coin() ? workloads::PaddingMode::same : workloads::PaddingMode::valid;
    const bool depthwise = r.dim(1, 4) == 1;
    std::int64_t oc = r.dim(8, 128);
    if (depthwise) {
      a.groups = c;
      oc = c;
    }
    auto x = b.input(in, {n, h, h, c}, t);
    auto w = b.weight(p + ".w", {kh, kh, depthwise ? 1 : c, oc}, t);
    b.conv2d(p, x, w, a);
  } else if (kind == "elementwise") {
    static const char* kinds[] = {"add", "mul", "exp", "gelu", "silu", "tanh", "max", "rsqrt"};
    const std::string k = kinds[r.dim(1, 8) - 1];
    auto x = b.input(in, {r.dim(1, 1024), r.dim(1, 2048)}, t);
    if (k == "add" || k == "mul" || k == "max") {
      auto y = b.input(p + ".y", x.shape, t);
      b.elementwise(p, k, {x, y});
    } else {
      b.elementwise(p, k, {x});
    }
  } else if (kind == "reduce") {
    auto x = b.input(in, {r.dim(1, 1024), r.dim(1, 2048)}, t);
    b.reduce(p, x, r.coin() ? workloads::ReduceKind::sum : workloads::ReduceKind::max, {1});
  } else if (kind == "softmax") {
    b.softmax(p, b.input(in, {r.dim(1, 1024), r.dim(2, 2048)}, t));
  } else if (kind == "layer_norm") {
    b.layer_norm(p, b.input(in, {r.dim(1, 1024), r.dim(2, 2048)}, t));
  } else if (kind == "rms_norm") {
    b.rms_norm(p, b.input(in, {r.dim(1, 1024), r.dim(2, 2048)}, t));
  } else if (kind == "attention") {
    const std::int64_t bt = r.pick({1, 2}), kvh = r.pick({1, 2, 4}), h = kvh * r.pick({1, 2, 4});
    const std::int64_t lq = r.dim(1, 512), lkv = lq + r.dim(1, 512) - 1, d = r.pick({64, 128});
    auto q = b.input(in, {bt, lq, h, d}, t);
    auto k = b.input(p + ".k", {bt, lkv, kvh, d}, t);
    auto v = b.input(p + ".v", {bt, lkv, kvh, d}, t);
    // Causal half the time, and then a sliding window half the time.
    const bool causal = r.coin();
    const std::int64_t window = causal && r.coin() ? r.dim(1, lkv) : 0;
    b.attention(p, q, k, v, causal, std::nullopt, workloads::AttentionPass::forward, window);
  } else if (kind == "batched_attention") {
    // Decode-like shapes with many sequences, in a kernel that may take up
    // to 16 of them a grid step (AttentionAttrs::max_step_seqs).
    const std::int64_t bt = r.dim(2, 64), kvh = r.pick({1, 2, 8}), h = kvh * r.pick({1, 4, 8});
    const std::int64_t lq = r.dim(1, 8), lkv = lq + r.dim(1, 2048) - 1, d = r.pick({64, 128});
    auto q = b.input(in, {bt, lq, h, d}, t);
    auto k = b.input(p + ".k", {bt, lkv, kvh, d}, t);
    auto v = b.input(p + ".v", {bt, lkv, kvh, d}, t);
    b.attention(p, q, k, v, r.coin());
  } else if (kind == "gather") {
    auto table = b.weight(p + ".table", {r.dim(16, 100000), r.pick({64, 128, 256})}, t);
    auto idx = b.input(in, {r.dim(1, 2048)}, arch::DType::f32);
    b.gather(p, table, idx);
  } else if (kind == "transpose") {
    b.transpose(p, b.input(in, {r.dim(1, 1024), r.dim(1, 1024)}, t), {1, 0});
  } else if (kind == "reshape") {
    const std::int64_t a = r.dim(1, 512), c = r.dim(1, 512) * 2;
    b.reshape(p, b.input(in, {a, c}, t), {a * 2, c / 2});
  } else if (kind == "concat") {
    const std::int64_t c = r.dim(1, 1024);
    auto x = b.input(in, {r.dim(1, 1024), c}, t);
    auto y = b.input(p + ".y", {r.dim(1, 1024), c}, t);
    b.concat(p, {x, y}, 0);
  } else if (kind == "slice") {
    const std::int64_t rows = r.dim(2, 1024), cols = r.dim(1, 1024);
    auto x = b.input(in, {rows, cols}, t);
    b.slice(p, x, {rows / 2, 0}, {rows, cols});
  }
}

class RooflineBound : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

}  // namespace

TEST_P(RooflineBound, NoOperatorBeatsItsRoofline) {
  const auto& [gen, kind] = GetParam();
  const arch::TpuConfig cfg = sim::load_tpu_config(gen, {"hbm.model=detailed"});
  const arch::DType t = mxu_dtype(cfg);
  Rng rng(std::hash<std::string>{}(gen + "/" + kind) ^ 0x5eedu);
  WorkloadBuilder b(kind + "_shapes");
  for (int i = 0; i < kShapes; ++i) add_op(b, kind, i, rng, t);
  workloads::Workload wl = b.build();
  if (kind == "batched_attention")
    for (auto& op : wl.ops)
      if (op.kind == workloads::OpKind::attention) op.as<workloads::AttentionAttrs>().max_step_seqs = 16;
  // TPUv1 has no cross-lane unit (xlu.count: 0): reductions, transposes,
  // softmax, norms and attention are refused, not run on a unit it lacks.
  if (cfg.xlu.count == 0 && (kind == "reduce" || kind == "softmax" || kind == "layer_norm" || kind == "rms_norm" ||
                             kind == "attention" || kind == "batched_attention" || kind == "transpose")) {
    EXPECT_THROW(sim::run_workload(gen, cfg, wl, {}), sim::LoweringError);
    return;
  }
  const sim::RunReport r = sim::run_workload(gen, cfg, wl, {});
  const sim::RunMetrics m = sim::compute_metrics(r);
  int timed = 0;
  for (const auto& op : m.ops) {
    if (!op.has_instrs) continue;  // a reshape is a relabelling: no work, no bound
    ++timed;
    EXPECT_GE(static_cast<double>(op.cycles), r.lowered.ops[op.index].roofline_cycles)
        << r.lowered.ops[op.index].name << " " << r.lowered.ops[op.index].shapes << " ("
        << r.lowered.ops[op.index].blocking << ")";
  }
  if (kind != "reshape") {
    EXPECT_EQ(timed, kShapes);
  }
}

INSTANTIATE_TEST_SUITE_P(AllGenerations, RooflineBound,
                         ::testing::Combine(::testing::Values("v1", "v2", "v3", "v4", "v4i", "v5e", "v5p", "v6e", "v7"),
                                            ::testing::Values("matmul", "conv2d", "elementwise", "reduce", "softmax",
                                                              "layer_norm", "rms_norm", "attention",
                                                              "batched_attention", "gather", "transpose", "reshape",
                                                              "concat", "slice")),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });
