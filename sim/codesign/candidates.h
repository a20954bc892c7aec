// The changes `tpusim check` tries on a model: each candidate is a list of
// model-file keys with new values (or a weight dtype), built as a changed
// ModelSpec and simulated like the original (check_runner.h).
// Candidates (transformers with multi-head attention):
//  - ffn.size / moe.expert_ffn_size / hidden / vocab rounded up to a
//    multiple of the MXU size (the largest among the generations checked);
//  - attention.head_dim to 128 (head counts kept);
//  - head_dim below an MXU size and dividing it (128 on 256, 64 on 128):
//    head_dim raised to the MXU size over as many times fewer heads (and
//    KV heads, where they divide: the KV cache kept), widths, parameters
//    and multiply-adds kept, so that attention's matmuls fill the MXU; one
//    per MXU width checked, simulated on the generations of that width;
//  - attention.kv_heads to a power of two that divides attention.heads
//    (divisor-friendly for tensor parallelism), the one nearest the current
//    count;
//  - GQA group size doubled (kv_heads halved), where it divides;
//  - 8-bit weights (int8, or fp8 where the MXU has no int8), activations
//    and KV cache unchanged.
// Leaves out: changes to the layer count, MLA ranks, MoE expert counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_spec.h"

namespace tpusim::sim::codesign {

struct ModelChange {
  std::string key;  // model-file key (see model_check.h DimFinding::key)
  std::int64_t value = 0;
};

struct Candidate {
  std::string id;     // short, file-name safe: "ffn.size=8192", "weights=int8"
  std::string title;  // "d_ff 8000 -> 8192 (multiple of 256)"
  std::vector<ModelChange> changes;
  std::string weight_dtype;  // "" = unchanged; else a dtype name
  // The MXU width it is sized for: simulated only on the generations with
  // that MXU. 0 = every generation.
  int mxu = 0;
};

// "key=value" -> ModelChange; throws ModelError naming the text.
ModelChange parse_change(const std::string& text);
// The model with the changes applied and checked (heads % kv_heads, ...);
// throws ModelError for an unknown key or an invalid result.
models::ModelSpec apply_changes(const models::ModelSpec& m, const std::vector<ModelChange>& changes);

// Candidates for model m; `tile` is the MXU size to round to. `mxus`: the
// MXU widths of the generations checked, one fill-the-MXU head candidate
// per width it applies to, each marked with its width (Candidate::mxu);
// empty: one for `tile`, for every generation. Only changes that alter
// the model are listed.
std::vector<Candidate> candidates(const models::ModelSpec& m, int tile, const std::vector<int>& mxus = {});

}  // namespace tpusim::sim::codesign
