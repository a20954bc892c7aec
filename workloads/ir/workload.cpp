// Dependency derivation, topological order and validation of a workload
// (see workload.h).
#include "workloads/ir/workload.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <set>

#include "workloads/ir/cost.h"
#include "workloads/ir/shape_inference.h"

namespace tpusim::workloads {

const Tensor* Workload::find_tensor(const std::string& n) const {
  for (const auto& t : tensors)
    if (t.name == n) return &t;
  return nullptr;
}

Tensor* Workload::find_tensor(const std::string& n) {
  return const_cast<Tensor*>(static_cast<const Workload*>(this)->find_tensor(n));
}

const Op* Workload::find_op(const std::string& n) const {
  for (const auto& o : ops)
    if (o.name == n) return &o;
  return nullptr;
}

TensorIndex::TensorIndex(const Workload& wl) {
  map_.reserve(wl.tensors.size());
  for (const auto& t : wl.tensors) map_.emplace(t.name, &t);
}

const Tensor* TensorIndex::find(const std::string& name) const {
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : it->second;
}

std::optional<std::int64_t> Workload::mesh_axis_size(const std::string& axis) const { return mesh.find(axis); }

namespace {
std::string op_path(const Op& op) { return "op '" + op.name + "' (" + std::string(op_kind_name(op.kind)) + ")"; }
}  // namespace

std::unordered_map<std::string, std::size_t> Workload::producers() const {
  std::unordered_map<std::string, std::size_t> p;
  for (std::size_t i = 0; i < ops.size(); ++i)
    for (const auto& out : ops[i].outputs) {
      auto [it, fresh] = p.emplace(out, i);
      if (!fresh)
        throw WorkloadError(ops[i].loc, op_path(ops[i]),
                            "tensor '" + out + "' produced twice: already produced by op '" + ops[it->second].name +
                                "'" + (ops[it->second].loc.known() ? " at " + ops[it->second].loc.str() : ""));
    }
  return p;
}

std::unordered_map<std::string, std::vector<std::size_t>> Workload::consumers() const {
  std::unordered_map<std::string, std::vector<std::size_t>> c;
  for (std::size_t i = 0; i < ops.size(); ++i)
    for (const auto& in : ops[i].inputs) {
      auto& v = c[in];
      if (v.empty() || v.back() != i) v.push_back(i);
    }
  return c;
}

std::vector<std::vector<std::size_t>> Workload::dependencies() const {
  auto prod = producers();
  std::vector<std::vector<std::size_t>> deps(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    for (const auto& in : ops[i].inputs) {
      auto it = prod.find(in);
      if (it != prod.end()) deps[i].push_back(it->second);
    }
    std::sort(deps[i].begin(), deps[i].end());
    deps[i].erase(std::unique(deps[i].begin(), deps[i].end()), deps[i].end());
  }
  return deps;
}

std::vector<std::size_t> Workload::topo_order() const {
  auto deps = dependencies();
  std::size_t n = ops.size();
  std::vector<std::vector<std::size_t>> users(n);
  std::vector<std::size_t> pending(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    pending[i] = deps[i].size();
    for (auto d : deps[i]) users[d].push_back(i);
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<std::size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    auto i = ready.top();
    ready.pop();
    order.push_back(i);
    for (auto u : users[i])
      if (--pending[u] == 0) ready.push(u);
  }
  if (order.size() == n) return order;
  // Walk back along unfinished dependencies from an unfinished op until an
  // op repeats: that loop is a cycle worth printing.
  std::size_t start = 0;
  while (pending[start] == 0) ++start;
  std::vector<std::size_t> path;
  std::vector<int> pos(n, -1);
  std::size_t cur = start;
  while (pos[cur] < 0) {
    pos[cur] = static_cast<int>(path.size());
    path.push_back(cur);
    for (auto d : deps[cur])
      if (pending[d] > 0) {
        cur = d;
        break;
      }
  }
  std::vector<std::size_t> cyc(path.begin() + pos[cur], path.end());
  std::reverse(cyc.begin(), cyc.end());  // producer -> consumer order
  // Start at the op listed first, so the message points at the earliest line.
  std::rotate(cyc.begin(), std::min_element(cyc.begin(), cyc.end()), cyc.end());
  std::string chain;
  for (auto i : cyc) chain += "'" + ops[i].name + "' -> ";
  chain += "'" + ops[cyc.front()].name + "'";
  throw WorkloadError(ops[cyc.front()].loc, op_path(ops[cyc.front()]), "dependency cycle: " + chain);
}

void Workload::order_ops() {
  auto order = topo_order();
  std::vector<Op> sorted;
  sorted.reserve(ops.size());
  for (auto i : order) sorted.push_back(std::move(ops[i]));
  ops = std::move(sorted);
}

void Workload::validate() const {
  std::vector<Diagnostic> diags;
  auto add = [&](const SourceLoc& l, std::string path, std::string msg) {
    diags.push_back({l.known() ? l : SourceLoc{loc.file, 0, 0}, std::move(path), std::move(msg)});
  };
  if (version != kWorkloadFormatVersion)
    add(loc, "tpusim_workload",
        "expected version " + std::to_string(kWorkloadFormatVersion) + ", found " + std::to_string(version));
  if (name.empty()) add(loc, "name", "expected a non-empty workload name");

  std::set<std::string> mesh_names;
  for (const auto& m : mesh.axes) {
    if (!mesh_names.insert(m.name).second) add(loc, "mesh." + m.name, "mesh axis declared twice");
    if (m.size < 1) add(loc, "mesh." + m.name, "expected a size >= 1, found " + std::to_string(m.size));
    if (m.size > kMaxMeshSize)
      add(loc, "mesh." + m.name,
          "expected a size <= " + std::to_string(kMaxMeshSize) + " chips, found " + std::to_string(m.size));
  }

  std::unordered_map<std::string, const Tensor*> tmap;
  for (const auto& t : tensors) {
    std::string p = "tensor '" + t.name + "'";
    if (t.name.empty()) add(t.loc, "tensors", "expected a non-empty tensor name");
    auto [it, fresh] = tmap.emplace(t.name, &t);
    if (!fresh)
      add(t.loc, p,
          "tensor declared twice" +
              (it->second->loc.known() ? " (first at " + it->second->loc.str() + ")" : std::string()));
    for (auto d : t.shape)
      if (d < 1) {
        add(t.loc, p, "shape: expected dims >= 1, found " + shape_str(t.shape));
        break;
      }
    if (auto why = shape_size_problem(t.shape, t.dtype); !why.empty()) add(t.loc, p, why);
  }

  std::set<std::string> op_names;
  std::unordered_map<std::string, const Op*> producer;
  bool graph_ok = true;
  for (const auto& op : ops) {
    std::string p = op_path(op);
    if (op.name.empty()) add(op.loc, "ops", "expected a non-empty op name");
    if (!op_names.insert(op.name).second) add(op.loc, p, "op name used twice");
    if (op.outputs.size() != 1)
      add(op.loc, p, "wrong output count: expected 1 output, found " + std::to_string(op.outputs.size()));
    std::vector<TensorType> in_types;
    bool inputs_ok = true;
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      auto it = tmap.find(op.inputs[i]);
      if (it == tmap.end()) {
        add(op.loc, p, "unknown tensor '" + op.inputs[i] + "' referenced as input " + std::to_string(i));
        inputs_ok = false;
      } else {
        in_types.push_back({it->second->shape, it->second->dtype});
      }
    }
    for (const auto& out : op.outputs) {
      auto it = tmap.find(out);
      if (it == tmap.end()) {
        add(op.loc, p, "unknown tensor '" + out + "' referenced as output");
        continue;
      }
      if (it->second->is_source())
        add(op.loc, p,
            "writes tensor '" + out + "' of kind " + std::string(tensor_kind_name(it->second->kind)) +
                "; expected an activation or output tensor");
      auto [pit, fresh] = producer.emplace(out, &op);
      if (!fresh) {
        graph_ok = false;
        add(op.loc, p,
            "tensor '" + out + "' produced twice: already produced by op '" + pit->second->name + "'" +
                (pit->second->loc.known() ? " at " + pit->second->loc.str() : ""));
      }
    }
    if (!inputs_ok) continue;
    try {
      auto types = infer_output_types(op, in_types, this);
      for (std::size_t i = 0; i < op.outputs.size() && i < types.size(); ++i) {
        auto it = tmap.find(op.outputs[i]);
        if (it == tmap.end()) continue;
        const Tensor& t = *it->second;
        if (t.shape != types[i].shape)
          add(op.loc, p,
              "shape mismatch on output '" + t.name + "': inferred " + shape_str(types[i].shape) + ", declared " +
                  shape_str(t.shape) + (t.loc.known() ? " at " + t.loc.str() : ""));
        if (t.dtype != types[i].dtype)
          add(op.loc, p,
              "dtype mismatch on output '" + t.name + "': inferred " + std::string(arch::dtype_name(types[i].dtype)) +
                  ", declared " + std::string(arch::dtype_name(t.dtype)) + (t.loc.known() ? " at " + t.loc.str() : ""));
      }
    } catch (const WorkloadError& e) {
      for (const auto& d : e.diagnostics()) add(d.loc.known() ? d.loc : op.loc, d.path, d.message);
    }
  }
  for (const auto& t : tensors)
    if (!t.is_source() && !producer.count(t.name))
      add(t.loc, "tensor '" + t.name + "'",
          "tensor of kind " + std::string(tensor_kind_name(t.kind)) +
              " is produced by no op (declare it as input, weight or kv_cache)");

  if (graph_ok) {
    try {
      topo_order();
    } catch (const WorkloadError& e) {
      for (const auto& d : e.diagnostics()) diags.push_back(d);
    }
  }
  // Counts derived from the shapes (FLOPs, bytes) must fit 64 bits: the
  // lowering and the results take them as exact.
  if (diags.empty()) {
    try {
      workload_cost(*this);
    } catch (const WorkloadError& e) {
      for (const auto& d : e.diagnostics()) diags.push_back(d);
    }
  }
  if (!diags.empty()) throw WorkloadError(std::move(diags));
}

}  // namespace tpusim::workloads
