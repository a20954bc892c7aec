// Internal interface between the family generators (transformer.cpp,
// resnet.cpp, dlrm.cpp), the training pass (backward.cpp) and the
// analytics: shared sizing rules so that the closed-form numbers and the
// generated workloads agree by construction of the same rule, not by copy.
// Leaves out: nothing user-facing; zoo.h is the public API.
#pragma once

#include <cstdint>
#include <string>

#include "models/model_spec.h"
#include "workloads/ir/builder.h"

namespace tpusim::models::detail {

using workloads::TensorRef;
using workloads::WorkloadBuilder;

// How a mixture-of-experts layer routes R = tokens * top_k token slots.
// touched: experts expected to receive at least one token under uniform
// routing, E * (1 - (1 - k/E)^T), rounded, within [k, min(E, R)]. The slots
// are split over the touched experts as evenly as possible: group0 experts
// take cap slots each, group1 experts cap - 1, so that
// group0 * cap + group1 * (cap - 1) == R exactly (no padding FLOPs).
struct MoeRouting {
  std::int64_t slots = 0;
  std::int64_t touched = 0;
  std::int64_t cap = 0;
  std::int64_t group0 = 0;
  std::int64_t group1 = 0;
};
MoeRouting moe_routing(std::int64_t tokens, std::int64_t experts, std::int64_t top_k);

// Family generators; the options were checked by the caller.
workloads::Workload generate_transformer(const ModelSpec& m, const PhaseOptions& o);
workloads::Workload generate_resnet(const ModelSpec& m, const PhaseOptions& o);
workloads::Workload generate_dlrm(const ModelSpec& m, const PhaseOptions& o);

// Appends the training tail to a forward graph: the loss gradient
// (softmax of the logits), reverse-mode backward ops for every forward op
// recorded so far (activation-gradient and weight-gradient matmuls, ...),
// optionally each layer's forward recomputed before its backward, and an
// Adam update with f32 master weights for every weight with a gradient.
void append_training(WorkloadBuilder& b, const TensorRef& logits, const PhaseOptions& o);

}  // namespace tpusim::models::detail
