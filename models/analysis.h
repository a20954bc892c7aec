// Closed-form analytics of a model: parameter counts (total and active per
// token for mixture-of-experts), FLOPs per token or per sample, KV-cache
// bytes, weight bytes per dtype, the memory footprint of a phase and a fit
// check against a chip's HBM capacity.
// Models (docs/models.md has the formulas):
//  - FLOPs: 2 per multiply-accumulate; attention adds 2*(d_qk + d_v) + 5
//    FLOPs per unmasked (query, key) pair and head (the IR's cost rule).
//  - memory: weights at the weight dtype; KV cache at the KV dtype; an
//    estimate of activations (flash attention, no L^2 scores); training adds
//    gradients (weight dtype) and Adam state (f32 master, m, v: 12 B/param;
//    bf16 m and v, no master, with PhaseOptions::optimizer_dtype bf16),
//    and its activations peak (at the loss or the first layer of backward)
//    before the gradients accumulate (MemoryFootprint::total);
//    LoRA adapters (models/lora.h) add their weights, and LoRA training
//    keeps gradients and Adam state of the adapters only (base frozen;
//    activations estimated as for full training).
//  - sharded (o.mesh non-empty, models/sharding.h): every figure is per
//    chip: parameters split as the generated per-chip program holds them
//    (per_chip_params), KV cache and activations of the local batch and
//    local tokens (seq / sequence) with heads/FFN/vocab split over tensor
//    (with sequence parallelism every activation term split), context
//    parallelism's gathered K/V of the whole sequence, and with fsdp two
//    layers' gathered weights (the one in use and the prefetched next) or
//    the gathered output head, whichever is larger.
// Leaves out: framework overheads, fragmentation, collective buffers other
// than FSDP's gathered layers; min_chips assumes every term shards evenly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "models/model_spec.h"
#include "workloads/ir/workload.h"

namespace tpusim::models {

struct ParamCounts {
  std::uint64_t total = 0;
  // Per token (per sample): total minus the routed experts a token does not
  // select. Includes the input embedding tables (Mixtral's convention).
  std::uint64_t active = 0;
  // Parameters only looked up, never multiplied: token/position/type
  // tables not shared with the output head, DLRM tables, ViT's class token
  // and position table.
  std::uint64_t embedding = 0;
  std::uint64_t routed_experts = 0;  // all routed experts' parameters
  // Parameters a token multiplies (gpt-oss's active convention); FLOPs per
  // token are about 2x this plus attention.
  std::uint64_t active_compute() const { return active - embedding; }
};
ParamCounts count_params(const ModelSpec& m);

// Decoders: bytes one token adds to the KV cache over all layers (K and V
// per KV head, or MLA's latent + rope key). 0 for other families.
std::uint64_t kv_cache_bytes_per_token(const ModelSpec& m, DType kv);
// Bytes of a cache holding `tokens` tokens for each of `batch` sequences;
// sliding-window layers keep at most their window.
std::uint64_t kv_cache_bytes(const ModelSpec& m, DType kv, std::int64_t batch, std::int64_t tokens);

// Layer sampling (simulating b + n and b + 2n decoder layers and
// extrapolating every extensive figure linearly to the model's layer
// count, as `tpusim shard-search --sample-layers` and validation cases
// with `sample_layers` do) holds when the decoder layers after the first
// b repeat with a period that divides n: empty if the model is a decoder,
// else why not.
std::string layer_sampling_obstacle(const ModelSpec& m);
// The period of the layers' pattern: 1, or the local/global cycle of
// sliding-window attention (gpt-oss 2, Gemma 3 6). Sampling takes whole
// periods, n a multiple of it; a model whose layer count is not one (Gemma
// 3 27B: 62 = 10 x 6 + 2) has its last part period extrapolated at the
// period's mean.
std::int64_t layer_sampling_period(const ModelSpec& m);
// b: the leading layers that differ from the rest and are always
// simulated whole (the dense layers before the MoE ones, DeepSeek-V3's
// first 3), 0 for most models.
std::int64_t layer_sampling_base(const ModelSpec& m);
// The layers of sampled run `run` (0 or 1): b + n, then b + 2n.
inline std::int64_t sampled_run_layers(std::int64_t base, std::int64_t n, int run) { return base + (run + 1) * n; }
// The extrapolation from runs of b + n and b + 2n layers:
// x(layers) = x(b + n) + (layers - b - n) (x(b + 2n) - x(b + n)) / n.
inline double extrapolate_layers(double at_n, double at_2n, std::int64_t n, std::int64_t layers,
                                 std::int64_t base = 0) {
  return at_n + static_cast<double>(layers - base - n) / static_cast<double>(n) * (at_2n - at_n);
}

// Decoders: forward FLOPs of one decode step of one sequence whose cache
// holds `context` tokens: 2 * active_compute + attention over the context.
double flops_per_token(const ModelSpec& m, std::int64_t context);
// Attention part of flops_per_token.
double attention_flops_per_token(const ModelSpec& m, std::int64_t context);
// Forward FLOPs per sample for an inference pass at o's sequence/image size
// (encoders, ViT, ResNet, DLRM; decoders: per sequence of a prefill).
double flops_per_sample(const ModelSpec& m, const PhaseOptions& o);
// Matmul + attention FLOPs of a whole phase (every op of these kinds the
// generated workload holds): decode, prefill (logits of the last position),
// train (forward with all logits, 2x backward, + one forward of the layers
// when recomputing) and infer.
double phase_matmul_flops(const ModelSpec& m, const PhaseOptions& o);

// Parameters one chip holds under `mesh`: routed experts / (tensor x fsdp x
// expert); what tensor parallelism replicates (norm scales, the MoE router,
// MLA's q_a/kv_a down-projections and their norms, learned position and
// token-type tables, ViT's patch projection, class token and head, BERT's
// pooler, row-parallel biases) / fsdp; everything else / (tensor x fsdp).
// Each part rounded up. An empty mesh gives count_params(m).total.
std::uint64_t per_chip_params(const ModelSpec& m, const MeshSpec& mesh);

struct WeightBytes {
  DType dtype;
  std::uint64_t bytes;
};
// Weight bytes of the whole model for every dtype arch::DType lists.
std::vector<WeightBytes> weight_bytes(const ModelSpec& m);

struct MemoryFootprint {
  std::uint64_t weights = 0;
  std::uint64_t kv_cache = 0;
  std::uint64_t activations = 0;
  std::uint64_t gradients = 0;
  std::uint64_t optimizer = 0;
  // Activations an offloaded remat policy keeps in host memory (not HBM:
  // not part of total()).
  std::uint64_t host_activations = 0;
  // Training: the activations still live once every weight gradient is
  // (the first layer's, rebuilt at the end of backward). `activations` is
  // their peak, at the loss or the first layer of backward, before the
  // gradients accumulate; the step's peak is the larger of the two.
  std::uint64_t activations_with_gradients = 0;
  // True when the step's peak is the end of backward (every gradient live).
  bool peaks_with_gradients() const { return gradients + activations_with_gradients > activations; }
  std::uint64_t total() const {
    return weights + kv_cache + optimizer +
           (peaks_with_gradients() ? gradients + activations_with_gradients : activations);
  }
};
MemoryFootprint memory_footprint(const ModelSpec& m, const PhaseOptions& o);
// The peak bytes of a graph's live activations and inputs, in program
// order: an op's output is live from the op to its last reader (a graph
// output to the end), an input from the start to its last reader; an op's
// inputs and outputs are live together. Weights are not counted.
std::uint64_t peak_live_activation_bytes(const workloads::Workload& w);

struct FitReport {
  bool fits = false;
  std::uint64_t needed_bytes = 0;
  std::uint64_t available_bytes = 0;
  double needed_gib = 0;
  double available_gib = 0;
  std::int64_t min_chips = 0;  // smallest chip count with even sharding
  std::int64_t chips = 1;      // chips of o.mesh (needed/available are per chip)
  bool host_fits = true;       // offloaded activations fit the host memory given (or it was not given)
  MemoryFootprint footprint;
  std::string message;
};
// Throws ModelError for hbm_bytes == 0 or options the model does not take.
// `host_bytes`: host memory per chip for offloaded activations (0: not
// checked); a run whose offloaded activations exceed it does not fit.
FitReport check_fit(const ModelSpec& m, const PhaseOptions& o, std::uint64_t hbm_bytes, std::uint64_t host_bytes = 0);

}  // namespace tpusim::models
