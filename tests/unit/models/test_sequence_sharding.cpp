// Sequence-splitting shardings of the decoder generator: Megatron sequence
// parallelism on the tensor axis (PhaseOptions::sequence_parallel), context
// parallelism (mesh axis `sequence`) and the vocab-parallel cross-entropy's
// all_reduces under tensor parallelism. Byte figures are derived by hand
// in the comments; "wire" bytes are what one chip sends in a ring
// collective over a group of n: all_gather (n-1)/n x output, reduce_scatter
// (n-1)/n x input, all_reduce 2 (n-1)/n x tensor.
#include <gtest/gtest.h>

#include "models/analysis.h"
#include "models/sharding.h"
#include "models/zoo.h"
#include "workloads/ir/cost.h"

using namespace tpusim::models;
using namespace tpusim::workloads;

namespace {

PhaseOptions opts(Phase p, std::int64_t batch, const std::string& mesh, bool sp = false) {
  PhaseOptions o;
  o.phase = p;
  o.batch = batch;
  o.seq_len = 16;
  o.context = 32;
  o.mesh = tpusim::workloads::parse_mesh(mesh, mesh_axis_names());
  o.sequence_parallel = sp;
  return o;
}

const Op& op_named(const Workload& w, const std::string& n) {
  const Op* op = w.find_op(n);
  if (!op) throw std::runtime_error("no op " + n);
  return *op;
}

std::uint64_t out_bytes(const Workload& w, const std::string& op) {
  return w.find_tensor(op_named(w, op).outputs[0])->bytes();
}

double group(const Workload& w, const Op& op) {
  double n = 1;
  for (const auto& ax : op.as<CollectiveAttrs>().mesh_axes) n *= static_cast<double>(*w.mesh_axis_size(ax));
  return n;
}

double wire(const Workload& w, const Op& op) {
  const double n = group(w, op), f = (n - 1) / n;
  const double out = static_cast<double>(w.find_tensor(op.outputs[0])->bytes());
  const double in = static_cast<double>(w.find_tensor(op.inputs[0])->bytes());
  // Ring wire bytes per chip of the three collectives sequence sharding emits.
  if (op.kind == OpKind::all_gather) return f * out;
  if (op.kind == OpKind::reduce_scatter) return f * in;
  if (op.kind == OpKind::all_reduce) return 2 * f * out;
  return 0;
}

// Wire bytes of layer `prefix`'s collectives over the tensor axis that
// carry activations (not weight-gradient reductions).
double layer_tensor_wire(const Workload& w, const std::string& prefix, bool backward) {
  double b = 0;
  for (const auto& op : w.ops) {
    if (!is_collective(op.kind) || op.name.rfind(prefix, 0) != 0) continue;
    if (op.as<CollectiveAttrs>().mesh_axes != std::vector<std::string>{"tensor"}) continue;
    if (op.name.find(".weight.") != std::string::npos || op.name.find(".scale.") != std::string::npos) continue;
    const bool bwd = op.name.find("grad") != std::string::npos || op.name.find("_bwd") != std::string::npos;
    if (bwd == backward) b += wire(w, op);
  }
  return b;
}

double mm_flops(const Workload& w, bool attention) {
  double f = 0;
  for (const auto& op : w.ops)
    if (op.kind == (attention ? OpKind::attention : OpKind::matmul)) f += static_cast<double>(op_cost(w, op).flops);
  return f;
}

std::uint64_t model_weight_bytes(const Workload& w) {
  std::uint64_t b = 0;
  for (const auto& t : w.tensors)
    if (t.kind == TensorKind::weight && t.name.rfind("optimizer.", 0) != 0) b += t.bytes();
  return b;
}

std::string error_of(const ModelSpec& m, const PhaseOptions& o) {
  try {
    generate(m, o);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

// llama3-8b, 2 sequences of 16 tokens per chip, hidden 4096, bf16: one
// [2, 16, 4096] activation is M = 262,144 bytes.
constexpr double kM = 2.0 * 16 * 4096 * 2;

}  // namespace

TEST(SequenceParallel, ReduceScatterPlusAllGatherReplaceEachAllReduce) {
  ModelSpec m = load_model("llama3-8b");
  Workload tp = generate(m, opts(Phase::prefill, 2, "tensor=4"));
  Workload sp = generate(m, opts(Phase::prefill, 2, "tensor=4", true));
  sp.validate();
  for (const char* n : {"layers.3.attn.o_proj.all_reduce", "layers.3.mlp.down_proj.all_reduce"}) {
    EXPECT_NE(tp.find_op(n), nullptr) << n;
    EXPECT_EQ(sp.find_op(n), nullptr) << n;
  }
  // Gathers before the column-parallel blocks: [2, 16 / 4 -> 16, 4096].
  for (const char* n : {"layers.3.attn_norm.all_gather", "layers.3.mlp_norm.all_gather"}) {
    EXPECT_EQ(op_named(sp, n).as<CollectiveAttrs>().mesh_axes, std::vector<std::string>{"tensor"});
    EXPECT_EQ(op_named(sp, n).as<CollectiveAttrs>().dim, 1);
    EXPECT_EQ(sp.find_tensor(op_named(sp, n).inputs[0])->shape, (Shape{2, 4, 4096}));
    EXPECT_EQ(out_bytes(sp, n), static_cast<std::uint64_t>(kM));
  }
  // Reduce-scatters after the row-parallel ones: [2, 16, 4096] -> [2, 4, 4096].
  for (const char* n : {"layers.3.attn.o_proj.reduce_scatter", "layers.3.mlp.down_proj.reduce_scatter"}) {
    EXPECT_EQ(sp.find_tensor(op_named(sp, n).inputs[0])->bytes(), static_cast<std::uint64_t>(kM));
    EXPECT_EQ(sp.find_tensor(op_named(sp, n).outputs[0])->shape, (Shape{2, 4, 4096}));
  }
  // Per layer on the wire: TP 2 all_reduces x 2 x 3/4 M = 3 M; SP 2 x
  // (reduce_scatter 3/4 M + all_gather 3/4 M) = 3 M: the same bytes.
  EXPECT_DOUBLE_EQ(layer_tensor_wire(tp, "layers.3.", false), 3 * kM);
  EXPECT_DOUBLE_EQ(layer_tensor_wire(sp, "layers.3.", false), 3 * kM);
  // Norms work on a quarter of the tokens.
  EXPECT_EQ(sp.find_tensor("layers.3.attn_norm")->shape, (Shape{2, 4, 4096}));
  EXPECT_EQ(tp.find_tensor("layers.3.attn_norm")->shape, (Shape{2, 16, 4096}));
  // Embedding partial sums reduce_scattered; the last position (held by
  // the last tensor rank) gathered from every rank's last: [2, 4, 4096].
  EXPECT_EQ(sp.find_tensor("embed.reduce_scatter")->shape, (Shape{2, 4, 4096}));
  EXPECT_EQ(sp.find_tensor("last_token.all_gather")->shape, (Shape{2, 4, 4096}));
  EXPECT_EQ(sp.find_tensor("last_token")->shape, (Shape{2, 1, 4096}));
  // Same parameters and matmul/attention FLOPs per chip as plain TP.
  EXPECT_EQ(model_weight_bytes(sp), model_weight_bytes(tp));
  EXPECT_DOUBLE_EQ(mm_flops(sp, false), mm_flops(tp, false));
  EXPECT_DOUBLE_EQ(mm_flops(sp, true), mm_flops(tp, true));
}

TEST(SequenceParallel, TrainingMirrorsTheCollectivesAndRegathers) {
  ModelSpec m = load_model("llama3-8b");
  Workload tp = generate(m, opts(Phase::train, 2, "tensor=4"));
  Workload sp = generate(m, opts(Phase::train, 2, "tensor=4", true));
  sp.validate();
  // No Megatron "f" all_reduce: the gathers' transposes reduce_scatter.
  EXPECT_NE(tp.find_op("layers.3.attn_norm.grad_all_reduce"), nullptr);
  EXPECT_EQ(sp.find_op("layers.3.attn_norm.grad_all_reduce"), nullptr);
  EXPECT_EQ(sp.find_op("layers.3.attn_norm.all_gather.grad_x")->kind, OpKind::reduce_scatter);
  EXPECT_EQ(sp.find_op("layers.3.attn.o_proj.reduce_scatter.grad_x")->kind, OpKind::all_gather);
  // The gathered inputs are gathered again for the weight gradients
  // instead of being kept, and that copy is what they read.
  for (const char* n : {"layers.3.attn_norm.all_gather_bwd", "layers.3.mlp_norm.all_gather_bwd"})
    EXPECT_EQ(out_bytes(sp, n), static_cast<std::uint64_t>(kM)) << n;
  EXPECT_EQ(op_named(sp, "layers.3.attn.q_proj.grad_rhs").inputs[0], "layers.3.attn_norm.all_gather_bwd");
  // Backward per layer on the wire: TP 2 "f" all_reduces = 3 M; SP 2
  // reduce_scatters + 2 all_gathers (3 M) + 2 re-gathers (2 x 3/4 M).
  EXPECT_DOUBLE_EQ(layer_tensor_wire(tp, "layers.3.", true), 3 * kM);
  EXPECT_DOUBLE_EQ(layer_tensor_wire(sp, "layers.3.", true), 3 * kM + 1.5 * kM);
  // Norm scales see a quarter of the tokens: gradients summed over tensor.
  const Op& g = op_named(sp, "layers.3.attn_norm.scale.grad_all_reduce");
  EXPECT_EQ(g.as<CollectiveAttrs>().mesh_axes, std::vector<std::string>{"tensor"});
  EXPECT_EQ(out_bytes(sp, "layers.3.attn_norm.scale.grad_all_reduce"), 4096u * 2);
  EXPECT_EQ(tp.find_op("layers.3.attn_norm.scale.grad_all_reduce"), nullptr);
  // With data parallelism too, one reduction over both axes.
  Workload spd = generate(m, opts(Phase::train, 4, "data=2,tensor=4", true));
  EXPECT_EQ(op_named(spd, "final_norm.scale.grad_all_reduce").as<CollectiveAttrs>().mesh_axes,
            (std::vector<std::string>{"data", "tensor"}));
  // A policy that does not keep the norm's output (minimal keeps matmul
  // outputs) rebuilds it and gathers the rebuilt shard again, so the
  // forward's shard dies with the forward gather.
  PhaseOptions mr = opts(Phase::train, 2, "tensor=4", true);
  mr.remat = RematPolicy::minimal;
  Workload spm = generate(m, mr);
  EXPECT_EQ(op_named(spm, "layers.3.attn_norm.all_gather_bwd").inputs[0], "layers.3.recompute.attn_norm");
  EXPECT_EQ(op_named(spm, "layers.3.mlp_norm.all_gather_bwd").inputs[0], "layers.3.recompute.mlp_norm");
  for (const auto& op : spm.ops)
    if (op.name.find(".grad") != std::string::npos || op.name.find("_bwd") != std::string::npos) {
      for (const auto& in : op.inputs) EXPECT_NE(in, "layers.3.attn_norm") << op.name;
    }
  // With recompute the re-emitted forward gathers instead.
  PhaseOptions r = opts(Phase::train, 2, "tensor=4", true);
  r.remat = RematPolicy::full;
  Workload spr = generate(m, r);
  EXPECT_EQ(spr.find_op("layers.3.attn_norm.all_gather_bwd"), nullptr);
  EXPECT_NE(spr.find_op("layers.3.recompute.attn_norm.all_gather"), nullptr);
  EXPECT_EQ(model_weight_bytes(sp), model_weight_bytes(tp));
}

// Tensor parallelism with an offloading remat policy: a row-parallel
// projection's partial sums are not what goes to host; its reduced result
// is (the all_reduce's, or with sequence parallelism the reduce_scatter's:
// a tensor-th of the partial sums), copied right after the reduction and
// read back for backward, as XLA partitions the einsum with the reduction
// inside it. The FFN's down projection, which only the last residual add
// reads, goes to host in neither form; column-parallel projections still
// offload their own outputs.
TEST(SequenceParallel, OffloadingSavesTheReducedProjection) {
  ModelSpec m = load_model("llama3-8b");
  m.transformer.layers = 3;
  for (bool sp : {false, true}) {
    PhaseOptions o = opts(Phase::train, 2, "tensor=4", sp);
    o.remat = RematPolicy::minimal_offloaded;
    Workload w = generate(m, o);
    w.validate();
    const std::string red = sp ? ".reduce_scatter" : ".all_reduce";
    const std::string o_proj = "layers.1.attn.o_proj", reduced = o_proj + red;
    const std::string sum = op_named(w, reduced).outputs[0];
    EXPECT_EQ(w.find_op(o_proj + ".offload"), nullptr);
    const Op& to_host = op_named(w, reduced + ".offload");
    EXPECT_EQ(to_host.inputs[0], sum);
    EXPECT_EQ(&to_host, &op_named(w, reduced) + 1);  // right after the reduction
    EXPECT_EQ(w.find_tensor(to_host.outputs[0])->bytes(), out_bytes(w, reduced));
    EXPECT_EQ(out_bytes(w, o_proj), (sp ? 4u : 1u) * out_bytes(w, reduced));
    // Read back before layer 1's backward; the attention's residual sum,
    // which the FFN norm's backward reads, is rebuilt from that copy.
    const Op& back = op_named(w, "layers.1.reload." + sum.substr(std::string("layers.1.").size()));
    EXPECT_EQ(back.inputs[0], sum + ".host");
    bool read = false;
    for (const auto& op : w.ops)
      if (op.name.rfind("layers.1.recompute.", 0) == 0)
        for (const auto& in : op.inputs) read = read || in == back.outputs[0];
    EXPECT_TRUE(read);
    EXPECT_EQ(w.find_op("layers.1.mlp.down_proj.offload"), nullptr);
    EXPECT_EQ(w.find_op("layers.1.mlp.down_proj" + red + ".offload"), nullptr);
    EXPECT_NE(w.find_op("layers.1.attn.q_proj.offload"), nullptr);
    EXPECT_NE(w.find_op("layers.1.mlp.up_proj.offload"), nullptr);
  }
}

TEST(SequenceParallel, SmallerActivationsPerChip) {
  ModelSpec m = load_model("llama3-8b");
  PhaseOptions o = opts(Phase::train, 2, "tensor=4");
  PhaseOptions s = opts(Phase::train, 2, "tensor=4", true);
  // Kept elements per token and layer (analysis.cpp layer_act_elems):
  // 6h + heads (qk + v) + 2 kv_heads d + 4 ffn = 24576 + 8192 + 2048 +
  // 57344 = 92160. TP keeps 6h whole: 24576 + 67584 / 4 = 41472; SP
  // splits it all: 23040. Training without remat peaks at the loss: 32
  // layers kept, the final norm's input and output and the head's input
  // gradient (3h: 3 x 4096 whole under TP, 3 x 1024 under SP) and the
  // logits, vocab split (128256 / 4 = 32064), for 2 x 16 tokens, bf16:
  // TP 32 x (32 x 41472 + 12288 + 32064) x 2 = 87,773,184;
  // SP 32 x (32 x 23040 + 3072 + 32064) x 2 = 49,434,624.
  EXPECT_EQ(memory_footprint(m, o).activations, 87773184u);
  EXPECT_EQ(memory_footprint(m, s).activations, 49434624u);
  EXPECT_EQ(memory_footprint(m, s).weights, memory_footprint(m, o).weights);
  EXPECT_EQ(per_chip_params(m, s.mesh), per_chip_params(m, o.mesh));
}

TEST(SequenceParallel, BadOptionsNameTheKey) {
  ModelSpec m = load_model("llama3-8b");
  std::string e = error_of(m, opts(Phase::train, 2, "data=2", true));
  EXPECT_NE(e.find("sequence_parallel: expected a mesh with tensor > 1"), std::string::npos) << e;
  EXPECT_NE(e.find("found mesh data=2"), std::string::npos) << e;
  e = error_of(m, opts(Phase::train, 2, "", true));
  EXPECT_NE(e.find("sequence_parallel: expected a mesh with tensor > 1"), std::string::npos) << e;
  e = error_of(m, opts(Phase::decode, 2, "tensor=4", true));
  EXPECT_NE(e.find("sequence_parallel: expected phase prefill or train"), std::string::npos) << e;
  e = error_of(load_model("bert-base"), opts(Phase::train, 2, "tensor=4", true));
  EXPECT_NE(e.find("sequence_parallel: expected a decoder model"), std::string::npos) << e;
}

TEST(SequenceParallel, TokensTensorDoesNotDivideArePadded) {
  // 18 tokens over tensor=4: padded to 20, 5 per rank on the residual
  // stream and 20 gathered into each tensor-parallel block.
  PhaseOptions o = opts(Phase::train, 2, "tensor=4", true);
  o.seq_len = 18;
  Workload w = generate(load_model("llama3-8b"), o);
  w.validate();
  EXPECT_EQ(w.find_tensor("layers.0.attn_norm.all_gather")->shape, (Shape{2, 20, 4096}));
  EXPECT_EQ(w.find_tensor("layers.0.attn.o_proj.reduce_scatter")->shape, (Shape{2, 5, 4096}));
  // A sequence tensor divides is not padded.
  o.seq_len = 16;
  Workload d = generate(load_model("llama3-8b"), o);
  EXPECT_EQ(d.find_tensor("layers.0.attn_norm.all_gather")->shape, (Shape{2, 16, 4096}));
}

TEST(SequenceParallel, MoeAndMlaLayersReduceScatterToo) {
  Workload w = generate(load_model("mixtral-8x7b"), opts(Phase::train, 4, "expert=4,tensor=2", true));
  w.validate();
  // Routed experts' partial sums over tensor: [1, 16, 4096] -> [1, 8, 4096].
  EXPECT_EQ(w.find_tensor("layers.3.mlp.reduce_scatter")->shape, (Shape{1, 8, 4096}));
  EXPECT_EQ(w.find_op("layers.3.mlp.all_reduce"), nullptr);
  // The gates' gradient (partial over tensor: they weight expert rows
  // before the reduction) is all_reduced before the replicated router:
  // 16 tokens x top-2 x 1 x 2 B = 64 B.
  EXPECT_EQ(op_named(w, "layers.3.mlp.gates.grad_all_reduce").as<CollectiveAttrs>().mesh_axes,
            std::vector<std::string>{"tensor"});
  EXPECT_EQ(out_bytes(w, "layers.3.mlp.gates.grad_all_reduce"), 16u * 2 * 2);
  Workload d = generate(load_model("deepseek-v3"), opts(Phase::prefill, 8, "expert=8,tensor=2", true));
  d.validate();
  EXPECT_EQ(d.find_tensor("layers.3.attn.o_proj.reduce_scatter")->shape, (Shape{1, 8, 7168}));
}

TEST(VocabParallelLoss, StatisticsAllReducedOverTensor) {
  ModelSpec m = load_model("llama3-8b");
  Workload w = generate(m, opts(Phase::train, 4, "data=2,tensor=4"));
  w.validate();
  // Per token one f32 each: 2 sequences x 16 tokens x 4 B = 128 B.
  for (const char* n : {"loss.max.all_reduce", "loss.sum_exp.all_reduce", "loss.target.all_reduce"}) {
    const Op& op = op_named(w, n);
    EXPECT_EQ(op.as<CollectiveAttrs>().mesh_axes, std::vector<std::string>{"tensor"}) << n;
    EXPECT_EQ(w.find_tensor(op.outputs[0])->shape, (Shape{2, 16, 1})) << n;
    EXPECT_EQ(out_bytes(w, n), 2u * 16 * 4) << n;
  }
  EXPECT_EQ(op_named(w, "loss.max.all_reduce").as<CollectiveAttrs>().reduce, ReduceKind::max);
  EXPECT_EQ(op_named(w, "loss.sum_exp.all_reduce").as<CollectiveAttrs>().reduce, ReduceKind::sum);
  // The logits' gradient is the local exponentials over the global sum,
  // in bf16 over the local vocab shard [2, 16, 128256 / 4].
  EXPECT_EQ(w.find_tensor("loss.grad")->shape, (Shape{2, 16, 32064}));
  EXPECT_EQ(w.find_tensor("loss.grad")->dtype, DType::bf16);
  EXPECT_EQ(op_named(w, "loss.grad").inputs[1], "loss.sum_exp_global");
  EXPECT_EQ(op_named(w, "loss.sum_exp_global").inputs[0], "loss.sum_exp.all_reduce");
  // Only the per-token statistics are f32; the [2, 16, 32064] tensors
  // stay bf16 (no f32 copy of the logits).
  EXPECT_EQ(w.find_tensor("loss.exp")->dtype, DType::bf16);
  // Without a vocabulary split the loss is local: no such collectives.
  Workload d = generate(m, opts(Phase::train, 4, "data=2"));
  EXPECT_EQ(d.find_op("loss.max.all_reduce"), nullptr);
  EXPECT_EQ(op_named(d, "loss.grad").kind, OpKind::softmax);
  // BERT's tied MLM head splits the vocabulary as well.
  Workload b = generate(load_model("bert-base"), opts(Phase::train, 2, "tensor=2"));
  EXPECT_EQ(out_bytes(b, "loss.target.all_reduce"), 2u * 16 * 4);
}

TEST(ContextParallel, KvGatheredOverTheSequenceAxis) {
  ModelSpec m = load_model("llama3-8b");
  Workload w = generate(m, opts(Phase::train, 2, "sequence=4"));
  w.validate();
  // 16 tokens / 4 per chip; K/V of the whole sequence gathered:
  // [2, 4, 8, 128] -> [2, 16, 8, 128] bf16 = 65,536 B each.
  EXPECT_EQ(w.find_tensor("layers.3.attn.q_heads")->shape, (Shape{2, 4, 32, 128}));
  for (const char* n : {"layers.3.attn.k.all_gather", "layers.3.attn.v.all_gather"}) {
    EXPECT_EQ(op_named(w, n).as<CollectiveAttrs>().mesh_axes, std::vector<std::string>{"sequence"});
    EXPECT_EQ(out_bytes(w, n), 2u * 16 * 8 * 128 * 2) << n;
  }
  // Backward: dK/dV reduce_scattered back to each chip's tokens.
  EXPECT_EQ(op_named(w, "layers.3.attn.k.all_gather.grad_x").kind, OpKind::reduce_scatter);
  EXPECT_EQ(w.find_tensor("layers.3.attn.k.all_gather.grad_x")->shape, (Shape{2, 4, 8, 128}));
  // Training shards the weights over sequence too (MaxText's FSDP over its
  // context axis): gathered over it, their gradients reduce_scattered, none
  // all_reduced.
  EXPECT_EQ(op_named(w, "layers.3.mlp.down_proj.weight.all_gather").as<CollectiveAttrs>().mesh_axes,
            std::vector<std::string>{"sequence"});
  EXPECT_EQ(op_named(w, "layers.3.mlp.down_proj.weight.all_gather.grad_x").kind, OpKind::reduce_scatter);
  EXPECT_EQ(w.find_op("layers.3.mlp.down_proj.weight.grad_all_reduce"), nullptr);
  // The balanced rank's causal attention (MaxText's load-balanced chunks):
  // 4 queries, each over a window of 8 of the 16 keys: 32 pairs per head,
  // the 136 / 4 = 34 of an exact share but for the diagonal; x 32 heads x
  // (2 (128 + 128) + 5) FLOPs x 2 sequences.
  EXPECT_EQ(op_named(w, "layers.3.attn.core").as<AttentionAttrs>().window, 8);
  EXPECT_EQ(op_cost(w, op_named(w, "layers.3.attn.core")).flops, 32u * 32 * 517 * 2);
  // Serving keeps the weights on every sequence rank: none gathered over it.
  PhaseOptions pre = opts(Phase::prefill, 2, "sequence=4");
  for (const Op& op : generate(m, pre).ops)
    if (op.kind == OpKind::all_gather) {
      EXPECT_EQ(op.name.find(".weight"), std::string::npos) << op.name;
    }
  // Every other matmul is per token: summed over 4 chips, the unsharded
  // program's matmul FLOPs.
  PhaseOptions one = opts(Phase::train, 2, "");
  Workload u = generate(m, one);
  EXPECT_NEAR(4 * mm_flops(w, false) / mm_flops(u, false), 1.0, 1e-9);
  // Each chip stores a quarter of the weights (the embedding tables' rows
  // split as evenly as the rest).
  EXPECT_EQ(4 * model_weight_bytes(w), model_weight_bytes(u));
}

TEST(ContextParallel, PrefillCachesOwnTokensAndFitsLessPerChip) {
  ModelSpec m = load_model("llama3-8b");
  PhaseOptions o = opts(Phase::prefill, 2, "sequence=4");
  o.seq_len = 1024;
  Workload w = generate(m, o);
  w.validate();
  // Each chip appends its 256 tokens' K/V to the cache it keeps.
  const Tensor* k = w.find_tensor("layers.3.attn.k_rope");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->shape, (Shape{2, 256, 8, 128}));
  EXPECT_EQ(k->kind, TensorKind::output);
  PhaseOptions one = o;
  one.mesh = {};
  const MemoryFootprint f = memory_footprint(m, o), u = memory_footprint(m, one);
  EXPECT_EQ(f.kv_cache, u.kv_cache / 4);
  EXPECT_LT(f.activations, u.activations);
  EXPECT_EQ(f.weights, u.weights);
  // Context and sequence parallelism compose: 1024 / 2 tokens per chip,
  // / 2 again in the sequence-parallel regions.
  PhaseOptions both = opts(Phase::train, 2, "sequence=2,tensor=2", true);
  both.seq_len = 1024;
  Workload b = generate(m, both);
  b.validate();
  EXPECT_EQ(b.find_tensor("layers.3.attn_norm")->shape, (Shape{2, 256, 4096}));
  EXPECT_EQ(b.find_tensor("layers.3.attn.k.all_gather")->shape, (Shape{2, 1024, 4, 128}));
}

TEST(ContextParallel, BadMeshesNameTheKey) {
  ModelSpec m = load_model("llama3-8b");
  PhaseOptions o = opts(Phase::train, 2, "sequence=3");
  std::string e = error_of(m, o);
  EXPECT_NE(e.find("seq_len: expected a multiple of mesh axis sequence=3"), std::string::npos) << e;
  e = error_of(m, opts(Phase::decode, 2, "sequence=2"));
  EXPECT_NE(e.find("mesh.sequence: expected phase prefill or train"), std::string::npos) << e;
  e = error_of(load_model("bert-base"), opts(Phase::train, 2, "sequence=2"));
  EXPECT_NE(e.find("mesh.sequence: expected a decoder model"), std::string::npos) << e;
}

// Every zoo decoder (MHA/GQA/MQA, MLA, MoE, parallel blocks, learned
// positions, biases) yields a valid per-chip program in both modes, or a
// mesh error naming a key; at least the dense GQA models must generate.
TEST(SequenceSharding, EveryZooDecoderGeneratesOrNamesTheKey) {
  int generated = 0;
  for (const std::string& name : list_models()) {
    ModelSpec m = load_model(name);
    if (m.family != Family::decoder) continue;
    for (const auto& o : {opts(Phase::prefill, 2, "tensor=2", true), opts(Phase::prefill, 2, "sequence=2"),
                          opts(Phase::train, 2, "sequence=2,tensor=2", true)}) {
      if (o.phase == Phase::train && m.transformer.layers > 40) continue;  // keep the test quick
      try {
        check_mesh(m, o);
      } catch (const ModelError& e) {
        EXPECT_NE(std::string(e.what()).find("expected"), std::string::npos) << name;
        continue;
      }
      Workload w = generate(m, o);
      EXPECT_NO_THROW(w.validate()) << name << " " << o.mesh.str();
      ++generated;
    }
  }
  EXPECT_GE(generated, 10);
}

TEST(ContextParallel, MlaGathersTheLatent) {
  Workload w = generate(load_model("deepseek-v3"), opts(Phase::prefill, 8, "expert=4,sequence=2"));
  w.validate();
  // 2 sequences per chip, 16 / 2 tokens; the latent of all 16 gathered:
  // c_kv [2, 16, 512] + k_pe [2, 16, 1, 64], bf16 = 32,768 + 4,096 B.
  EXPECT_EQ(out_bytes(w, "layers.3.attn.c_kv.all_gather"), 2u * 16 * 512 * 2);
  EXPECT_EQ(out_bytes(w, "layers.3.attn.k_pe.all_gather"), 2u * 16 * 64 * 2);
  // Keys and values up-projected for the whole sequence, queries local.
  EXPECT_EQ(w.find_tensor("layers.3.attn.k_full")->shape, (Shape{2, 16, 128, 192}));
  EXPECT_EQ(w.find_tensor("layers.3.attn.q_full")->shape, (Shape{2, 8, 128, 192}));
  // The cache keeps this chip's 8 tokens' latent.
  EXPECT_EQ(w.find_tensor("layers.3.attn.latent")->shape, (Shape{2, 8, 1, 576}));
}
