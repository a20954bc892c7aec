// Every zoo model generates a valid workload in every phase it supports
// (small sizes), and the workload's matmul + attention FLOPs equal the
// closed-form count of analysis.h (within the stated tolerance).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "models/analysis.h"
#include "models/zoo.h"
#include "workloads/ir/builder.h"
#include "workloads/ir/cost.h"

using namespace tpusim::models;
using namespace tpusim::workloads;

namespace {

double mm_attn_flops(const Workload& w) {
  double f = 0;
  for (const auto& op : w.ops)
    if (op.kind == OpKind::matmul || op.kind == OpKind::attention || op.kind == OpKind::conv2d)
      f += static_cast<double>(op_cost(w, op).flops);
  return f;
}

// Position of op `n` in w's order; -1 if absent.
long op_index(const Workload& w, const std::string& n) {
  for (std::size_t i = 0; i < w.ops.size(); ++i)
    if (w.ops[i].name == n) return static_cast<long>(i);
  return -1L;
}

PhaseOptions small(Phase p) {
  PhaseOptions o;
  o.phase = p;
  o.batch = 2;
  o.seq_len = 16;
  o.context = 32;
  return o;
}

// The model FLOPs' multiply-adds: every MAC computed, less recomputation
// and what a causal mask or window discards.
std::uint64_t useful_macs(const Workload& wl) {
  std::uint64_t u = 0;
  for (const auto& op : wl.ops) {
    const OpCost c = op_cost(wl, op);
    u += c.macs - c.recompute_macs - c.masked_macs;
  }
  return u;
}

}  // namespace

class EveryModel : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryModel, GeneratesValidWorkloadsInEverySupportedPhase) {
  ModelSpec m = load_model(GetParam());
  bool big = m.family == Family::decoder && count_params(m).total > 100e9;
  for (Phase p : supported_phases(m.family)) {
    if (p == Phase::train && big) continue;  // covered by smaller models; keeps the test fast
    PhaseOptions o = small(p);
    Workload w = generate(m, o);
    EXPECT_NO_THROW(w.validate());
    EXPECT_EQ(w.name, m.name + "." + phase_name(p));
    double want = phase_matmul_flops(m, o), got = mm_attn_flops(w);
    // Closed form ignores norm/bias parameters' share (< 0.1%).
    EXPECT_NEAR(got / want, 1.0, 0.01) << phase_name(p) << ": workload " << got << " vs formula " << want;
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, EveryModel, ::testing::ValuesIn(list_models()), [](const auto& info) {
  std::string s = info.param;
  for (auto& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
});

TEST(Generate, ZooListsTheNineteenNamedModels) {
  auto names = list_models();
  for (const char* n : {"gpt3-175b", "gpt-j-6b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b",
                        "llama3.1-405b", "mixtral-8x7b", "deepseek-v3", "gpt-oss-120b", "gemma3-27b", "bert-base",
                        "bert-large", "vit-b16", "vit-l16", "resnet50", "dlrm-v2", "sdxl-unet"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
}

// Sliding-window layers (gpt-oss: window 128 on every other layer) attend
// locally in prefill and train, backward kernels too, and the closed form
// counts the same pairs as the generated operators.
TEST(Generate, SlidingWindowLayersAttendLocallyInPrefillAndTrain) {
  ModelSpec m = load_model("gpt-oss-120b");
  m.transformer.layers = 2;
  for (Phase ph : {Phase::prefill, Phase::train}) {
    PhaseOptions o;
    o.phase = ph;
    o.batch = 1;
    o.seq_len = 1024;
    const Workload w = generate(m, o);
    const Op* local = w.find_op("layers.0.attn.core");
    const Op* global = w.find_op("layers.1.attn.core");
    ASSERT_NE(local, nullptr);
    ASSERT_NE(global, nullptr);
    EXPECT_EQ(local->as<AttentionAttrs>().window, 128);
    EXPECT_EQ(global->as<AttentionAttrs>().window, 0);
    // 1024 queries over a window of 128 keys: 128 x 129 / 2 + 896 x 128
    // pairs against 1024 x 1025 / 2.
    const double ratio = static_cast<double>(op_cost(w, *local).flops) / static_cast<double>(op_cost(w, *global).flops);
    EXPECT_NEAR(ratio, (128.0 * 129 / 2 + 896.0 * 128) / (1024.0 * 1025 / 2), 1e-9);
    if (ph == Phase::train)
      for (const char* k : {"layers.0.attn.core.grad_q", "layers.0.attn.core.grad_kv"}) {
        const Op* g = w.find_op(k);
        ASSERT_NE(g, nullptr) << k;
        EXPECT_EQ(g->as<AttentionAttrs>().window, 128) << k;
      }
    EXPECT_NEAR(mm_attn_flops(w) / phase_matmul_flops(m, o), 1.0, 0.01) << phase_name(ph);
    // Written as XLA's einsums (dense), the local layer computes every
    // pair, but its useful MACs (model FLOPs) are the window's, as the
    // flash kernel's: the window's band is masked, not only the future.
    PhaseOptions d = o;
    d.attention_kernel = AttentionImpl::dense;
    const Workload wd = generate(m, d);
    EXPECT_EQ(useful_macs(wd), useful_macs(w)) << phase_name(ph);
    const Op* scores = wd.find_op("layers.0.attn.scores");
    ASSERT_NE(scores, nullptr);
    EXPECT_EQ(scores->as<MatmulAttrs>().window, 128);
    EXPECT_EQ(wd.find_op("layers.1.attn.scores")->as<MatmulAttrs>().window, 0);
    EXPECT_NE(wd.find_tensor("attn_window_mask"), nullptr);
  }
}

// Gemma 3: five local layers (window 1024) to one global, in decode (a
// window-sized cache) and prefill (local attention); a gated GELU FFN,
// post norms and per-head query/key norms.
TEST(Generate, Gemma3LocalAndGlobalLayers) {
  ModelSpec m = load_model("gemma3-27b");
  m.transformer.layers = 6;
  PhaseOptions o;
  o.phase = Phase::prefill;
  o.batch = 1;
  o.seq_len = 4096;
  const Workload w = generate(m, o);
  for (int i = 0; i < 6; ++i) {
    const Op* a = w.find_op("layers." + std::to_string(i) + ".attn.core");
    ASSERT_NE(a, nullptr) << i;
    EXPECT_EQ(a->as<AttentionAttrs>().window, i == 5 ? 0 : 1024) << i;
  }
  const Op* act = w.find_op("layers.0.mlp.act");
  ASSERT_NE(act, nullptr);
  EXPECT_EQ(act->as<ElementwiseAttrs>().kind, EwKind::gelu);
  for (const char* n : {"layers.0.mlp.gate_proj", "layers.0.post_attn_norm", "layers.0.post_mlp_norm",
                        "layers.0.attn.q_norm", "layers.0.attn.k_norm"})
    EXPECT_NE(w.find_op(n), nullptr) << n;
  EXPECT_NEAR(mm_attn_flops(w) / phase_matmul_flops(m, o), 1.0, 0.01);
  o.phase = Phase::decode;
  o.context = 8192;
  const Workload d = generate(m, o);
  EXPECT_EQ(d.find_tensor("layers.0.attn.k_cache")->shape[1], 1024);
  EXPECT_EQ(d.find_tensor("layers.5.attn.k_cache")->shape[1], 8192);
}

TEST(Generate, DecodeReadsContextAndAppendsOneToken) {
  ModelSpec m = load_model("llama3-8b");
  PhaseOptions o;
  o.phase = Phase::decode;
  o.batch = 4;
  o.context = 1000;
  Workload w = generate(m, o);
  const Tensor* kc = w.find_tensor("layers.31.attn.k_cache");
  ASSERT_NE(kc, nullptr);
  EXPECT_EQ(kc->kind, TensorKind::kv_cache);
  EXPECT_EQ(kc->shape, (Shape{4, 1000, 8, 128}));
  const Op* att = w.find_op("layers.31.attn.core");
  ASSERT_NE(att, nullptr);
  EXPECT_EQ(att->kind, OpKind::attention);
  EXPECT_EQ(w.find_tensor(att->inputs[0])->shape[1], 1);  // q_len 1
  // The appended K: one token per sequence, written as an output.
  const Tensor* app = w.find_tensor("layers.31.attn.k_rope");
  ASSERT_NE(app, nullptr);
  EXPECT_EQ(app->kind, TensorKind::output);
  EXPECT_EQ(app->shape, (Shape{4, 1, 8, 128}));
  // Cache bytes read by all layers = batch x context x kv bytes per token.
  std::uint64_t cache = 0;
  for (const auto& t : w.tensors)
    if (t.kind == TensorKind::kv_cache) cache += t.bytes();
  EXPECT_EQ(cache, 4u * 1000u * kv_cache_bytes_per_token(m, DType::bf16));
  ASSERT_NE(w.find_op("layers.0.attn.q_proj"), nullptr);
}

TEST(Generate, DtypeOptionsReachTheTensors) {
  ModelSpec m = load_model("llama2-7b");
  PhaseOptions o = small(Phase::decode);
  o.weight_dtype = DType::int8;
  o.kv_dtype = DType::fp8_e4m3;
  Workload w = generate(m, o);
  EXPECT_EQ(w.find_tensor("layers.0.attn.q_proj.weight")->dtype, DType::int8);
  EXPECT_EQ(w.find_tensor("layers.0.attn.k_cache")->dtype, DType::fp8_e4m3);
  EXPECT_EQ(w.find_tensor("layers.0.attn.q_proj")->dtype, DType::bf16);
}

TEST(Generate, MoeDecodeTouchesOnlyRoutedExperts) {
  // Mixtral, batch 1: 1 token x top-2 = 2 slots, 2 experts touched (of 8);
  // expert weights in the workload are those two experts' only.
  ModelSpec m = load_model("mixtral-8x7b");
  PhaseOptions o = small(Phase::decode);
  o.batch = 1;
  Workload w = generate(m, o);
  const Tensor* g = w.find_tensor("layers.0.mlp.experts.g0.gate_proj.weight");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->shape, (Shape{2, 4096, 14336}));
  EXPECT_EQ(w.find_tensor("layers.0.mlp.experts.g1.gate_proj.weight"), nullptr);
}

TEST(Generate, MlaDecodeReadsLatentCache) {
  ModelSpec m = load_model("deepseek-v3");
  PhaseOptions o = small(Phase::decode);
  Workload w = generate(m, o);
  const Tensor* c = w.find_tensor("layers.60.attn.latent_cache");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->shape, (Shape{2, 32, 1, 576}));
  // First 3 layers dense, the rest MoE.
  EXPECT_NE(w.find_op("layers.2.mlp.down_proj"), nullptr);
  EXPECT_NE(w.find_op("layers.3.mlp.router"), nullptr);
}

TEST(Generate, TrainHasBackwardMatmulsAtTwiceForwardAndAdamState) {
  ModelSpec m = load_model("llama2-7b");
  m.transformer.layers = 2;  // small copy of the same shapes
  PhaseOptions o = small(Phase::train);
  Workload w = generate(m, o);
  const Op* q = w.find_op("layers.1.attn.q_proj");
  const Op* dx = w.find_op("layers.1.attn.q_proj.grad_lhs");
  const Op* dw = w.find_op("layers.1.attn.q_proj.grad_rhs");
  ASSERT_TRUE(q && dx && dw);
  EXPECT_EQ(op_cost(w, *dx).flops + op_cost(w, *dw).flops, 2 * op_cost(w, *q).flops);
  const Tensor* master = w.find_tensor("optimizer.layers.1.attn.q_proj.weight.master");
  ASSERT_NE(master, nullptr);
  EXPECT_EQ(master->dtype, DType::f32);
  EXPECT_EQ(w.find_tensor(dw->outputs[0])->shape, (Shape{4096, 4096}));
  // Recompute adds one forward of the layers.
  PhaseOptions r = o;
  r.remat = RematPolicy::full;
  Workload wr = generate(m, r);
  EXPECT_NE(wr.find_op("layers.1.recompute.attn.q_proj"), nullptr);
  EXPECT_NEAR(mm_attn_flops(wr) / phase_matmul_flops(m, r), 1.0, 0.01);
}

// optimizer_dtype bf16 (MaxText's weight_dtype bfloat16): Adam's m and v
// are bf16 weights, there is no f32 master, the bf16 weight is the
// output of the update; the footprint keeps 4 B per parameter of state
// instead of 12. Outside training, and for another dtype, an error.
TEST(Generate, Bf16OptimizerStateHasNoMasterAndBf16Moments) {
  ModelSpec m = load_model("llama2-7b");
  m.transformer.layers = 2;
  PhaseOptions o = small(Phase::train);
  o.optimizer_dtype = DType::bf16;
  Workload w = generate(m, o);
  const std::string p = "optimizer.layers.1.attn.q_proj.weight";
  EXPECT_EQ(w.find_tensor(p + ".master"), nullptr);
  for (const char* s : {".m", ".v"}) {
    const Tensor* t = w.find_tensor(p + s);
    ASSERT_NE(t, nullptr) << s;
    EXPECT_EQ(t->dtype, DType::bf16) << s;
    EXPECT_EQ(t->kind, TensorKind::weight) << s;
  }
  const Tensor* updated = w.find_tensor(p + ".weight_new");
  ASSERT_NE(updated, nullptr);
  EXPECT_EQ(updated->dtype, DType::bf16);
  EXPECT_EQ(updated->kind, TensorKind::output);
  PhaseOptions f = o;
  f.optimizer_dtype = DType::f32;
  const Workload wf = generate(m, f);
  // Per-parameter state (the scalar hyperparameters aside).
  auto state = [](const Workload& x) {
    std::uint64_t b = 0;
    for (const auto& t : x.tensors)
      if (t.kind == TensorKind::weight && t.name.rfind("optimizer.", 0) == 0 && !t.shape.empty()) b += t.bytes();
    return b;
  };
  const std::uint64_t state_f32 = state(wf), state_bf16 = state(w);
  EXPECT_EQ(state_f32, 3 * state_bf16);  // master, m, v in f32 against m, v in bf16
  const MemoryFootprint a = memory_footprint(m, f), b = memory_footprint(m, o);
  EXPECT_EQ(a.optimizer, 3 * b.optimizer);
  EXPECT_EQ(b.optimizer, 4 * count_params(m).total);
  PhaseOptions d = small(Phase::decode);
  d.optimizer_dtype = DType::bf16;
  EXPECT_THROW(generate(m, d), ModelError);
  PhaseOptions h = small(Phase::train);
  h.optimizer_dtype = DType::int8;
  EXPECT_THROW(generate(m, h), ModelError);
}

// Minimal remat keeps every matmul output and re-emits only the ops the
// layer's backward reads (norms, the SwiGLU activation and product,
// rotary, attention), not the residual adds (their gradient reads nothing):
// one forward attention per layer of extra MXU work. Selective also
// recomputes the FFN's gate and up projections (MaxText's "mlpwi") and
// keeps q/k/v, o and down. phase_matmul_flops counts both (within 1%).
TEST(Generate, MinimalAndSelectiveRematRecomputeAllButKeptMatmuls) {
  ModelSpec m = load_model("llama2-7b");
  m.transformer.layers = 2;
  for (RematPolicy pol : {RematPolicy::minimal, RematPolicy::selective}) {
    PhaseOptions o = small(Phase::train);
    o.remat = pol;
    Workload w = generate(m, o);
    std::set<std::string> matmuls;
    int recomputed = 0;
    for (const auto& op : w.ops) {
      if (op.name.find(".recompute.") == std::string::npos) continue;
      ++recomputed;
      EXPECT_FALSE(is_collective(op.kind)) << op.name;
      if (op.kind == OpKind::matmul) matmuls.insert(op.name);
    }
    EXPECT_GT(recomputed, 0);
    EXPECT_NE(w.find_op("layers.1.recompute.attn.core"), nullptr);
    EXPECT_EQ(w.find_op("layers.1.recompute.attn.q_proj"), nullptr);
    EXPECT_EQ(w.find_op("layers.1.recompute.mlp.down_proj"), nullptr);
    if (pol == RematPolicy::minimal)
      EXPECT_TRUE(matmuls.empty());
    else
      EXPECT_EQ(matmuls, (std::set<std::string>{"layers.0.recompute.mlp.gate_proj", "layers.0.recompute.mlp.up_proj",
                                                "layers.1.recompute.mlp.gate_proj", "layers.1.recompute.mlp.up_proj"}));
    EXPECT_NEAR(mm_attn_flops(w) / phase_matmul_flops(m, o), 1.0, 0.01) << remat_name(pol);
  }
  // MXU work grows none < minimal < selective < full.
  PhaseOptions o = small(Phase::train);
  double last = 0;
  for (RematPolicy pol : {RematPolicy::none, RematPolicy::minimal, RematPolicy::selective, RematPolicy::full}) {
    o.remat = pol;
    EXPECT_GT(phase_matmul_flops(m, o), last) << remat_name(pol);
    last = phase_matmul_flops(m, o);
  }
  // Remat is a training option.
  PhaseOptions p = small(Phase::prefill);
  p.remat = RematPolicy::selective;
  EXPECT_THROW(generate(m, p), ModelError);
}

// qkv_proj_offloaded: each layer's q, k, v projection outputs are copied
// to host right after their matmul (results in host memory), read back
// (layers.<i>.reload.*) before the layer's backward, layer i-1's together
// with layer i's (prefetch), and never recomputed; everything else the
// backward reads is recomputed. minimal_offloaded offloads every matmul
// output of a layer the backward reads (q, k, v, o, gate, up: 6; not the
// down projection's, which only the layer's last residual add reads) and
// recomputes no matmul. MXU work: phase_matmul_flops (within 1%).
TEST(Generate, OffloadedRematCopiesToHostAndReadsBack) {
  ModelSpec m = load_model("llama2-7b");
  m.transformer.layers = 3;
  PhaseOptions o = small(Phase::train);
  o.remat = RematPolicy::qkv_proj_offloaded;
  Workload w = generate(m, o);
  auto index_of = [&](const std::string& n) { return op_index(w, n); };
  int to_host = 0, back = 0;
  for (const auto& op : w.ops) {
    if (op.kind != OpKind::copy) continue;
    const MemSpace to = op.as<CopyAttrs>().to;
    EXPECT_EQ(w.find_tensor(op.outputs[0])->space, to) << op.name;
    (to == MemSpace::host ? to_host : back) += 1;
  }
  EXPECT_EQ(to_host, 9);
  EXPECT_EQ(back, 9);
  for (const char* p : {"q_proj", "k_proj", "v_proj"}) {
    const std::string l1 = std::string("layers.1.attn.") + p;
    EXPECT_EQ(index_of(l1 + ".offload"), index_of(l1) + 1) << p;  // right after its matmul
    EXPECT_EQ(w.find_op(l1 + ".offload")->outputs[0], l1 + ".host");
    EXPECT_EQ(w.find_op(std::string("layers.1.recompute.attn.") + p), nullptr);
    // Layer 1's copy back comes before layer 2's backward starts, after
    // layer 2's own.
    const long reload = index_of(std::string("layers.1.reload.attn.") + p);
    ASSERT_GE(reload, 0);
    EXPECT_GT(reload, index_of(std::string("layers.2.reload.attn.") + p));
    EXPECT_LT(reload, index_of("layers.2.recompute.attn.core"));
  }
  // The backward reads the copies: layer 1's attention recomputation takes
  // the rotated q of the reloaded q.
  EXPECT_NE(w.find_op("layers.1.recompute.attn.core"), nullptr);
  EXPECT_NE(w.find_op("layers.1.recompute.mlp.gate_proj"), nullptr);
  EXPECT_NEAR(mm_attn_flops(w) / phase_matmul_flops(m, o), 1.0, 0.01);

  o.remat = RematPolicy::minimal_offloaded;
  Workload wm = generate(m, o);
  int offloads = 0;
  for (const auto& op : wm.ops) {
    if (op.kind == OpKind::copy && op.as<CopyAttrs>().to == MemSpace::host) ++offloads;
    if (op.name.find(".recompute.") != std::string::npos) {
      EXPECT_NE(op.kind, OpKind::matmul) << op.name;
    }
  }
  EXPECT_EQ(offloads, 3 * 6);
  EXPECT_NE(wm.find_op("layers.1.attn.o_proj.offload"), nullptr);
  EXPECT_EQ(wm.find_op("layers.1.mlp.down_proj.offload"), nullptr);
  EXPECT_EQ(wm.find_op("layers.1.reload.mlp.down_proj"), nullptr);
  EXPECT_NEAR(mm_attn_flops(wm) / phase_matmul_flops(m, o), 1.0, 0.01);
  // MXU work: minimal_offloaded as minimal; qkv_proj_offloaded rebuilds
  // what selective does plus the output projection (the residual sum
  // after attention, read by the FFN norm's backward, is rebuilt from it).
  PhaseOptions r = o;
  r.remat = RematPolicy::minimal;
  EXPECT_DOUBLE_EQ(phase_matmul_flops(m, o), phase_matmul_flops(m, r));
  o.remat = RematPolicy::qkv_proj_offloaded;
  r.remat = RematPolicy::selective;
  const double o_proj = 2.0 * 2 * 16 * 3 * 4096.0 * 4096;  // batch 2 x seq 16 tokens, 3 layers, 4096 x 4096
  EXPECT_NEAR(phase_matmul_flops(m, o) - phase_matmul_flops(m, r), o_proj, 1.0);
  EXPECT_NE(w.find_op("layers.1.recompute.attn.o_proj"), nullptr);
}

// MaxText's remat_policy=custom as the v6e Llama 3.1 recipes set it:
// the layer input and the q, k, v and output projections offloaded. Each
// layer's input (the previous layer's output, the embedding's for layer
// 0) is copied to host right after the op making it, and read back before
// the layer's backward, which then reads the copy; q, k, v and o are never
// recomputed, the attention and the FFN input projections are. MXU work:
// phase_matmul_flops (within 1%), for a MoE model too; custom with every
// name kept on the device recomputes no matmul and no attention (the same
// work as `none`, up to the norms), bare custom recomputes what full does.
TEST(Generate, CustomRematPlacesEachNamedActivation) {
  ModelSpec m = load_model("llama2-7b");
  m.transformer.layers = 3;
  PhaseOptions o = small(Phase::train);
  ASSERT_EQ(parse_remat_spec("custom:decoder_layer_input=offload,qkv_proj=offload,out_proj=offload", &o.remat,
                             &o.remat_custom),
            "");
  Workload w = generate(m, o);
  auto index_of = [&](const std::string& n) { return op_index(w, n); };
  int to_host = 0, back = 0;
  for (const auto& op : w.ops)
    if (op.kind == OpKind::copy) (op.as<CopyAttrs>().to == MemSpace::host ? to_host : back) += 1;
  EXPECT_EQ(to_host, 3 * 5);
  EXPECT_EQ(back, 3 * 5);
  EXPECT_EQ(index_of("layers.0.mlp_residual.offload"), index_of("layers.0.mlp_residual") + 1);
  EXPECT_GE(index_of("embed.offload"), 0);
  const long reload = index_of("layers.1.reload.input.layers.0.mlp_residual");
  ASSERT_GE(reload, 0);
  EXPECT_LT(reload, index_of("layers.1.recompute.attn_norm"));
  EXPECT_EQ(w.find_op("layers.1.recompute.attn_norm")->inputs[0],
            w.find_op(w.ops[static_cast<std::size_t>(reload)].name)->outputs[0]);
  for (const char* p : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
    EXPECT_GE(index_of(std::string("layers.1.attn.") + p + ".offload"), 0) << p;
    EXPECT_EQ(w.find_op(std::string("layers.1.recompute.attn.") + p), nullptr) << p;
  }
  EXPECT_NE(w.find_op("layers.1.recompute.attn.core"), nullptr);
  EXPECT_NE(w.find_op("layers.1.recompute.mlp.up_proj"), nullptr);
  EXPECT_NEAR(mm_attn_flops(w) / phase_matmul_flops(m, o), 1.0, 0.01);

  PhaseOptions d = small(Phase::train);
  ASSERT_EQ(parse_remat_spec("custom:qkv_proj=device,context=device,out_proj=device,mlpwi=device,mlpwo=device",
                             &d.remat, &d.remat_custom),
            "");
  Workload wd = generate(m, d);
  for (const auto& op : wd.ops)
    if (op.name.find(".recompute.") != std::string::npos) {
      EXPECT_NE(op.kind, OpKind::matmul) << op.name;
      EXPECT_NE(op.kind, OpKind::attention) << op.name;
    }
  PhaseOptions none = small(Phase::train), full = none, bare = none;
  full.remat = RematPolicy::full;
  bare.remat = RematPolicy::custom;
  // (Up to the norms' parameters, which the closed form counts as matmul
  // work in full's recomputation: 7 x 4096 per token here.)
  EXPECT_NEAR(phase_matmul_flops(m, d) / phase_matmul_flops(m, none), 1.0, 1e-4);
  EXPECT_NEAR(mm_attn_flops(wd) / phase_matmul_flops(m, d), 1.0, 0.01);
  EXPECT_DOUBLE_EQ(phase_matmul_flops(m, bare), phase_matmul_flops(m, full));
  EXPECT_NEAR(mm_attn_flops(generate(m, bare)) / phase_matmul_flops(m, bare), 1.0, 0.01);

  ModelSpec moe = load_model("mixtral-8x7b");
  moe.transformer.layers = 2;
  for (const char* spec : {"custom:decoder_layer_input=offload,qkv_proj=offload", "custom:mlpwi_0=device,mlpwo=offload",
                           "custom:context=offload,out_proj=device"}) {
    PhaseOptions c = small(Phase::train);
    ASSERT_EQ(parse_remat_spec(spec, &c.remat, &c.remat_custom), "") << spec;
    EXPECT_NEAR(mm_attn_flops(generate(moe, c)) / phase_matmul_flops(moe, c), 1.0, 0.01) << spec;
  }
}

// --remat's text: names, custom's entries (qkv_proj and mlpwi set three
// and two names), the canonical form back, and what is expected of a bad
// one.
TEST(Generate, RematSpecsParseAndPrint) {
  RematPolicy r = RematPolicy::none;
  RematCustom c;
  EXPECT_EQ(parse_remat_spec("selective", &r, &c), "");
  EXPECT_EQ(r, RematPolicy::selective);
  EXPECT_EQ(parse_remat_spec("custom:qkv_proj=offload,mlpwi=device,decoder_layer_input=offload", &r, &c), "");
  EXPECT_EQ(r, RematPolicy::custom);
  EXPECT_EQ(c.at(RematTensor::key_proj), RematPlace::offload);
  EXPECT_EQ(c.at(RematTensor::mlpwi_1), RematPlace::device);
  EXPECT_EQ(c.at(RematTensor::mlpwo), RematPlace::remat);
  EXPECT_TRUE(c.offloads());
  EXPECT_EQ(c.str(),
            "custom:decoder_layer_input=offload,query_proj=offload,key_proj=offload,value_proj=offload,"
            "mlpwi_0=device,mlpwi_1=device");
  RematCustom back;
  EXPECT_EQ(parse_remat_spec(c.str(), &r, &back), "");
  EXPECT_EQ(back, c);
  EXPECT_EQ(parse_remat_spec("custom", &r, &back), "");
  EXPECT_EQ(back.str(), "custom");
  EXPECT_FALSE(back.offloads());
  const std::pair<const char*, const char*> bad[] = {
      {"partial", "a remat policy: none, minimal"},
      {"full:query_proj=device", "':name=place' entries only after custom"},
      {"custom:query_proj", "custom's entries as name=place (entry 'query_proj')"},
      {"custom:query_proj=gpu", "a place remat, device or offload (entry 'query_proj=gpu')"},
      {"custom:attn=device", "a name among decoder_layer_input, query_proj"},
      {"custom:query_proj=device,", "custom's entries as name=place (entry '')"}};
  for (const auto& [text, expected] : bad) {
    r = RematPolicy::none;
    const std::string err = parse_remat_spec(text, &r, &c);
    EXPECT_NE(err.find(expected), std::string::npos) << text << ": " << err;
    EXPECT_EQ(r, RematPolicy::none) << text;
  }
  // A custom policy names a decoder layer's activations; MLA has no
  // query/key/value projections to place.
  PhaseOptions o = small(Phase::infer);
  o.phase = Phase::train;
  o.remat = RematPolicy::custom;
  EXPECT_THROW(generate(load_model("bert-base"), o), ModelError);
  ModelSpec ds = load_model("deepseek-v3");
  ds.transformer.layers = 2;
  ASSERT_EQ(parse_remat_spec("custom:key_proj=device", &o.remat, &o.remat_custom), "");
  try {
    generate(ds, o);
    FAIL() << "expected ModelError";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("multi-head latent attention has no key_proj"), std::string::npos) << e.what();
  }
}

// MaxText's dropping MoE (moe_capacity_factor): per sequence of 16
// tokens, top-2 of 8 experts, capacity factor 1.25: C = ceil(16 x 2 / 8 x
// 1.25) = 5 slots per expert. The dispatch einsum [B,S,h] x [B,S,E,C] ->
// [E,B,C,h] feeds the experts all E x B x C = 8 x 2 x 5 = 80 slots, and
// the combine einsum (the mask times the router's probabilities) brings
// them back; the router gets a gradient through the combine mask. A
// capacity factor on a dense model or out of range is an error.
TEST(Generate, DroppingMoeDispatchesThroughCapacitySlots) {
  ModelSpec m = load_model("mixtral-8x7b");
  m.transformer.layers = 2;
  PhaseOptions o = small(Phase::train);
  o.moe_capacity_factor = 1.25;
  Workload w = generate(m, o);
  const Op* d = w.find_op("layers.1.mlp.dispatch");
  const Op* c = w.find_op("layers.1.mlp.combine");
  ASSERT_TRUE(d && c);
  EXPECT_EQ(d->as<MatmulAttrs>().equation, "bsm,bsec->ebcm");
  EXPECT_EQ(w.find_tensor(d->inputs[1])->shape, (Shape{2, 16, 8, 5}));
  EXPECT_EQ(w.find_tensor(w.find_op("layers.1.mlp.experts.g0.gate_proj")->inputs[0])->shape, (Shape{8, 10, 4096}));
  EXPECT_EQ(w.find_tensor(c->outputs[0])->shape, (Shape{2, 16, 4096}));
  EXPECT_NE(w.find_op("layers.1.mlp.router.grad_rhs"), nullptr);
  // Expert MACs: 80 slots instead of the 64 routed rows (dropless).
  const std::uint64_t gate = op_cost(w, *w.find_op("layers.1.mlp.experts.g0.gate_proj")).macs;
  EXPECT_EQ(gate, 80ull * 4096 * 14336);
  for (double bad : {-1.0, 65.0, std::nan("")}) {
    PhaseOptions b = small(Phase::train);
    b.moe_capacity_factor = bad;
    EXPECT_THROW(generate(m, b), ModelError) << bad;
  }
  PhaseOptions dense = small(Phase::train);
  dense.moe_capacity_factor = 1.25;
  EXPECT_THROW(generate(load_model("llama2-7b"), dense), ModelError);
}

// The UNet's structure as SDXL has it: 70 transformer blocks (2 x 2 at
// 64x64 and 2 x 10 at 32x32 on the way down, 10 in the middle, 3 x 10 and
// 3 x 2 on the way up), each a self-attention over the level's positions
// and a cross-attention over the 77 text states; 1024x1024 images are
// 128x128 latents, 512 ones 64x64; with attention_kernel dense the
// attention is einsums with f32 logits.
TEST(Generate, SdxlUnetLevelsAttentionAndImageSize) {
  const ModelSpec m = load_model("sdxl-unet");
  PhaseOptions o;
  o.phase = Phase::infer;
  o.batch = 2;
  const Workload w = generate(m, o);
  int self64 = 0, self32 = 0, cross = 0;
  for (const auto& op : w.ops) {
    if (op.kind != OpKind::attention) continue;
    const auto& q = w.find_tensor(op.inputs[0])->shape;
    const auto& k = w.find_tensor(op.inputs[1])->shape;
    EXPECT_EQ(q[0], 2);
    EXPECT_EQ(q[3], 64) << op.name;
    if (k[1] == 77) {
      ++cross;
    } else {
      EXPECT_EQ(k[1], q[1]) << op.name;
      (q[1] == 64 * 64 ? self64 : self32) += 1;
      EXPECT_EQ(q[2], q[1] == 64 * 64 ? 10 : 20) << op.name;  // 640 / 64 and 1280 / 64 heads
    }
  }
  EXPECT_EQ(self64, 10);
  EXPECT_EQ(self32, 60);
  EXPECT_EQ(cross, 70);
  EXPECT_EQ(w.find_tensor("latent")->shape, (Shape{2, 128, 128, 4}));
  EXPECT_EQ(w.find_tensor("conv_out")->shape, (Shape{2, 128, 128, 4}));
  o.image_size = 512;
  EXPECT_EQ(generate(m, o).find_tensor("latent")->shape, (Shape{2, 64, 64, 4}));
  o.image_size = 1000;  // not a multiple of 32: 8 pixels a latent position, two downsamplings
  try {
    generate(m, o);
    FAIL() << "expected ModelError";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("image_size: expected a multiple of 32"), std::string::npos) << e.what();
  }
  o.image_size = 0;
  o.attention_kernel = AttentionImpl::dense;
  const Workload d = generate(m, o);
  int attention_ops = 0;
  for (const auto& op : d.ops) attention_ops += op.kind == OpKind::attention;
  EXPECT_EQ(attention_ops, 0);
  const Op* scores = d.find_op("down_blocks.1.layers.0.attention.blocks.0.attn1.scores");
  ASSERT_NE(scores, nullptr);
  EXPECT_EQ(d.find_tensor(scores->outputs[0])->shape, (Shape{2, 10, 4096, 4096}));
  EXPECT_EQ(d.find_tensor(scores->outputs[0])->dtype, DType::f32);
}

// The activation peak walks the graph in order: x (an input, 64 B) is
// read by the first step and again by the concat at the end, so it stays
// live through the chain of 64 B steps, each of which dies at its reader;
// the peak is the concat's: x, the last step's result and the concat's
// 128 B, 256 B, where the sum of every tensor would be 512.
TEST(Generate, PeakLiveActivationsFollowsLastReaders) {
  WorkloadBuilder b("live");
  TensorRef x = b.input("x", {16}, DType::f32);
  TensorRef y = b.elementwise("a", "relu", {x});
  for (int i = 0; i < 4; ++i) y = b.elementwise("s" + std::to_string(i), "relu", {y});
  b.concat("c", {y, x}, 0);
  const Workload w = b.build();
  EXPECT_EQ(peak_live_activation_bytes(w), 64u + 64u + 128u);
  // Reading x twice in one op frees it once.
  WorkloadBuilder d("twice");
  TensorRef p = d.input("p", {16}, DType::f32);
  d.add("q", p, p);
  EXPECT_EQ(peak_live_activation_bytes(d.build()), 128u);
}

// A UNet keeps every down block's output until its up block reads it
// (skip_concat): in the middle block all of them are live at once, with
// the op running there, so the activation estimate is at least their sum
// plus any middle-block op's inputs and outputs. (The estimate used to be
// the largest activation twice: 120 MiB for SDXL at batch 2 and
// 1024x1024, where the skips alone are 97.5 MiB and the peak 220 MiB.)
TEST(Generate, UnetActivationsCountTheLiveSkips) {
  const ModelSpec m = load_model("sdxl-unet");
  PhaseOptions o;
  o.phase = Phase::infer;
  o.batch = 2;
  const Workload w = generate(m, o);
  auto activation_bytes = [&](const std::string& n) {
    const Tensor* t = w.find_tensor(n);
    return t->kind == TensorKind::weight ? std::uint64_t{0} : t->bytes();
  };
  std::set<std::string> skip_names;
  std::uint64_t skips = 0, mid_op = 0;
  for (const auto& op : w.ops)
    if (op.name.size() > 12 && op.name.compare(op.name.size() - 12, 12, ".skip_concat") == 0 &&
        skip_names.insert(op.inputs[1]).second)
      skips += activation_bytes(op.inputs[1]);
  for (const auto& op : w.ops) {  // the middle block's first input is the last skip: counted once
    if (op.name.rfind("mid_block.", 0) != 0) continue;
    std::uint64_t b = activation_bytes(op.outputs[0]);
    for (const auto& in : op.inputs)
      if (!skip_names.count(in)) b += activation_bytes(in);
    mid_op = std::max(mid_op, b);
  }
  ASSERT_GT(skips, 0u);
  ASSERT_GT(mid_op, 0u);
  const MemoryFootprint f = memory_footprint(m, o);
  EXPECT_GE(f.activations, skips + mid_op);
  EXPECT_EQ(f.activations, peak_live_activation_bytes(w));
}

TEST(Generate, RejectsBadOptions) {
  ModelSpec m = load_model("resnet50");
  PhaseOptions o = small(Phase::decode);
  try {
    generate(m, o);
    FAIL() << "expected ModelError";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("phase: expected one of infer for a resnet model, found decode"),
              std::string::npos)
        << e.what();
  }
  ModelSpec l = load_model("llama2-7b");
  PhaseOptions d = small(Phase::decode);
  d.context = 4096;  // + 1 new token > max_context 4096
  EXPECT_THROW(generate(l, d), ModelError);
  d.context = 4095;
  d.batch = 1;
  EXPECT_NO_THROW(kv_cache_bytes(l, DType::bf16, 1, 4096));
}

// Dense attention (--attention-kernel dense) is XLA's einsum form: f32
// logits [B, KV, H/KV, Sq, Sk] from a batched matmul with the causal mask
// added, a softmax, the probabilities cast to bf16 and the PV matmul named
// attn.core; no fused attention operator is left. Its matmuls compute every
// (query, key) pair, which the closed-form count follows in prefill,
// decode and training under every remat policy (within 1%).
TEST(Generate, DenseAttentionIsXlasEinsums) {
  ModelSpec m = load_model("llama3-8b");  // GQA: 32 query heads over 8 KV heads
  m.transformer.layers = 2;
  PhaseOptions o = small(Phase::prefill);
  o.attention_kernel = AttentionImpl::dense;
  Workload w = generate(m, o);
  EXPECT_NO_THROW(w.validate());
  for (const auto& op : w.ops) EXPECT_NE(op.kind, OpKind::attention) << op.name;
  const Op* s = w.find_op("layers.1.attn.scores");
  ASSERT_NE(s, nullptr);
  const Tensor* logits = w.find_tensor(s->outputs[0]);
  ASSERT_NE(logits, nullptr);
  EXPECT_EQ(logits->dtype, DType::f32);
  EXPECT_EQ(logits->shape, (Shape{2, 8, 4, 16, 16}));
  ASSERT_NE(w.find_op("layers.1.attn.causal_mask"), nullptr);
  const Op* sm = w.find_op("layers.1.attn.softmax");
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ(sm->kind, OpKind::softmax);
  const Op* core = w.find_op("layers.1.attn.core");
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(core->kind, OpKind::matmul);
  EXPECT_EQ(w.find_tensor(core->inputs[0])->dtype, DType::bf16);  // the cast probabilities
  EXPECT_NEAR(mm_attn_flops(w) / phase_matmul_flops(m, o), 1.0, 0.01);
  // Every pair is computed: more MXU work than the fused causal kernel,
  // but the useful MACs (the model FLOPs: what the causal mask keeps) are
  // the fused kernel's, in prefill and in training.
  PhaseOptions flash = small(Phase::prefill);
  EXPECT_GT(phase_matmul_flops(m, o), phase_matmul_flops(m, flash));
  EXPECT_EQ(useful_macs(w), useful_macs(generate(m, flash)));
  PhaseOptions dt = small(Phase::train), ft = small(Phase::train);
  dt.attention_kernel = AttentionImpl::dense;
  EXPECT_EQ(useful_macs(generate(m, dt)), useful_macs(generate(m, ft)));

  PhaseOptions d = small(Phase::decode);
  d.attention_kernel = AttentionImpl::dense;
  Workload wd = generate(m, d);
  EXPECT_NO_THROW(wd.validate());
  EXPECT_EQ(wd.find_op("layers.0.attn.causal_mask"), nullptr);  // the cache holds only the past
  EXPECT_NEAR(mm_attn_flops(wd) / phase_matmul_flops(m, d), 1.0, 0.01);

  RematCustom context_kept;
  context_kept.set(RematTensor::context, RematPlace::device);
  for (RematPolicy pol : {RematPolicy::none, RematPolicy::minimal, RematPolicy::selective, RematPolicy::full,
                          RematPolicy::qkv_proj_offloaded, RematPolicy::minimal_offloaded, RematPolicy::custom}) {
    PhaseOptions t = small(Phase::train);
    t.attention_kernel = AttentionImpl::dense;
    t.remat = pol;
    if (pol == RematPolicy::custom) t.remat_custom = context_kept;
    Workload wt = generate(m, t);
    EXPECT_NO_THROW(wt.validate()) << remat_name(pol);
    EXPECT_NEAR(mm_attn_flops(wt) / phase_matmul_flops(m, t), 1.0, 0.01) << remat_name(pol);
  }
}

// Where dense attention is not modelled, or contradicts another option, it
// is refused by name.
TEST(Generate, DenseAttentionIsRefusedWhereItDoesNotApply) {
  PhaseOptions o = small(Phase::prefill);
  o.attention_kernel = AttentionImpl::dense;
  EXPECT_THROW(check_options(load_model("deepseek-v3"), o), ModelError);  // latent attention
  PhaseOptions r = small(Phase::infer);
  r.attention_kernel = AttentionImpl::dense;
  EXPECT_THROW(check_options(load_model("resnet50"), r), ModelError);
  EXPECT_NO_THROW(check_options(load_model("bert-base"), r));
  EXPECT_NO_THROW(check_options(load_model("vit-b16"), r));
  PhaseOptions t = small(Phase::train);
  t.attention_kernel = AttentionImpl::dense;
  t.fused_attention_backward = true;
  EXPECT_THROW(check_options(load_model("llama3-8b"), t), ModelError);
  try {
    check_options(load_model("llama3-8b"), t);
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("fused_attention_backward"), std::string::npos) << e.what();
  }
  AttentionImpl k;
  EXPECT_TRUE(parse_attention_impl("dense", &k));
  EXPECT_EQ(k, AttentionImpl::dense);
  EXPECT_FALSE(parse_attention_impl("Dense", &k));
}

// The fused backward kernel's one op stands for dQ, dK and dV; with
// latent attention (DeepSeek-V3: queries and keys 192 wide, values 128)
// the query and key gradients still get their inputs' width, so the step
// is a valid program, with or without fixed blocks (it was not: the key
// gradient's slice of the rope part ran past a 128-wide tensor).
TEST(Generate, FusedBackwardGivesLatentAttentionItsQueryWidth) {
  ModelSpec m = load_model("deepseek-v3");
  m.transformer.layers = 4;  // three dense layers and one MoE layer
  PhaseOptions t = small(Phase::train);
  t.fused_attention_backward = true;
  const Workload w = generate(m, t);
  EXPECT_NO_THROW(w.validate());
  int fused = 0;
  for (const Op& op : w.ops)
    if (op.kind == OpKind::attention && op.as<AttentionAttrs>().pass == AttentionPass::grad_qkv) ++fused;
  EXPECT_EQ(fused, 4);
  t.fused_attention_backward = false;
  EXPECT_NO_THROW(generate(m, t).validate());
}

// The memory check counts dense attention's logits, softmax and
// probabilities: a training step keeps them for backward, so its
// activations exceed the fused kernel's by at least the f32 logits of
// every layer.
TEST(Generate, DenseAttentionActivationsIncludeTheScores) {
  const ModelSpec m = load_model("llama3-8b");
  PhaseOptions o;
  o.phase = Phase::train;
  o.batch = 1;
  o.seq_len = 4096;
  const MemoryFootprint flash = memory_footprint(m, o);
  o.attention_kernel = AttentionImpl::dense;
  const MemoryFootprint dense = memory_footprint(m, o);
  const double logits = 32.0 * 4096 * 4096 * 4 * static_cast<double>(m.transformer.layers);
  EXPECT_GE(static_cast<double>(dense.activations) - static_cast<double>(flash.activations), logits);
}

// Fixed flash kernel blocks (MaxText's sa_block_* flags) reach every
// attention kernel of a step: the forward's, the dQ kernel's and the dK/dV
// kernel's (which the fused backward kernel takes too); none are set when
// none are given.
TEST(Generate, AttentionBlocksReachEveryKernel) {
  const ModelSpec m = load_model("llama3-8b");
  PhaseOptions t = small(Phase::train);
  ASSERT_EQ(parse_splash_blocks("q=1024,kv=512,q_dq=2048,kv_dkv=256", &t.attention_blocks), "");
  std::map<AttentionPass, AttentionBlocks> seen;
  for (const Op& op : generate(m, t).ops)
    if (op.kind == OpKind::attention) seen[op.as<AttentionAttrs>().pass] = op.as<AttentionAttrs>().blocks;
  EXPECT_EQ(seen.at(AttentionPass::forward), (AttentionBlocks{1024, 512}));
  EXPECT_EQ(seen.at(AttentionPass::grad_q), (AttentionBlocks{2048, 512}));   // kv_dq left out: kv's
  EXPECT_EQ(seen.at(AttentionPass::grad_kv), (AttentionBlocks{1024, 256}));  // q_dkv left out: q's
  t.fused_attention_backward = true;
  for (const Op& op : generate(m, t).ops)
    if (op.kind == OpKind::attention && op.as<AttentionAttrs>().pass == AttentionPass::grad_qkv) {
      EXPECT_EQ(op.as<AttentionAttrs>().blocks, (AttentionBlocks{1024, 256}));
    }
  for (const Op& op : generate(m, small(Phase::prefill)).ops)
    if (op.kind == OpKind::attention) {
      EXPECT_FALSE(op.as<AttentionAttrs>().blocks.fixed());
    }
}

// The blocks' spelling: Q,KV or keyed, splash's units (q multiples of 8, kv
// of 128), and where they do not apply (dense einsums, decode) refused by
// name.
TEST(Generate, AttentionBlocksAreParsedAndChecked) {
  SplashBlocks b;
  EXPECT_EQ(parse_splash_blocks("512,1024", &b), "");
  EXPECT_EQ(b.fwd, (AttentionBlocks{512, 1024}));
  EXPECT_EQ(b.dq, b.fwd);
  EXPECT_EQ(b.dkv, b.fwd);
  EXPECT_EQ(b.str(), "q=512,kv=1024,q_dq=512,kv_dq=1024,q_dkv=512,kv_dkv=1024");
  SplashBlocks back;
  EXPECT_EQ(parse_splash_blocks(b.str(), &back), "");
  EXPECT_EQ(back.str(), b.str());
  for (const char* bad : {"", "512", "512,1000", "12,128", "q=512", "q=512,kv=512,q_dq=512,q_dq=512",
                          "q=512,kv=512,dq=512", "q=0,kv=128", "q=512,kv=512,", "512,128,128", "q=-8,kv=128"}) {
    SplashBlocks x;
    EXPECT_NE(parse_splash_blocks(bad, &x), "") << bad;
    EXPECT_FALSE(x.any()) << bad;  // left as it was
  }
  const ModelSpec m = load_model("llama3-8b");
  PhaseOptions d = small(Phase::decode);
  d.attention_blocks = b;
  try {
    check_options(m, d);
    ADD_FAILURE() << "decode with fixed blocks accepted";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("attention_blocks"), std::string::npos) << e.what();
  }
  PhaseOptions p = small(Phase::prefill);
  p.attention_blocks = b;
  EXPECT_NO_THROW(check_options(m, p));
  p.attention_kernel = AttentionImpl::dense;
  EXPECT_THROW(check_options(m, p), ModelError);
}
