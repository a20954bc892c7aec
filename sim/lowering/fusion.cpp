#include "sim/lowering/fusion.h"

namespace tpusim::sim::lowering {

using workloads::Op;
using workloads::OpKind;
using workloads::Tensor;

namespace {

bool fusable_consumer(const Op& op) { return op.kind == OpKind::elementwise; }
// A softmax anchors too: XLA's fusion computing its normalized output (a
// loop fusion after the row reductions) takes elementwise consumers such
// as the cast of probabilities back to bf16 (dense attention).
bool fusable_anchor(const Op& op) {
  return op.kind == OpKind::matmul || op.kind == OpKind::conv2d || op.kind == OpKind::elementwise ||
         op.kind == OpKind::attention || op.kind == OpKind::softmax;
}

}  // namespace

FusionPlan plan_fusion(const workloads::Workload& wl, const workloads::TensorIndex& index, bool enabled) {
  FusionPlan fp;
  fp.fused_into.assign(wl.ops.size(), -1);
  fp.chain.assign(wl.ops.size(), {});
  if (!enabled) return fp;
  const auto consumers = wl.consumers();
  const auto producers = wl.producers();
  for (std::size_t i = 0; i < wl.ops.size(); ++i) {
    const Op& op = wl.ops[i];
    if (!fusable_consumer(op)) continue;
    const Tensor& out = *index.find(op.outputs[0]);
    for (const std::string& in : op.inputs) {
      auto p = producers.find(in);
      if (p == producers.end()) continue;
      const std::size_t prod = p->second;
      const std::size_t anchor = fp.fused_into[prod] >= 0 ? static_cast<std::size_t>(fp.fused_into[prod]) : prod;
      if (!fusable_anchor(wl.ops[anchor])) continue;
      // The producer's result must feed only this op, must not be a
      // workload output, and must be the chain's current end; the fused
      // op must not change the element count.
      const Tensor& t = *index.find(in);
      auto c = consumers.find(in);
      if (c == consumers.end() || c->second.size() != 1) continue;
      if (t.kind == workloads::TensorKind::output) continue;
      if (t.num_elements() != out.num_elements()) continue;
      const std::size_t end = fp.chain[anchor].empty() ? anchor : fp.chain[anchor].back();
      if (end != prod) continue;
      fp.fused_into[i] = static_cast<int>(anchor);
      fp.chain[anchor].push_back(i);
      break;
    }
  }
  return fp;
}

}  // namespace tpusim::sim::lowering
