// Internal interface between the family generators (transformer.cpp,
// resnet.cpp, dlrm.cpp), the training pass (backward.cpp) and the
// analytics: shared sizing rules so that the closed-form numbers and the
// generated workloads agree by construction of the same rule, not by copy.
// Leaves out: nothing user-facing; zoo.h is the public API.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

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
// Expert parallelism over `ep` chips, each holding experts / ep experts and
// dispatching tokens * top_k slots: after the all-to-all a chip serves the
// same number of slots (uniform routing), over its share of the experts the
// whole group's tokens touch (ceil(touched(tokens * ep) / ep), within
// [1, min(experts / ep, slots)]). ep == 1 is moe_routing(tokens, ...).
MoeRouting moe_routing_local(std::int64_t tokens, std::int64_t experts, std::int64_t top_k, std::int64_t ep);

// Family generators; the options were checked by the caller.
workloads::Workload generate_transformer(const ModelSpec& m, const PhaseOptions& o);
workloads::Workload generate_resnet(const ModelSpec& m, const PhaseOptions& o);
workloads::Workload generate_dlrm(const ModelSpec& m, const PhaseOptions& o);
workloads::Workload generate_unet(const ModelSpec& m, const PhaseOptions& o);
// The generator of a family whose workload is its own closed form (resnet,
// dlrm, unet): what the analytics count parameters and FLOPs from.
workloads::Workload generate_graph_family(const ModelSpec& m, const PhaseOptions& o);

// Appends the training tail to a forward graph: the loss gradient
// (softmax of the logits), reverse-mode backward ops for every forward op
// recorded so far (activation-gradient and weight-gradient matmuls, ...),
// each layer's forward recomputed before its backward as o.remat says, and an
// Adam update with f32 master weights for every weight with a gradient.
//
// Sharded programs (o.mesh) pass the collectives backward needs beyond the
// transposed forward collectives (all_gather <-> reduce_scatter, all_reduce
// -> identity, all_to_all -> reverse all_to_all, FSDP weights re-gathered
// for the activation-gradient matmuls unless recomputing):
struct TrainingCollectives {
  // weight -> mesh axes its gradient is all_reduced over once complete
  // (data parallel replicas of that weight).
  std::map<std::string, std::vector<std::string>> weight_grad_all_reduce;
  // activation -> mesh axes its gradient is all_reduced over (Megatron's
  // "f": the input of column-parallel matmuls gets partial gradients).
  std::map<std::string, std::vector<std::string>> activation_grad_all_reduce;
  // all_gathered activations that backward gathers again for the
  // weight-gradient matmuls instead of keeping them alive (Megatron
  // sequence parallelism; with recompute the re-emitted forward gathers).
  std::set<std::string> regather_in_backward;
  // Mesh axes the logits' last (vocabulary) dim is split over; non-empty:
  // the loss is the vocab-parallel cross-entropy, whose per-token max, sum
  // of exponentials and target logit are all_reduced over them in f32.
  std::vector<std::string> vocab_split_axes;
};
void append_training(WorkloadBuilder& b, const TensorRef& logits, const PhaseOptions& o,
                     const TrainingCollectives& tc = {});

}  // namespace tpusim::models::detail
