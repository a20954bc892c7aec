// LoRA adapters in the zoo (models/lora.h): the generated adapter weights
// hold exactly lora_params() per chip, the adapters add exactly their
// matmul FLOPs, several adapters in a step split the rows (same FLOPs,
// n times the weights), and LoRA training freezes the base weights.
#include <gtest/gtest.h>

#include "models/lora.h"
#include "models/sharding.h"
#include "models/zoo.h"
#include "phase_options.h"
#include "workloads/ir/cost.h"

using namespace tpusim::models;
using namespace tpusim::workloads;
using tpusim::models::test::decode;

namespace {

double matmul_flops(const Workload& w, bool adapters_only = false) {
  double f = 0;
  for (const auto& op : w.ops)
    if (op.kind == OpKind::matmul && (!adapters_only || op.name.find(".lora") != std::string::npos))
      f += static_cast<double>(op_cost(w, op).flops);
  return f;
}

double matmul_attn_flops(const Workload& w) {
  double f = 0;
  for (const auto& op : w.ops)
    if (op.kind == OpKind::matmul || op.kind == OpKind::attention) f += static_cast<double>(op_cost(w, op).flops);
  return f;
}

std::uint64_t adapter_elems(const Workload& w) {
  std::uint64_t n = 0;
  for (const auto& t : w.tensors)
    if (t.kind == TensorKind::weight && is_lora_weight(t.name)) n += static_cast<std::uint64_t>(t.num_elements());
  return n;
}

LoraOptions lora(std::int64_t rank, const std::string& targets, std::int64_t adapters = 1) {
  LoraOptions l;
  l.rank = rank;
  std::string bad;
  EXPECT_TRUE(parse_lora_targets(targets, &l.targets, &bad)) << bad;
  l.adapters = adapters;
  return l;
}

PhaseOptions train(std::int64_t batch, std::int64_t seq) {
  PhaseOptions o;
  o.phase = Phase::train;
  o.batch = batch;
  o.seq_len = seq;
  return o;
}

MeshSpec mesh(const std::string& text) { return parse_mesh(text, mesh_axis_names()); }

}  // namespace

TEST(Lora, ParsesTargets) {
  unsigned t = 0;
  std::string bad;
  ASSERT_TRUE(parse_lora_targets("q,v", &t, &bad));
  EXPECT_EQ(lora_targets_text(t), "q,v");
  ASSERT_TRUE(parse_lora_targets("all", &t, &bad));
  EXPECT_EQ(lora_targets_text(t), "q,k,v,o,gate,up,down");
  EXPECT_FALSE(parse_lora_targets("q,w", &t, &bad));
  EXPECT_EQ(bad, "w");
  EXPECT_FALSE(parse_lora_targets("", &t, &bad));
  EXPECT_FALSE(parse_lora_targets("q,", &t, &bad));
}

TEST(Lora, TargetsOfProjectionNames) {
  EXPECT_EQ(lora_target_of("layers.3.attn.q_proj"), LoraTarget::q);
  EXPECT_EQ(lora_target_of("layers.12.attn.o_proj"), LoraTarget::o);
  EXPECT_EQ(lora_target_of("layers.0.mlp.fc2"), LoraTarget::down);
  EXPECT_EQ(lora_target_of("layers.0.mlp.gate_proj"), LoraTarget::gate);
  EXPECT_FALSE(lora_target_of("lm_head"));
  EXPECT_FALSE(lora_target_of("layers.0.mlp.shared.up_proj"));
  EXPECT_FALSE(lora_target_of("layers.0.mlp.router"));
}

// The generated adapter weights hold what lora_params counts, unsharded and
// per chip under tensor and fsdp meshes, for one adapter and for eight.
TEST(Lora, ParamsMatchGeneratedWeights) {
  const ModelSpec m = load_model("llama3-8b");
  struct Case {
    std::string mesh, targets;
    std::int64_t adapters;
  };
  for (const Case& c :
       {Case{"", "q,v", 1}, Case{"tensor=4", "all", 1}, Case{"tensor=4", "q,k,v,o", 8}, Case{"fsdp=4", "all", 1}}) {
    PhaseOptions o = decode(8, 512);
    if (!c.mesh.empty()) o.mesh = mesh(c.mesh);
    o.lora = lora(16, c.targets, c.adapters);
    SCOPED_TRACE(c.mesh + " " + c.targets + " x" + std::to_string(c.adapters));
    EXPECT_EQ(adapter_elems(generate(m, o)), lora_params(m, o));
  }
  // By hand, one adapter of rank 16 on q and v, llama3-8b (hidden 4096,
  // 32 heads and 8 KV heads of 128, 32 layers): per layer
  // q: 16 x (4096 + 4096), v: 16 x (4096 + 1024).
  PhaseOptions o = decode(1, 16);
  o.lora = lora(16, "q,v");
  EXPECT_EQ(lora_params(m, o), 32u * (16u * 8192u + 16u * 5120u));
}

// y = x W + (x A) B: per token and target 2 r (in + out) FLOPs more.
TEST(Lora, AddsExactlyTheLowRankFlops) {
  const ModelSpec m = load_model("llama3-8b");
  PhaseOptions base = decode(8, 512);
  PhaseOptions with = base;
  with.lora = lora(16, "q,v,down");
  const double T = 8, r = 16, h = 4096, F = 14336;
  const double per_layer = 2 * r * ((h + h) + (h + 1024) + (F + h));
  EXPECT_DOUBLE_EQ(matmul_flops(generate(m, with)) - matmul_flops(generate(m, base)), 32 * T * per_layer);
  EXPECT_DOUBLE_EQ(matmul_flops(generate(m, with), true), 32 * T * per_layer);
}

// Eight adapters among the step's 64 rows: the same adapter FLOPs (each
// row multiplies one adapter), eight adapters' weights, one grouped
// matmul per factor; 61 rows over 8 adapters take 8 rows each, 3 of them
// padding: 64/61 of the FLOPs.
TEST(Lora, SeveralAdaptersSplitTheRows) {
  const ModelSpec m = load_model("llama3-8b");
  for (std::int64_t B : {64, 61}) {
    PhaseOptions one = decode(B, 512), eight = one;
    one.lora = lora(16, "all");
    eight.lora = lora(16, "all", 8);
    const Workload w1 = generate(m, one), w8 = generate(m, eight);
    EXPECT_DOUBLE_EQ(matmul_flops(w8, true), matmul_flops(w1, true) * 64.0 / static_cast<double>(B));
    EXPECT_EQ(adapter_elems(w8), 8 * adapter_elems(w1));
    const Tensor* a = w8.find_tensor("layers.0.attn.q_proj.lora_a.weight");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->shape, (Shape{8, 4096, 16}));
    EXPECT_EQ(w8.find_tensor("layers.0.attn.q_proj.lora.pad_rows") != nullptr, B == 61);
  }
}

// LoRA fine-tuning: gradients and Adam state for the adapters only, the
// activation gradients still flowing to the first adapter.
TEST(Lora, TrainingFreezesTheBase) {
  const ModelSpec m = load_model("llama3-8b");
  const PhaseOptions full = train(1, 256);
  PhaseOptions lo = full;
  lo.lora = lora(16, "q,v");
  const Workload w = generate(m, lo);
  int adapter_states = 0;
  for (const auto& t : w.tensors) {
    if (t.name.rfind("optimizer.", 0) != 0 || t.name.size() < 7 || t.name.compare(t.name.size() - 7, 7, ".master"))
      continue;
    EXPECT_TRUE(is_lora_weight(t.name)) << t.name << " has Adam state but is a base weight";
    ++adapter_states;
  }
  EXPECT_EQ(adapter_states, 32 * 2 * 2);  // q and v, A and B, 32 layers
  EXPECT_EQ(w.find_tensor("layers.5.attn.q_proj.weight.grad_fit0"), nullptr);
  bool base_weight_grad = false, adapter_grad = false, act_grad = false;
  for (const auto& op : w.ops) {
    base_weight_grad = base_weight_grad || op.name == "layers.5.attn.q_proj.grad_rhs" || op.name == "lm_head.grad_rhs";
    adapter_grad = adapter_grad || op.name == "layers.0.attn.q_proj.lora_a.grad_rhs";
    act_grad = act_grad || op.name == "layers.0.mlp.down_proj.grad_lhs";
  }
  EXPECT_FALSE(base_weight_grad);
  EXPECT_TRUE(adapter_grad);
  EXPECT_TRUE(act_grad);
  // Full training runs each matmul three times (forward, input gradient,
  // weight gradient); LoRA drops the base weights' third: about 2/3 of the
  // matmul and attention FLOPs (attention backward is kept, the adapters
  // add a little, layer 0's projections without an adapter upstream skip
  // their input gradient).
  const double ratio = matmul_attn_flops(w) / matmul_attn_flops(generate(m, full));
  EXPECT_GT(ratio, 0.64);
  EXPECT_LT(ratio, 0.69);
}

TEST(Lora, MemoryKeepsStateForAdaptersOnly) {
  const ModelSpec m = load_model("llama3-8b");
  PhaseOptions o = train(4, 2048);
  o.mesh = mesh("fsdp=4");
  const MemoryFootprint full = memory_footprint(m, o);
  o.lora = lora(16, "all");
  const MemoryFootprint lo = memory_footprint(m, o);
  const std::uint64_t a = lora_params(m, o);
  EXPECT_EQ(lo.gradients, 2 * a);
  EXPECT_EQ(lo.optimizer, 12 * a);
  EXPECT_EQ(lo.weights, full.weights + 2 * a);
  EXPECT_EQ(lo.activations, full.activations);
}

TEST(Lora, RejectsOptionsTheModelCannotTake) {
  PhaseOptions o = decode(4, 64);
  o.lora = lora(16, "q", 5);  // 5 adapters among 4 tokens
  EXPECT_THROW(check_options(load_model("llama3-8b"), o), ModelError);
  o.lora = lora(16, "gate");
  EXPECT_THROW(check_options(load_model("gpt-j-6b"), o), ModelError);  // GELU FFN: no gate
  o.lora = lora(16, "q");
  EXPECT_THROW(check_options(load_model("deepseek-v3"), o), ModelError);  // latent attention
  PhaseOptions e;
  e.phase = Phase::infer;
  e.seq_len = 128;
  e.lora = lora(16, "q");
  EXPECT_THROW(check_options(load_model("bert-base"), e), ModelError);
  o.lora = lora(16, "q", 4);
  EXPECT_NO_THROW(check_options(load_model("llama3-8b"), o));
}
