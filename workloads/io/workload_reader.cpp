// Reader of the YAML/JSON workload format (see workload_file.h and
// docs/workload-format.md). Parsing is two-phase: first every key is checked
// and converted (collecting all errors), then output tensors that the file
// leaves undeclared are inferred in dependency order and the result is
// validated.
// This file reads the document, its tensors and its ops; the other parts
// are listed in workload_reader.h.
#include "workloads/io/workload_reader.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include "workloads/io/input_file.h"
#include "workloads/io/suggest.h"
#include "workloads/io/workload_file.h"
#include "workloads/io/yaml_strict.h"
#include "workloads/ir/shape_inference.h"

namespace tpusim::workloads {
namespace detail {

Workload Reader::read(const YAML::Node& root) {
  Workload wl;
  wl.loc = {file_, 0, 0};
  if (!root.IsMap()) {
    error(root, "",
          std::string("expected a map with keys tpusim_workload, name, tensors, ops; found ") + node_kind(root));
    throw WorkloadError(diags_);
  }
  check_keys(root, "", {"tpusim_workload", "name", "description", "mesh", "tensors", "ops"});
  if (auto v = root["tpusim_workload"]) {
    if (auto i = get_int(v, "tpusim_workload")) {
      wl.version = static_cast<int>(*i);
      if (*i != kWorkloadFormatVersion)
        error(v, "tpusim_workload",
              "expected format version " + std::to_string(kWorkloadFormatVersion) + ", found " + std::to_string(*i));
    }
  } else {
    error(root, "tpusim_workload", "missing key (expected the format version: tpusim_workload: 1)");
  }
  if (auto v = root["name"]) {
    if (auto s = get_str(v, "name")) wl.name = *s;
  } else {
    error(root, "name", "missing key (expected the workload name)");
  }
  if (auto v = root["description"])
    if (auto s = get_str(v, "description")) wl.description = *s;
  if (auto m = root["mesh"]) read_mesh(m, wl);
  std::vector<PendingTensor> tensors;
  if (auto t = root["tensors"]) {
    if (!t.IsSequence())
      error(t, "tensors", std::string("expected a list of tensors, found ") + node_kind(t));
    else
      for (std::size_t i = 0; i < t.size(); ++i) read_tensor(t[i], "tensors[" + std::to_string(i) + "]", tensors);
  }
  std::vector<PendingOp> ops;
  if (auto o = root["ops"]) {
    if (!o.IsSequence())
      error(o, "ops", std::string("expected a list of ops, found ") + node_kind(o));
    else
      for (std::size_t i = 0; i < o.size(); ++i) read_op(o[i], i, ops);
  } else {
    error(root, "ops", "missing key (expected a list of ops)");
  }
  if (!diags_.empty()) throw WorkloadError(diags_);
  resolve(wl, tensors, ops);
  if (!diags_.empty()) throw WorkloadError(diags_);
  wl.validate();
  wl.order_ops();  // the format allows any order; consumers follow producers from here on
  return wl;
}

void Reader::read_mesh(const YAML::Node& m, Workload& wl) {
  if (!m.IsMap()) {
    error(m, "mesh",
          std::string("expected a map of axis name to size (e.g. {data: 4, model: 8}), found ") + node_kind(m));
    return;
  }
  for (auto it = m.begin(); it != m.end(); ++it) {
    std::string name = it->first.Scalar();
    if (auto sz = get_int(it->second, "mesh." + name)) {
      if (*sz < 1) error(it->second, "mesh." + name, "expected a size >= 1, found " + std::to_string(*sz));
      wl.mesh.axes.push_back({name, *sz, {}});
    }
  }
}

void Reader::read_tensor(const YAML::Node& n, const std::string& path, std::vector<PendingTensor>& out) {
  if (!n.IsMap()) {
    error(n, path, std::string("expected a tensor map {name, shape, dtype, kind, space}, found ") + node_kind(n));
    return;
  }
  PendingTensor p;
  p.t.loc = at(n);
  p.t.kind = TensorKind::input;
  std::string suffix;
  if (auto v = n["name"]) {
    if (auto s = get_str(v, join(path, "name"))) p.t.name = *s;
    suffix = " (tensor '" + p.t.name + "')";
  } else {
    error(n, path, "missing key 'name'");
  }
  check_keys(n, path, {"name", "shape", "dtype", "kind", "space", "scales", "group", "scale_dtype", "sparsity"},
             suffix);
  if (auto v = n["kind"])
    if (auto k = get_enum<TensorKind>(
            v, join(path, "kind") + suffix, "tensor kind",
            {TensorKind::input, TensorKind::weight, TensorKind::activation, TensorKind::kv_cache, TensorKind::output},
            parse_tensor_kind, tensor_kind_name))
      p.t.kind = *k;
  if (auto v = n["space"])
    if (auto s = get_enum<MemSpace>(v, join(path, "space") + suffix, "memory space",
                                    {MemSpace::hbm, MemSpace::vmem, MemSpace::cmem}, parse_mem_space, mem_space_name))
      p.t.space = *s;
  if (auto v = n["shape"]) {
    if (auto s = get_ints(v, join(path, "shape") + suffix)) {
      p.t.shape = *s;
      p.has_shape = true;
    }
  } else if (p.t.is_source()) {
    error(n, join(path, "shape") + suffix,
          "missing key (tensors of kind " + std::string(tensor_kind_name(p.t.kind)) + " need a shape)");
  }
  if (auto v = n["dtype"]) {
    if (auto d = get_dtype(v, join(path, "dtype") + suffix)) {
      p.t.dtype = *d;
      p.has_dtype = true;
    }
  } else if (p.t.is_source()) {
    error(n, join(path, "dtype") + suffix,
          "missing key (tensors of kind " + std::string(tensor_kind_name(p.t.kind)) + " need a dtype)");
  }
  if (p.has_shape)
    if (auto why = shape_size_problem(p.t.shape, p.t.dtype); !why.empty()) error(n, join(path, "shape") + suffix, why);
  read_storage(n, path, suffix, p.t);
  out.push_back(std::move(p));
}

void Reader::read_op(const YAML::Node& n, std::size_t index, std::vector<PendingOp>& out) {
  std::string base = "ops[" + std::to_string(index) + "]";
  if (!n.IsMap()) {
    error(n, base, std::string("expected an op map {name, op, inputs, ...}, found ") + node_kind(n));
    return;
  }
  PendingOp p;
  Op& op = p.op;
  op.loc = at(n);
  if (auto v = n["name"]) {
    if (auto s = get_str(v, base + ".name")) op.name = *s;
  } else {
    error(n, base + ".name", "missing key (every op needs a name)");
  }
  std::string suffix = op.name.empty() ? "" : " (op '" + op.name + "')";
  p.path = base + suffix;
  auto key = [&](const std::string& k) { return base + "." + k + suffix; };

  std::optional<EwKind> shorthand;
  auto kind_node = n["op"];
  if (!kind_node) {
    error(n, key("op"), "missing key (expected the op kind, e.g. op: matmul)");
    return;
  }
  auto kind_str = get_str(kind_node, key("op"));
  if (!kind_str) return;
  if (auto k = parse_op_kind(*kind_str)) {
    op.kind = *k;
  } else if (auto e = parse_ew_kind(*kind_str)) {
    op.kind = OpKind::elementwise;  // "op: add" is short for op: elementwise, fn: add
    shorthand = e;
  } else {
    std::vector<std::string> names;
    for (OpKind k2 : kAllOpKinds) names.emplace_back(op_kind_name(k2));
    for (auto e2 : all_ew_kind_names()) names.emplace_back(e2);
    std::string near = nearest_candidate(*kind_str, names);
    error(kind_node, key("op"),
          "unknown op kind '" + *kind_str + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)"));
    return;
  }
  std::vector<std::string> allowed = {"name", "op", "inputs", "output", "outputs"};
  for (auto& k : attr_keys(op.kind))
    if (!(shorthand && k == "fn")) allowed.push_back(k);
  check_keys(n, base, allowed, suffix);

  if (auto v = n["inputs"]) {
    if (auto s = get_strs(v, key("inputs"), true)) op.inputs = *s;
  } else {
    error(n, key("inputs"), "missing key (expected a list of input tensor names)");
  }
  if (n["output"] && n["outputs"]) error(n["outputs"], key("outputs"), "give either output or outputs, not both");
  if (auto v = n["output"]) {
    if (auto s = get_str(v, key("output"))) op.outputs = {*s};
  } else if (auto v2 = n["outputs"]) {
    if (auto s = get_strs(v2, key("outputs"))) op.outputs = *s;
  } else {
    op.outputs = {op.name};
  }
  op.attrs = default_attrs(op.kind);
  read_attrs(n, op, shorthand, key, p);
  out.push_back(std::move(p));
}

}  // namespace detail

namespace {

Workload parse(const std::string& text, const std::string& filename) {
  YAML::Node root;
  try {
    root = load_yaml_strict(text);
  } catch (const YAML::Exception& e) {
    throw WorkloadError(SourceLoc{filename, e.mark.line + 1, e.mark.column + 1}, "", "YAML syntax error: " + e.msg);
  }
  return detail::Reader(filename).read(root);
}

}  // namespace

Workload read_workload_string(const std::string& text, const std::string& filename) { return parse(text, filename); }

Workload read_workload_file(const std::string& path) {
  if (auto why = input_file_problem(path); !why.empty())
    throw WorkloadError(SourceLoc{path, 0, 0}, "", "cannot read workload file: " + why);
  std::ifstream in(path);
  if (!in) throw WorkloadError(SourceLoc{path, 0, 0}, "", "cannot open workload file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

}  // namespace tpusim::workloads
