// Output inference of the workload reader: output tensors the file leaves
// undeclared (or partial) get their shape and dtype from the ops that
// produce them, in dependency order; unknown inputs and cycles are
// reported. See workload_reader.h.
#include <functional>
#include <queue>
#include <set>
#include <unordered_map>

#include "workloads/io/workload_reader.h"
#include "workloads/ir/shape_inference.h"

namespace tpusim::workloads::detail {

void Reader::resolve(Workload& wl, std::vector<PendingTensor>& tensors, std::vector<PendingOp>& ops) {
  std::unordered_map<std::string, std::size_t> index;  // name -> position in tensors
  for (std::size_t i = 0; i < tensors.size(); ++i) index.emplace(tensors[i].t.name, i);
  std::set<std::string> known;  // tensors whose type is complete
  for (const auto& p : tensors)
    if (p.has_shape && p.has_dtype) known.insert(p.t.name);
  std::set<std::string> consumed;
  for (const auto& p : ops) consumed.insert(p.op.inputs.begin(), p.op.inputs.end());

  // Kahn's algorithm over tensor names; among ready ops the lowest index
  // goes first so tensors are created in a deterministic order.
  std::vector<bool> done(ops.size(), false);
  std::vector<std::size_t> missing(ops.size(), 0);
  std::unordered_map<std::string, std::vector<std::size_t>> waiting;
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    std::set<std::string> distinct(ops[i].op.inputs.begin(), ops[i].op.inputs.end());
    for (const auto& in : distinct)
      if (!known.count(in)) {
        ++missing[i];
        waiting[in].push_back(i);
      }
    if (missing[i] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    std::size_t i = ready.top();
    ready.pop();
    {
      Op& op = ops[i].op;
      done[i] = true;
      std::vector<TensorType> in_types;
      for (const auto& in : op.inputs) {
        const Tensor& t = tensors[index.at(in)].t;
        in_types.push_back({t.shape, t.dtype});
      }
      std::vector<TensorType> outs;
      try {
        if (ops[i].default_equation) resolve_equation(ops[i], in_types);
        outs = infer_output_types(op, in_types, &wl);
      } catch (const WorkloadError& e) {
        for (const auto& d : e.diagnostics()) diags_.push_back({op.loc, d.path, d.message});
        continue;
      }
      for (std::size_t k = 0; k < op.outputs.size() && k < outs.size(); ++k) {
        const std::string& name = op.outputs[k];
        auto it = index.find(name);
        if (it == index.end()) {
          Tensor t{name,
                   outs[k].shape,
                   outs[k].dtype,
                   op.kind == OpKind::copy ? op.as<CopyAttrs>().to : MemSpace::hbm,  // a copy's result lives where it goes
                   consumed.count(name) ? TensorKind::activation : TensorKind::output,
                   op.loc,
                   {},
                   {}};
          index.emplace(name, tensors.size());
          tensors.push_back({t, true, true});
        } else {
          PendingTensor& p = tensors[it->second];
          if (p.t.is_source()) continue;  // validate() reports writing a source tensor
          if (!p.has_shape) p.t.shape = outs[k].shape;
          if (!p.has_dtype) p.t.dtype = outs[k].dtype;
          p.has_shape = p.has_dtype = true;
        }
        if (known.insert(name).second)
          for (auto w : waiting[name])
            if (--missing[w] == 0) ready.push(w);
      }
    }
  }
  // Ops never reached: an input is unknown, or they sit on a cycle.
  std::set<std::string> produced;
  for (const auto& p : ops) produced.insert(p.op.outputs.begin(), p.op.outputs.end());
  bool blocked_by_cycle = false;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (done[i]) continue;
    const Op& op = ops[i].op;
    std::string path = "op '" + op.name + "' (" + std::string(op_kind_name(op.kind)) + ")";
    bool any_unknown = false;
    for (std::size_t k = 0; k < op.inputs.size(); ++k) {
      const auto& in = op.inputs[k];
      if (!index.count(in) && !produced.count(in)) {
        std::vector<std::string> names;
        for (const auto& p : tensors) names.push_back(p.t.name);
        for (const auto& p2 : produced) names.push_back(p2);
        std::string near = nearest_candidate(in, names);
        diags_.push_back({op.loc, path,
                          "unknown tensor '" + in + "' referenced as input " + std::to_string(k) +
                              (near.empty() ? "" : " (did you mean '" + near + "'?)")});
        any_unknown = true;
      }
    }
    if (!any_unknown) blocked_by_cycle = true;
  }
  for (auto& p : tensors) wl.tensors.push_back(std::move(p.t));
  for (auto& p : ops) wl.ops.push_back(std::move(p.op));
  if (blocked_by_cycle && diags_.empty()) {
    try {
      wl.topo_order();
    } catch (const WorkloadError& e) {
      for (const auto& d : e.diagnostics()) diags_.push_back(d);
    }
    if (diags_.empty())  // not a cycle: an upstream op failed or an output was never inferred
      diags_.push_back({wl.loc, "ops", "some ops could not be resolved because an input has no known shape"});
  }
}

void Reader::resolve_equation(PendingOp& p, const std::vector<TensorType>& in) {
  if (in.size() != 2) return;  // operand count is reported by inference
  auto& a = p.op.as<MatmulAttrs>();
  int lr = static_cast<int>(in[0].shape.size()), rr = static_cast<int>(in[1].shape.size());
  if (p.dot_dims.empty()) {
    a.equation = default_matmul_equation(lr, rr);
    return;
  }
  auto cv = [](const std::vector<std::int64_t>& v) { return std::vector<int>(v.begin(), v.end()); };
  const auto& d = p.dot_dims;
  a.equation = dot_general_equation(lr, rr, cv(d[0]), cv(d[1]), cv(d[2]), cv(d[3]));
}

}  // namespace tpusim::workloads::detail
