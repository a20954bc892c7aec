// Closed-form model analytics (see analysis.h). ResNet, whose layer list
// is easiest to state as the generator itself, is counted by walking its
// generated batch-1 workload.
#include "models/analysis.h"
#include "models/quantize.h"

#include <cmath>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "models/generators.h"
#include "models/lora.h"
#include "models/sharding.h"
#include "models/zoo.h"
#include "workloads/ir/cost.h"

namespace tpusim::models {

namespace {

using u64 = std::uint64_t;
u64 U(std::int64_t x) { return static_cast<u64>(x); }

u64 norm_params(const TransformerSpec& t, std::int64_t d) { return U(d) * (t.norm == NormKind::layernorm ? 2 : 1); }

// A layer's norms over the hidden width: before attention and the FFN (one
// for a parallel block), and after each with post_norms.
u64 layer_norm_params(const TransformerSpec& t) {
  return norm_params(t, t.hidden) * ((t.parallel_block ? 1 : 2) + (t.post_norms ? 2 : 0));
}

u64 attn_params(const TransformerSpec& t) {
  const auto& a = t.attention;
  const u64 h = U(t.hidden), H = U(a.heads);
  if (a.kind == AttentionKind::mla) {
    const u64 qk = U(a.qk_dim()), qr = U(a.q_lora_rank), kvr = U(a.kv_lora_rank);
    u64 q = qr > 0 ? h * qr + qr + qr * H * qk : h * H * qk;
    return q + h * (kvr + U(a.qk_rope_head_dim)) + kvr + kvr * H * U(a.qk_nope_head_dim + a.v_head_dim) +
           H * U(a.v_head_dim) * h;
  }
  const u64 D = U(a.head_dim), KV = U(a.kv_heads);
  u64 p = h * H * D + 2 * h * KV * D + H * D * h;
  if (a.qkv_bias) p += H * D + 2 * KV * D;
  if (a.out_bias) p += h;
  if (a.sinks) p += H;
  if (a.qk_norm) p += 2 * norm_params(t, a.head_dim);
  return p;
}

u64 ffn_params(const TransformerSpec& t, std::int64_t size, bool bias) {
  const u64 h = U(t.hidden), F = U(size);
  if (t.ffn.gated()) return 3 * h * F + (bias ? 2 * F + h : 0);
  return 2 * h * F + (bias ? F + h : 0);
}

u64 expert_params(const TransformerSpec& t) { return ffn_params(t, t.moe.expert_ffn_size, t.moe.expert_bias); }

ParamCounts transformer_params(const ModelSpec& m) {
  const auto& t = m.transformer;
  const u64 h = U(t.hidden);
  ParamCounts c;
  u64 lookup = 0, other = 0;
  if (m.family == Family::vit) {
    const u64 n = U(t.image_size / t.patch);
    other += U(t.patch * t.patch * t.channels) * h + h;  // patch projection
    lookup += h + (n * n + 1) * h;                       // class token, positions
    other += norm_params(t, t.hidden);
    if (t.classes > 0) other += h * U(t.classes) + U(t.classes);
  } else {
    const u64 tok = U(t.vocab) * h;
    if (m.family == Family::decoder && t.tied_embeddings)
      other += tok;
    else
      lookup += tok;
    if (t.position == PositionKind::learned) lookup += U(t.max_context) * h;
    if (m.family == Family::encoder) {
      lookup += U(t.type_vocab) * h;
      other += norm_params(t, t.hidden);  // embedding norm
      if (t.pooler) other += h * h + h;
    } else {
      other += norm_params(t, t.hidden);  // final norm
      if (!t.tied_embeddings) other += tok;
      if (t.lm_head_bias) other += U(t.vocab);
    }
  }
  u64 layers = 0, active_layers = 0, routed = 0;
  for (std::int64_t i = 0; i < t.layers; ++i) {
    u64 p = attn_params(t) + layer_norm_params(t);
    u64 act = p;
    if (t.is_moe_layer(i)) {
      const auto& e = t.moe;
      u64 shared = e.shared_experts > 0 ? ffn_params(t, e.shared_experts * e.expert_ffn_size, false) : 0;
      u64 router = h * U(e.experts) + (e.router_bias ? U(e.experts) : 0);
      u64 ex = expert_params(t);
      p += router + shared + U(e.experts) * ex;
      act += router + shared + U(e.top_k) * ex;
      routed += U(e.experts) * ex;
    } else {
      u64 f = ffn_params(t, t.ffn.size, t.ffn.bias);
      p += f;
      act += f;
    }
    layers += p;
    active_layers += act;
  }
  c.total = lookup + other + layers;
  c.active = lookup + other + active_layers;
  c.embedding = lookup;
  c.routed_experts = routed;
  return c;
}

ParamCounts dlrm_params(const DlrmSpec& d) {
  ParamCounts c;
  for (const auto& t : d.tables) c.embedding += U(t.rows * d.embedding_dim);
  u64 mlp = 0;
  std::int64_t in = d.dense_features;
  for (auto s : d.bottom_mlp) mlp += U(in * s + s), in = s;
  const std::int64_t F = static_cast<std::int64_t>(d.tables.size()) + 1, X = F * d.embedding_dim;
  if (d.interaction == InteractionKind::dcn) {
    mlp += U(d.cross_layers) * U(2 * X * d.low_rank + X);
    in = X;
  } else {
    in = d.embedding_dim + F * F;
  }
  for (auto s : d.top_mlp) mlp += U(in * s + s), in = s;
  c.total = c.active = c.embedding + mlp;
  return c;
}

// Per-layer attention FLOPs for `pairs` (query, key) pairs per head.
double attn_pair_flops(const AttentionSpec& a, double pairs, bool absorbed) {
  double dq = static_cast<double>(a.qk_dim()), dv = static_cast<double>(a.v_dim());
  // MLA's absorbed decode: scores over the latent and rope (576 for
  // DeepSeek-V3), PV over the latent's kv_lora_rank columns (512).
  if (absorbed) {
    dq = static_cast<double>(a.kv_lora_rank + a.qk_rope_head_dim);
    dv = static_cast<double>(a.kv_lora_rank);
  }
  return static_cast<double>(a.heads) * pairs *
         workloads::attention_kernel(workloads::AttentionPass::forward).flops_per_score(dq, dv);
}

// Per-layer FLOPs of dense attention's two matmuls (AttentionImpl::dense)
// for `pairs` (query, key) pairs per head: QK^T (2 qk_dim per pair) and
// PV (2 v_dim); the softmax is not a matmul.
double dense_qk_flops(const AttentionSpec& a, double pairs) {
  return static_cast<double>(a.heads) * pairs * 2.0 * static_cast<double>(a.qk_dim());
}
double dense_pv_flops(const AttentionSpec& a, double pairs) {
  return static_cast<double>(a.heads) * pairs * 2.0 * static_cast<double>(a.v_dim());
}

// The layers' forward attention over S tokens: the fused kernel's FLOPs
// for the (causal) pairs it computes, or dense attention's matmuls, which
// compute every pair, the masked ones too.
// The fused kernel of a sliding-window layer computes only its window's
// pairs (AttentionAttrs::window); dense attention computes every pair.
double layers_attention_pairs(const TransformerSpec& t, std::int64_t S, bool causal) {
  double pairs = 0;
  for (std::int64_t i = 0; i < t.layers; ++i)
    pairs += static_cast<double>(workloads::attention_score_pairs(S, S, causal, causal ? t.attention.window_of(i) : 0));
  return pairs;
}

double prefill_attention(const TransformerSpec& t, std::int64_t S, bool causal, bool dense = false) {
  const double s = static_cast<double>(S);
  if (dense)
    return static_cast<double>(t.layers) * (dense_qk_flops(t.attention, s * s) + dense_pv_flops(t.attention, s * s));
  return attn_pair_flops(t.attention, layers_attention_pairs(t, S, causal), false);
}

// What the backward attention kernels (workloads::attention_kernel) add
// to 2x the forward's FLOPs: they recompute S = QK^T (the separate
// kernels' dK/dV dP = dO V^T too) and do 7 VPU ops per score against the
// forward's 5. The dQ op reads K in V's place, so its widths are all the
// query width: per score 6 dq + 4 more (separate kernels), 2 dq - 3 (the
// fused one).
double backward_attention_extra(const TransformerSpec& t, std::int64_t S, bool causal, bool fused) {
  using workloads::attention_kernel;
  using workloads::AttentionPass;
  const double pairs = layers_attention_pairs(t, S, causal);
  const double dq = static_cast<double>(t.attention.qk_dim()), dv = static_cast<double>(t.attention.v_dim());
  const double backward = fused ? attention_kernel(AttentionPass::grad_qkv).flops_per_score(dq, dv)
                                : attention_kernel(AttentionPass::grad_q).flops_per_score(dq, dq) +
                                      attention_kernel(AttentionPass::grad_kv).flops_per_score(dq, dv);
  const double per = backward - 2.0 * attention_kernel(AttentionPass::forward).flops_per_score(dq, dv);
  return static_cast<double>(t.attention.heads) * pairs * per;
}

double head_params(const ModelSpec& m) {
  const auto& t = m.transformer;
  return static_cast<double>(t.vocab) * static_cast<double>(t.hidden);
}

// Activation elements per token of one layer that a training step keeps
// for backward (flash attention: no scores). With MaxText's dropping MoE
// (capacity factor cf > 0, PhaseOptions::moe_capacity_factor, `seq`
// tokens per sequence) the experts hold cf x top_k slots per token, and
// the combine mask [S, E, C] seq x top_k x cf elements per token.
double layer_act_elems(const TransformerSpec& t, std::int64_t layer, double cf = 0, double seq = 0) {
  const auto& a = t.attention;
  const double h = static_cast<double>(t.hidden);
  double e = 6 * h;  // norm outputs, residual sums, projections' outputs
  e += static_cast<double>(a.heads * (a.qk_dim() + a.v_dim()) + 2 * a.kv_heads * std::max(a.qk_dim(), a.v_dim()));
  const double per_ffn = t.ffn.gated() ? 4 : 2;
  if (t.is_moe_layer(layer)) {
    const auto& m = t.moe;
    const double slots = static_cast<double>(m.top_k) * (cf > 0 ? cf : 1.0);
    e += static_cast<double>(m.experts) + slots * (per_ffn * static_cast<double>(m.expert_ffn_size) + 2 * h);
    if (cf > 0) e += seq * static_cast<double>(m.top_k) * cf;
    e += per_ffn * static_cast<double>(m.shared_experts * m.expert_ffn_size);
  } else {
    e += per_ffn * static_cast<double>(t.ffn.size);
  }
  return e;
}

// The part of layer_act_elems the minimal and selective remat policies keep
// per token: the layer's input (the residual stream a scan over layers
// carries) and the outputs of its matmuls (q, k, v and output projections,
// the FFN's down projection, the MoE router, and with `mlpwi` the FFN's
// up/gate projections); everything else is recomputed. Of these, 3 x hidden
// (input, attention and FFN outputs) are whole under tensor parallelism
// without sequence parallelism.
double layer_matmul_out_elems(const TransformerSpec& t, std::int64_t layer, bool mlpwi) {
  const auto& a = t.attention;
  const double h = static_cast<double>(t.hidden);
  double e = 3 * h;
  e += static_cast<double>(a.heads * a.qk_dim() + 2 * a.kv_heads * std::max(a.qk_dim(), a.v_dim()));
  const double per_ffn = !mlpwi ? 0 : t.ffn.gated() ? 2 : 1;  // up (and gate) outputs
  if (t.is_moe_layer(layer)) {
    const auto& m = t.moe;
    e += static_cast<double>(m.experts) + static_cast<double>(m.top_k) * (per_ffn * m.expert_ffn_size + h);
    e += per_ffn * static_cast<double>(m.shared_experts * m.expert_ffn_size);
  } else {
    e += per_ffn * static_cast<double>(t.ffn.size);
  }
  return e;
}

// Forward MACs per token of the FFN's input projections over all layers
// (MaxText's "mlpwi", recomputed by the selective policy).
double mlpwi_macs_per_token(const TransformerSpec& t) {
  const double h = static_cast<double>(t.hidden), per_ffn = t.ffn.gated() ? 2 : 1;
  double m = 0;
  for (std::int64_t i = 0; i < t.layers; ++i)
    m += t.is_moe_layer(i)
             ? h * per_ffn * static_cast<double>((t.moe.top_k + t.moe.shared_experts) * t.moe.expert_ffn_size)
             : h * per_ffn * static_cast<double>(t.ffn.size);
  return m;
}

// Forward MACs per token of the matmuls whose outputs only a residual add
// reads (a dense FFN's or the shared experts' output projection, and in a
// parallel block the attention's too): full remat does not recompute
// them, their results being dead in backward. (The routed experts' outputs
// are not: the router's gradient reads them.)
double residual_only_macs_per_token(const TransformerSpec& t) {
  const double h = static_cast<double>(t.hidden);
  double m = 0;
  for (std::int64_t i = 0; i < t.layers; ++i) {
    m += t.is_moe_layer(i) ? h * static_cast<double>(t.moe.shared_experts * t.moe.expert_ffn_size)
                           : h * static_cast<double>(t.ffn.size);
    if (t.parallel_block) m += h * static_cast<double>(t.attention.heads * t.attention.v_dim());
  }
  return m;
}

// Elements per token of layer `layer`'s activations an offloaded policy
// keeps in host memory: q, k and v (qkv_proj_offloaded) or every matmul
// output (minimal_offloaded, as layer_matmul_out_elems without the
// layer input, which stays in HBM).
double layer_offloaded_elems(const TransformerSpec& t, std::int64_t layer, RematPolicy r) {
  const auto& a = t.attention;
  const double qkv = static_cast<double>(a.heads * a.qk_dim() + 2 * a.kv_heads * std::max(a.qk_dim(), a.v_dim()));
  if (r == RematPolicy::qkv_proj_offloaded) return qkv;
  return layer_matmul_out_elems(t, layer, true) - static_cast<double>(t.hidden);
}

// Elements per token of layer `layer`'s activation MaxText names `n`
// (RematTensor), and whether it is whole on every tensor rank (the layer
// input and the output projections' results, without sequence
// parallelism) rather than split by heads or columns.
std::pair<double, bool> named_activation_elems(const TransformerSpec& t, std::int64_t layer, RematTensor n) {
  const auto& a = t.attention;
  const double h = static_cast<double>(t.hidden);
  const bool moe = t.is_moe_layer(layer), gated = t.ffn.gated();
  const double ffn = moe ? static_cast<double>((t.moe.top_k + t.moe.shared_experts) * t.moe.expert_ffn_size)
                         : static_cast<double>(t.ffn.size);
  switch (n) {
    case RematTensor::decoder_layer_input: return {h, true};
    case RematTensor::query_proj: return {static_cast<double>(a.heads * a.qk_dim()), false};
    case RematTensor::key_proj: return {static_cast<double>(a.kv_heads * a.qk_dim()), false};
    case RematTensor::value_proj: return {static_cast<double>(a.kv_heads * a.v_dim()), false};
    case RematTensor::context: return {static_cast<double>(a.heads * a.v_dim()), false};
    case RematTensor::out_proj: return {h, true};
    case RematTensor::mlpwi_0: return {ffn, false};
    case RematTensor::mlpwi_1: return {gated ? ffn : 0.0, false};
    case RematTensor::mlpwo: return {moe ? static_cast<double>(t.moe.top_k) * h : h, !moe};
    case RematTensor::count: break;
  }
  return {0.0, false};
}

// Elements per token of layer `layer`'s activations a custom remat policy
// puts at `where`, as one chip holds them (split over tensor, except
// what named_activation_elems says is whole; all of it under sequence
// parallelism).
double custom_placed_elems(const TransformerSpec& t, std::int64_t layer, const RematCustom& c, RematPlace where,
                           std::int64_t tp, bool sp) {
  double e = 0;
  for (std::size_t i = 0; i < c.place.size(); ++i) {
    const auto n = static_cast<RematTensor>(i);
    RematPlace p = c.at(n);
    if (n == RematTensor::decoder_layer_input && p == RematPlace::remat) p = RematPlace::device;  // the scan carry
    if (p != where) continue;
    const auto [elems, whole] = named_activation_elems(t, layer, n);
    e += (whole && !sp) ? elems : elems / static_cast<double>(tp);
  }
  return e;
}

// Forward MACs per token, over all layers, of the matmuls a custom policy
// keeps (device or host) that full remat would recompute: the q, k, v
// and output projections (the latter unless only a residual add reads it,
// parallel blocks), the FFN input projections, and the routed experts'
// output projections (the router's gradient reads them; a dense FFN's
// down projection feeds only the residual).
double custom_kept_macs_per_token(const TransformerSpec& t, const RematCustom& c) {
  const auto& a = t.attention;
  const double h = static_cast<double>(t.hidden);
  auto keeps = [&](RematTensor n) { return c.at(n) != RematPlace::remat; };
  double m = 0;
  for (std::int64_t i = 0; i < t.layers; ++i) {
    if (keeps(RematTensor::query_proj)) m += h * static_cast<double>(a.heads * a.qk_dim());
    if (keeps(RematTensor::key_proj)) m += h * static_cast<double>(a.kv_heads * a.qk_dim());
    if (keeps(RematTensor::value_proj)) m += h * static_cast<double>(a.kv_heads * a.v_dim());
    if (keeps(RematTensor::out_proj) && !t.parallel_block) m += h * static_cast<double>(a.heads * a.v_dim());
    const bool moe = t.is_moe_layer(i), gated = t.ffn.gated();
    const double ffn = moe ? static_cast<double>((t.moe.top_k + t.moe.shared_experts) * t.moe.expert_ffn_size)
                           : static_cast<double>(t.ffn.size);
    if (keeps(RematTensor::mlpwi_0)) m += h * ffn;
    if (keeps(RematTensor::mlpwi_1) && gated) m += h * ffn;
    if (keeps(RematTensor::mlpwo) && moe) m += h * static_cast<double>(t.moe.top_k * t.moe.expert_ffn_size);
  }
  return m;
}

// Parameters tensor parallelism leaves whole on every tensor rank (see
// per_chip_params), and per layer the gathered share of one chip under FSDP.
u64 tensor_replicated_params(const ModelSpec& m) {
  const auto& t = m.transformer;
  const u64 h = U(t.hidden);
  u64 r = 0;
  if (m.family == Family::vit) {
    const u64 n = U(t.image_size / t.patch);
    r += U(t.patch * t.patch * t.channels) * h + h + h + (n * n + 1) * h + norm_params(t, t.hidden);
    if (t.classes > 0) r += h * U(t.classes) + U(t.classes);
  } else {
    r += norm_params(t, t.hidden);
    if (t.position == PositionKind::learned) r += U(t.max_context) * h;
    if (m.family == Family::encoder) {
      r += U(t.type_vocab) * h;
      if (t.pooler) r += h * h + h;
    }
  }
  const auto& a = t.attention;
  for (std::int64_t i = 0; i < t.layers; ++i) {
    r += norm_params(t, t.hidden) * (t.parallel_block ? 1 : 2);
    if (a.out_bias) r += h;
    if (a.kind == AttentionKind::mla) {
      if (a.q_lora_rank > 0) r += h * U(a.q_lora_rank) + U(a.q_lora_rank);
      r += h * U(a.kv_lora_rank + a.qk_rope_head_dim) + U(a.kv_lora_rank);
    }
    if (t.is_moe_layer(i)) {
      r += h * U(t.moe.experts) + (t.moe.router_bias ? U(t.moe.experts) : 0);
      if (t.moe.expert_bias) r += U(t.moe.experts) * h;
    } else if (t.ffn.bias) {
      r += h;
    }
  }
  return r;
}

u64 div_up(u64 a, u64 b) { return (a + b - 1) / b; }

// One layer's K and V projection parameters (MHA/GQA/MQA; 0 for MLA).
u64 kv_proj_params(const TransformerSpec& t) {
  const auto& a = t.attention;
  if (a.kind == AttentionKind::mla) return 0;
  const u64 kv = U(a.kv_heads) * U(a.head_dim);
  return 2 * U(t.hidden) * kv + (a.qkv_bias ? 2 * kv : 0);
}

// What tensor divides the K/V projections (and the KV cache) by: tensor,
// or kv_heads when each rank holds a replicated KV head (sharding.h).
u64 kv_split(const TransformerSpec& t, std::int64_t tp) {
  if (t.attention.kind == AttentionKind::mla) return 1;
  return U(kv_heads_replicated(t.attention.kv_heads, tp) ? t.attention.kv_heads : tp);
}

// Largest single layer's parameters as one chip gathers them under FSDP
// (tensor and expert splits applied, fsdp undone).
u64 largest_gathered_layer(const ModelSpec& m, const MeshSpec& mesh) {
  const auto& t = m.transformer;
  const u64 tp = U(mesh.size("tensor")), ep = U(mesh.size("expert"));
  u64 best = 0;
  // Replicated K/V projections (tensor > kv_heads) are divided by kv_heads, not tensor.
  const u64 kvs = kv_split(t, static_cast<std::int64_t>(tp)), kvp = kvs < tp ? kv_proj_params(t) : 0;
  for (std::int64_t i = 0; i < t.layers; ++i) {
    u64 p = attn_params(t) + layer_norm_params(t);
    u64 routed = 0;
    if (t.is_moe_layer(i)) {
      const auto& e = t.moe;
      p += U(t.hidden) * U(e.experts) +
           (e.shared_experts > 0 ? ffn_params(t, e.shared_experts * e.expert_ffn_size, false) : 0);
      routed = U(e.experts) * expert_params(t);
    } else {
      p += ffn_params(t, t.ffn.size, t.ffn.bias);
    }
    best = std::max(best, div_up(p - kvp, tp) + div_up(kvp, kvs) + div_up(routed, tp * ep));
  }
  return best;
}

void require_decoder(const ModelSpec& m, const char* what) {
  if (m.family != Family::decoder)
    throw ModelError(Diagnostic{m.file, 0, 0, what, "a decoder model",
                                std::string(family_name(m.family)) + " model '" + m.name + "'", ""});
}

}  // namespace

ParamCounts count_params(const ModelSpec& m) {
  switch (m.family) {
    case Family::decoder:
    case Family::encoder:
    case Family::vit: return transformer_params(m);
    case Family::dlrm: return dlrm_params(m.dlrm);
    case Family::resnet:
    case Family::unet: {
      PhaseOptions o;
      o.phase = Phase::infer;
      ParamCounts c;
      for (const auto& t : detail::generate_graph_family(m, o).tensors)
        if (t.kind == workloads::TensorKind::weight) c.total += U(t.num_elements());
      c.active = c.total;
      return c;
    }
  }
  throw ModelInternalError("count_params: unknown family");
}

std::uint64_t kv_cache_bytes_per_token(const ModelSpec& m, DType kv) {
  if (m.family != Family::decoder) return 0;
  const auto& a = m.transformer.attention;
  const u64 per_layer =
      a.kind == AttentionKind::mla ? U(a.kv_lora_rank + a.qk_rope_head_dim) : 2 * U(a.kv_heads * a.head_dim);
  return arch::dtype_bytes(kv, per_layer * U(m.transformer.layers));
}

std::uint64_t kv_cache_bytes(const ModelSpec& m, DType kv, std::int64_t batch, std::int64_t tokens) {
  if (m.family != Family::decoder) return 0;
  const auto& t = m.transformer;
  const auto& a = t.attention;
  const u64 per_tok =
      a.kind == AttentionKind::mla ? U(a.kv_lora_rank + a.qk_rope_head_dim) : 2 * U(a.kv_heads * a.head_dim);
  u64 elems = 0;
  for (std::int64_t i = 0; i < t.layers; ++i)
    elems += per_tok * U(a.windowed(i) ? std::min(tokens, a.sliding_window) : tokens);
  return arch::dtype_bytes(kv, elems * U(batch));
}

double attention_flops_per_token(const ModelSpec& m, std::int64_t context) {
  require_decoder(m, "flops_per_token");
  const auto& t = m.transformer;
  double f = 0;
  for (std::int64_t i = 0; i < t.layers; ++i) {
    std::int64_t c = t.attention.windowed(i) ? std::min(context, t.attention.sliding_window) : context;
    f += attn_pair_flops(t.attention, static_cast<double>(c), t.attention.kind == AttentionKind::mla);
  }
  return f;
}

std::string layer_sampling_obstacle(const ModelSpec& m) {
  return m.family == Family::decoder ? "" : "layer sampling needs a decoder";
}

std::int64_t layer_sampling_period(const ModelSpec& m) {
  const auto& a = m.transformer.attention;
  if (m.family != Family::decoder || a.sliding_window <= 0) return 1;
  if (a.global_every > 0) return a.global_every;
  return std::max<std::int64_t>(1, a.sliding_window_every);
}

std::int64_t layer_sampling_base(const ModelSpec& m) {
  const auto& t = m.transformer;
  return m.family == Family::decoder && t.moe.enabled ? t.moe.dense_layers_first : 0;
}

double flops_per_token(const ModelSpec& m, std::int64_t context) {
  return 2.0 * static_cast<double>(count_params(m).active_compute()) + attention_flops_per_token(m, context);
}

double phase_matmul_flops(const ModelSpec& m, const PhaseOptions& o) {
  const auto& t = m.transformer;
  const double B = static_cast<double>(o.batch);
  const bool dense = o.attention_kernel == AttentionImpl::dense;
  switch (m.family) {
    case Family::decoder: {
      const double ac = static_cast<double>(count_params(m).active_compute()), S = static_cast<double>(o.seq_len);
      // Every query token of a decode (decode_tokens > 1: speculative
      // verification) attends to the `context` cached tokens.
      if (o.phase == Phase::decode) {
        const double tokens = B * static_cast<double>(o.decode_tokens);
        if (!dense) return tokens * flops_per_token(m, o.context);
        // Dense: the cache's every position, sliding windows included.
        double attn = 0;
        for (std::int64_t i = 0; i < t.layers; ++i) {
          const double c = static_cast<double>(t.attention.windowed(i) ? std::min(o.context, t.attention.sliding_window)
                                                                       : o.context);
          attn += dense_qk_flops(t.attention, c) + dense_pv_flops(t.attention, c);
        }
        return tokens * (2.0 * static_cast<double>(count_params(m).active_compute()) + attn);
      }
      // Norm/bias parameters are multiplied elementwise, not in matmuls;
      // they are < 0.01% of any zoo model and ignored here.
      const double head = 2.0 * head_params(m);
      if (o.phase == Phase::prefill)
        return B * S * (2.0 * ac - head) + B * head + B * prefill_attention(t, o.seq_len, true, dense);
      const double attn_fwd = B * prefill_attention(t, o.seq_len, true, dense);
      const double fwd = B * S * 2.0 * ac + attn_fwd;
      // Dense attention's backward is its matmuls' gradients: 2x forward.
      const double bwd =
          3.0 * fwd + (dense ? 0.0 : B * backward_attention_extra(t, o.seq_len, true, o.fused_attention_backward));
      // Recomputed: the layers' forward once more but the matmuls only a
      // residual add reads (full); their attention (minimal), and the FFN
      // input projections (selective). Dense attention is two matmuls,
      // which minimal and selective keep.
      const double attn = dense ? 0.0 : attn_fwd;
      // What keeping the attention's output (context) saves: the fused
      // kernel, or dense attention's PV matmul (QK^T is still recomputed
      // for the probabilities PV's gradient reads).
      const double context_kept =
          dense ? B * static_cast<double>(t.layers) * dense_pv_flops(t.attention, S * S) : attn_fwd;
      switch (o.remat) {
        case RematPolicy::none: return bwd;
        case RematPolicy::minimal: return bwd + attn;
        case RematPolicy::selective: return bwd + attn + 2.0 * B * S * mlpwi_macs_per_token(t);
        case RematPolicy::full: return bwd + fwd - B * S * (head + 2.0 * residual_only_macs_per_token(t));
        case RematPolicy::minimal_offloaded: return bwd + attn;
        // What backward reads but q, k, v (read back from host): as
        // selective plus the output projection (the residual sum after
        // attention, the FFN norm's input, is rebuilt from it; the down
        // projection's result feeds only the next layer's kept input).
        case RematPolicy::qkv_proj_offloaded:
          return bwd + attn_fwd +
                 2.0 * B * S *
                     (mlpwi_macs_per_token(t) +
                      static_cast<double>(t.layers * t.hidden * t.attention.heads * t.attention.v_dim()));
        // Full's recomputation but what the policy keeps: the named
        // matmuls, and the attention where its output (context) is kept.
        case RematPolicy::custom:
          return bwd + fwd - B * S * (head + 2.0 * residual_only_macs_per_token(t)) -
                 (o.remat_custom.at(RematTensor::context) != RematPlace::remat ? context_kept : 0.0) -
                 2.0 * B * S * custom_kept_macs_per_token(t, o.remat_custom);
      }
      return bwd;
    }
    case Family::encoder:
    case Family::vit: {
      const std::int64_t S = m.family == Family::vit
                                 ? [&] { std::int64_t n = (o.image_size > 0 ? o.image_size : t.image_size) / t.patch; return n * n + 1; }()
                                 : o.seq_len;
      const double s = static_cast<double>(S), h = static_cast<double>(t.hidden);
      double layer = static_cast<double>(count_params(m).active_compute());
      double f = 0;
      // Per-token matmuls of the layers; pooler/classifier run once per sample.
      if (m.family == Family::vit) {
        const double head = t.classes > 0 ? h * static_cast<double>(t.classes) : 0;
        const double patch = static_cast<double>(t.patch * t.patch * t.channels) * h;
        f = 2.0 * (layer - head - patch - h * (t.norm == NormKind::layernorm ? 2 : 1)) * s + 2.0 * patch * (s - 1) +
            2.0 * head;
        f += prefill_attention(t, S, false, dense);
        // The patch projection has no input gradient: slight overcount.
        if (o.phase == Phase::train)
          f = 3.0 * f + (dense ? 0.0 : backward_attention_extra(t, S, false, o.fused_attention_backward));
        return B * f;
      }
      const double pool = t.pooler ? h * h : 0;
      f = 2.0 * (layer - pool) * s + prefill_attention(t, S, false, dense);
      if (o.phase == Phase::train)
        return B * (3.0 * (f + 2.0 * s * h * static_cast<double>(t.vocab)) +
                    (dense ? 0.0 : backward_attention_extra(t, S, false, o.fused_attention_backward)));
      return B * (f + 2.0 * pool);
    }
    case Family::resnet:
    case Family::dlrm:
    case Family::unet: return flops_per_sample(m, o) * B;
  }
  return 0;
}

double flops_per_sample(const ModelSpec& m, const PhaseOptions& o) {
  PhaseOptions one = o;
  one.batch = 1;
  switch (m.family) {
    case Family::decoder: one.phase = Phase::prefill; return phase_matmul_flops(m, one);
    case Family::encoder:
    case Family::vit: one.phase = Phase::infer; return phase_matmul_flops(m, one);
    case Family::resnet:
    case Family::dlrm:
    case Family::unet: {
      one.phase = Phase::infer;
      workloads::Workload w = detail::generate_graph_family(m, one);
      double f = 0;
      for (const auto& op : w.ops)
        if (op.kind == workloads::OpKind::matmul || op.kind == workloads::OpKind::conv2d ||
            op.kind == workloads::OpKind::attention)
          f += static_cast<double>(workloads::op_cost(w, op).flops);
      return f;
    }
  }
  return 0;
}

std::uint64_t per_chip_params(const ModelSpec& m, const MeshSpec& mesh) {
  const ParamCounts c = count_params(m);
  if (mesh.empty()) return c.total;
  const u64 tp = U(mesh.size("tensor")), fs = U(mesh.size("fsdp")), ep = U(mesh.size("expert"));
  const bool transformer = is_transformer(m.family);
  const u64 repl = transformer ? tensor_replicated_params(m) : c.total;
  const u64 routed = c.routed_experts;
  u64 rest = c.total - routed - repl;
  if (!transformer) return div_up(rest, tp * fs) + div_up(repl, fs) + div_up(routed, tp * fs * ep);
  const auto& t = m.transformer;
  // K/V projections replicated over tensor / kv_heads ranks: divided by kv_heads.
  const u64 kvs = kv_split(t, static_cast<std::int64_t>(tp));
  const u64 kv = kvs < tp ? kv_proj_params(t) * U(t.layers) : 0;
  rest -= kv;
  if (m.family != Family::vit) {  // a vocabulary tensor does not divide: padded rows
    const u64 pad = U(vocab_per_rank(t.vocab, static_cast<std::int64_t>(tp))) * tp - U(t.vocab);
    rest += pad * U(t.hidden) * (m.family == Family::decoder && !t.tied_embeddings ? 2 : 1);
  }
  return div_up(rest, tp * fs) + div_up(repl, fs) + div_up(routed, tp * fs * ep) + div_up(kv, kvs * fs);
}

std::vector<WeightBytes> weight_bytes(const ModelSpec& m) {
  const u64 n = count_params(m).total;
  std::vector<WeightBytes> out;
  for (DType d : arch::kAllDTypes) out.push_back({d, arch::dtype_bytes(d, n)});
  return out;
}

std::uint64_t peak_live_activation_bytes(const workloads::Workload& w) {
  using workloads::OpKind;
  using workloads::TensorKind;
  const workloads::TensorIndex index(w);
  auto kind_of = [&](const std::string& n) { return index.find(n)->kind; };
  auto bytes_of = [&](const std::string& n) {  // weights and KV caches are not counted
    const workloads::Tensor* t = index.find(n);
    return t->kind == TensorKind::activation || t->kind == TensorKind::input || t->kind == TensorKind::output
               ? t->bytes()
               : u64{0};
  };
  // A reshape's result is its input's bytes relabelled: one buffer per
  // class, dead after the last read of any member.
  std::unordered_map<std::string, std::string> root;
  auto root_of = [&](const std::string& n) {
    auto it = root.find(n);
    return it == root.end() ? n : it->second;
  };
  for (const auto& op : w.ops)
    if (op.kind == OpKind::reshape) root[op.outputs[0]] = root_of(op.inputs[0]);
  std::unordered_map<std::string, std::size_t> last_read;
  for (std::size_t i = 0; i < w.ops.size(); ++i)
    for (const std::string& in : w.ops[i].inputs) last_read[root_of(in)] = i;
  // Inputs and results are held from the start (results to the end).
  u64 live = 0;
  for (const auto& t : w.tensors)
    if (t.kind == TensorKind::input || t.kind == TensorKind::output) live += t.bytes();
  u64 peak = live;
  auto shares_operand = [](OpKind k) {
    return k == OpKind::elementwise || k == OpKind::softmax || k == OpKind::rms_norm || k == OpKind::layer_norm;
  };
  for (std::size_t i = 0; i < w.ops.size(); ++i) {
    const auto& op = w.ops[i];
    std::unordered_set<std::string> dying;
    for (const std::string& in : op.inputs) {
      const std::string r = root_of(in);
      auto lr = last_read.find(r);
      if (lr != last_read.end() && lr->second == i && kind_of(r) == TensorKind::activation) dying.insert(r);
    }
    for (const std::string& out : op.outputs) {
      if (op.kind == OpKind::reshape || kind_of(out) == TensorKind::output) continue;
      // An elementwise, softmax or norm result overwrites an operand of
      // its size that it is the last reader of (XLA's buffer assignment
      // shares a fusion's operand buffer with its user; the memory plan
      // of sim/lowering does the same).
      bool shared = false;
      if (shares_operand(op.kind))
        for (auto it = dying.begin(); it != dying.end(); ++it)
          if (bytes_of(*it) == bytes_of(out)) {
            dying.erase(it);
            shared = true;
            break;
          }
      if (!shared) live += bytes_of(out);
    }
    peak = std::max(peak, live);  // the op's inputs and outputs together
    for (const std::string& r : dying) live -= bytes_of(r);
  }
  return peak;
}

MemoryFootprint memory_footprint(const ModelSpec& m, const PhaseOptions& o) {
  check_options(m, o);
  check_mesh(m, o);
  MemoryFootprint f;
  // Training shards the weights over fsdp x sequence (the generator's
  // sharded_weight): counted as one fsdp axis of that size.
  const MeshSpec wmesh = weight_mesh(o);
  const u64 params = per_chip_params(m, wmesh);
  const std::int64_t tp = o.mesh.size("tensor"), cp = o.mesh.size("sequence");
  const bool sp = o.sequence_parallel && tp > 1;
  const auto& t = m.transformer;
  // Quantization scales and N:M compression (models/quantize.h).
  f.weights = stored_weight_bytes(o, params, t.hidden);
  // FSDP: two layers' gathered weights (the one in use and the prefetched
  // next), or the gathered output head at the loss if that is larger.
  if (wmesh.size("fsdp") > 1) {
    u64 gathered = 2 * largest_gathered_layer(m, o.mesh);
    if (m.family == Family::decoder || m.family == Family::encoder)
      gathered = std::max(gathered, div_up(U(t.vocab) * U(t.hidden), U(tp)));
    f.weights += stored_weight_bytes(o, gathered, t.hidden);
  }
  const double ab = arch::dtype_bits(o.activation_dtype) / 8.0;
  const std::int64_t local_b = local_batch(o);
  const double B = static_cast<double>(local_b);
  double act = 0;
  if (is_transformer(m.family)) {
    const bool dec = m.family == Family::decoder;
    std::int64_t S = local_seq(o);  // context parallelism: seq / sequence tokens per chip
    if (m.family == Family::vit) {
      std::int64_t n = (o.image_size > 0 ? o.image_size : t.image_size) / t.patch;
      S = n * n + 1;
    }
    const double tokens = B * static_cast<double>(S);
    // Keys each query attends to with dense attention (0: the fused kernel).
    const double dense_keys = o.attention_kernel != AttentionImpl::dense ? 0.0
                              : o.phase == Phase::decode                 ? static_cast<double>(o.context)
                                                                         : static_cast<double>(S * cp);
    double max_layer = 0, sum_layers = 0, sum_matmul_outs = 0, max_offloaded = 0, sum_offloaded = 0, sum_device = 0;
    const bool custom = o.remat == RematPolicy::custom && dec;
    for (std::int64_t i = 0; i < t.layers; ++i) {
      double e = layer_act_elems(t, i, o.moe_capacity_factor, static_cast<double>(S)),
             mo = layer_matmul_out_elems(t, i, o.remat == RematPolicy::minimal),
             off = o.remat_offloads() && !custom ? layer_offloaded_elems(t, i, o.remat) : 0.0;
      // Dense attention (AttentionImpl::dense) writes every query's f32
      // logits over the keys and their softmax, and the probabilities in
      // the activation dtype; minimal and selective remat keep the logits
      // (a matmul's output).
      if (dense_keys > 0) {
        const double heads = static_cast<double>(t.attention.heads);
        e += heads * dense_keys * (8.0 / ab + 1.0);
        mo += heads * dense_keys * 4.0 / ab;
      }
      // Context parallelism: a chip holds the whole sequence's gathered K
      // and V (its own tokens' share is already in e).
      if (cp > 1)
        e += static_cast<double>(cp - 1) * 2.0 * static_cast<double>(t.attention.kv_heads) *
             static_cast<double>(std::max(t.attention.qk_dim(), t.attention.v_dim()));
      if (sp) {
        // Sequence parallelism splits the rest too (Korthikanti et al.
        // 2022, eq. 4: 34 sbh / t instead of 10 sbh + 24 sbh / t).
        e /= static_cast<double>(tp);
        mo /= static_cast<double>(tp);
        off /= static_cast<double>(tp);
      } else if (tp > 1) {  // the residual stream, norms and router probabilities stay whole
        const double whole =
            6.0 * static_cast<double>(t.hidden) + (t.is_moe_layer(i) ? static_cast<double>(t.moe.experts) : 0.0);
        e = whole + (e - whole) / static_cast<double>(tp);
        const double h3 = 3.0 * static_cast<double>(t.hidden);
        mo = h3 + (mo - h3) / static_cast<double>(tp);
        // q, k, v split by heads; minimal_offloaded's are mo's but the input.
        off = o.remat == RematPolicy::minimal_offloaded ? mo - static_cast<double>(t.hidden)
                                                        : off / static_cast<double>(tp);
      }
      if (custom) {
        off = custom_placed_elems(t, i, o.remat_custom, RematPlace::offload, tp, sp);
        sum_device += custom_placed_elems(t, i, o.remat_custom, RematPlace::device, tp, sp);
      }
      max_offloaded = std::max(max_offloaded, off);
      sum_offloaded += off;
      max_layer = std::max(max_layer, e);
      sum_layers += e;
      sum_matmul_outs += mo;
    }
    const double logits_cols =
        dec || m.family == Family::encoder ? static_cast<double>(t.vocab) : static_cast<double>(t.classes);
    // The dropping MoE's dispatch mask [B, S, E, C] per token.
    const double dispatch_mask = o.moe_capacity_factor > 0 && dec
                                     ? static_cast<double>(S) * static_cast<double>(t.moe.top_k) * o.moe_capacity_factor
                                     : 0.0;
    if (o.phase == Phase::train) {
      const double h = static_cast<double>(t.hidden) / (sp ? static_cast<double>(tp) : 1.0);
      const double inputs = static_cast<double>(t.layers) * h;
      // Kept for backward: every activation (none), the layer inputs
      // (full), the inputs and matmul outputs (minimal, selective), or the
      // inputs in HBM and the rest in host memory (offloaded); custom: the
      // named activations it keeps on the device, in HBM, those it
      // offloads in host memory.
      double kept = sum_layers, rebuilt = max_layer;
      switch (o.remat) {
        case RematPolicy::none: rebuilt = 0; break;
        case RematPolicy::full: kept = inputs; break;
        case RematPolicy::minimal:
        case RematPolicy::selective: kept = sum_matmul_outs; break;
        // Backward also holds the offloaded tensors of two layers read
        // back (the one in backward and the one prefetched).
        case RematPolicy::qkv_proj_offloaded:
        case RematPolicy::minimal_offloaded:
          kept = inputs;
          rebuilt = max_layer + 2 * max_offloaded;
          break;
        case RematPolicy::custom:
          kept = sum_device;
          rebuilt = max_layer + 2 * max_offloaded;
          break;
      }
      kept += dispatch_mask;  // live through the step (one for every layer)
      f.host_activations = o.remat_offloads() ? static_cast<u64>(std::ceil(tokens * sum_offloaded * ab)) : 0;
      // The activations peak at the loss (what is kept, the final norm's
      // input and output and the head's input gradient, and the logits,
      // vocab split, which the loss gradient overwrites in place) or at
      // the first layer of backward (what is kept and the layer rebuilt),
      // before the weight gradients accumulate; when they all are, the
      // first layer's rebuilt activations and the embedding table's dense
      // gradient (the gather's, before it is reduced or scattered) are left.
      const double at_loss = kept + 3 * h + logits_cols / static_cast<double>(tp);
      act = tokens * std::max(at_loss, kept + rebuilt) * ab;
      const double embedding_grad =
          m.family == Family::vit
              ? 0.0
              : static_cast<double>(t.vocab) * static_cast<double>(t.hidden) / static_cast<double>(tp);
      f.activations_with_gradients = static_cast<u64>(std::ceil((tokens * max_layer + embedding_grad) * ab));
    } else {
      const double out_rows = dec ? B : tokens;  // decoders: logits of the last position only
      act = tokens * (max_layer + dispatch_mask) * ab + out_rows * logits_cols * ab;
    }
    // KV heads split over tensor; MLA's one latent head is replicated.
    // (or replicated when tensor exceeds them).
    const u64 kvs = kv_split(t, tp);
    if (dec && o.phase == Phase::decode) f.kv_cache = kv_cache_bytes(m, o.kv_dtype, local_b, o.context + 1) / kvs;
    if (dec && o.phase == Phase::prefill) f.kv_cache = kv_cache_bytes(m, o.kv_dtype, local_b, S) / kvs;
  } else if (m.family == Family::resnet || m.family == Family::unet) {
    // The peak of the graph's live activations: an op's output lives from
    // the op to its last reader, so a ResNet's residual input and a UNet's
    // skip tensors (every down block's output, live until its up block
    // reads it) count where they overlap, not the largest output alone.
    PhaseOptions one = o;
    one.batch = local_b;
    one.mesh = {};
    act = static_cast<double>(peak_live_activation_bytes(detail::generate_graph_family(m, one)));
  } else {
    const auto& d = m.dlrm;
    double widest = static_cast<double>((d.tables.size() + 1) * U(d.embedding_dim));
    for (auto s : d.top_mlp) widest = std::max(widest, static_cast<double>(s));
    act = 3.0 * B * widest * ab;
  }
  f.activations = static_cast<u64>(std::ceil(act));
  // LoRA adapters (models/lora.h), held in the activation dtype; training
  // them freezes the base: gradients and Adam state for the adapters only.
  const u64 adapters = lora_params(m, o);
  f.weights += arch::dtype_bytes(o.activation_dtype, adapters);
  // Adam's m and v in the optimizer dtype, plus an f32 master copy when
  // that is f32 (PhaseOptions::optimizer_dtype): 12 or 4 B per parameter.
  auto optimizer_bytes = [&](u64 n) {
    const u64 moments = 2 * arch::dtype_bytes(o.optimizer_dtype, n);
    return o.optimizer_dtype == DType::f32 ? moments + arch::dtype_bytes(DType::f32, n) : moments;
  };
  if (o.phase == Phase::train && o.lora.enabled()) {
    f.gradients = arch::dtype_bytes(o.activation_dtype, adapters);
    f.optimizer = optimizer_bytes(adapters);
  } else if (o.phase == Phase::train) {
    f.gradients = arch::dtype_bytes(o.weight_dtype, params);
    f.optimizer = optimizer_bytes(params);
  }
  return f;
}

FitReport check_fit(const ModelSpec& m, const PhaseOptions& o, std::uint64_t hbm_bytes, std::uint64_t host_bytes) {
  if (hbm_bytes == 0) throw ModelError(Diagnostic{"", 0, 0, "hbm", "a capacity > 0 bytes", "0", ""});
  FitReport r;
  r.footprint = memory_footprint(m, o);
  r.needed_bytes = r.footprint.total();
  r.available_bytes = hbm_bytes;
  constexpr double gib = 1024.0 * 1024.0 * 1024.0;
  r.needed_gib = static_cast<double>(r.needed_bytes) / gib;
  r.available_gib = static_cast<double>(hbm_bytes) / gib;
  r.fits = r.needed_bytes <= hbm_bytes;
  r.chips = o.mesh.chips();
  // Per-chip need times the chips holding it, spread evenly.
  const double total_need = static_cast<double>(r.needed_bytes) * static_cast<double>(r.chips);
  r.min_chips = static_cast<std::int64_t>(std::ceil(total_need / static_cast<double>(hbm_bytes)));
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(2);
  const auto& f = r.footprint;
  const bool sharded = !o.mesh.empty();
  s << m.name << " " << phase_name(o.phase);
  if (sharded)
    s << " on mesh " << o.mesh.str() << " (" << r.chips << " chips, batch " << local_batch(o) << " per chip)";
  s << " needs " << r.needed_gib << " GiB" << (sharded ? " per chip" : "") << " (weights " << f.weights / gib
    << ", KV cache " << f.kv_cache / gib << ", activations " << f.activations / gib;
  if (o.phase == Phase::train) s << ", gradients " << f.gradients / gib << ", optimizer " << f.optimizer / gib;
  s << " GiB";
  if (o.phase == Phase::train) {
    // The activations' peak and the full gradients are not live together.
    if (!f.peaks_with_gradients())
      s << "; at its peak, at the loss or the first layer of backward, no weight gradient is live yet";
    else
      s << "; at its peak, the end of backward, " << f.activations_with_gradients / gib
        << " GiB of the activations are live with every gradient";
  }
  s << ")";
  if (f.host_activations > 0) s << ", plus " << f.host_activations / gib << " GiB of activations in host memory";
  if (r.fits)
    s << " and fits in " << r.available_gib << " GiB of HBM" << (sharded ? " per chip" : "");
  else if (!sharded)
    s << " but one chip has " << r.available_gib << " GiB of HBM: does not fit; at least " << r.min_chips
      << " chips with weights, state and activations sharded evenly";
  else
    s << " but a chip has " << r.available_gib << " GiB of HBM: does not fit; " << r.chips << " chips hold "
      << total_need / gib << " GiB in all, so at least " << r.min_chips
      << " chips with weights, state and activations sharded evenly (e.g. a larger fsdp or tensor axis)";
  // Offloaded activations live in the host's DRAM, shared by its chips.
  if (host_bytes > 0 && f.host_activations > host_bytes) {
    r.host_fits = false;
    r.fits = false;
    s << "; but its " << f.host_activations / gib << " GiB of offloaded activations per chip exceed the host memory's "
      << static_cast<double>(host_bytes) / gib << " GiB per chip: does not fit (a non-offloading remat policy, or more "
      << "chips)";
  }
  r.message = s.str();
  return r;
}

}  // namespace tpusim::models
