// The closed-form half of `tpusim check`: how a model's layers meet each
// TPU generation's MXU, before anything is simulated.
// Models:
//  - layer types: the matmul-like operators of a generated workload grouped
//    by what they are in the model (q/k/v/o projections, MLP, attention
//    scores and values, embeddings/LM head, MoE router and experts), from
//    the generator's operator names (models/transformer.cpp);
//  - the shape an operator has on the MXU: a weight-stationary array holds
//    a K x N weight tile of rows x cols, M streams through it, so K pads up
//    to a multiple of mxu.rows and N to a multiple of mxu.cols; M does not
//    pad to the array. Attention is two matmuls per (batch, head): scores
//    K = head_dim, N = keys; values K = keys, N = head_dim;
//  - arithmetic intensity: the operator's FLOPs over the bytes of its
//    operands and result (each read or written once), against the chip's
//    ridge point (peak FLOP/s / HBM bandwidth at the operand dtype);
//  - model level: bytes of weights per dtype, the chips a phase needs
//    (models::check_fit, even sharding), KV-cache bytes per token and the
//    batch one chip's HBM leaves room for, and which tensor/expert parallel
//    degrees divide heads, KV heads, experts, hidden and FFN sizes.
// Leaves out: timing (the simulations of check_runner.h give step times),
// fusion and tiling choices (the lowering's), convolutions' im2col shapes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/common/chip_config.h"
#include "models/model_spec.h"
#include "workloads/ir/workload.h"

namespace tpusim::sim::codesign {

// What an operator is in the model, from its name ("" = not a matmul-like
// layer the check reports on: norms, rope, residuals, reshapes, ...).
std::string layer_type(const std::string& op_name);

// One matmul as the MXU sees it.
struct MxuMatmul {
  std::string part;  // "" for a plain matmul; "scores" / "values" for attention
  std::int64_t batch = 1, m = 1, k = 1, n = 1;
};
// The matmuls of a matmul or attention operator (empty for other kinds).
std::vector<MxuMatmul> mxu_matmuls(const workloads::Workload& wl, const workloads::Op& op);

// Share of MAC slots padding wastes on one dimension: 1 - d / roundup(d, tile).
double pad_waste(std::int64_t d, std::int64_t tile);
std::int64_t round_up(std::int64_t d, std::int64_t tile);

// One layer type on one chip.
struct LayerTypeCheck {
  std::string type;     // layer_type()
  std::string example;  // first operator of the type
  int ops = 0;          // operators of the type in the workload
  MxuMatmul shape;      // the first operator's (first) matmul
  std::int64_t k_padded = 0, n_padded = 0;
  double k_waste = 0, n_waste = 0;  // pad_waste on K (rows) and N (cols)
  double total_waste = 0;           // 1 - MACs / padded MACs over every matmul of the type
  double flops = 0;                 // sum over the type's operators
  double bytes = 0;                 // operands + results, each once
  double intensity = 0;             // flops / bytes
  double ridge = 0;                 // chip ridge point at the operand dtype
  bool compute_bound() const { return intensity >= ridge; }
};
// Layer types in order of first appearance.
std::vector<LayerTypeCheck> check_layers(const workloads::Workload& wl, const arch::TpuConfig& cfg);

// A model dimension that does not fill the MXU of a generation.
struct DimFinding {
  std::string key;         // model file key: hidden, ffn.size, attention.head_dim, vocab, moe.expert_ffn_size;
                           // a UNet's channels[i], head_dim
  std::int64_t value = 0;  // its value
  int tile = 0;            // the MXU size it misses
  std::int64_t rounded = 0;
  double waste = 0;  // pad_waste(value, tile)
};
// Dimensions of a transformer or a UNet that are not multiples of `tile`.
std::vector<DimFinding> misaligned_dims(const models::ModelSpec& m, int tile);

// Divisibility of a sharded dimension by plausible parallel degrees.
struct Divisibility {
  std::string key;  // attention.heads, attention.kv_heads, moe.experts, hidden, ffn.size
  std::int64_t value = 0;
  std::vector<int> divides;  // degrees among 2, 4, 8, 16, 32, 64 that divide it
  std::vector<int> fails;    // those that do not
};
std::vector<Divisibility> divisibility(const models::ModelSpec& m);

// HBM fit of one phase on one chip type for one weight dtype.
struct FitRow {
  std::string dtype;
  std::uint64_t weight_bytes = 0;
  std::uint64_t total_bytes = 0;  // whole-model footprint of the phase
  std::int64_t min_chips = 0;     // models::check_fit
  std::int64_t slice_chips = 0;   // smallest power of two >= min_chips
  std::string slice;              // a slice shape of that many chips
};
std::vector<FitRow> fit_table(const models::ModelSpec& m, const models::PhaseOptions& o, const arch::TpuConfig& cfg);
// A slice shape of `chips` chips (a power of two) for the config's ICI
// topology: 2-D "4x4" or 3-D "4x4x4", dimensions as equal as can be.
std::string slice_shape(std::int64_t chips, const arch::TpuConfig& cfg);

struct KvFit {
  std::uint64_t bytes_per_token = 0;  // models::kv_cache_bytes_per_token
  std::int64_t context = 0;
  // Sequences of `context` tokens whose cache fits in one chip's HBM next
  // to the weights (0 when the weights alone do not fit).
  std::int64_t max_batch = 0;
};
KvFit kv_fit(const models::ModelSpec& m, const models::PhaseOptions& o, const arch::TpuConfig& cfg);

}  // namespace tpusim::sim::codesign
