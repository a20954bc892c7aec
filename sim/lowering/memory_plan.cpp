#include "sim/lowering/memory_plan.h"

#include <algorithm>
#include <map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tpusim::sim::lowering {

using arch::MemSpace;
using workloads::Op;
using workloads::OpKind;
using workloads::Tensor;
using workloads::Workload;

namespace {

constexpr std::uint64_t kAlign = 4096;

std::uint64_t aligned(std::uint64_t b) { return std::max<std::uint64_t>(kAlign, (b + kAlign - 1) / kAlign * kAlign); }

// Alias classes: a reshape's result is its input's bytes relabelled, so it
// joins its input's class, named by the class's first tensor (its root).
class AliasClasses {
 public:
  explicit AliasClasses(const Workload& wl) {
    for (const Op& op : wl.ops)
      if (op.kind == OpKind::reshape) {
        std::string r = root(op.inputs[0]);
        aliased_.insert(op.inputs[0]);
        aliased_.insert(op.outputs[0]);
        root_[op.outputs[0]] = std::move(r);
      }
  }
  std::string root(const std::string& n) const {
    auto it = root_.find(n);
    return it == root_.end() ? n : it->second;
  }
  // True for a reshape's input or result.
  bool aliased(const std::string& n) const { return aliased_.count(n) != 0; }

 private:
  std::unordered_map<std::string, std::string> root_;
  std::unordered_set<std::string> aliased_;
};

// Alternate-memory placement, in the spirit of XLA's memory-space
// assignment: CMEM on chips that have it (v4, v4i: 128 MiB shared by the
// TensorCores), else the part of VMEM that kernels' scoped allocations
// leave free. Candidates are intermediate activations that are
// materialised: not sources (they must come from HBM anyway), not workload
// outputs, not values internal to a fusion, not collective results (they
// land where the ICI puts them). A reshape's input and result are one
// buffer (an alias class). A candidate lives from its producer to its last
// consumer; its benefit is the HBM traffic it saves (written once, read by
// each consumer) per byte per operator of its lifetime. Greedy in that
// order, first fit over the addresses of the already placed tensors whose
// lifetimes overlap (4 KiB aligned).
void place_alternate(const Workload& wl, const FusionPlan& fusion, MemSpace space, std::uint64_t capacity,
                     MemoryPlan& plan) {
  std::unordered_set<std::string> internal;
  for (std::size_t a = 0; a < fusion.chain.size(); ++a) {
    if (fusion.chain[a].empty()) continue;
    internal.insert(wl.ops[a].outputs[0]);
    for (std::size_t k = 0; k + 1 < fusion.chain[a].size(); ++k) internal.insert(wl.ops[fusion.chain[a][k]].outputs[0]);
  }
  const AliasClasses alias(wl);
  auto find = [&](const std::string& n) { return alias.root(n); };
  struct Class {
    std::vector<std::string> members;
    std::size_t first = 0, last = 0, readers = 0;
    bool produced = false, excluded = false;
  };
  std::unordered_map<std::string, Class> classes;
  for (const Tensor& t : wl.tensors) {
    Class& c = classes[find(t.name)];
    c.members.push_back(t.name);
    if (t.is_source() || t.kind == workloads::TensorKind::output || internal.count(t.name) ||
        t.space == workloads::MemSpace::host)
      c.excluded = true;
  }
  for (std::size_t i = 0; i < wl.ops.size(); ++i) {
    const Op& op = wl.ops[i];
    for (const std::string& o : op.outputs) {
      if (op.kind == OpKind::reshape) continue;
      Class& c = classes[find(o)];
      // Copies to and from host move between HBM and host memory.
      if (workloads::is_collective(op.kind) || op.kind == OpKind::copy) c.excluded = true;
      if (!c.produced) c.first = i;
      c.produced = true;
    }
    if (op.kind == OpKind::reshape) continue;
    for (const std::string& in : op.inputs) {
      Class& c = classes[find(in)];
      if (op.kind == OpKind::copy) c.excluded = true;
      c.last = std::max(c.last, i);
      ++c.readers;
    }
  }
  struct Cand {
    std::string root;
    std::size_t first = 0, last = 0;
    std::uint64_t size = 0;
    double score = 0;
  };
  std::vector<Cand> cands;
  for (const Tensor& t : wl.tensors) {
    if (find(t.name) != t.name) continue;  // one candidate per class, named by its root
    const Class& c = classes[t.name];
    if (c.excluded || !c.produced || c.readers == 0 || c.last < c.first) continue;
    Cand cand;
    cand.root = t.name;
    cand.first = c.first;
    cand.last = c.last;
    cand.size = aligned(t.bytes());
    if (cand.size > capacity) continue;
    const double saved = static_cast<double>(t.bytes()) * static_cast<double>(1 + c.readers);
    cand.score = saved / (static_cast<double>(cand.size) * static_cast<double>(c.last - c.first + 1));
    cands.push_back(std::move(cand));
  }
  std::stable_sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    return a.score != b.score ? a.score > b.score : a.first < b.first;
  });
  struct Placed {
    std::size_t first, last;
    std::uint64_t at, size;
  };
  std::vector<Placed> placed;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> busy;  // reused per candidate
  for (const Cand& c : cands) {
    busy.clear();
    for (const Placed& q : placed)
      if (q.first <= c.last && c.first <= q.last) busy.emplace_back(q.at, q.size);
    std::sort(busy.begin(), busy.end());
    std::uint64_t at = 0;
    for (const auto& [b_at, b_size] : busy) {
      if (at + c.size <= b_at) break;
      at = std::max(at, b_at + b_size);
    }
    if (at + c.size > capacity) continue;
    placed.push_back({c.first, c.last, at, c.size});
    for (const std::string& m : classes[c.root].members) plan.at[m] = Ref{space, at};
  }
}

// Ops whose result may overwrite an operand that dies at them (element by
// element: the operand's bytes are read before the result's are written).
bool shares_operand(OpKind k) {
  return k == OpKind::elementwise || k == OpKind::softmax || k == OpKind::rms_norm || k == OpKind::layer_norm;
}

// HBM placement by liveness, as XLA's buffer assignment does: weights
// (optimizer state included), KV caches and results live throughout;
// an activation lives from its producer to its last consumer, and its
// range is reused afterwards (best fit over a free list, 4 KiB aligned).
// An input lives from its first reader to its last: the big inputs of a
// generated step stand for values XLA computes in place (a gradient's
// inverse indices, zero padding, masks, routing slots), which a real step
// does not hold for its whole length; its true inputs (tokens, labels) are
// small or read throughout. An input a reshape aliases lives throughout.
void place_in_hbm(const Workload& wl, const workloads::TensorIndex& index, MemoryPlan& plan) {
  std::map<std::uint64_t, std::uint64_t> free;  // offset -> size
  std::uint64_t top = 0, peak = 0, live = 0;
  auto alloc = [&](const std::string& name, std::uint64_t bytes) {
    const std::uint64_t need = aligned(bytes);
    auto best = free.end();
    for (auto it = free.begin(); it != free.end(); ++it)
      if (it->second >= need && (best == free.end() || it->second < best->second)) best = it;
    std::uint64_t at;
    if (best != free.end()) {
      at = best->first;
      const std::uint64_t rest = best->second - need;
      free.erase(best);
      if (rest) free[at + need] = rest;
    } else {
      at = top;
      top += need;
    }
    plan.at[name] = Ref{MemSpace::hbm, at};
    live += need;
    peak = std::max(peak, live);
  };
  auto release = [&](const std::string& name, std::uint64_t bytes) {
    const std::uint64_t need = aligned(bytes);
    std::uint64_t at = plan.of(name).addr;
    live -= need;
    auto next = free.lower_bound(at);
    std::uint64_t size = need;
    if (next != free.end() && next->first == at + size) {
      size += next->second;
      free.erase(next);
    }
    auto prev = free.lower_bound(at);
    if (prev != free.begin()) {
      --prev;
      if (prev->first + prev->second == at) {
        at = prev->first;
        size += prev->second;
        free.erase(prev);
      }
    }
    free[at] = size;
  };
  auto tensor = [&](const std::string& n) -> const Tensor& { return *index.find(n); };
  std::unordered_map<std::string, std::size_t> last_use;
  for (std::size_t i = 0; i < wl.ops.size(); ++i)
    for (const std::string& in : wl.ops[i].inputs) last_use[in] = i;
  const AliasClasses alias(wl);
  // Held from the start to the end (the rule above).
  auto throughout = [&](const Tensor& t) {
    return t.kind == workloads::TensorKind::weight || t.kind == workloads::TensorKind::kv_cache ||
           t.kind == workloads::TensorKind::output || (t.kind == workloads::TensorKind::input && alias.aliased(t.name));
  };
  auto permanent = [&](const Tensor& t) { return throughout(t) || !last_use.count(t.name); };
  auto on_chip = [&](const std::string& n) {
    auto it = plan.at.find(n);
    return it != plan.at.end() && it->second.space != MemSpace::hbm;
  };
  // An alias class holds one range, released after the last use of any
  // member, and never when a member is a source or a result. (A class
  // whose root took a dead source's range by donation releases that range,
  // as an unaliased donated tensor does.)
  auto find = [&](const std::string& n) { return alias.root(n); };
  std::unordered_map<std::string, std::size_t> class_last;
  std::unordered_set<std::string> class_permanent;
  for (const Tensor& t : wl.tensors) {
    const std::string r = find(t.name);
    if (throughout(t)) class_permanent.insert(r);
    auto lu = last_use.find(t.name);
    if (lu != last_use.end()) class_last[r] = std::max(class_last[r], lu->second);
  }
  std::unordered_set<std::string> donors, released, shared;
  for (const Tensor& t : wl.tensors)
    if (t.is_source() && throughout(t)) alloc(t.name, t.bytes());
  for (std::size_t i = 0; i < wl.ops.size(); ++i) {
    const Op& op = wl.ops[i];
    // An input not yet placed is read for the first time here.
    for (const std::string& in : op.inputs) {
      const Tensor& t = tensor(in);
      if (t.kind == workloads::TensorKind::input && !plan.at.count(in)) alloc(in, t.bytes());
    }
    for (const std::string& o : op.outputs) {
      const Tensor& t = tensor(o);
      if (on_chip(o)) continue;
      // A reshape's result is a relabelling of its input's bytes.
      if (op.kind == OpKind::reshape) {
        plan.at[o] = plan.of(op.inputs[0]);
        continue;
      }
      // Buffer donation: an elementwise update whose source operand (a
      // weight, optimizer state, KV cache) of the same size is read for the
      // last time here writes in place, as jitted training steps do with
      // donated arguments.
      bool donated = false;
      if (op.kind == OpKind::elementwise)
        for (const std::string& in : op.inputs) {
          const Tensor& src = tensor(in);
          if (src.is_source() && src.bytes() == t.bytes() && last_use.at(in) == i && !donors.count(in) &&
              !alias.aliased(in)) {
            plan.at[o] = plan.of(in);
            donors.insert(in);
            donated = true;
            break;
          }
        }
      // Buffer sharing: an elementwise, softmax or norm result takes the
      // HBM range of an activation operand of its size that dies here, as
      // XLA's buffer assignment lets a loop fusion write over an operand
      // it is the last reader of (HloDataflowAnalysis::
      // CanShareOperandBufferWithUser); e.g. the loss gradient overwrites
      // the logits.
      // An aliased operand (a reshape's class) gives its class's range if
      // the whole class dies here.
      if (!donated && shares_operand(op.kind) && !alias.aliased(o))
        for (const std::string& in : op.inputs) {
          const std::string r = alias.aliased(in) ? find(in) : in;
          const Tensor& src = tensor(r);
          const bool dies = alias.aliased(in) ? !class_permanent.count(r) && class_last.at(r) == i
                                              : !permanent(src) && last_use.at(in) == i;
          if (!dies || src.bytes() != t.bytes() || on_chip(r) || shared.count(r) || released.count(r) ||
              !plan.at.count(r))
            continue;
          plan.at[o] = plan.of(r);
          shared.insert(r);
          donated = true;
          break;
        }
      if (!donated) alloc(o, t.bytes());
    }
    for (const std::string& in : op.inputs) {
      const Tensor& t = tensor(in);
      if (permanent(t) || last_use.at(in) != i || on_chip(in) || shared.count(in) || donors.count(in)) continue;
      if (alias.aliased(in)) {
        // The class's range goes once its last member's last use is here.
        const std::string r = find(in);
        if (class_permanent.count(r) || class_last.at(r) != i || on_chip(r) || !plan.at.count(r) || shared.count(r))
          continue;
        if (!released.insert(r).second) continue;
        release(r, tensor(r).bytes());
        continue;
      }
      release(in, t.bytes());
    }
  }
  plan.hbm_peak_bytes = peak;
}

}  // namespace

MemoryPlan plan_memory(const Workload& wl, const workloads::TensorIndex& index, const FusionPlan& fusion,
                       const arch::TpuConfig& cfg, const LoweringOptions& opt, std::uint64_t kernel_vmem) {
  MemoryPlan plan;
  // Tensors in host memory (offloaded activations, the results of copies
  // to host) get host addresses and take no HBM.
  std::uint64_t host_at = 0;
  for (const workloads::Tensor& t : wl.tensors)
    if (t.space == workloads::MemSpace::host) {
      plan.at[t.name] = Ref{MemSpace::host, host_at};
      host_at += aligned(t.bytes());
    }
  if (cfg.cmem.present && cfg.cmem.size_bytes > 0 && cfg.cmem.bandwidth > 0) {
    if (opt.cmem) place_alternate(wl, fusion, MemSpace::cmem, cfg.cmem.size_bytes, plan);
  } else if (opt.vmem_residency && cfg.vmem.size_bytes > kernel_vmem) {
    const std::uint64_t cores = static_cast<std::uint64_t>(std::max(1, cfg.chip.tensorcores));
    place_alternate(wl, fusion, MemSpace::vmem, (cfg.vmem.size_bytes - kernel_vmem) * cores, plan);
  }
  place_in_hbm(wl, index, plan);
  if (opt.check_hbm_capacity && cfg.hbm.capacity_bytes > 0 && plan.hbm_peak_bytes > cfg.hbm.capacity_bytes)
    throw LoweringError("workload '" + wl.name + "' needs " + std::to_string(plan.hbm_peak_bytes) +
                        " bytes of HBM at its peak but " + cfg.chip.name + " has " +
                        std::to_string(cfg.hbm.capacity_bytes));
  return plan;
}

}  // namespace tpusim::sim::lowering
