// Latent-diffusion UNet generator (inference: one denoising step), in the
// form of Stable Diffusion XL's UNet2DConditionModel (Podell et al. 2023,
// "SDXL: Improving Latent Diffusion Models for High-Resolution Image
// Synthesis", arXiv:2307.01952, section 2.1; the layer structure of
// diffusers' UNet2DConditionModel, ResnetBlock2D and Transformer2DModel),
// NHWC:
// - time embedding: the sinusoidal projection of the timestep
//   (channels[0] wide, an input: no parameters) through linear, SiLU,
//   linear to 4 x channels[0]; with addition_embed_dim, SDXL's pooled text
//   embedding and size/crop ids (an input of that width) through the same
//   pair of linears, added;
// - conv_in 3x3; per level, layers_per_block ResNet blocks (GroupNorm,
//   SiLU, 3x3 conv, the time embedding's projection added, GroupNorm,
//   SiLU, 3x3 conv, a 1x1 shortcut where the width changes), each followed
//   by a transformer of transformer_depth[level] blocks, and a stride-2 3x3
//   conv between levels; the middle: ResNet, transformer, ResNet;
// - the up path: per level (deepest first) layers_per_block + 1 ResNet
//   blocks, each reading the concatenation of the previous output and the
//   matching skip (every down block's output, conv_in's and the
//   downsamplers'), each followed by the level's transformer, and a 2x
//   nearest upsampling with a 3x3 conv between levels; GroupNorm, SiLU,
//   conv_out 3x3 to the latent channels.
// - transformer (Transformer2DModel with linear projections): GroupNorm,
//   proj_in, blocks of LayerNorm + self-attention (q, k, v without bias, out
//   with), LayerNorm + cross-attention to the text encoder's
//   text_tokens x cross_attention_dim states, LayerNorm + GEGLU feed-forward
//   (4x; its 8x-wide projection as two 4x ones, see transformer()), proj_out
//   and the residual.
// Attention is the fused kernel, or with attention_kernel dense the
// einsums XLA compiles from attention written out (f32 logits, softmax,
// cast, PV), as MaxDiffusion's "dot_product" attention runs.
// Leaves out: GroupNorm is costed as one reduction over the tensor (mean
// and variance in one pass) and one fused normalise/affine/SiLU pass; the
// nearest upsampling as a broadcast add of a [2, 2] zero pattern (the
// copy's traffic); the sinusoidal projections, the scheduler's update and
// classifier-free guidance's combination (a batch of 2 per image is the
// caller's choice); dropout (inference).
#include "models/generators.h"

namespace tpusim::models::detail {

using namespace workloads;

namespace {

class UnetGen {
 public:
  UnetGen(WorkloadBuilder& b, const ModelSpec& m, const PhaseOptions& o) : b_(b), u_(m.unet), o_(o) {}

  Workload run() {
    const std::int64_t img = o_.image_size > 0 ? o_.image_size : u_.image_size;
    const std::int64_t lat = img / 8, B = o_.batch, c0 = u_.channels.front(), te = u_.time_embed_dim();
    ad_ = o_.activation_dtype;
    // Conditioning: the timestep's sinusoidal features and the text states.
    TensorRef emb = mlp("time_embedding", b_.input("timestep_features", {B, c0}, ad_), c0, te);
    if (u_.addition_embed_dim > 0)
      emb = b_.add(
          "add_embedding.sum", emb,
          mlp("add_embedding", b_.input("added_cond", {B, u_.addition_embed_dim}, ad_), u_.addition_embed_dim, te));
    temb_ = b_.elementwise("time_embedding.out_silu", "silu", {emb});
    text_ = b_.input("encoder_hidden_states", {B, u_.text_tokens, u_.cross_attention_dim}, ad_);

    TensorRef x = b_.input("latent", {B, lat, lat, u_.latent_channels}, ad_);
    x = conv("conv_in", x, 3, c0, 1);
    std::vector<TensorRef> skips = {x};
    const std::size_t levels = u_.channels.size();
    for (std::size_t l = 0; l < levels; ++l) {
      const std::string p = "down_blocks." + std::to_string(l);
      for (std::int64_t r = 0; r < u_.layers_per_block; ++r) {
        const std::string q = p + ".layers." + std::to_string(r);
        x = resnet(q + ".resnet", x, u_.channels[l]);
        x = transformer(q + ".attention", x, u_.transformer_depth[l]);
        skips.push_back(x);
      }
      if (l + 1 < levels) {
        x = conv(p + ".downsample", x, 3, u_.channels[l], 2);
        skips.push_back(x);
      }
    }
    x = resnet("mid_block.resnet_0", x, u_.channels.back());
    x = transformer("mid_block.attention", x, u_.mid_transformer_depth);
    x = resnet("mid_block.resnet_1", x, u_.channels.back());
    for (std::size_t i = 0; i < levels; ++i) {
      const std::size_t l = levels - 1 - i;
      const std::string p = "up_blocks." + std::to_string(i);
      for (std::int64_t r = 0; r <= u_.layers_per_block; ++r) {
        const std::string q = p + ".layers." + std::to_string(r);
        x = b_.concat(q + ".skip_concat", {x, skips.back()}, 3);
        skips.pop_back();
        x = resnet(q + ".resnet", x, u_.channels[l]);
        x = transformer(q + ".attention", x, u_.transformer_depth[l]);
      }
      if (l > 0) x = conv(p + ".upsample.conv", upsample(p + ".upsample", x), 3, u_.channels[l], 1);
    }
    x = group_norm("conv_norm_out", x, true);
    conv("conv_out", x, 3, u_.latent_channels, 1);
    return b_.build();
  }

 private:
  WorkloadBuilder& b_;
  const UnetSpec& u_;
  const PhaseOptions& o_;
  DType ad_ = DType::bf16;
  TensorRef temb_, text_;

  // A per-channel vector (a bias, a norm's scale or shift) in the activation dtype.
  TensorRef per_channel(const std::string& n, std::int64_t c) { return b_.weight(n, {c}, ad_); }

  TensorRef linear(const std::string& n, const TensorRef& x, std::int64_t in, std::int64_t out, bool with_bias) {
    TensorRef y = b_.matmul(n, x, b_.weight(n + ".weight", {in, out}, o_.weight_dtype), "", ad_);
    return with_bias ? b_.add(n + ".bias_add", y, per_channel(n + ".bias", out)) : y;
  }

  TensorRef mlp(const std::string& n, const TensorRef& x, std::int64_t in, std::int64_t out) {
    TensorRef h = b_.elementwise(n + ".silu", "silu", {linear(n + ".linear_1", x, in, out, true)});
    return linear(n + ".linear_2", h, out, out, true);
  }

  TensorRef conv(const std::string& n, const TensorRef& x, std::int64_t k, std::int64_t out, std::int64_t stride) {
    Conv2dAttrs a;
    a.stride_h = a.stride_w = stride;
    a.padding = k == 1 ? PaddingMode::valid : PaddingMode::same;
    a.out_dtype = ad_;
    TensorRef y = b_.conv2d(n, x, b_.weight(n + ".weight", {k, k, x.dim(3), out}, o_.weight_dtype), a);
    return b_.add(n + ".bias_add", y, per_channel(n + ".bias", out));
  }

  // GroupNorm over (H, W, C / groups), then the per-channel affine (and
  // SiLU): a reduction for the groups' statistics, then one elementwise
  // pass that reads them.
  TensorRef group_norm(const std::string& n, const TensorRef& x, bool silu) {
    const std::int64_t B = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3), G = u_.norm_groups;
    TensorRef g = b_.reshape(n + ".groups", x, {B, H * W, G, C / G});
    TensorRef stats = b_.reduce(n + ".stats", g, ReduceKind::mean, {1, 3}, true);
    TensorRef y = b_.reshape(n + ".normalized", b_.mul(n + ".normalize", g, stats), {B, H, W, C});
    y = b_.mul(n + ".scale", y, per_channel(n + ".weight", C));
    y = b_.add(n + ".shift", y, per_channel(n + ".bias", C));
    return silu ? b_.elementwise(n + ".silu", "silu", {y}) : y;
  }

  TensorRef resnet(const std::string& n, const TensorRef& x, std::int64_t out) {
    const std::int64_t in = x.dim(3);
    TensorRef h = conv(n + ".conv1", group_norm(n + ".norm1", x, true), 3, out, 1);
    TensorRef t = linear(n + ".time_emb_proj", temb_, u_.time_embed_dim(), out, true);
    h = b_.add(n + ".time_add", h, b_.reshape(n + ".time_emb", t, {x.dim(0), 1, 1, out}));
    h = conv(n + ".conv2", group_norm(n + ".norm2", h, true), 3, out, 1);
    TensorRef sc = in == out ? x : conv(n + ".conv_shortcut", x, 1, out, 1);
    return b_.add(n + ".residual", sc, h);
  }

  // softmax(Q K^T / sqrt(D)) V over heads of head_dim: the fused kernel or
  // XLA's einsums (see the file comment).
  TensorRef attention(const std::string& n, const TensorRef& q, const TensorRef& k, const TensorRef& v) {
    if (o_.attention_kernel != AttentionImpl::dense) return b_.attention(n + ".core", q, k, v, false);
    TensorRef s = b_.matmul(n + ".scores", q, k, "bqhd,bkhd->bhqk", DType::f32);
    TensorRef pr = b_.cast(n + ".probs", b_.softmax(n + ".softmax", s), ad_);
    return b_.matmul(n + ".core", pr, v, "bhqk,bkhd->bqhd", ad_);
  }

  TensorRef heads(const std::string& n, const TensorRef& x) {
    return b_.reshape(n, x, {x.dim(0), x.dim(1), x.dim(2) / u_.head_dim, u_.head_dim});
  }

  TensorRef attn_block(const std::string& n, const TensorRef& x, const TensorRef& ctx) {
    const std::int64_t C = x.dim(2), Cc = ctx.dim(2);
    TensorRef q = heads(n + ".q_heads", linear(n + ".to_q", x, C, C, false));
    TensorRef k = heads(n + ".k_heads", linear(n + ".to_k", ctx, Cc, C, false));
    TensorRef v = heads(n + ".v_heads", linear(n + ".to_v", ctx, Cc, C, false));
    TensorRef o = attention(n, q, k, v);
    o = b_.reshape(n + ".merge_heads", o, {x.dim(0), x.dim(1), C});
    return linear(n + ".to_out", o, C, C, true);
  }

  TensorRef layer_norm(const std::string& n, const TensorRef& x) {
    const std::int64_t C = x.dim(-1);
    return b_.layer_norm(n, x, per_channel(n + ".weight", C), per_channel(n + ".bias", C));
  }

  TensorRef transformer(const std::string& n, const TensorRef& x, std::int64_t depth) {
    if (depth == 0) return x;
    const std::int64_t B = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
    TensorRef h = b_.reshape(n + ".tokens", group_norm(n + ".norm", x, false), {B, H * W, C});
    h = linear(n + ".proj_in", h, C, C, true);
    for (std::int64_t d = 0; d < depth; ++d) {
      const std::string p = n + ".blocks." + std::to_string(d);
      const TensorRef n1 = layer_norm(p + ".norm1", h);
      h = b_.add(p + ".attn1.residual", h, attn_block(p + ".attn1", n1, n1));
      h = b_.add(p + ".attn2.residual", h, attn_block(p + ".attn2", layer_norm(p + ".norm2", h), text_));
      // GEGLU: a projection to 2 x 4C whose GELU'd half gates the other,
      // as two projections of 4C (the same weights and FLOPs; XLA fuses
      // the split into the gating multiply, so neither half is copied).
      const TensorRef n3 = layer_norm(p + ".norm3", h);
      TensorRef a = linear(p + ".ff.proj_value", n3, C, 4 * C, true);
      TensorRef gate = linear(p + ".ff.proj_gate", n3, C, 4 * C, true);
      TensorRef gg = b_.mul(p + ".ff.geglu", a, b_.elementwise(p + ".ff.gelu", "gelu", {gate}));
      h = b_.add(p + ".ff.residual", h, linear(p + ".ff.out", gg, 4 * C, C, true));
    }
    h = linear(n + ".proj_out", h, C, C, true);
    return b_.add(n + ".residual", x, b_.reshape(n + ".spatial", h, {B, H, W, C}));
  }

  // Nearest 2x upsampling: each position repeated over a 2 x 2 window.
  TensorRef upsample(const std::string& n, const TensorRef& x) {
    const std::int64_t B = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
    if (!pattern_) pattern_ = b_.input("upsample_pattern", {1, 1, 2, 1, 2, 1}, ad_);
    TensorRef r = b_.reshape(n + ".windows", x, {B, H, 1, W, 1, C});
    TensorRef y = b_.add(n + ".repeat", r, *pattern_);
    return b_.reshape(n + ".out", y, {B, 2 * H, 2 * W, C});
  }

  std::optional<TensorRef> pattern_;
};

}  // namespace

Workload generate_unet(const ModelSpec& m, const PhaseOptions& o) {
  WorkloadBuilder b(m.name + "." + phase_name(o.phase));
  return UnetGen(b, m, o).run();
}

}  // namespace tpusim::models::detail
