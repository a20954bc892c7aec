// See schedule.h.
#include "sim/lowering/schedule.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace tpusim::sim::lowering {

namespace {

// An operator that runs as a kernel of its own on the TensorCores (not a
// collective, not fused into another, not a bitcast).
bool is_kernel(const workloads::Workload& wl, const FusionPlan& fusion, std::size_t i) {
  const workloads::OpKind k = wl.ops[i].kind;
  return !workloads::is_collective(k) && !fusion.fused(i) && k != workloads::OpKind::reshape;
}

// The first rule of schedule.h: one operator of lookahead.
std::vector<std::size_t> lookahead_order(const workloads::Workload& wl, const FusionPlan& fusion,
                                         const std::unordered_map<std::string, std::size_t>& producer) {
  const std::size_t n = wl.ops.size();
  std::vector<std::size_t> order;
  order.reserve(n);
  std::vector<bool> placed(n, false);
  auto operands_ready = [&](std::size_t j) {
    for (const std::string& in : wl.ops[j].inputs) {
      auto it = producer.find(in);
      if (it != producer.end() && !placed[it->second]) return false;
    }
    return true;
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (placed[i]) continue;
    if (is_kernel(wl, fusion, i))
      for (std::size_t j = i + 1; j < n && !is_kernel(wl, fusion, j); ++j)
        if (!placed[j] && workloads::is_collective(wl.ops[j].kind) && operands_ready(j)) {
          placed[j] = true;
          order.push_back(j);
        }
    placed[i] = true;
    order.push_back(i);
  }
  return order;
}

}  // namespace

Schedule schedule_ops(const workloads::Workload& wl, const FusionPlan& fusion, bool prefetch) {
  const std::size_t n = wl.ops.size();
  Schedule s;
  s.after.assign(n, -1);
  if (!prefetch) {
    for (std::size_t i = 0; i < n; ++i) s.order.push_back(i);
    return s;
  }
  const std::unordered_map<std::string, std::size_t> producer = wl.producers();
  const std::vector<std::size_t> base = lookahead_order(wl, fusion, producer);

  // The chain. pos: place in `base`; first_use: the earliest place in
  // `base` of an operator reading the tensor (an operator fused into a
  // kernel reads it where the kernel runs).
  std::vector<std::size_t> pos(n);
  for (std::size_t p = 0; p < n; ++p) pos[base[p]] = p;
  std::unordered_map<std::string, std::size_t> first_use;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t at = fusion.fused(i) ? pos[static_cast<std::size_t>(fusion.fused_into[i])] : pos[i];
    for (const std::string& in : wl.ops[i].inputs) {
      auto [it, fresh] = first_use.emplace(in, at);
      if (!fresh) it->second = std::min(it->second, at);
    }
  }
  auto chained = [&](std::size_t i) {
    if (wl.ops[i].kind != workloads::OpKind::all_gather) return false;
    for (const std::string& in : wl.ops[i].inputs)
      if (producer.count(in)) return false;
    return true;
  };
  // Sort keys: an operator keeps 2 x its place; a gather moved before the
  // place p of its predecessor's first consumer takes 2 p - 1 (ties keep
  // the base order).
  std::vector<std::size_t> key(n);
  for (std::size_t p = 0; p < n; ++p) key[base[p]] = 2 * p + 1;
  int prev = -1;
  for (std::size_t p = 0; p < n; ++p) {
    const std::size_t i = base[p];
    if (!chained(i)) continue;
    if (prev >= 0) {
      s.after[i] = prev;
      auto it = first_use.find(wl.ops[static_cast<std::size_t>(prev)].outputs[0]);
      if (it != first_use.end() && 2 * it->second < key[i]) key[i] = 2 * it->second;
    }
    prev = static_cast<int>(i);
  }
  // A collective reading another one's result (a weight gradient's
  // all-reduce over the data replicas after its reduce-scatter over fsdp)
  // would hold the in-order sequencer until that one completes: it moves
  // to just before the next collective of its producer's kind (XLA keeps
  // one collective of a kind in flight, so its producer has completed by
  // then) or, if none comes, before its own first consumer.
  // next_of_kind[k][q]: the first place >= q in `base` of a collective of
  // kind k (n if none), for the kinds that produce another's operand.
  std::unordered_map<workloads::OpKind, std::vector<std::size_t>> next_of_kind;
  for (std::size_t i = 0; i < n; ++i) {
    if (!workloads::is_collective(wl.ops[i].kind)) continue;
    for (const std::string& in : wl.ops[i].inputs) {
      auto it = producer.find(in);
      if (it != producer.end() && workloads::is_collective(wl.ops[it->second].kind))
        next_of_kind.emplace(wl.ops[it->second].kind, std::vector<std::size_t>());
    }
  }
  for (auto& [kind, next] : next_of_kind) {
    next.assign(n + 1, n);
    for (std::size_t q = n; q-- > 0;) next[q] = wl.ops[base[q]].kind == kind ? q : next[q + 1];
  }
  for (std::size_t p = 0; p < n; ++p) {
    const std::size_t i = base[p];
    if (!workloads::is_collective(wl.ops[i].kind) || fusion.fused(i)) continue;
    int from = -1;
    for (const std::string& in : wl.ops[i].inputs) {
      auto it = producer.find(in);
      if (it != producer.end() && workloads::is_collective(wl.ops[it->second].kind) && !fusion.fused(it->second))
        from = std::max(from, static_cast<int>(it->second));
    }
    if (from < 0) continue;
    // The next collective of the producer's kind after it, other than
    // this one (skipped when it is the next one itself).
    std::size_t target = n;
    const workloads::OpKind kind = wl.ops[static_cast<std::size_t>(from)].kind;
    auto it = next_of_kind.find(kind);
    if (it != next_of_kind.end()) {
      target = it->second[pos[static_cast<std::size_t>(from)] + 1];
      if (target == p) target = it->second[p + 1];
    }
    auto use = first_use.find(wl.ops[i].outputs[0]);
    if (use != first_use.end()) target = std::min(target, use->second);
    if (2 * target > key[i]) key[i] = 2 * target;
  }
  s.order = base;
  std::stable_sort(s.order.begin(), s.order.end(), [&](std::size_t a, std::size_t b) { return key[a] < key[b]; });
  return s;
}

}  // namespace tpusim::sim::lowering
