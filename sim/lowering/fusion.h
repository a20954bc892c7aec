// Fusion planning as XLA does for elementwise consumers: an elementwise op
// whose input is produced by a matmul, convolution, attention, softmax or
// another elementwise op (and read by nothing else, not a workload output, same
// element count) joins its producer's epilogue. Chains form: the anchor
// keeps the list of ops fused into it, in order.
#pragma once

#include <cstddef>
#include <vector>

#include "workloads/ir/workload.h"

namespace tpusim::sim::lowering {

struct FusionPlan {
  std::vector<int> fused_into;                  // op -> anchor op, or -1
  std::vector<std::vector<std::size_t>> chain;  // anchor -> fused ops in order

  bool fused(std::size_t op) const { return fused_into[op] >= 0; }
  // The tensor the anchor's fused group finally writes.
  const std::string& final_output(const workloads::Workload& wl, std::size_t anchor) const {
    return chain[anchor].empty() ? wl.ops[anchor].outputs[0] : wl.ops[chain[anchor].back()].outputs[0];
  }
};

FusionPlan plan_fusion(const workloads::Workload& wl, const workloads::TensorIndex& index, bool enabled);

}  // namespace tpusim::sim::lowering
