// ModelSpec: the parameters of a reference neural network, as read from a
// model file (models/zoo/<name>.yaml), and the options of one phase
// (prefill, decode, train, infer) to generate a workload for.
// Models: decoder transformers (dense or mixture-of-experts, MHA/GQA/MQA or
// DeepSeek's multi-head latent attention), BERT-style encoders, ViT,
// ResNet (bottleneck blocks) and DLRM (embedding tables, MLPs, dot or DCNv2
// interaction). Leaves out: tokenizers, numerics, anything that does not
// change shapes, FLOPs or bytes.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "arch/common/diagnostic.h"
#include "arch/common/dtype.h"
#include "models/lora_spec.h"
#include "models/mesh_spec.h"
#include "workloads/ir/op.h"
#include "workloads/ir/tensor.h"

namespace tpusim::models {

using arch::DType;

enum class Family { decoder, encoder, vit, resnet, dlrm, unet };
// geglu: the gated FFN of swiglu with GELU for SiLU (Gemma).
enum class FfnKind { swiglu, gelu, relu, geglu };
enum class NormKind { rmsnorm, layernorm };
enum class PositionKind { rotary, learned, none };
enum class AttentionKind { mha, mla };  // mha covers GQA/MQA via kv_heads
enum class RouterKind { softmax, sigmoid };
enum class InteractionKind { dot, dcn };
enum class Phase { prefill, decode, train, infer };
// Rematerialization of a training step (docs/remat.md), after MaxText's
// remat_policy values (layers/decoders.py, get_remat_policy):
//  none       every forward activation kept for backward;
//  minimal    every matmul output kept (jax.checkpoint_policies.
//             checkpoint_dots_with_no_batch_dims); the rest of a layer
//             (norms, activation functions, elementwise, rotary, attention
//             with its softmax) re-emitted before the layer's backward, only
//             as far as backward reads it;
//  selective  as minimal, but the FFN's input projections (gate/up, fc1:
//             MaxText's "mlpwi") are recomputed too, their outputs being
//             the largest (save_dot_except_mlpwi: q/k/v, output and FFN down
//             projections kept), MaxText's recipe for Llama 2 70B on v5p;
//  full       each layer's whole forward re-emitted, only the layer inputs
//             kept (jax.checkpoint with nothing saveable; "full").
//  qkv_proj_offloaded  the q, k and v projections' outputs written to host
//             memory in forward and read back before the layer's backward,
//             the rest recomputed as minimal does (MaxText's
//             qkv_proj_offloaded: save_and_offload_only_these_names with
//             query_proj, key_proj, value_proj to pinned_host);
//  minimal_offloaded  every matmul output kept as minimal does, but in host
//             memory (MaxText's minimal_offloaded: dots with no batch dims
//             offloaded to pinned_host).
//  custom     MaxText's remat_policy=custom: each named activation
//             (RematTensor) recomputed, kept in HBM or offloaded to host
//             memory as RematCustom says; everything else recomputed.
// The named offloaded policies keep the layer inputs in HBM (the scan carry).
enum class RematPolicy { none, minimal, selective, full, qkv_proj_offloaded, minimal_offloaded, custom };

// How a transformer's multi-head attention (MHA/GQA/MQA) is
// computed (PhaseOptions::attention_kernel, --attention-kernel):
// - flash: one fused attention operator (Pallas flash/splash attention in
//   prefill and training, a paged-attention-style kernel in decode): no
//   scores in HBM.
// - dense: the plain einsum form XLA compiles when a framework writes
//   attention out (MaxText `attention: dot_product`, JetStream-PyTorch's
//   and PyTorch/XLA's default `dense_attention`): S = Q K^T as a batched
//   matmul writing f32 logits to HBM (the causal mask added in its
//   epilogue), a softmax over them, a cast to the activation dtype, and
//   O = P V as a second matmul; every (query, key) pair is computed, the
//   masked ones too, and training differentiates the ops as written.
// - batched: flash, with grid steps that may hold several sequences'
//   blocks (up to kBatchedStepSeqs, how many searched by the lowering:
//   workloads::AttentionAttrs::max_step_seqs), as
//   vllm-project/tpu-inference's batched ragged paged attention kernel
//   does (pull request #1961); its per-step costs are paid once for them
//   all. Meant for decode and serving steps of many short sequences; the
//   default (flash) walks one sequence a step, as the Pallas paged and
//   ragged paged attention kernels of JetStream and vLLM do.
enum class AttentionImpl { flash, dense, batched };
// The batched kernel's bound on sequences per step: tpu-inference's tuned
// decode steps take 8 or 16 (pull request #3290's table, batch_size).
constexpr std::int64_t kBatchedStepSeqs = 16;

// MaxText's names for a decoder layer's activations (checkpoint_name in
// its layers; the keys of remat_policy=custom in configs/base.yml) and
// what they are here: decoder_layer_input the layer's input (the residual
// stream), query_proj, key_proj, value_proj the attention projections'
// outputs (q_proj, k_proj, v_proj), context the attention's output
// (attn.core), out_proj its projection's (o_proj), mlpwi_0 and mlpwi_1 the
// FFN's input projections (gate_proj or fc1, and up_proj; dense and
// experts), mlpwo its output projection's (down_proj, fc2).
enum class RematTensor : std::uint8_t {
  decoder_layer_input,
  query_proj,
  key_proj,
  value_proj,
  context,
  out_proj,
  mlpwi_0,
  mlpwi_1,
  mlpwo,
  count
};
// Where remat_policy=custom puts a named activation: recomputed in
// backward, kept in HBM, or written to host memory in forward and read
// back before its layer's backward.
enum class RematPlace : std::uint8_t { remat, device, offload };
const char* remat_tensor_name(RematTensor t);
const char* remat_place_name(RematPlace p);

struct RematCustom {
  // MaxText's defaults: the layer input on the device, the rest remat.
  // The layer input is the layer scan's carry, which jax.checkpoint keeps
  // whatever the policy: `remat` keeps it in HBM as `device` does.
  std::array<RematPlace, static_cast<std::size_t>(RematTensor::count)> place = {
      RematPlace::device, RematPlace::remat, RematPlace::remat, RematPlace::remat, RematPlace::remat,
      RematPlace::remat,  RematPlace::remat, RematPlace::remat, RematPlace::remat};
  RematPlace at(RematTensor t) const { return place[static_cast<std::size_t>(t)]; }
  void set(RematTensor t, RematPlace p) { place[static_cast<std::size_t>(t)] = p; }
  bool offloads() const;
  bool operator==(const RematCustom& o) const { return place == o.place; }
  // "custom" and the entries that differ from the defaults:
  // "custom:decoder_layer_input=offload,query_proj=offload".
  std::string str() const;
};

// Parses a --remat value: a policy name, or "custom" optionally followed by
// ":name=place,..." (RematTensor names; qkv_proj sets query_proj, key_proj
// and value_proj, mlpwi both mlpwi_0 and mlpwi_1; places remat, device,
// offload). Returns what was expected where it is not one ("expected " +
// it + ", found '<s>'" reads as an error), or "" when parsed.
std::string parse_remat_spec(const std::string& s, RematPolicy* policy, RematCustom* custom);

const char* family_name(Family f);
// Decoders, encoders and ViTs: a TransformerSpec, counted per token, with
// tensor/expert parallel sharding.
inline bool is_transformer(Family f) { return f == Family::decoder || f == Family::encoder || f == Family::vit; }
const char* phase_name(Phase p);
// Parses "prefill", "decode", "train", "infer"; false if unknown.
bool parse_phase(const std::string& s, Phase* out);
const char* remat_name(RematPolicy r);
const char* attention_impl_name(AttentionImpl k);
// Parses "flash" or "dense"; false if unknown.
bool parse_attention_impl(const std::string& s, AttentionImpl* out);
// PhaseOptions::optimizer_dtype from "f32" or "bf16"; false otherwise.
bool parse_optimizer_dtype(const std::string& s, DType* out);

// The flash kernels' block sizes where a run fixes them, as MaxText's
// splash attention flags do (sa_block_q, sa_block_kv; sa_block_q_dq,
// sa_block_kv_dq; sa_block_q_dkv, sa_block_kv_dkv, which the fused
// backward kernel takes too): the forward kernel's, the dQ kernel's and
// the dK/dV kernel's (workloads::AttentionBlocks; 0 = searched).
struct SplashBlocks {
  workloads::AttentionBlocks fwd, dq, dkv;
  bool any() const { return fwd.fixed() || dq.fixed() || dkv.fixed(); }
  // "q=512,kv=512,q_dq=512,kv_dq=512,q_dkv=512,kv_dkv=512"
  std::string str() const;
};
// Parses "Q,KV" (every kernel) or "q=Q,kv=KV[,q_dq=..,kv_dq=..,q_dkv=..,
// kv_dkv=..]" (a backward key left out takes q's or kv's value): q keys a
// positive multiple of 8, kv keys of 128. Returns what was expected where
// `s` is not that ("expected " + it + ", found '<s>'" reads as an error),
// or "" when parsed.
std::string parse_splash_blocks(const std::string& s, SplashBlocks* out);
// Parses a policy's name ("none", "minimal", ..., "custom" with the
// defaults); false if unknown. parse_remat_spec also takes custom's places.
bool parse_remat(const std::string& s, RematPolicy* out);

struct AttentionSpec {
  AttentionKind kind = AttentionKind::mha;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;  // == heads: MHA; 1: MQA; otherwise GQA
  std::int64_t head_dim = 0;  // q/k/v head dim (mha)
  bool qkv_bias = false;
  bool out_bias = false;
  bool sinks = false;                     // gpt-oss: one learned logit per head
  std::int64_t sliding_window = 0;        // 0 = none
  std::int64_t sliding_window_every = 0;  // layer i uses the window if i % every == 0
  // Or, with global_every > 0, every layer uses the window but the last of
  // each global_every (i % global_every == global_every - 1): Gemma 3's five
  // local layers to one global (MaxText GEMMA3_ATTENTION_PATTERN).
  std::int64_t global_every = 0;
  bool qk_norm = false;  // RMSNorm of each query and key head (Gemma 3)
  // Multi-head latent attention (DeepSeek-V2/V3).
  std::int64_t q_lora_rank = 0;  // 0 = q projected directly
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;

  std::int64_t qk_dim() const { return kind == AttentionKind::mla ? qk_nope_head_dim + qk_rope_head_dim : head_dim; }
  std::int64_t v_dim() const { return kind == AttentionKind::mla ? v_head_dim : head_dim; }
  bool windowed(std::int64_t layer) const {
    if (sliding_window <= 0) return false;
    if (global_every > 0) return layer % global_every != global_every - 1;
    return sliding_window_every > 0 && layer % sliding_window_every == 0;
  }
  // The keys a query of `layer` attends over in prefill and training
  // (workloads::AttentionAttrs::window): the window, or 0 for all.
  std::int64_t window_of(std::int64_t layer) const { return windowed(layer) ? sliding_window : 0; }
};

struct FfnSpec {
  FfnKind kind = FfnKind::swiglu;
  // Gate and up projections, their product to the down projection.
  bool gated() const { return kind == FfnKind::swiglu || kind == FfnKind::geglu; }
  std::int64_t size = 0;  // intermediate size
  bool bias = false;
};

struct MoeSpec {
  bool enabled = false;
  std::int64_t experts = 0;  // routed experts
  std::int64_t top_k = 0;
  std::int64_t shared_experts = 0;  // always-on experts of expert_ffn_size each
  std::int64_t expert_ffn_size = 0;
  std::int64_t dense_layers_first = 0;  // leading layers with a dense FFN (ffn.size)
  RouterKind router = RouterKind::softmax;
  bool router_bias = false;  // DeepSeek-V3's e_score_correction_bias, gpt-oss's router bias
  bool expert_bias = false;
};

// Decoder, encoder and ViT share the transformer body.
struct TransformerSpec {
  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t vocab = 0;  // decoder/encoder
  std::int64_t max_context = 0;
  NormKind norm = NormKind::rmsnorm;
  bool norm_bias() const { return norm == NormKind::layernorm; }
  PositionKind position = PositionKind::rotary;
  std::int64_t rotary_dim = 0;  // 0 = whole head
  bool tied_embeddings = false;
  bool lm_head_bias = false;
  bool parallel_block = false;  // GPT-J: attention and FFN read the same norm
  bool post_norms = false;      // Gemma 2/3: a norm of the attention's and the FFN's outputs before each residual add
  AttentionSpec attention;
  FfnSpec ffn;
  MoeSpec moe;
  // encoder (BERT)
  std::int64_t type_vocab = 0;
  bool pooler = false;
  // vit
  std::int64_t patch = 0;
  std::int64_t image_size = 0;
  std::int64_t channels = 3;
  std::int64_t classes = 0;

  bool is_moe_layer(std::int64_t layer) const { return moe.enabled && layer >= moe.dense_layers_first; }
};

struct ResNetSpec {
  std::vector<std::int64_t> blocks;  // bottleneck blocks per stage
  std::vector<std::int64_t> widths;  // bottleneck width per stage
  std::int64_t expansion = 4;
  std::int64_t stem_width = 64;
  std::int64_t image_size = 224;
  std::int64_t channels = 3;
  std::int64_t classes = 1000;
};

// A latent-diffusion UNet (Stable Diffusion XL's, models/unet.cpp): one
// denoising step's forward on a latent of image_size / 8 (the VAE's
// downsampling). Per level: layers_per_block ResNet blocks, each followed
// by a transformer of transformer_depth[level] blocks (0: none), and a
// stride-2 convolution between levels; the up path mirrors it with one
// more block per level, each reading the matching skip connection.
struct UnetSpec {
  std::vector<std::int64_t> channels;           // per level
  std::vector<std::int64_t> transformer_depth;  // per level; 0 = no attention
  std::int64_t layers_per_block = 2;
  std::int64_t mid_transformer_depth = 1;
  std::int64_t head_dim = 64;
  std::int64_t cross_attention_dim = 2048;  // text encoder width
  std::int64_t text_tokens = 77;
  std::int64_t norm_groups = 32;
  std::int64_t latent_channels = 4;
  std::int64_t image_size = 1024;       // pixels; the latent is image_size / 8
  std::int64_t addition_embed_dim = 0;  // SDXL's pooled text + size/crop ids (0 = none)
  std::int64_t time_embed_dim() const { return channels.empty() ? 0 : 4 * channels.front(); }
  // The widths whose heads attention splits: each level with transformer
  // blocks, and the deepest level's when the middle block has them.
  bool has_attention(std::size_t level) const {
    return (level < transformer_depth.size() && transformer_depth[level] > 0) ||
           (level + 1 == channels.size() && mid_transformer_depth > 0);
  }
  std::vector<std::int64_t> attention_channels() const {
    std::vector<std::int64_t> w;
    for (std::size_t i = 0; i < channels.size(); ++i)
      if (has_attention(i)) w.push_back(channels[i]);
    return w;
  }
};

// Image sizes a UNet takes: multiples of 8 (the VAE) times 2 per downsampling.
// Saturates past kMaxUnetLevels (the reader refuses more).
constexpr std::size_t kMaxUnetLevels = 8;
inline std::int64_t unet_image_multiple(const UnetSpec& u) {
  const std::size_t halvings = u.channels.empty() ? 0 : std::min(u.channels.size(), kMaxUnetLevels + 1) - 1;
  return std::int64_t{8} << halvings;
}

struct EmbeddingTable {
  std::int64_t rows = 0;
  std::int64_t multi_hot = 1;  // lookups pooled (summed) per sample
};

struct DlrmSpec {
  std::int64_t dense_features = 0;
  std::int64_t embedding_dim = 0;
  std::vector<EmbeddingTable> tables;
  std::vector<std::int64_t> bottom_mlp;
  std::vector<std::int64_t> top_mlp;
  InteractionKind interaction = InteractionKind::dot;
  std::int64_t cross_layers = 0;  // dcn
  std::int64_t low_rank = 0;      // dcn
};

struct ModelSpec {
  std::string name;
  std::string file;  // where it was read from ("" when built in code)
  Family family = Family::decoder;
  TransformerSpec transformer;  // decoder, encoder, vit
  ResNetSpec resnet;
  DlrmSpec dlrm;
  UnetSpec unet;
};

// Model-wide quantization and sparsity (models/quantize.h), applied to the
// weights of matmuls and convolutions.
struct QuantOptions {
  // Scales of narrow (<= 8-bit) weights; unset: per channel for 8-bit
  // weights, per block of 128 for int4 (the usual AQT / GPTQ choices).
  std::optional<workloads::QuantScales> weight_scales;
  // Matmuls quantize their wider activations dynamically to the weight
  // dtype (w8a8 serving with per-token scales).
  bool dynamic_activations = false;
  // Quantized training: every matmul, forward and backward, quantizes its
  // operands dynamically to this dtype (int8: AQT, MLPerf int8 training;
  // fp8_e4m3: MaxText's quantization=fp8_full). Unset: none.
  std::optional<DType> training_quant;
  // N:M sparsity of every matmul weight (0:0 = dense).
  workloads::NmSparsity weight_sparsity;
};

struct PhaseOptions {
  Phase phase = Phase::decode;
  std::int64_t batch = 1;
  std::int64_t seq_len = 2048;  // prefill, train, encoder infer
  std::int64_t context = 2048;  // decode: tokens already in the KV cache
  std::int64_t image_size = 0;  // vit/resnet infer; 0 = the model's own
  DType weight_dtype = DType::bf16;
  DType activation_dtype = DType::bf16;
  DType kv_dtype = DType::bf16;
  RematPolicy remat = RematPolicy::none;  // train: what backward recomputes (see RematPolicy)
  RematCustom remat_custom{};             // remat == custom: where each named activation goes
  bool recompute_any() const { return remat != RematPolicy::none; }
  // True if the policy keeps activations in host memory.
  bool remat_offloads() const {
    return remat == RematPolicy::qkv_proj_offloaded || remat == RematPolicy::minimal_offloaded ||
           (remat == RematPolicy::custom && remat_custom.offloads());
  }
  // The policy as --remat takes it (remat_name, or RematCustom::str()).
  std::string remat_str() const;
  QuantOptions quant{};
  // Device mesh the workload is sharded over (models/sharding.h); empty =
  // one chip, the unsharded program. generate() then emits the per-chip
  // program: batch is the global batch, split over data x fsdp x expert.
  MeshSpec mesh = {};
  // Megatron sequence parallelism (Korthikanti et al. 2022) on the tensor
  // axis: the residual stream, norms and dropout regions hold seq/tensor
  // tokens; the tensor all_reduces become reduce_scatters + all_gathers.
  // Needs tensor > 1, a decoder and prefill or train (models/sharding.h).
  bool sequence_parallel = false;
  // Train: backward attention as splash attention's fused kernel (MaxText
  // sa_use_fused_bwd_kernel: True; one op, S and dP recomputed once)
  // instead of its separate dQ and dK/dV kernels (the default).
  bool fused_attention_backward = false;
  // Multi-head attention as one fused kernel or as XLA's dense einsums
  // (AttentionImpl). dense needs MHA/GQA/MQA (not latent attention), no
  // serving step and, with phase train, the separate backward kernels'
  // default (fused_attention_backward is a flash kernel's option).
  AttentionImpl attention_kernel = AttentionImpl::flash;
  // Fixed flash kernel blocks (SplashBlocks; --attention-blocks): the
  // attention of prefill, training and inference then runs as splash
  // attention's kernels do, one query head and these blocks per grid step
  // (sim/lowering/attention_tiling.h); none fixed = the lowering searches.
  // Flash kernels only, not decode (its kernel is paged attention's).
  SplashBlocks attention_blocks{};
  // Mixture-of-experts layers as MaxText's dropping implementation
  // (capacity_factor > 0 with megablox and sparse_matmul off: its
  // dense_matmul): each sequence's tokens reach each expert through C =
  // ceil(seq x top_k / experts x capacity_factor) slots, by one-hot
  // dispatch and combine masks applied as einsums on the MXU
  // ([B,S,h] x [B,S,E,C] -> [E,B,C,h] and back, the combine mask carrying
  // the gates); the experts compute every slot. 0: dropless (routed
  // tokens gathered to exactly their experts, the default).
  double moe_capacity_factor = 0;
  // Train: the dtype of what the optimizer keeps per parameter. f32 (the
  // default): f32 master weights and Adam m and v, 12 B per parameter
  // besides the weights. bf16 (MaxText weight_dtype: bfloat16, whose Adam
  // (optax) keeps m and v in the parameters' dtype): no master copy, the
  // bf16 weights updated in place, m and v bf16: 4 B per parameter. The
  // update's arithmetic is f32 either way (fused with its casts).
  DType optimizer_dtype = DType::f32;
  // Serving (decoder, phase prefill, batch 1): one continuous-batching
  // step. The prefill chunk of seq_len tokens follows prefill_context tokens
  // of its sequence already in the KV cache (chunked prefill), and
  // serve_decode other sequences each decode one token over `context`
  // cached tokens in the same step: their rows ride in the same matmuls,
  // their attention reads their own caches, and the step's logits are the
  // chunk's last position and the decoded tokens. 0 and 0: a plain prefill.
  std::int64_t prefill_context = 0;
  std::int64_t serve_decode = 0;
  // A serving step's prefill tokens as this many sequences' chunks (several
  // prompts prefilled in one step): r = seq_len mod n chunks of
  // seq_len / n + 1 tokens, then n - r of seq_len / n, each after
  // prefill_context cached tokens of its own, each attending causally to
  // itself only, each with its last position's logits.
  std::int64_t prefill_chunks = 1;
  // A serving step simulated as a cost probe (a corner of `tpusim serve`'s
  // step grid): its chunk and cached prefix may add up past max_context,
  // a shape no real step has but whose time the grid interpolates from.
  bool cost_probe = false;
  // Decode (and a serving step's decoding sequences): query tokens per
  // sequence, attending to the cache only. > 1: speculative decoding's
  // verification of decode_tokens - 1 drafted tokens plus one, with logits
  // at every position.
  std::int64_t decode_tokens = 1;
  bool serve_step() const { return prefill_context > 0 || serve_decode > 0 || prefill_chunks > 1; }
  // The prefill chunks of a serving step as (count, tokens) groups, the
  // longer first; one group of (1, seq_len) for a single chunk.
  std::vector<std::pair<std::int64_t, std::int64_t>> chunk_groups() const;
  // LoRA adapters on chosen projections (models/lora_spec.h); rank 0: none.
  // With phase train only the adapters are trained (base weights frozen).
  LoraOptions lora{};
};

// Phases a family supports (decoder: prefill, decode, train; encoder and
// vit: infer, train; resnet and dlrm: infer).
std::vector<Phase> supported_phases(Family f);
// The phase a command takes when --phase is unsaid: its own default
// (`preferred`) where the family has it, else the family's first phase
// (infer for a ResNet, DLRM or UNet, which have no decode or train).
Phase default_phase(Family f, Phase preferred);

// A problem in a model file or in the options a user asked for
// (arch/common/diagnostic.h).
using arch::Diagnostic;

class ModelError : public std::runtime_error {
 public:
  explicit ModelError(std::vector<Diagnostic> d);
  explicit ModelError(Diagnostic d) : ModelError(std::vector<Diagnostic>{std::move(d)}) {}
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }

 private:
  std::vector<Diagnostic> diags_;
};

// A bug in the model code (an invariant broke), never the user's mistake.
class ModelInternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Checks that the options make sense for the model (phase supported,
// positive sizes, context within max_context); throws ModelError.
void check_options(const ModelSpec& m, const PhaseOptions& o);

}  // namespace tpusim::models
