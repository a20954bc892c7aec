// Sharded per-chip programs: mesh parsing and checks, per-chip parameter
// bytes, FLOP conservation over the chips, the collectives each strategy
// emits (axes and byte sizes derived by hand below) and the per-chip fit
// check. Byte convention: a collective's size is its per-participant
// output tensor as the IR defines it (all_gather: the gathered whole;
// all_reduce: the reduced tensor; all_to_all: the exchanged tensor); the
// bytes a chip receives are output x (group - 1) / group for all_gather.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "models/sharding.h"
#include "models/zoo.h"
#include "workloads/ir/cost.h"

using namespace tpusim::models;
using namespace tpusim::workloads;

namespace {

double mm_flops(const Workload& w, const std::string& contains = "") {
  double f = 0;
  for (const auto& op : w.ops)
    if ((op.kind == OpKind::matmul || op.kind == OpKind::attention) &&
        (contains.empty() || op.name.find(contains) != std::string::npos))
      f += static_cast<double>(op_cost(w, op).flops);
  return f;
}

std::uint64_t weight_bytes_of(const Workload& w) {
  std::uint64_t b = 0;
  for (const auto& t : w.tensors)
    if (t.kind == TensorKind::weight) b += t.bytes();
  return b;
}

PhaseOptions opts(Phase p, std::int64_t batch, const std::string& mesh) {
  PhaseOptions o;
  o.phase = p;
  o.batch = batch;
  o.seq_len = 16;
  o.context = 32;
  o.mesh = parse_mesh(mesh, mesh_axis_names());
  return o;
}

const Op& op_named(const Workload& w, const std::string& n) {
  const Op* op = w.find_op(n);
  if (!op) throw std::runtime_error("no op " + n);
  return *op;
}

std::uint64_t out_bytes(const Workload& w, const Op& op) { return w.find_tensor(op.outputs[0])->bytes(); }

std::string error_of(const ModelSpec& m, const PhaseOptions& o) {
  try {
    generate(m, o);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Mesh, ParsesNamedAxesInOrder) {
  MeshSpec m = parse_mesh("fsdp=16, tensor=4", mesh_axis_names());
  ASSERT_EQ(m.axes.size(), 2u);
  EXPECT_EQ(m.axes[0], (MeshAxis{"fsdp", 16}));
  EXPECT_EQ(m.axes[1], (MeshAxis{"tensor", 4}));
  EXPECT_EQ(m.chips(), 64);
  EXPECT_EQ(m.size("data"), 1);
  EXPECT_EQ(m.str(), "fsdp=16,tensor=4");
  EXPECT_TRUE(parse_mesh("").empty());
}

TEST(Mesh, BadTextListsEveryProblem) {
  try {
    parse_mesh("tensr=4,data=0,expert=x,fsdp,data=2,data=2", mesh_axis_names());
    FAIL();
  } catch (const MeshError& e) {
    const std::string s = e.what();
    EXPECT_EQ(e.diagnostics().size(), 5u) << s;
    EXPECT_NE(s.find("found 'tensr' (did you mean 'tensor'?)"), std::string::npos) << s;
    EXPECT_NE(s.find("mesh.data: expected a size that is an integer >= 1, found '0'"), std::string::npos) << s;
    EXPECT_NE(s.find("found 'x'"), std::string::npos) << s;
    EXPECT_NE(s.find("found 'fsdp'"), std::string::npos) << s;
    EXPECT_NE(s.find("given again"), std::string::npos) << s;
  }
}

TEST(Mesh, SplitsThatDoNotDivideNameTheModelKey) {
  ModelSpec l = load_model("llama3-8b");
  ModelSpec six = l;  // 6 KV heads (of 24 query heads): tensor=4 neither splits nor replicates them evenly
  six.transformer.attention.heads = 24;
  six.transformer.attention.kv_heads = 6;
  six.transformer.attention.head_dim = 128;
  six.transformer.hidden = 3072;
  std::string e = error_of(six, opts(Phase::decode, 4, "tensor=4"));
  EXPECT_NE(e.find("attention.kv_heads: expected a multiple of mesh axis tensor=4 (it splits the KV heads) or a "
                   "divisor of it"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("found 6 in model 'llama3-8b'"), std::string::npos) << e;
  e = error_of(l, opts(Phase::decode, 6, "data=4"));
  EXPECT_NE(e.find("batch: expected a multiple of data x fsdp x expert = 4"), std::string::npos) << e;
  e = error_of(l, opts(Phase::decode, 3, "fsdp=3"));  // hidden 4096
  EXPECT_NE(e.find("hidden: expected a multiple of mesh axis fsdp=3"), std::string::npos) << e;
  e = error_of(l, opts(Phase::decode, 2, "expert=2"));
  EXPECT_NE(e.find("mesh.expert: expected a mixture-of-experts model"), std::string::npos) << e;
  e = error_of(l, opts(Phase::decode, 2, "sequence=2"));  // context parallelism splits prefill/train only
  EXPECT_NE(e.find("mesh.sequence: expected phase prefill or train"), std::string::npos) << e;
  e = error_of(load_model("mixtral-8x7b"), opts(Phase::decode, 16, "expert=16"));  // 8 experts
  EXPECT_NE(e.find("moe.experts: expected a multiple of mesh axis expert=16"), std::string::npos) << e;
  e = error_of(load_model("resnet50"), opts(Phase::infer, 2, "tensor=2"));
  EXPECT_NE(e.find("mesh.tensor: expected only the data axis for a resnet model"), std::string::npos) << e;
  // Mixtral decode: 1 sequence per chip x 2 slots is not a multiple of 4.
  e = error_of(load_model("mixtral-8x7b"), opts(Phase::decode, 4, "expert=4"));
  EXPECT_NE(e.find("token slots per chip"), std::string::npos) << e;
}

TEST(Mesh, EmptyMeshIsTheUnshardedProgram) {
  ModelSpec m = load_model("llama3-8b");
  PhaseOptions o = opts(Phase::prefill, 2, "");
  Workload w = generate(m, o);
  EXPECT_TRUE(w.mesh.empty());
  for (const auto& op : w.ops) EXPECT_FALSE(is_collective(op.kind)) << op.name;
  // Size-1 axes are declared but split nothing.
  Workload w1 = generate(m, opts(Phase::prefill, 2, "data=1,tensor=1"));
  EXPECT_EQ(w1.mesh.axes.size(), 2u);
  EXPECT_EQ(w1.ops, w.ops);
}

TEST(PerChip, ParameterBytesAreTotalOverTensorTimesFsdp) {
  ModelSpec m = load_model("llama3-8b");
  PhaseOptions o = opts(Phase::prefill, 4, "fsdp=4,tensor=4");
  Workload w = generate(m, o);
  w.validate();
  const double total = static_cast<double>(count_params(m).total);
  // Norm scales (65 x 4096 = 0.27M) are the only part not split by tensor.
  EXPECT_NEAR(static_cast<double>(weight_bytes_of(w)) / (total * 2 / 16), 1.0, 0.001);
  EXPECT_NEAR(static_cast<double>(per_chip_params(m, o.mesh)) / (total / 16), 1.0, 0.001);
  EXPECT_NEAR(static_cast<double>(weight_bytes_of(w)), 2.0 * static_cast<double>(per_chip_params(m, o.mesh)), 1e3);
}

TEST(PerChip, ExpertsSplitOverExpertToo) {
  ModelSpec m = load_model("mixtral-8x7b");
  PhaseOptions o = opts(Phase::prefill, 8, "expert=8,tensor=2");
  Workload w = generate(m, o);
  w.validate();
  const ParamCounts c = count_params(m);
  const double routed = static_cast<double>(c.routed_experts), rest = static_cast<double>(c.total) - routed;
  // 16 tokens x 8 ranks touch all 8 experts: each chip holds its one expert.
  const double want = rest / 2 + routed / 16;
  EXPECT_NEAR(static_cast<double>(weight_bytes_of(w)) / (2 * want), 1.0, 0.001);
  EXPECT_NEAR(static_cast<double>(per_chip_params(m, o.mesh)) / want, 1.0, 0.001);

  ModelSpec d = load_model("deepseek-v3");
  PhaseOptions od = opts(Phase::prefill, 16, "expert=8,fsdp=2");
  Workload wd = generate(d, od);
  const ParamCounts cd = count_params(d);
  const double want_d =
      (static_cast<double>(cd.total - cd.routed_experts)) / 2 + static_cast<double>(cd.routed_experts) / 16;
  EXPECT_NEAR(static_cast<double>(weight_bytes_of(wd)) / (2 * want_d), 1.0, 0.001);
}

// Sum over chips of per-chip matmul + attention FLOPs = unsharded FLOPs,
// plus what tensor parallelism replicates on each tensor rank.
TEST(PerChip, FlopsSumOverChipsToTheUnshardedProgram) {
  struct Case {
    const char* model;
    Phase phase;
    std::int64_t batch;
    const char* mesh;
    std::vector<std::string> replicated;
  };
  const std::vector<Case> cases = {
      {"llama3-8b", Phase::train, 8, "data=2,fsdp=2,tensor=2", {}},
      {"llama3-8b", Phase::decode, 8, "data=2,tensor=4", {}},
      {"llama3-8b", Phase::prefill, 4, "fsdp=4,tensor=2", {}},
      // the router runs whole on every tensor rank
      {"mixtral-8x7b", Phase::train, 8, "expert=4,tensor=2", {"mlp.router"}},
      {"mixtral-8x7b", Phase::decode, 32, "expert=8,tensor=2", {"mlp.router"}},
      // MLA's down-projections and the router are replicated over tensor
      {"deepseek-v3", Phase::prefill, 16, "expert=8,tensor=2", {"mlp.router", "attn.q_a_proj", "attn.kv_a_proj"}},
  };
  for (const auto& c : cases) {
    ModelSpec m = load_model(c.model);
    PhaseOptions o = opts(c.phase, c.batch, c.mesh);
    PhaseOptions one = o;
    one.mesh = {};
    Workload ws = generate(m, o), wu = generate(m, one);
    const double tp = static_cast<double>(o.mesh.size("tensor"));
    double repl = 0;
    for (const auto& n : c.replicated) repl += mm_flops(wu, n);
    const double want = mm_flops(wu) + (tp - 1) * repl;
    const double got = mm_flops(ws) * static_cast<double>(o.mesh.chips());
    EXPECT_NEAR(got / want, 1.0, 0.01) << c.model << " " << phase_name(c.phase) << " " << c.mesh;
  }
}

TEST(Collectives, TensorParallelAllReducesTwicePerLayer) {
  ModelSpec m = load_model("llama3-8b");
  Workload w = generate(m, opts(Phase::prefill, 4, "data=2,tensor=4"));
  w.validate();
  EXPECT_EQ(w.mesh.axes, (std::vector<MeshAxis>{{"data", 2}, {"tensor", 4}}));
  int per_layer = 0;
  for (const auto& op : w.ops)
    if (op.kind == OpKind::all_reduce && op.name.rfind("layers.3.", 0) == 0) ++per_layer;
  EXPECT_EQ(per_layer, 2);
  for (const char* n : {"layers.3.attn.o_proj.all_reduce", "layers.3.mlp.down_proj.all_reduce"}) {
    const Op& op = op_named(w, n);
    EXPECT_EQ(op.as<CollectiveAttrs>().mesh_axes, std::vector<std::string>{"tensor"});
    // [batch 4 / data 2, seq 16, hidden 4096] bf16 = 2 x 16 x 4096 x 2 B.
    EXPECT_EQ(out_bytes(w, op), 2u * 16 * 4096 * 2) << n;
  }
  // Vocab-parallel embedding: [2, 16, 4096]; prefill logits gathered: [2, 1, 128256].
  EXPECT_EQ(out_bytes(w, op_named(w, "embed.all_reduce")), 2u * 16 * 4096 * 2);
  EXPECT_EQ(w.find_tensor("lm_head.all_gather")->shape, (Shape{2, 1, 128256}));
  // Heads split: 32 / 4 query heads, 8 / 4 KV heads.
  EXPECT_EQ(w.find_tensor("layers.3.attn.q_heads")->shape, (Shape{2, 16, 8, 128}));
  EXPECT_EQ(w.find_tensor("layers.3.attn.k_heads")->shape, (Shape{2, 16, 2, 128}));
}

TEST(Collectives, TrainingAddsBackwardAndDataParallelReductions) {
  ModelSpec m = load_model("llama3-8b");
  Workload w = generate(m, opts(Phase::train, 4, "data=2,tensor=2"));
  w.validate();
  // Megatron "f": the norm outputs feeding column-parallel matmuls get
  // their gradient all_reduced over tensor: [2, 16, 4096] bf16.
  for (const char* n : {"layers.3.attn_norm.grad_all_reduce", "layers.3.mlp_norm.grad_all_reduce"}) {
    const Op& op = op_named(w, n);
    EXPECT_EQ(op.as<CollectiveAttrs>().mesh_axes, std::vector<std::string>{"tensor"});
    EXPECT_EQ(out_bytes(w, op), 2u * 16 * 4096 * 2);
  }
  // Data parallel: down_proj's per-chip shard [14336 / 2, 4096] bf16.
  const Op& g = op_named(w, "layers.3.mlp.down_proj.weight.grad_all_reduce");
  EXPECT_EQ(g.as<CollectiveAttrs>().mesh_axes, std::vector<std::string>{"data"});
  EXPECT_EQ(out_bytes(w, g), 7168u * 4096 * 2);
  // Every model weight's gradient is reduced once over data (and the
  // reduction is what Adam reads).
  std::size_t weights = 0, reduced = 0;
  for (const auto& t : w.tensors)
    if (t.kind == TensorKind::weight && t.name.rfind("optimizer.", 0) != 0) {
      ++weights;
      EXPECT_NE(w.find_op(t.name + ".grad_all_reduce"), nullptr) << t.name;
    }
  for (const auto& op : w.ops)
    if (op.kind == OpKind::all_reduce && op.as<CollectiveAttrs>().mesh_axes == std::vector<std::string>{"data"})
      ++reduced;
  EXPECT_EQ(reduced, weights);
  EXPECT_EQ(op_named(w, "optimizer.layers.3.mlp.down_proj.weight.m_grad").inputs[0],
            "optimizer.layers.3.mlp.down_proj.weight.g32");
  EXPECT_EQ(op_named(w, "optimizer.layers.3.mlp.down_proj.weight.g32").inputs[0],
            "layers.3.mlp.down_proj.weight.grad_all_reduce");
}

TEST(Collectives, FsdpGathersEachLayerForwardAndBackward) {
  ModelSpec m = load_model("llama3-8b");
  PhaseOptions o = opts(Phase::train, 8, "fsdp=8");
  Workload w = generate(m, o);
  w.validate();
  // Layer params, hand-derived: q,o 4096x4096 each, k,v 4096x1024 each,
  // gate/up/down 3 x 4096x14336, two norm scales 4096:
  // 16,777,216 x 2 + 4,194,304 x 2 + 176,160,768 + 8,192 = 218,112,000.
  const std::uint64_t layer = 218112000;
  std::uint64_t fwd = 0, bwd = 0, rs = 0, fwd_in = 0;
  int n_fwd = 0;
  for (const auto& op : w.ops) {
    if (op.name.rfind("layers.3.", 0) != 0) continue;
    if (op.kind == OpKind::all_gather) {
      EXPECT_EQ(op.as<CollectiveAttrs>().mesh_axes, std::vector<std::string>{"fsdp"}) << op.name;
      const bool back = op.name.size() > 4 && op.name.substr(op.name.size() - 4) == "_bwd";
      (back ? bwd : fwd) += out_bytes(w, op);
      if (!back) fwd_in += w.find_tensor(op.inputs[0])->bytes(), ++n_fwd;
    }
    if (op.kind == OpKind::reduce_scatter) rs += out_bytes(w, op);
  }
  EXPECT_EQ(n_fwd, 9);
  EXPECT_EQ(fwd, layer * 2);               // the whole layer gathered, bf16
  EXPECT_EQ(fwd_in, layer * 2 / 8);        // from 1/8 shards; a chip receives 7/8 of `fwd`
  EXPECT_EQ(bwd, (layer - 2 * 4096) * 2);  // matmul weights gathered again (norm scales not needed)
  EXPECT_EQ(rs, layer * 2 / 8);            // gradients reduce_scattered to the shards
  // Adam state on the shard: f32 m of q_proj is [4096 / 8, 4096].
  EXPECT_EQ(w.find_tensor("optimizer.layers.3.attn.q_proj.weight.m")->shape, (Shape{512, 4096}));
  // With recompute the re-emitted forward gathers the weights instead.
  o.remat = RematPolicy::full;
  Workload r = generate(m, o);
  EXPECT_EQ(r.find_op("layers.3.attn.q_proj.weight.all_gather_bwd"), nullptr);
  EXPECT_NE(r.find_op("layers.3.recompute.attn.q_proj.weight.all_gather"), nullptr);
}

TEST(Collectives, ExpertParallelExchangesTokensAllToAll) {
  ModelSpec m = load_model("mixtral-8x7b");
  Workload w = generate(m, opts(Phase::prefill, 8, "expert=8"));
  w.validate();
  // 1 sequence x 16 tokens x top-2 = 32 slots per chip, 4 to each of 8 ranks.
  for (const char* n : {"layers.3.mlp.dispatch.all_to_all", "layers.3.mlp.combine.all_to_all"}) {
    const Op& op = op_named(w, n);
    EXPECT_EQ(op.kind, OpKind::all_to_all);
    EXPECT_EQ(op.as<CollectiveAttrs>().mesh_axes, std::vector<std::string>{"expert"});
    EXPECT_EQ(w.find_tensor(op.outputs[0])->shape, (Shape{8, 4, 4096}));
    EXPECT_EQ(out_bytes(w, op), 32u * 4096 * 2);
  }
  // One local expert serving the 32 received slots.
  EXPECT_EQ(w.find_tensor("layers.3.mlp.experts.g0.gate_proj.weight")->shape, (Shape{1, 4096, 14336}));
  EXPECT_EQ(w.find_tensor("layers.3.mlp.experts.g0.dispatch")->shape, (Shape{1, 32, 4096}));
}

// MaxText's dropping MoE under expert parallelism: the dispatch einsum's
// [E, B, C, h] slots are resharded from batch to experts by one
// all_to_all (E split, B concatenated) and back. 8 experts over 4 ranks,
// 8 sequences (2 per rank) of 16 tokens, top-2, capacity factor 1.25:
// C = ceil(16 x 2 / 8 x 1.25) = 5; a rank sends [8, 2, 5, h] and its 2
// experts receive [2, 8, 5, h], 40 slots each; train, so both exchanges
// have their reverse in backward. The expert FLOPs over the 4 chips are
// those of all 8 experts' E x B x C slots, as without the axis.
TEST(Collectives, DroppingMoeUnderExpertParallelismExchangesSlots) {
  ModelSpec m = load_model("mixtral-8x7b");
  PhaseOptions o = opts(Phase::train, 8, "expert=4");
  o.moe_capacity_factor = 1.25;
  Workload w = generate(m, o);
  w.validate();
  const Op& d = op_named(w, "layers.3.mlp.dispatch.all_to_all");
  const Op& c = op_named(w, "layers.3.mlp.combine.all_to_all");
  EXPECT_EQ(d.as<CollectiveAttrs>().mesh_axes, std::vector<std::string>{"expert"});
  EXPECT_EQ(w.find_tensor(d.inputs[0])->shape, (Shape{8, 2, 5, 4096}));
  EXPECT_EQ(w.find_tensor(d.outputs[0])->shape, (Shape{2, 8, 5, 4096}));
  EXPECT_EQ(w.find_tensor(c.outputs[0])->shape, (Shape{8, 2, 5, 4096}));
  EXPECT_EQ(w.find_tensor("layers.3.mlp.experts.g0.gate_proj.weight")->shape, (Shape{2, 4096, 14336}));
  EXPECT_NE(w.find_op("layers.3.mlp.dispatch.all_to_all.grad_x"), nullptr);
  EXPECT_NE(w.find_op("layers.3.mlp.combine.all_to_all.grad_x"), nullptr);
  PhaseOptions one = o;
  one.mesh = parse_mesh("fsdp=4", mesh_axis_names());
  Workload f = generate(m, one);
  EXPECT_DOUBLE_EQ(mm_flops(w, "mlp.experts"), mm_flops(f, "mlp.experts"));
  EXPECT_GT(mm_flops(w, "mlp.experts"), 0.0);
}

// A weight neither of whose sharded dims divides by fsdp stays whole on
// every chip, its gradient all_reduced over fsdp: DeepSeek-V3's 256 router
// biases under fsdp=512 (the expert weights still shard and gather).
// Training MLA reads its narrower output gradient (value width 128
// against the query's 192) zero-padded in the dQ kernel's query place, so
// no gradient is left unread: the step's only results are the
// optimizer's.
TEST(Collectives, UndividableWeightStaysWholeAndMlaBackwardReadsItsOutputGradient) {
  ModelSpec m = load_model("deepseek-v3");
  m.transformer.layers = 4;  // 3 dense, 1 MoE
  Workload w = generate(m, opts(Phase::train, 512, "fsdp=512"));
  w.validate();
  EXPECT_EQ(w.find_tensor("layers.3.mlp.router.bias")->shape, (Shape{256}));
  EXPECT_EQ(w.find_op("layers.3.mlp.router.bias.all_gather"), nullptr);
  const Op* sync = w.find_op("layers.3.mlp.router.bias.grad_all_reduce");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->as<CollectiveAttrs>().mesh_axes, std::vector<std::string>{"fsdp"});
  EXPECT_NE(w.find_op("layers.3.mlp.experts.g0.gate_proj.weight.all_gather"), nullptr);
  const Op& pad = op_named(w, "layers.3.attn.core.grad_do_pad");
  EXPECT_EQ(pad.inputs[0], "layers.3.attn.merge_heads.grad_x");
  EXPECT_EQ(op_named(w, "layers.3.attn.core.grad_q").inputs[0], pad.outputs[0]);
  for (const auto& t : w.tensors)
    if (t.kind == TensorKind::output) {
      EXPECT_EQ(t.name.rfind("optimizer.", 0), 0u) << t.name;
    }
}

TEST(Collectives, DecodeKvCacheFollowsTheSharding) {
  ModelSpec m = load_model("llama3-8b");
  PhaseOptions o = opts(Phase::decode, 8, "data=2,tensor=4");
  o.context = 1000;
  Workload w = generate(m, o);
  // [batch 8 / 2, context, 8 KV heads / 4, 128]
  EXPECT_EQ(w.find_tensor("layers.31.attn.k_cache")->shape, (Shape{4, 1000, 2, 128}));
  // memory_footprint: per chip 1/8 of the global cache (data 2 x tensor 4).
  PhaseOptions one = o;
  one.mesh = {};
  EXPECT_EQ(memory_footprint(m, o).kv_cache, memory_footprint(m, one).kv_cache / 8);
  // MLA's latent cache cannot split its single head: replicated over tensor.
  ModelSpec d = load_model("deepseek-v3");
  PhaseOptions od = opts(Phase::decode, 16, "expert=8,tensor=2");
  Workload wd = generate(d, od);
  EXPECT_EQ(wd.find_tensor("layers.3.attn.latent_cache")->shape, (Shape{2, 32, 1, 576}));
}

TEST(Collectives, MoreTensorRanksThanKvHeadsReplicateThem) {
  // llama3-8b: 32 query heads in 8 KV groups of 4; tensor=16 gives each
  // rank 2 query heads of one group and that group's KV head, replicated
  // on the 2 ranks of the group.
  ModelSpec m = load_model("llama3-8b");
  PhaseOptions o = opts(Phase::decode, 8, "data=2,tensor=16");
  o.context = 1000;
  Workload w = generate(m, o);
  w.validate();
  EXPECT_EQ(w.find_tensor("layers.31.attn.k_proj.weight")->shape, (Shape{4096, 128}));
  EXPECT_EQ(w.find_tensor("layers.31.attn.q_proj.weight")->shape, (Shape{4096, 256}));
  EXPECT_EQ(w.find_tensor("layers.31.attn.k_cache")->shape, (Shape{4, 1000, 1, 128}));
  // Per chip: 1/2 of the data split and 1/8 of the KV heads.
  PhaseOptions one = o;
  one.mesh = {};
  EXPECT_EQ(memory_footprint(m, o).kv_cache, memory_footprint(m, one).kv_cache / 16);
  // The analysis' per-chip parameters are the generated program's weights
  // (norm scales aside), the replicated K/V projections counted whole.
  EXPECT_NEAR(static_cast<double>(weight_bytes_of(w)), 2.0 * static_cast<double>(per_chip_params(m, o.mesh)), 1e6);
  const double kv = 32.0 * 2 * 4096 * 128;  // the K and V projections of 32 layers, one head each
  EXPECT_NEAR(static_cast<double>(per_chip_params(m, o.mesh)),
              (static_cast<double>(count_params(m).total) - 32.0 * 2 * 4096 * 1024) / 16 + kv, 1e6);
  // Training: each rank's K/V weight gradient holds only its query heads'
  // share, so it is all_reduced over tensor as well as data; a split
  // weight's is not.
  Workload t = generate(m, opts(Phase::train, 2, "data=2,tensor=16"));
  t.validate();
  auto axes = op_named(t, "layers.3.attn.k_proj.weight.grad_all_reduce").as<CollectiveAttrs>().mesh_axes;
  EXPECT_NE(std::find(axes.begin(), axes.end(), "tensor"), axes.end());
  EXPECT_NE(std::find(axes.begin(), axes.end(), "data"), axes.end());
  EXPECT_EQ(op_named(t, "layers.3.attn.q_proj.weight.grad_all_reduce").as<CollectiveAttrs>().mesh_axes,
            std::vector<std::string>{"data"});
  // Where tensor divides the KV heads nothing is replicated.
  Workload s = generate(m, opts(Phase::train, 2, "data=2,tensor=8"));
  EXPECT_EQ(op_named(s, "layers.3.attn.k_proj.weight.grad_all_reduce").as<CollectiveAttrs>().mesh_axes,
            std::vector<std::string>{"data"});
}

TEST(Collectives, QkNormScalesGradientIsReducedOverTensor) {
  // Gemma 3's query and key norms: one scale of head_dim shared by the
  // heads, which tensor parallelism splits, so each rank's gradient is
  // its heads' share: all_reduced over tensor (and data); without tensor
  // parallelism only over data.
  ModelSpec m = load_model("gemma3-12b");
  m.transformer.layers = 6;
  Workload t = generate(m, opts(Phase::train, 2, "data=2,tensor=4"));
  t.validate();
  for (const char* n : {"layers.3.attn.q_norm.scale.grad_all_reduce", "layers.3.attn.k_norm.scale.grad_all_reduce"}) {
    auto axes = op_named(t, n).as<CollectiveAttrs>().mesh_axes;
    EXPECT_NE(std::find(axes.begin(), axes.end(), "tensor"), axes.end()) << n;
    EXPECT_NE(std::find(axes.begin(), axes.end(), "data"), axes.end()) << n;
  }
  Workload d = generate(m, opts(Phase::train, 2, "data=2"));
  EXPECT_EQ(op_named(d, "layers.3.attn.q_norm.scale.grad_all_reduce").as<CollectiveAttrs>().mesh_axes,
            std::vector<std::string>{"data"});
}

TEST(Collectives, ParallelBlockReducesAttentionAndFfnOnce) {
  // GPT-J: attention and FFN read one LayerNorm; their row-parallel
  // partial sums are added and all_reduced once (XLA's
  // AllReduceReassociate), the FFN's output bias added after.
  ModelSpec m = load_model("gpt-j-6b");
  Workload w = generate(m, opts(Phase::prefill, 2, "tensor=2"));
  w.validate();
  EXPECT_EQ(out_bytes(w, op_named(w, "layers.3.block.all_reduce")), 2u * 16 * 4096 * 2);
  EXPECT_EQ(w.find_op("layers.3.attn.o_proj.all_reduce"), nullptr);
  EXPECT_EQ(w.find_op("layers.3.mlp.fc2.all_reduce"), nullptr);
  EXPECT_EQ(op_named(w, "layers.3.mlp.fc2.bias_add").inputs[0], "layers.3.block.all_reduce");
  std::size_t reduces = 0;
  for (const auto& op : w.ops)
    if (op.kind == OpKind::all_reduce && op.name.rfind("layers.3.", 0) == 0) ++reduces;
  EXPECT_EQ(reduces, 1u);
  // The same FLOPs as the unsharded program, over the two ranks.
  Workload one = generate(m, opts(Phase::prefill, 2, ""));
  EXPECT_NEAR(mm_flops(w) * 2 / mm_flops(one), 1.0, 1e-9);
  // Under sequence parallelism: one reduce_scatter of the tokens, and the
  // training step differentiates it.
  PhaseOptions sp = opts(Phase::train, 2, "tensor=2");
  sp.sequence_parallel = true;
  Workload t = generate(m, sp);
  t.validate();
  EXPECT_EQ(t.find_tensor("layers.3.block.reduce_scatter")->shape, (Shape{2, 8, 4096}));
}

TEST(Collectives, VocabularyTensorDoesNotDivideIsPadded) {
  ModelSpec m = load_model("llama3-8b");
  m.transformer.attention.heads = 12;
  m.transformer.attention.kv_heads = 1;
  m.transformer.ffn.size = 12288;
  m.transformer.vocab = 1000;
  PhaseOptions o = opts(Phase::prefill, 2, "tensor=12");
  Workload w = generate(m, o);
  w.validate();
  // ceil(1000 / 12) = 84 rows per rank (1008 in all).
  EXPECT_EQ(w.find_tensor("embed.weight")->shape, (Shape{84, 4096}));
  EXPECT_EQ(w.find_tensor("lm_head.weight")->shape, (Shape{4096, 84}));
  generate(m, opts(Phase::train, 2, "tensor=12")).validate();  // the loss over the padded logits too
  EXPECT_NEAR(static_cast<double>(weight_bytes_of(w)), 2.0 * static_cast<double>(per_chip_params(m, o.mesh)), 1e6);
}

TEST(Fit, Llama3_70bOn16V5eChips) {
  ModelSpec m = load_model("llama3-70b");
  const std::uint64_t v5e = 16ull << 30;  // 16 GiB HBM per chip (Cloud TPU v5e docs: 16 GB)
  PhaseOptions o = opts(Phase::decode, 16, "tensor=8,data=2");
  o.context = 2047;
  FitReport r = check_fit(m, o, v5e);
  // Weights per chip ~ 70.55e9 x 2 B / 8 = 17.6 GB > 17.18 GB: does not fit.
  EXPECT_NEAR(static_cast<double>(r.footprint.weights), 70.55e9 * 2 / 8, 0.05e9);
  // KV per chip: 8 sequences x 2048 tokens x 327,680 B / 8 (KV heads split).
  EXPECT_EQ(r.footprint.kv_cache, 8ull * 2048 * 327680 / 8);
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.chips, 16);
  EXPECT_GT(r.min_chips, 16);
  EXPECT_NE(r.message.find("on mesh tensor=8,data=2 (16 chips, batch 8 per chip)"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("GiB per chip"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("at least " + std::to_string(r.min_chips) + " chips"), std::string::npos) << r.message;
  // fsdp=2 instead of data=2 halves the resident weights: 8.8 GB + two
  // gathered layers (2 x 856M params / 8 x 2 B = 0.43 GB) fits.
  FitReport f = check_fit(m, opts(Phase::decode, 16, "fsdp=2,tensor=8"), v5e);
  EXPECT_TRUE(f.fits) << f.message;
  EXPECT_NEAR(static_cast<double>(f.footprint.weights), 70.55e9 * 2 / 16 + 2 * 856e6 * 2 / 8, 0.05e9);
}

TEST(Fit, TrainingStateIsPerChipShard) {
  ModelSpec m = load_model("llama2-7b");
  PhaseOptions o = opts(Phase::train, 16, "fsdp=16");
  o.seq_len = 1024;
  MemoryFootprint f = memory_footprint(m, o);
  const std::uint64_t shard = per_chip_params(m, o.mesh);
  EXPECT_NEAR(static_cast<double>(shard), static_cast<double>(count_params(m).total) / 16, 1e3);
  EXPECT_EQ(f.gradients, 2 * shard);
  EXPECT_EQ(f.optimizer, 12 * shard);
  EXPECT_TRUE(check_fit(m, o, 95ull << 30).fits);  // unsharded needs 2 v5p chips (test_model_file)
}
