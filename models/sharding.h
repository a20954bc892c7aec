// Sharding of the model zoo over a device mesh: parsing a mesh ("fsdp=16,
// tensor=4") and checking it against a model and phase. generate() (zoo.h)
// then emits the per-chip SPMD program with the collectives of each
// strategy, and memory_footprint/check_fit (analysis.h) give per-chip bytes.
// Models (docs/models.md "Sharding" has the full rules):
//  - data: batch split; weights replicated; training all_reduces weight
//    gradients over it.
//  - fsdp: batch split; every weight stored as a 1/fsdp shard (dim 0, or
//    dim 1 of expert weights), all_gathered before use in forward and again
//    in backward; weight gradients reduce_scattered back to the shard; Adam
//    state lives on the shard.
//  - tensor (Megatron): heads, KV heads, FFN hidden and vocabulary split;
//    a tensor degree that is a multiple of the KV heads (GQA/MQA with
//    fewer KV heads than ranks) gives each rank the one KV head its query
//    heads share, replicated on tensor/kv_heads ranks (Megatron-LM and
//    vLLM do the same), whose K/V projection gradients are partial and
//    all_reduced over tensor; a vocabulary tensor does not divide is
//    padded to ceil(vocab/tensor) rows per rank, as GSPMD pads an uneven
//    split; column-parallel then row-parallel matmuls, all_reduce after each
//    row-parallel one (and the vocab-parallel embedding); in training the
//    inputs of column-parallel blocks get their gradient all_reduced.
//  - expert: routed experts split; batch split; tokens all_to_all'ed to
//    their experts' chips and back (the dropping MoE: its [E, B, C, h]
//    capacity slots, E split and B concatenated).
//  - sequence (context parallelism, decoders, prefill/train): every chip
//    holds seq/sequence tokens of each sequence; attention all_gathers K
//    and V (MLA: the latent) over the axis (their gradients reduce_scatter back); weight
//    gradients are all_reduced over it like data. Each chip is modelled as
//    the rank holding the last chunk, the busiest under causal masking
//    (no load-balanced zigzag layout).
//  - PhaseOptions::sequence_parallel (Megatron SP on the tensor axis): the
//    residual stream and norms hold seq/tensor tokens; each tensor
//    all_reduce becomes a reduce_scatter of the tokens and the inputs of
//    column-parallel blocks are all_gathered (again in backward). Tokens
//    per chip tensor does not divide are padded to a multiple of it (the
//    padding rows computed too).
// Leaves out: pipeline parallelism, uneven splits other than the
// vocabulary's (every other split must divide), context parallelism for decode, sequence parallelism
// for encoders/ViT, resnet/dlrm beyond data parallelism.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/mesh_spec.h"
#include "models/model_spec.h"

namespace tpusim::models {

// Axis names a mesh may use: data, fsdp, tensor, expert, sequence; the
// --mesh text of a model run is workloads::parse_mesh(text, mesh_axis_names()).
const std::vector<std::string>& mesh_axis_names();

// Checks that o.mesh can shard model m in o's phase: each split divides
// the dims it splits (tensor: attention.heads, attention.kv_heads (or is
// a multiple of them), ffn.size, moe.expert_ffn_size; fsdp: hidden; expert: moe.experts and the
// tokens x top_k each chip dispatches; data x fsdp x expert: batch;
// sequence: seq_len), expert only for MoE models, sequence only for decoders' prefill
// and train, sequence_parallel only with tensor > 1
// for decoders' prefill and train, resnet/dlrm only data.
// Throws ModelError naming the model, the model key and the mesh axis.
// Weight dims fsdp splits beyond hidden are checked when generating (the
// error names the weight). An empty mesh always passes.
void check_mesh(const ModelSpec& m, const PhaseOptions& o);

// KV heads one tensor rank holds: kv_heads / tensor, or 1 when tensor is
// a multiple of kv_heads (the head replicated on tensor / kv_heads ranks).
std::int64_t kv_heads_per_rank(std::int64_t kv_heads, std::int64_t tensor);
// Whether the KV heads are replicated over tensor ranks (tensor > kv_heads).
bool kv_heads_replicated(std::int64_t kv_heads, std::int64_t tensor);
// Vocabulary rows one tensor rank holds: ceil(vocab / tensor), the last
// rank's padded as GSPMD pads an uneven split.
std::int64_t vocab_per_rank(std::int64_t vocab, std::int64_t tensor);

// Sequences per chip: o.batch / (data x fsdp x expert).
std::int64_t local_batch(const PhaseOptions& o);
// Tokens of each sequence one chip holds outside the sequence-parallel
// regions: seq_len / sequence (1 for decode).
std::int64_t local_seq(const PhaseOptions& o);
// The sequence ranks that shard the weights: all of them in training
// (FSDP over fsdp x sequence, as MaxText's axis rules shard `embed` over
// its context axis too), 1 otherwise (serving keeps the weights on every
// sequence rank).
std::int64_t weight_sequence_ranks(const PhaseOptions& o);
// The mesh the weights are sharded over: o.mesh with weight_sequence_ranks
// folded into its fsdp axis (one added when it has none).
MeshSpec weight_mesh(const PhaseOptions& o);

}  // namespace tpusim::models
