// MeshSpec: the device mesh a model is sharded over (workloads/ir/mesh.h).
// Models: the axis names the model zoo understands: data (batch split,
// weights replicated), fsdp (batch split, weights/gradients/optimizer state
// sharded, ZeRO-3), tensor (Megatron heads/FFN/vocab split), expert (MoE
// experts split, tokens exchanged all-to-all; also splits the batch) and
// sequence (context parallelism: each sequence's tokens split, K/V
// all_gathered for attention). Megatron sequence parallelism is not an
// axis but an option of tensor (PhaseOptions::sequence_parallel).
// Leaves out: the checks against a model (models/sharding.h), placement on
// a physical slice (the engine maps axes onto ICI dimensions).
#pragma once

#include "workloads/ir/mesh.h"

namespace tpusim::models {

using workloads::MeshAxis;
using workloads::MeshSpec;

}  // namespace tpusim::models
