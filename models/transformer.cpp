// Transformer generators: decoder LLMs (prefill, decode, train), BERT-style
// encoders and ViT (infer, train), producing workload IR op by op, every
// layer spelled out (layers.<i>.attn.q_proj, ...).
// Models: token/position/type embeddings as gathers, RMSNorm/LayerNorm,
// rotary embedding as elementwise multiplies by cos/sin tables, MHA/GQA/MQA
// and DeepSeek MLA (decode with the projection-absorbed form over the latent
// cache), dense FFNs (SwiGLU, GELU, ReLU) and mixture-of-experts layers with
// a router, top-k gates, token dispatch/combine gathers and grouped expert
// matmuls over the experts a step touches, shared experts, residuals.
// Decode reads the KV cache of `context` tokens (a window-sized cache for
// sliding-window layers) and writes the new token's K/V as outputs.
// Sharded (o.mesh, models/sharding.h): the per-chip SPMD program, every
// weight and activation at its per-chip shape, with the collectives of
// data, fsdp, tensor (Megatron) and expert parallelism named after the op
// they follow (layers.3.mlp.down_proj.all_reduce,
// layers.3.attn.q_proj.weight.all_gather, layers.3.mlp.dispatch.all_to_all);
// with Megatron sequence parallelism (o.sequence_parallel) the residual
// stream holds seq/tensor tokens, gathered before each tensor-parallel
// block (layers.3.attn_norm.all_gather) and reduce_scattered after it
// (layers.3.attn.o_proj.reduce_scatter); with context parallelism (mesh
// axis sequence) a chip holds seq/sequence tokens and gathers K/V
// (layers.3.attn.k.all_gather).
// Sliding-window layers attend locally (AttentionAttrs::window) in
// prefill, train and a serving step's chunk with the fused kernel; dense
// attention's einsums compute every pair, the window's masked ones too.
// Leaves out (the IR has no op for them): top-k selection and the expert
// sort (stood in for by slices/reshapes of the router output, which carry
// the dependency but not the VPU work), attention sinks' compute,
// the new token attending to itself in decode (it sees the `context`
// cached keys), rotate-half of rotary (layout), partial rotary (applied to
// the whole head).
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "models/generators.h"
#include "models/lora.h"
#include "models/sharding.h"

namespace tpusim::models::detail {

using workloads::DType;
using workloads::Shape;
using workloads::Workload;

MoeRouting moe_routing(std::int64_t tokens, std::int64_t experts, std::int64_t top_k) {
  MoeRouting r;
  r.slots = tokens * top_k;
  double expected =
      static_cast<double>(experts) *
      (1.0 - std::pow(1.0 - static_cast<double>(top_k) / static_cast<double>(experts), static_cast<double>(tokens)));
  r.touched = std::llround(expected);
  r.touched = std::max(r.touched, top_k);
  r.touched = std::min({r.touched, experts, r.slots});
  r.cap = (r.slots + r.touched - 1) / r.touched;
  r.group0 = r.slots - r.touched * (r.cap - 1);
  r.group1 = r.touched - r.group0;
  return r;
}

MoeRouting moe_routing_local(std::int64_t tokens, std::int64_t experts, std::int64_t top_k, std::int64_t ep) {
  if (ep == 1) return moe_routing(tokens, experts, top_k);
  const MoeRouting g = moe_routing(tokens * ep, experts, top_k);
  MoeRouting r;
  r.slots = tokens * top_k;
  r.touched = std::max<std::int64_t>(1, std::min({(g.touched + ep - 1) / ep, experts / ep, r.slots}));
  r.cap = (r.slots + r.touched - 1) / r.touched;
  r.group0 = r.slots - r.touched * (r.cap - 1);
  r.group1 = r.touched - r.group0;
  return r;
}

namespace {

std::string L(std::int64_t i) { return "layers." + std::to_string(i) + "."; }

class TransformerGen {
 public:
  TransformerGen(WorkloadBuilder& b, const ModelSpec& m, const PhaseOptions& o)
      : b_(b),
        m_(m),
        t_(m.transformer),
        o_(o),
        wd_(o.weight_dtype),
        ad_(o.activation_dtype),
        kd_(o.kv_dtype),
        tp_(o.mesh.size("tensor")),
        fs_(o.mesh.size("fsdp")),
        ep_(o.mesh.size("expert")),
        cp_(o.mesh.size("sequence")),
        wcp_(weight_sequence_ranks(o)),
        sp_(o.sequence_parallel && tp_ > 1) {
    for (const auto& a : o.mesh.axes) {
      b_.mesh_axis(a.name, a.size);
      if (a.size > 1 && (a.name == "data" || a.name == "fsdp" || a.name == "expert" || a.name == "sequence"))
        batch_axes_.push_back(a.name);
    }
  }

  Workload run() {
    switch (m_.family) {
      case Family::decoder: return decoder();
      case Family::encoder: return encoder();
      case Family::vit: return vit();
      case Family::resnet:
      case Family::dlrm:
      case Family::unet: break;
    }
    throw ModelInternalError("transformer generator: " + std::string(family_name(m_.family)) + " is not a transformer");
  }

 private:
  WorkloadBuilder& b_;
  const ModelSpec& m_;
  const TransformerSpec& t_;
  const PhaseOptions& o_;
  DType wd_, ad_, kd_;
  std::int64_t B_ = 1, S_ = 1;  // batch (per chip), query tokens per sequence
  bool decode_ = false;
  // Mesh sizes (1 = axis absent) and the axes splitting the tokens (batch
  // or, for sequence, each sequence): weights are replicated over them.
  std::int64_t tp_ = 1, fs_ = 1, ep_ = 1, cp_ = 1;
  std::int64_t wcp_ = 1;  // the sequence ranks sharding the weights (weight_sequence_ranks)
  bool sp_ = false;  // Megatron sequence parallelism on the tensor axis
  std::vector<std::string> batch_axes_;
  std::set<std::string> sp_gathered_;  // all_gathered inputs of tensor-parallel blocks
  TrainingCollectives tc_;
  TensorRef embed_;                       // the token table as the lookups and a tied head read it
  std::optional<TensorRef> mask_;         // dense attention's causal mask (causal_mask)
  std::optional<TensorRef> window_mask_;  // and a local layer's (one window per model)

  // A weight as one chip holds it: shape `s` is already split over tensor
  // (callers divide); fsdp, and in training sequence too (MaxText shards
  // weights over its context axis: `embed` over fsdp and context in its
  // logical axis rules), store a 1/(fsdp x sequence) shard along dim 0 (dim 1 for
  // expert weights, whose dim 0 counts experts), or along the last dim
  // when that one does not divide, and returns it all_gathered. A weight
  // neither dim of which divides (a small vector such as DeepSeek-V3's
  // 256 router biases under fsdp=512) stays whole on every chip, as the
  // GSPMD partitioner replicates what it cannot split evenly, and its
  // gradient is all_reduced over fsdp too. Records the data-parallel
  // replicas its gradient is all_reduced over.
  TensorRef sharded_weight(const std::string& n, Shape s, DType dt, bool expert) {
    std::vector<std::string> sync, group;
    if (fs_ > 1) group.push_back("fsdp");
    if (wcp_ > 1) group.push_back("sequence");
    const std::int64_t ws = fs_ * wcp_;
    for (const auto& ax : batch_axes_)
      if (ax != "fsdp" && !(ax == "sequence" && wcp_ > 1) && !(expert && ax == "expert")) sync.push_back(ax);
    const std::size_t pref = expert && s.size() > 1 ? 1 : 0;
    const std::size_t d = !s.empty() && s[pref] % ws == 0 ? pref : s.size() - 1;
    const bool replicated = ws > 1 && (s.empty() || s[d] % ws != 0);
    if (replicated) sync.insert(sync.begin(), group.begin(), group.end());
    if (!sync.empty()) tc_.weight_grad_all_reduce[n] = sync;
    if (ws == 1 || replicated) return b_.weight(n, std::move(s), dt);
    s[d] /= ws;
    TensorRef w = b_.weight(n, std::move(s), dt);
    return b_.all_gather(n + ".all_gather", w, group, static_cast<std::int64_t>(d));
  }
  TensorRef weight(const std::string& n, Shape s) { return sharded_weight(n, std::move(s), wd_, false); }
  // Context parallelism's causal work, balanced over the sequence ranks
  // (MaxText's context_parallel_load_balance, on by default: each rank
  // holds chunks i and 2n-1-i of 2n): a rank's queries (S / n) see S^2 /
  // 2n keys in all, as many as S / n queries aligned with the last keys
  // each seeing a window of S / 2. So the balanced rank is the causal
  // attention over the gathered keys with a window of half of them (or
  // the layer's own window, when smaller). `window` 0: none.
  std::int64_t balanced_window(std::int64_t keys, std::int64_t window) const {
    if (cp_ <= 1) return window;
    return window > 0 && window <= keys / 2 ? window : keys / 2;
  }
  // Biases, learned positions and class tokens are added to activations,
  // so they are kept in the activation dtype (no cast op needed).
  TensorRef act_weight(const std::string& n, Shape s) { return sharded_weight(n, std::move(s), ad_, false); }
  // Megatron's "f": x feeds column-parallel matmuls, so each tensor rank
  // gets a partial gradient of x that backward all_reduces. An input that
  // sequence parallelism all_gathered needs none: the gather's transpose,
  // a reduce_scatter, sums the partial gradients.
  void tp_grad_sync(const TensorRef& x) {
    if (tp_ > 1 && !sp_gathered_.count(x.name)) tc_.activation_grad_all_reduce[x.name] = {"tensor"};
  }
  // Sequence parallelism: a tensor-parallel block reads all tokens, so its
  // input (seq/tensor tokens per chip) is all_gathered along the sequence
  // (Korthikanti et al. 2022, section 4.2.2: "g" is an all-gather). Backward
  // gathers it again instead of keeping it (their section 4.2.2 as well).
  TensorRef tp_enter(const std::string& n, const TensorRef& x) {
    if (!sp_) return x;
    TensorRef g = b_.all_gather(n + ".all_gather", x, {"tensor"}, 1);
    sp_gathered_.insert(g.name);
    tc_.regather_in_backward.insert(g.name);
    return g;
  }
  // The partial sums of a row-parallel block: all_reduced, or with
  // sequence parallelism reduce_scattered along the sequence (dim 1).
  TensorRef tp_leave(const std::string& n, const TensorRef& y) {
    if (tp_ == 1) return y;
    if (sp_) return b_.reduce_scatter(n + ".reduce_scatter", y, {"tensor"}, 1);
    return b_.all_reduce(n + ".all_reduce", y, {"tensor"});
  }
  // A tensor-replicated weight applied to seq/tensor tokens under sequence
  // parallelism (norm scales, row-parallel biases, learned positions) gets
  // a partial gradient on each tensor rank: all_reduced over tensor too.
  void sp_partial_grad(const std::string& weight) {
    if (sp_) grad_over_tensor(weight);
  }
  // A weight whose gradient is partial on each tensor rank: all_reduced
  // over tensor as well as its data-parallel axes.
  void grad_over_tensor(const std::string& weight) {
    auto& axes = tc_.weight_grad_all_reduce[weight];
    if (std::find(axes.begin(), axes.end(), "tensor") == axes.end()) axes.push_back("tensor");
  }

  // A LoRA adapter on projection n (PhaseOptions::lora, models/lora.h):
  // y + (x A) B with A [in, r] and B [r, out] at the base weight's local
  // shape. With n > 1 adapters in the step, the token rows are split
  // evenly, ceil(rows / n) per adapter (the last rows padded), and one
  // grouped matmul per factor multiplies each adapter's rows by its own A
  // and B (Punica's SGMV). The factor tensor parallelism keeps
  // whole (A of a column-parallel projection, B of a row-parallel one)
  // gets a partial gradient on each tensor rank: all_reduced over tensor.
  TensorRef with_lora(const std::string& n, const TensorRef& x, const TensorRef& y, std::int64_t in, std::int64_t out,
                      bool row) {
    const auto target = lora_target_of(n);
    if (!o_.lora.enabled() || !target || !o_.lora.has(*target)) return y;
    const std::int64_t r = o_.lora.rank, na = o_.lora.adapters;
    auto partial = [&](const std::string& w) {
      if (tp_ > 1) grad_over_tensor(w);
    };
    TensorRef d;
    if (na == 1) {
      TensorRef xa = b_.matmul(n + ".lora_a", x, sharded_weight(n + ".lora_a.weight", {in, r}, ad_, false), "", ad_);
      d = b_.matmul(n + ".lora_b", xa, sharded_weight(n + ".lora_b.weight", {r, out}, ad_, false), "", ad_);
      partial(n + (row ? ".lora_b.weight" : ".lora_a.weight"));
    } else {
      // cap rows per adapter; the last rows padded (an input of zeros) when
      // the adapters do not divide the rows, as segment kernels pad tiles.
      const std::int64_t T = workloads::num_elements(x.shape) / in, cap = (T + na - 1) / na, pad = na * cap - T;
      TensorRef xs = b_.reshape(n + ".lora.rows", x, {T, in});
      if (pad > 0) xs = b_.concat(n + ".lora.pad", {xs, b_.input(n + ".lora.pad_rows", {pad, in}, x.dtype)}, 0);
      xs = b_.reshape(n + ".lora.grid", xs, {na, cap, in});
      TensorRef xa = b_.matmul(n + ".lora_a", xs, sharded_weight(n + ".lora_a.weight", {na, in, r}, ad_, true),
                               "ecx,exy->ecy", ad_);
      d = b_.matmul(n + ".lora_b", xa, sharded_weight(n + ".lora_b.weight", {na, r, out}, ad_, true), "ecx,exy->ecy",
                    ad_);
      d = b_.reshape(n + ".lora.out_rows", d, {na * cap, out});
      if (pad > 0) d = b_.slice(n + ".lora.unpad", d, {0, 0}, {T, out});
      d = b_.reshape(n + ".lora.out", d, y.shape);
    }
    return b_.add(n + ".lora_add", y, d);
  }

  // Column-parallel (out already divided by tensor) or replicated.
  TensorRef linear(const std::string& n, const TensorRef& x, std::int64_t in, std::int64_t out, bool bias) {
    TensorRef y = with_lora(n, x, b_.matmul(n, x, weight(n + ".weight", {in, out}), "", ad_), in, out, false);
    if (bias) y = b_.add(n + ".bias_add", y, act_weight(n + ".bias", {out}));
    return y;
  }
  // Row-parallel: `in` is this chip's share; the partial sums are
  // all_reduced over tensor (Megatron's "g") before the replicated bias,
  // unless the caller reduces a sum of several (reduce = false: the
  // caller also adds the bias, row_bias, after its reduction).
  TensorRef row_linear(const std::string& n, const TensorRef& x, std::int64_t in, std::int64_t out, bool bias,
                       bool reduce = true) {
    TensorRef y = with_lora(n, x, b_.matmul(n, x, weight(n + ".weight", {in, out}), "", ad_), in, out, true);
    if (!reduce) return y;
    y = tp_leave(n, y);
    return bias ? row_bias(n, y, out) : y;
  }
  TensorRef row_bias(const std::string& n, const TensorRef& y, std::int64_t out) {
    TensorRef r = b_.add(n + ".bias_add", y, act_weight(n + ".bias", {out}));
    sp_partial_grad(n + ".bias");
    return r;
  }
  // On the residual stream: seq/tensor tokens under sequence parallelism.
  TensorRef norm(const std::string& n, const TensorRef& x) {
    std::int64_t d = x.dim(-1);
    if (t_.norm == NormKind::rmsnorm) {
      TensorRef scale = weight(n + ".scale", {d});
      sp_partial_grad(n + ".scale");
      return b_.rms_norm(n, x, scale);
    }
    // Bias declared before scale: the order the workloads had when both
    // were arguments of one call (GCC evaluates those right to left).
    TensorRef bias = act_weight(n + ".bias", {d});
    TensorRef scale = weight(n + ".scale", {d});
    sp_partial_grad(n + ".scale");
    sp_partial_grad(n + ".bias");
    return b_.layer_norm(n, x, scale, bias);
  }
  TensorRef rms(const std::string& n, const TensorRef& x) {
    return b_.rms_norm(n, x, weight(n + ".scale", {x.dim(-1)}));
  }
  TensorRef dequant(const std::string& n, const TensorRef& x) { return x.dtype == ad_ ? x : b_.cast(n, x, ad_); }
  // x [B, S, heads, d] times cos/sin tables [S, 1, d] (shared inputs).
  TensorRef rope(const std::string& n, const TensorRef& x) {
    std::int64_t d = x.dim(-1);
    std::string cn = "rope.cos." + std::to_string(d), sn = "rope.sin." + std::to_string(d);
    if (!b_.peek().find_tensor(cn)) {
      b_.input(cn, {S_, 1, d}, ad_);
      b_.input(sn, {S_, 1, d}, ad_);
    }
    TensorRef c = b_.mul(n + "_cos", x, b_.ref(cn));
    TensorRef s = b_.mul(n + "_sin", x, b_.ref(sn));
    return b_.add(n, c, s);
  }
  // Writes a freshly computed K/V (or latent) as the cache append.
  void append_to_cache(const std::string& n, const TensorRef& x) {
    if (x.dtype != kd_)
      b_.cast(n, x, kd_);  // unconsumed: becomes an output
    else
      b_.mark_output(x);
  }

  TensorRef embed_tokens() {
    TensorRef tok = b_.input("tokens", {B_, S_}, DType::f32);
    // Vocab-parallel over tensor: each rank looks up its rows (zeros for
    // the others' tokens) and the partial embeddings are all_reduced.
    embed_ = weight("embed.weight", {vocab_per_rank(t_.vocab, tp_), t_.hidden});
    TensorRef x = b_.gather("embed", embed_, tok);
    x = dequant("embed.dequant", x);
    x = tp_leave("embed", x);  // sequence parallel: [B, S / tensor, h]
    if (t_.position == PositionKind::learned) {
      TensorRef pos = b_.input("positions", {sp_ ? S_ / tp_ : S_}, DType::f32);
      TensorRef p = b_.gather("pos_embed", act_weight("pos_embed.weight", {t_.max_context, t_.hidden}), pos);
      sp_partial_grad("pos_embed.weight");
      x = b_.add("pos_add", x, p);
    }
    if (m_.family == Family::encoder && t_.type_vocab > 0) {
      TensorRef ty = b_.input("token_types", {B_, S_}, DType::f32);
      TensorRef p = b_.gather("type_embed", act_weight("type_embed.weight", {t_.type_vocab, t_.hidden}), ty);
      x = b_.add("type_add", x, p);
    }
    return x;
  }

  // reduce = false: o_proj's partial sums over tensor are returned
  // unreduced and without its bias (row_linear).
  TensorRef attention_mha(const std::string& p, std::int64_t layer, const TensorRef& xn, bool causal,
                          bool reduce = true) {
    const auto& a = t_.attention;
    const std::int64_t H = a.heads / tp_, KV = kv_heads_per_rank(a.kv_heads, tp_), D = a.head_dim;
    tp_grad_sync(xn);
    TensorRef q = linear(p + "attn.q_proj", xn, t_.hidden, H * D, a.qkv_bias);
    TensorRef k = linear(p + "attn.k_proj", xn, t_.hidden, KV * D, a.qkv_bias);
    TensorRef v = linear(p + "attn.v_proj", xn, t_.hidden, KV * D, a.qkv_bias);
    if (kv_heads_replicated(a.kv_heads, tp_)) {
      // More tensor ranks than KV heads: each rank computes the KV head
      // its query heads share, replicated on tensor / kv_heads ranks; the
      // projections' weight gradients hold only this rank's query heads'
      // share, so they are all_reduced over tensor (every rank, though
      // only the ranks sharing a head need to: the ring's bytes per chip
      // are nearly the same).
      for (const char* proj : {"attn.k_proj", "attn.v_proj"})
        for (const char* w : {".weight", ".bias", ".lora_a.weight", ".lora_b.weight"})
          if (b_.peek().find_tensor(p + proj + w)) grad_over_tensor(p + proj + w);
    }
    q = b_.reshape(p + "attn.q_heads", q, {B_, S_, H, D});
    k = b_.reshape(p + "attn.k_heads", k, {B_, S_, KV, D});
    v = b_.reshape(p + "attn.v_heads", v, {B_, S_, KV, D});
    if (a.qk_norm) {  // over each head's D, one scale of D shared by the heads
      q = norm(p + "attn.q_norm", q);
      k = norm(p + "attn.k_norm", k);
      // A rank holds some of the heads: its share of the scales' gradient
      // is all_reduced over tensor, as the replicated K/V projections' are.
      if (tp_ > 1)
        for (const char* n : {"attn.q_norm", "attn.k_norm"})
          for (const char* w : {".scale", ".bias"})
            if (b_.peek().find_tensor(p + n + w)) grad_over_tensor(p + n + w);
    }
    if (t_.position == PositionKind::rotary) {
      q = rope(p + "attn.q_rope", q);
      k = rope(p + "attn.k_rope", k);
    }
    TensorRef o;
    const TensorRef k_local = k, v_local = v;
    if (cp_ > 1) {
      // Context parallelism: this chip's queries attend to the keys of
      // the whole sequence, gathered from the other sequence ranks
      // (all-gather K/V, as MaxText's context parallelism does).
      k = b_.all_gather(p + "attn.k.all_gather", k, {"sequence"}, 1);
      v = b_.all_gather(p + "attn.v.all_gather", v, {"sequence"}, 1);
    }
    if (decode_) {
      std::int64_t ctx = a.windowed(layer) ? std::min(o_.context, a.sliding_window) : o_.context;
      TensorRef kc = b_.kv_cache(p + "attn.k_cache", {B_, ctx, KV, D}, kd_);
      TensorRef vc = b_.kv_cache(p + "attn.v_cache", {B_, ctx, KV, D}, kd_);
      o = core_attention(p, q, kc, vc, false);
      append_to_cache(p + "attn.k_append", k);
      append_to_cache(p + "attn.v_append", v);
    } else if (o_.serve_step()) {
      o = serve_step_attention(p, layer, q, k, v);
    } else {
      // Causal with S/sequence queries over S keys: the IR aligns the
      // queries with the last keys; with context parallelism a window of
      // half the keys makes that the balanced rank (balanced_window).
      o = core_attention(p, q, k, v, causal, causal ? balanced_window(k.dim(1), a.window_of(layer)) : 0);
      if (o_.phase == Phase::prefill) {  // each chip caches its own tokens
        append_to_cache(p + "attn.k_append", k_local);
        append_to_cache(p + "attn.v_append", v_local);
      }
    }
    o = b_.reshape(p + "attn.merge_heads", o, {B_, S_, H * D});
    return row_linear(p + "attn.o_proj", o, H * D, t_.hidden, a.out_bias, reduce);
  }

  // softmax(Q K^T) V of q [B, Sq, H, D] over k, v [B, Sk, KV, D] (causal:
  // the queries aligned with the last keys): the fused attention operator,
  // or with PhaseOptions::attention_kernel dense the einsums XLA compiles
  // from attention written out (models/model_spec.h, AttentionImpl):
  // f32 logits [B, KV, H/KV, Sq, Sk] with the causal mask added in the
  // matmul's epilogue (fusion), a softmax, a cast back to the activation
  // dtype, and the PV matmul, whose output keeps the name attn.core (so
  // remat policies see it as the attention's context). K and V stay in
  // their stored dtype (an int8 cache is widened on the VPU as the
  // matmul streams it). The scale 1/sqrt(D) is left out (XLA folds it
  // into the epilogue or into Q's producer: VPU work only).
  TensorRef core_attention(const std::string& p, const TensorRef& q, const TensorRef& k, const TensorRef& v,
                           bool causal, std::int64_t window = 0) {
    if (o_.attention_kernel != AttentionImpl::dense)
      return b_.attention(p + "attn.core", q, k, v, causal, std::nullopt, workloads::AttentionPass::forward, window,
                          o_.attention_blocks.fwd);
    const std::int64_t Sq = q.shape[1], H = q.shape[2], D = q.shape[3];
    const std::int64_t Sk = k.shape[1], KV = k.shape[2], Dv = v.shape[3];
    TensorRef qg = b_.reshape(p + "attn.q_groups", q, {B_, Sq, KV, H / KV, D});
    // A local layer's einsums compute every pair too; the mask (its own
    // input: the window's band) discards those outside the window as well,
    // which the matmuls' window leaves out of model FLOPs.
    const std::int64_t w = causal ? window : 0;
    TensorRef s = b_.matmul(p + "attn.scores", qg, k, "bqgrd,bkgd->bgrqk", DType::f32, causal ? "qk" : "", w);
    if (causal) s = b_.add(p + "attn.causal_mask", s, causal_mask(Sq, Sk, w));
    TensorRef pr = b_.cast(p + "attn.probs", b_.softmax(p + "attn.softmax", s), ad_);
    TensorRef o = b_.matmul(p + "attn.core", pr, v, "bgrqk,bkgd->bqgrd", ad_, causal ? "qk" : "", w);
    return b_.reshape(p + "attn.heads", o, {B_, Sq, H, Dv});
  }

  // The additive causal mask [Sq, Sk] (0 or -inf, f32) the dense
  // attention's logits add: one input every layer reads; local layers
  // read their window's band instead.
  TensorRef causal_mask(std::int64_t sq, std::int64_t sk, std::int64_t window) {
    std::optional<TensorRef>& m = window > 0 ? window_mask_ : mask_;
    if (!m || m->shape != Shape{sq, sk})
      m = b_.input(window > 0 ? "attn_window_mask" : "attn_causal_mask", {sq, sk}, DType::f32);
    return *m;
  }

  // A serving step's attention (PhaseOptions::serve_decode): the token
  // rows are the prefill chunks' P tokens, then one per decoding sequence.
  // Each chunk attends causally to its cached prefix and itself
  // (PhaseOptions::prefill_chunks: several prompts' chunks, each its own
  // sequence); each decoding sequence's query attends to its own cache of
  // `context` tokens.
  TensorRef serve_step_attention(const std::string& p, std::int64_t layer, const TensorRef& q, const TensorRef& k,
                                 const TensorRef& v) {
    const auto& a = t_.attention;
    const std::int64_t T = o_.decode_tokens, Bd = o_.serve_decode, H = q.dim(2), KV = k.dim(2), D = a.head_dim,
                       P = S_ - Bd * T;
    auto rows = [&](const std::string& n, const TensorRef& x, std::int64_t from, std::int64_t to) {
      return b_.slice(n, x, {0, from, 0, 0}, {1, to, x.dim(2), D});
    };
    const std::int64_t pc = a.windowed(layer) ? std::min(o_.prefill_context, a.sliding_window) : o_.prefill_context;
    // `count` chunks of `len` tokens from row `from` as [count, len]
    // sequences; a lone chunk keeps the single-chunk step's op names.
    auto chunk_group = [&](const std::string& g, std::int64_t from, std::int64_t count, std::int64_t len) {
      const std::string n = p + "attn." + g;
      auto seqs = [&](const std::string& name, const TensorRef& x) {
        TensorRef r = rows(name, x, from, from + count * len);
        return count == 1 ? r : b_.reshape(name + "_seqs", r, {count, len, x.dim(2), D});
      };
      TensorRef kp = seqs(n + "_k", k), vp = seqs(n + "_v", v);
      const std::string append = g == "chunk" ? p + "attn." : n + "_";
      append_to_cache(append + "k_append", kp);
      append_to_cache(append + "v_append", vp);
      if (pc > 0) {
        kp = b_.concat(n + "_k_all", {b_.kv_cache(n + "_k_cache", {count, pc, KV, D}, kd_), kp}, 1);
        vp = b_.concat(n + "_v_all", {b_.kv_cache(n + "_v_cache", {count, pc, KV, D}, kd_), vp}, 1);
      }
      TensorRef o = b_.attention(n + "_core", seqs(n + "_q", q), kp, vp, true, std::nullopt,
                                 workloads::AttentionPass::forward, a.window_of(layer));
      return count == 1 ? o : b_.reshape(n + "_rows", o, {1, count * len, H, D});
    };
    const auto groups = o_.chunk_groups();
    TensorRef o;
    if (groups.size() == 1 && groups[0].first == 1) {
      o = chunk_group("chunk", 0, 1, P);
    } else {
      std::vector<TensorRef> parts;
      std::int64_t from = 0;
      for (std::size_t i = 0; i < groups.size(); ++i) {
        parts.push_back(chunk_group("chunks" + std::to_string(i), from, groups[i].first, groups[i].second));
        from += groups[i].first * groups[i].second;
      }
      o = parts.size() == 1 ? parts[0] : b_.concat(p + "attn.chunks_out", parts, 1);
    }
    if (Bd == 0) return o;
    const std::int64_t ctx = a.windowed(layer) ? std::min(o_.context, a.sliding_window) : o_.context;
    auto per_seq = [&](const std::string& n, const TensorRef& x) {
      return b_.reshape(n, rows(n + "_rows", x, P, S_), {Bd, T, x.dim(2), D});
    };
    TensorRef kc = b_.kv_cache(p + "attn.k_cache", {Bd, ctx, KV, D}, kd_);
    TensorRef vc = b_.kv_cache(p + "attn.v_cache", {Bd, ctx, KV, D}, kd_);
    TensorRef od = b_.attention(p + "attn.core", per_seq(p + "attn.decode_q", q), kc, vc, false);
    append_to_cache(p + "attn.decode_k_append", per_seq(p + "attn.decode_k", k));
    append_to_cache(p + "attn.decode_v_append", per_seq(p + "attn.decode_v", v));
    od = b_.reshape(p + "attn.decode_rows", od, {1, Bd * T, H, D});
    return b_.concat(p + "attn.step_out", {o, od}, 1);
  }

  TensorRef attention_mla(const std::string& p, const TensorRef& xn) {
    const auto& a = t_.attention;
    // Heads split over tensor; the low-rank down-projections (q_a, kv_a),
    // their norms and the latent cache are replicated on every tensor rank.
    const std::int64_t H = a.heads / tp_, nope = a.qk_nope_head_dim, rp = a.qk_rope_head_dim, qk = a.qk_dim(),
                       vd = a.v_head_dim, kvr = a.kv_lora_rank;
    TensorRef q;
    if (a.q_lora_rank > 0) {
      q = linear(p + "attn.q_a_proj", xn, t_.hidden, a.q_lora_rank, false);
      q = rms(p + "attn.q_a_norm", q);
      tp_grad_sync(q);
      q = linear(p + "attn.q_b_proj", q, a.q_lora_rank, H * qk, false);
    } else {
      tp_grad_sync(xn);
      q = linear(p + "attn.q_proj", xn, t_.hidden, H * qk, false);
    }
    q = b_.reshape(p + "attn.q_heads", q, {B_, S_, H, qk});
    TensorRef q_nope = b_.slice(p + "attn.q_nope", q, {0, 0, 0, 0}, {B_, S_, H, nope});
    TensorRef q_pe = b_.slice(p + "attn.q_pe", q, {0, 0, 0, nope}, {B_, S_, H, qk});
    q_pe = rope(p + "attn.q_rope", q_pe);
    TensorRef kva = linear(p + "attn.kv_a_proj", xn, t_.hidden, kvr + rp, false);
    TensorRef ckv = b_.slice(p + "attn.c_kv", kva, {0, 0, 0}, {B_, S_, kvr});
    ckv = rms(p + "attn.kv_a_norm", ckv);
    tp_grad_sync(ckv);
    TensorRef kpe = b_.slice(p + "attn.k_pe", kva, {0, 0, kvr}, {B_, S_, kvr + rp});
    kpe = b_.reshape(p + "attn.k_pe_heads", kpe, {B_, S_, 1, rp});
    kpe = rope(p + "attn.k_rope", kpe);
    tp_grad_sync(kpe);
    // kv_b_proj [kvr, H * (nope + v)] kept as its two halves, which is the
    // form decode absorbs into the query and the output.
    TensorRef wk = weight(p + "attn.wk_b.weight", {kvr, H, nope});
    TensorRef wv = weight(p + "attn.wv_b.weight", {kvr, H, vd});
    TensorRef o;
    if (decode_) {
      // Latent cache [B, ctx, 1, kvr + rope]: normalised c_kv and the
      // roped key part, one head shared by all query heads (MQA-like).
      TensorRef lat_new =
          b_.concat(p + "attn.latent", {b_.reshape(p + "attn.c_kv_heads", ckv, {B_, S_, 1, kvr}), kpe}, 3);
      append_to_cache(p + "attn.latent_append", lat_new);
      TensorRef cache = b_.kv_cache(p + "attn.latent_cache", {B_, o_.context, 1, kvr + rp}, kd_);
      TensorRef q_lat = b_.matmul(p + "attn.wk_b", q_nope, wk, "bshd,chd->bshc", ad_);
      TensorRef qa = b_.concat(p + "attn.q_absorbed", {q_lat, q_pe}, 3);
      // The latent serves as both key and value, each block read once, and
      // PV takes its first kv_lora_rank columns (value_dim), as FlashMLA
      // and the TPU MLA kernels do.
      TensorRef ol = b_.attention(p + "attn.core", qa, cache, cache, false, std::nullopt,
                                  workloads::AttentionPass::forward, 0, {}, kvr);
      o = b_.matmul(p + "attn.wv_b", ol, wv, "bshc,chd->bshd", ad_);
    } else {
      // Context parallelism: the latent (kv_lora_rank + rope dims per
      // token, 576 for DeepSeek-V3, against 128 heads x 320 of K and V) is
      // what crosses the sequence axis; every chip then up-projects the
      // whole sequence's keys and values (the up-projection's FLOPs x
      // sequence in all).
      TensorRef ckv_all = ckv, kpe_all = kpe;
      if (cp_ > 1) {
        ckv_all = b_.all_gather(p + "attn.c_kv.all_gather", ckv, {"sequence"}, 1);
        kpe_all = b_.all_gather(p + "attn.k_pe.all_gather", kpe, {"sequence"}, 1);
      }
      TensorRef k_nope = b_.matmul(p + "attn.wk_b", ckv_all, wk, "bsc,chd->bshd", ad_);
      TensorRef v = b_.matmul(p + "attn.wv_b", ckv_all, wv, "bsc,chd->bshd", ad_);
      TensorRef ones = b_.input(p + "attn.head_ones", {1, 1, H, 1}, ad_);
      TensorRef kpe_h = b_.mul(p + "attn.k_pe_expand", kpe_all, ones);
      TensorRef qf = b_.concat(p + "attn.q_full", {q_nope, q_pe}, 3);
      TensorRef kf = b_.concat(p + "attn.k_full", {k_nope, kpe_h}, 3);
      o = b_.attention(p + "attn.core", qf, kf, v, true, std::nullopt, workloads::AttentionPass::forward,
                       balanced_window(kf.dim(1), 0));
      if (o_.phase == Phase::prefill) {
        TensorRef lat =
            b_.concat(p + "attn.latent", {b_.reshape(p + "attn.c_kv_heads", ckv, {B_, S_, 1, kvr}), kpe}, 3);
        append_to_cache(p + "attn.latent_append", lat);
      }
    }
    o = b_.reshape(p + "attn.merge_heads", o, {B_, S_, H * vd});
    return row_linear(p + "attn.o_proj", o, H * vd, t_.hidden, false);
  }

  // The gated FFN's activation: SiLU (swiglu) or GELU (geglu).
  workloads::EwKind gate_activation() const {
    return t_.ffn.kind == FfnKind::geglu ? workloads::EwKind::gelu : workloads::EwKind::silu;
  }

  // size: the whole FFN's hidden size; tensor splits it.
  TensorRef ffn(const std::string& n, const TensorRef& x, std::int64_t size, bool bias, bool reduce = true) {
    const std::int64_t h = t_.hidden;
    size /= tp_;
    // Shared experts (reduce = false) read moe()'s tokens, synced there.
    if (reduce) tp_grad_sync(x);
    if (t_.ffn.gated()) {
      TensorRef g = linear(n + ".gate_proj", x, h, size, bias);
      TensorRef u = linear(n + ".up_proj", x, h, size, bias);
      TensorRef a = b_.elementwise(n + ".act", gate_activation(), {g});
      TensorRef m = b_.mul(n + ".gated", a, u);
      return row_linear(n + ".down_proj", m, size, h, bias, reduce);
    }
    TensorRef f = linear(n + ".fc1", x, h, size, bias);
    f = b_.elementwise(n + ".act", t_.ffn.kind == FfnKind::gelu ? workloads::EwKind::gelu : workloads::EwKind::relu,
                       {f});
    return row_linear(n + ".fc2", f, size, h, bias, reduce);
  }

  // One group of experts: n experts, each with `cap` token slots, the
  // tokens gathered to them.
  TensorRef expert_group(const std::string& n, const TensorRef& xf, const TensorRef& idx_src, std::int64_t offset,
                         std::int64_t ne, std::int64_t cap) {
    TensorRef idx = b_.slice(n + ".index", idx_src, {offset}, {offset + ne * cap});
    idx = b_.reshape(n + ".index_grid", idx, {ne, cap});
    return expert_group(n, b_.gather(n + ".dispatch", xf, idx), ne, cap);  // [ne, cap, h]
  }

  // The expert FFNs over xe [ne, cap, h]; returns [ne * cap, h].
  TensorRef expert_group(const std::string& n, const TensorRef& xe, std::int64_t ne, std::int64_t cap) {
    const auto& e = t_.moe;
    const std::int64_t h = t_.hidden, F = e.expert_ffn_size / tp_;
    auto mm = [&](const std::string& w, const TensorRef& x, std::int64_t in, std::int64_t out) {
      TensorRef y = b_.matmul(n + "." + w, x, sharded_weight(n + "." + w + ".weight", {ne, in, out}, wd_, true),
                              "ecx,exy->ecy", ad_);
      if (e.expert_bias)
        y = b_.add(n + "." + w + ".bias_add", y, sharded_weight(n + "." + w + ".bias", {ne, 1, out}, ad_, true));
      return y;
    };
    TensorRef y;
    if (t_.ffn.gated()) {
      TensorRef g = mm("gate_proj", xe, h, F), u = mm("up_proj", xe, h, F);
      TensorRef a = b_.elementwise(n + ".act", gate_activation(), {g});
      y = mm("down_proj", b_.mul(n + ".gated", a, u), F, h);
    } else {
      TensorRef f = mm("fc1", xe, h, F);
      f = b_.elementwise(n + ".act", t_.ffn.kind == FfnKind::gelu ? workloads::EwKind::gelu : workloads::EwKind::relu,
                         {f});
      y = mm("fc2", f, F, h);
    }
    return b_.reshape(n + ".rows", y, {ne * cap, h});
  }

  std::optional<TensorRef> dispatch_mask_;  // moe_capacity

  // MaxText's dropping MoE (PhaseOptions::moe_capacity_factor): per
  // sequence C slots per expert, one-hot dispatch ([B,S,E,C], an input:
  // which token takes which slot) and combine masks (the dispatch mask
  // times the router's probabilities, so the router gets its gradient)
  // applied as einsums; the experts compute all E x B x C slots.
  TensorRef moe_capacity(const std::string& p, const TensorRef& xn, const TensorRef& probs) {
    const auto& e = t_.moe;
    const std::int64_t h = t_.hidden, E = e.experts;
    const auto C = static_cast<std::int64_t>(
        std::ceil(static_cast<double>(S_ * e.top_k) / static_cast<double>(E) * o_.moe_capacity_factor));
    // One input for every layer (the routing's slot pattern, not values
    // the cost depends on), as a layer's mask lives only within it.
    if (!dispatch_mask_) dispatch_mask_ = b_.input("moe.dispatch_mask", {B_, S_, E, C}, ad_);
    const TensorRef dispatch_mask = *dispatch_mask_;
    TensorRef gates = b_.reshape(p + "mlp.gate_grid", probs, {B_, S_, E, 1});
    if (tp_ > 1) tc_.activation_grad_all_reduce[gates.name] = {"tensor"};
    TensorRef combine_mask = b_.mul(p + "mlp.combine_mask", dispatch_mask, gates);
    TensorRef xe = b_.matmul(p + "mlp.dispatch", xn, dispatch_mask, "bsm,bsec->ebcm", ad_);  // [E, B, C, h]
    // Expert parallelism: the slots of expert e go to the expert rank that
    // holds it, every rank's sequences side by side (MaxText's dense path
    // reshards [E, B, C, h] from batch- to expert-sharded, which XLA
    // lowers as one all_to_all splitting E and concatenating B), and come
    // back the same way.
    const std::int64_t El = E / ep_, Bl = B_ * ep_;
    if (ep_ > 1) xe = b_.all_to_all(p + "mlp.dispatch.all_to_all", xe, {"expert"}, 0, 1);  // [E/ep, ep B, C, h]
    xe = b_.reshape(p + "mlp.slots", xe, {El, Bl * C, h});
    TensorRef rows = expert_group(p + "mlp.experts.g0", xe, El, Bl * C);  // [E/ep * ep B * C, h]
    rows = b_.reshape(p + "mlp.slot_rows", rows, {El, Bl, C, h});
    if (ep_ > 1) rows = b_.all_to_all(p + "mlp.combine.all_to_all", rows, {"expert"}, 1, 0);  // [E, B, C, h]
    return b_.matmul(p + "mlp.combine", rows, combine_mask, "ebcm,bsec->bsm", ad_);           // [B, S, h]
  }

  TensorRef moe(const std::string& p, const TensorRef& xn) {
    const auto& e = t_.moe;
    const std::int64_t h = t_.hidden, T = B_ * S_, k = e.top_k;
    tp_grad_sync(xn);  // the router is replicated, the experts split
    TensorRef xf = b_.reshape(p + "mlp.tokens", xn, {T, h});
    TensorRef logits = linear(p + "mlp.router", xf, h, e.experts, e.router_bias);
    TensorRef probs = e.router == RouterKind::softmax
                          ? b_.softmax(p + "mlp.router_probs", logits)
                          : b_.elementwise(p + "mlp.router_probs", workloads::EwKind::sigmoid, {logits});
    if (o_.moe_capacity_factor > 0) {
      TensorRef y = moe_capacity(p, xn, probs);
      if (e.shared_experts > 0)
        y = b_.add(
            p + "mlp.shared_add", y,
            b_.reshape(p + "mlp.shared_out",
                       ffn(p + "mlp.shared", xf, e.shared_experts * e.expert_ffn_size, false, false), {B_, S_, h}));
      if (sp_) return tp_leave(p + "mlp", y);
      if (tp_ > 1) y = b_.all_reduce(p + "mlp.all_reduce", y, {"tensor"});
      return y;
    }
    // Stand-in for top-k: the IR has no top_k op (see file comment).
    TensorRef topk = b_.slice(p + "mlp.topk", probs, {0, 0}, {T, k});
    TensorRef flat = b_.reshape(p + "mlp.route_flat", probs, {T * e.experts});
    MoeRouting r = moe_routing_local(T, e.experts, k, ep_);
    TensorRef src = xf;
    if (ep_ > 1) {
      // Each of the R slots carries a copy of its token; slot group g goes
      // to expert rank g (equal parts under uniform routing) and comes
      // back the same way after the expert FFNs.
      TensorRef idx = b_.slice(p + "mlp.send_index", flat, {0}, {r.slots});
      TensorRef xs =
          b_.reshape(p + "mlp.dispatch_grid", b_.gather(p + "mlp.dispatch", xf, idx), {ep_, r.slots / ep_, h});
      xs = b_.all_to_all(p + "mlp.dispatch.all_to_all", xs, {"expert"}, 0, 0);
      src = b_.reshape(p + "mlp.received", xs, {r.slots, h});
    }
    std::vector<TensorRef> parts;
    parts.push_back(expert_group(p + "mlp.experts.g0", src, flat, 0, r.group0, r.cap));
    if (r.group1 > 0 && r.cap > 1)
      parts.push_back(expert_group(p + "mlp.experts.g1", src, flat, r.group0 * r.cap, r.group1, r.cap - 1));
    TensorRef rows = parts.size() == 1 ? parts[0] : b_.concat(p + "mlp.expert_rows", parts, 0);
    if (ep_ > 1) {
      rows = b_.reshape(p + "mlp.return_grid", rows, {ep_, r.slots / ep_, h});
      rows = b_.all_to_all(p + "mlp.combine.all_to_all", rows, {"expert"}, 0, 0);
      rows = b_.reshape(p + "mlp.returned", rows, {r.slots, h});
    }
    TensorRef picked = b_.gather(p + "mlp.combine", rows, topk);  // [T, k, h]
    TensorRef gates = b_.reshape(p + "mlp.gates", topk, {T, k, 1});
    // The gates multiply expert rows that are still partial sums over
    // tensor (the all_reduce comes after the weighted sum), so their
    // gradient is partial too: all_reduced ([T, k, 1], small) before it
    // reaches the replicated router.
    if (tp_ > 1) tc_.activation_grad_all_reduce[gates.name] = {"tensor"};
    TensorRef y =
        b_.reduce(p + "mlp.weighted_sum", b_.mul(p + "mlp.gate_mul", picked, gates), workloads::ReduceKind::sum, {1});
    if (e.shared_experts > 0)
      y = b_.add(p + "mlp.shared_add", y,
                 ffn(p + "mlp.shared", xf, e.shared_experts * e.expert_ffn_size, false, false));
    // Routed and shared experts' partial sums over tensor, reduced once.
    if (sp_) return tp_leave(p + "mlp", b_.reshape(p + "mlp.out", y, {B_, S_, h}));
    if (tp_ > 1) y = b_.all_reduce(p + "mlp.all_reduce", y, {"tensor"});
    return b_.reshape(p + "mlp.out", y, {B_, S_, h});
  }

  TensorRef decoder_layer(std::int64_t i, TensorRef x) {
    const std::string p = L(i);
    TensorRef xn = tp_enter(p + "attn_norm", norm(p + "attn_norm", x));
    if (t_.parallel_block && tp_ > 1 && t_.attention.kind == AttentionKind::mha) {
      // Attention and FFN read the same norm: their row-parallel partial
      // sums are added and reduced over tensor once, as XLA's
      // AllReduceReassociate / ReduceScatterReassociate passes rewrite
      // reduce(a) + reduce(b) into reduce(a + b) (and as PaLM's "parallel
      // layers" are meant to run), the biases added after the reduction.
      TensorRef a = attention_mha(p, i, xn, true, false);
      TensorRef f = ffn(p + "mlp", xn, t_.ffn.size, t_.ffn.bias, false);
      TensorRef y = tp_leave(p + "block", b_.add(p + "block.partial_sum", a, f));
      if (t_.attention.out_bias) y = row_bias(p + "attn.o_proj", y, t_.hidden);
      if (t_.ffn.bias) y = row_bias(p + (t_.ffn.gated() ? "mlp.down_proj" : "mlp.fc2"), y, t_.hidden);
      return b_.add(p + "residual", x, y);
    }
    TensorRef a = t_.attention.kind == AttentionKind::mla ? attention_mla(p, xn) : attention_mha(p, i, xn, true);
    if (t_.post_norms) a = norm(p + "post_attn_norm", a);
    if (t_.parallel_block) {
      TensorRef f = ffn(p + "mlp", xn, t_.ffn.size, t_.ffn.bias);
      return b_.add(p + "residual", b_.add(p + "attn_residual", x, a), f);
    }
    x = b_.add(p + "attn_residual", x, a);
    TensorRef xn2 = tp_enter(p + "mlp_norm", norm(p + "mlp_norm", x));
    TensorRef f = t_.is_moe_layer(i) ? moe(p, xn2) : ffn(p + "mlp", xn2, t_.ffn.size, t_.ffn.bias);
    if (t_.post_norms) f = norm(p + "post_mlp_norm", f);
    return b_.add(p + "mlp_residual", x, f);
  }

  TensorRef lm_head(const TensorRef& x) {
    // Column-parallel over the vocabulary; serving gathers the logits.
    tp_grad_sync(x);
    TensorRef logits;
    const std::int64_t vocab = vocab_per_rank(t_.vocab, tp_);
    if (t_.tied_embeddings)
      logits = b_.matmul("lm_head", x, embed_, "bsh,vh->bsv", ad_);
    else
      logits = b_.matmul("lm_head", x, weight("lm_head.weight", {t_.hidden, vocab}), "", ad_);
    if (t_.lm_head_bias) logits = b_.add("lm_head.bias_add", logits, act_weight("lm_head.bias", {vocab}));
    if (tp_ > 1 && o_.phase != Phase::train)
      logits = b_.all_gather("lm_head.all_gather", logits, {"tensor"}, logits.rank() - 1);
    return logits;
  }

  Workload decoder() {
    B_ = local_batch(o_);
    decode_ = o_.phase == Phase::decode;
    S_ = local_seq(o_) + o_.serve_decode * o_.decode_tokens;
    // Sequence parallelism over tokens tensor does not divide: the
    // sequence is padded to a multiple of it (as GSPMD pads an uneven
    // split), the last rank's padding rows computed with the rest.
    if (sp_) S_ = (S_ + tp_ - 1) / tp_ * tp_;
    TensorRef x = embed_tokens();
    for (std::int64_t i = 0; i < t_.layers; ++i) x = decoder_layer(i, x);
    x = norm("final_norm", x);
    if (o_.phase == Phase::prefill && S_ > 1) {  // serving needs only the last position's logits
      if (sp_) {
        // The last position lives on the last tensor rank: each rank
        // offers its last local one and keeps the last rank's.
        const std::int64_t Sr = S_ / tp_;
        x = b_.slice("last_token_local", x, {0, Sr - 1, 0}, {B_, Sr, t_.hidden});
        x = b_.all_gather("last_token.all_gather", x, {"tensor"}, 1);
        x = b_.slice("last_token", x, {0, tp_ - 1, 0}, {B_, tp_, t_.hidden});
      } else if (o_.prefill_chunks > 1) {
        // Several prompts' chunks: each chunk's last position, then every
        // decoding sequence's row.
        std::vector<TensorRef> parts;
        std::int64_t from = 0;
        const auto groups = o_.chunk_groups();
        for (std::size_t i = 0; i < groups.size(); ++i) {
          const auto [count, len] = groups[i];
          const std::string n = "last_token" + std::to_string(i);
          TensorRef g = b_.slice(n + "_rows", x, {0, from, 0}, {1, from + count * len, t_.hidden});
          g = b_.reshape(n + "_seqs", g, {count, len, t_.hidden});
          g = b_.slice(n, g, {0, len - 1, 0}, {count, len, t_.hidden});
          parts.push_back(b_.reshape(n + "_flat", g, {1, count, t_.hidden}));
          from += count * len;
        }
        if (S_ > from) parts.push_back(b_.slice("decode_rows", x, {0, from, 0}, {1, S_, t_.hidden}));
        x = parts.size() == 1 ? parts[0] : b_.concat("last_tokens", parts, 1);
      } else {
        // A serving step also keeps every decoding sequence's row.
        x = b_.slice("last_token", x, {0, S_ - o_.serve_decode * o_.decode_tokens - 1, 0}, {B_, S_, t_.hidden});
      }
    } else {
      x = tp_enter("final_norm", x);  // the vocab-parallel head reads all tokens
    }
    TensorRef logits = lm_head(x);
    if (o_.phase == Phase::train) {
      // Vocab-parallel logits: the cross-entropy's statistics are
      // all_reduced over tensor (backward.cpp).
      if (tp_ > 1) tc_.vocab_split_axes = {"tensor"};
      append_training(b_, logits, o_, tc_);
    }
    return b_.build();
  }

  TensorRef encoder_layer(std::int64_t i, TensorRef x) {
    const std::string p = L(i);
    TensorRef a = attention_mha(p, i, x, false);
    x = norm(p + "attn_norm", b_.add(p + "attn_residual", x, a));
    TensorRef f = ffn(p + "mlp", x, t_.ffn.size, t_.ffn.bias);
    return norm(p + "mlp_norm", b_.add(p + "mlp_residual", x, f));
  }

  Workload encoder() {
    B_ = local_batch(o_);
    S_ = o_.seq_len;
    TensorRef x = norm("embed_norm", embed_tokens());
    for (std::int64_t i = 0; i < t_.layers; ++i) x = encoder_layer(i, x);
    if (o_.phase == Phase::train) {
      // Masked-LM logits through the tied word embedding (the MLM head's
      // extra transform layer is left out).
      tp_grad_sync(x);
      TensorRef logits = b_.matmul("mlm_head", x, embed_, "bsh,vh->bsv", ad_);
      if (tp_ > 1) tc_.vocab_split_axes = {"tensor"};
      append_training(b_, logits, o_, tc_);
    } else if (t_.pooler) {
      TensorRef cls =
          b_.reshape("pooler.cls", b_.slice("pooler.cls_token", x, {0, 0, 0}, {B_, 1, t_.hidden}), {B_, t_.hidden});
      TensorRef y = linear("pooler.dense", cls, t_.hidden, t_.hidden, true);
      b_.elementwise("pooler.act", workloads::EwKind::tanh, {y});
    }
    return b_.build();
  }

  Workload vit() {
    B_ = local_batch(o_);
    const std::int64_t img = o_.image_size > 0 ? o_.image_size : t_.image_size, P = t_.patch, n = img / P,
                       C = t_.channels, h = t_.hidden;
    S_ = n * n + 1;
    TensorRef im = b_.input("image", {B_, img, img, C}, ad_);
    TensorRef pt = b_.reshape("patches.split", im, {B_, n, P, n, P, C});
    pt = b_.transpose("patches.order", pt, {0, 1, 3, 2, 4, 5});
    pt = b_.reshape("patches.flat", pt, {B_, n * n, P * P * C});
    TensorRef x = linear("patch_embed", pt, P * P * C, h, true);
    TensorRef zeros = b_.input("cls_zeros", {B_, 1, 1}, ad_);
    TensorRef cls = b_.add("cls_expand", act_weight("cls_token", {1, 1, h}), zeros);
    x = b_.concat("cls_concat", {cls, x}, 1);
    // Position table at this run's patch grid (interpolated when the image
    // size differs from the model's).
    x = b_.add("pos_add", x, act_weight("pos_embed.weight", {S_, h}));
    for (std::int64_t i = 0; i < t_.layers; ++i) {
      const std::string p = L(i);
      TensorRef a = attention_mha(p, i, norm(p + "attn_norm", x), false);
      x = b_.add(p + "attn_residual", x, a);
      TensorRef f = ffn(p + "mlp", norm(p + "mlp_norm", x), t_.ffn.size, t_.ffn.bias);
      x = b_.add(p + "mlp_residual", x, f);
    }
    x = norm("final_norm", x);
    TensorRef c = b_.reshape("head.cls", b_.slice("head.cls_token", x, {0, 0, 0}, {B_, 1, h}), {B_, h});
    if (t_.classes > 0) {
      TensorRef logits = linear("head", c, h, t_.classes, true);
      if (o_.phase == Phase::train) append_training(b_, logits, o_, tc_);
    }
    return b_.build();
  }
};

}  // namespace

Workload generate_transformer(const ModelSpec& m, const PhaseOptions& o) {
  WorkloadBuilder b(m.name + "." + phase_name(o.phase));
  return TransformerGen(b, m, o).run();
}

}  // namespace tpusim::models::detail
