// LoRA adapters in the model zoo (models/lora_spec.h): which generated
// projections carry one, the adapter parameters one chip holds, and the
// checks of the options. The generator (transformer.cpp) lowers an
// adapter as real matmuls (x A, then B, added to the projection's output),
// so its cost comes from the cycle-level engine.
// Tensor parallelism (Megatron layout of the base weights): a
// column-parallel projection (q, k, v, gate, up) keeps A [in, r] whole on
// every tensor rank and splits B [r, out / tensor]; a row-parallel one
// (o, down) splits A [in / tensor, r] and keeps B [r, out] whole, adding
// its (x_i A_i) B to the partial sums before the all_reduce, which is
// exact because sum_i (x_i A_i) B = (x A) B, so no collective is added
// (the layout follows from the base weights' Megatron split). FSDP shards
// adapters like other weights.
// Leaves out: adapters on MoE expert FFNs and latent (MLA) attention.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/model_spec.h"

namespace tpusim::models {

// The target of a generated projection ("layers.3.attn.q_proj" -> q,
// "layers.3.mlp.fc2" -> down); nullopt for any other matmul (the LM head,
// routers, shared experts, ...).
std::optional<LoraTarget> lora_target_of(const std::string& projection);
// True for the weights of adapters (names holding ".lora_a" or ".lora_b").
bool is_lora_weight(const std::string& tensor);

// Adapter parameters one chip holds under o.mesh for o.lora.adapters
// adapters (0 when LoRA is off); what the generated workload's adapter
// weights hold, element for element.
std::uint64_t lora_params(const ModelSpec& m, const PhaseOptions& o);

// Appends a diagnostic per problem with o.lora (rank, targets the model
// has, a decoder with multi-head attention, adapters within the step's
// tokens).
void check_lora(const ModelSpec& m, const PhaseOptions& o, std::vector<Diagnostic>& errs);

}  // namespace tpusim::models
