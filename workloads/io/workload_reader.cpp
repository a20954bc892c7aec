// Reader of the YAML/JSON workload format (see workload_file.h and
// docs/workload-format.md). Parsing is two-phase: first every key is checked
// and converted (collecting all errors), then output tensors that the file
// leaves undeclared are inferred in dependency order and the result is
// validated.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <queue>
#include <set>
#include <sstream>
#include <unordered_map>

#include "workloads/io/suggest.h"
#include "workloads/io/workload_file.h"
#include "workloads/io/input_file.h"
#include "workloads/io/yaml_strict.h"
#include "workloads/ir/shape_inference.h"

namespace tpusim::workloads {

namespace {

const char* node_kind(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar:
    case YAML::NodeType::Undefined: return "a scalar";
  }
  return "a scalar";
}

// A tensor entry before inference: shape/dtype may be left to inference
// for tensors that ops produce.
struct PendingTensor {
  Tensor t;
  bool has_shape = false;
  bool has_dtype = false;
};

struct PendingOp {
  Op op;
  bool default_equation = false;  // matmul without equation/dims: resolve from ranks
  std::string path;               // "ops[3] (op 'name')" for messages
  // dot_general dims (lhs_batch, rhs_batch, lhs_contracting, rhs_contracting)
  // when the file gives them instead of an equation.
  std::vector<std::vector<std::int64_t>> dot_dims;
};

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  Workload read(const YAML::Node& root) {
    Workload wl;
    wl.loc = {file_, 0, 0};
    if (!root.IsMap()) {
      error(root, "", std::string("expected a map with keys tpusim_workload, name, tensors, ops; found ") +
                          node_kind(root));
      throw WorkloadError(diags_);
    }
    check_keys(root, "", {"tpusim_workload", "name", "description", "mesh", "tensors", "ops"});
    if (auto v = root["tpusim_workload"]) {
      if (auto i = get_int(v, "tpusim_workload")) {
        wl.version = static_cast<int>(*i);
        if (*i != kWorkloadFormatVersion)
          error(v, "tpusim_workload", "expected format version " + std::to_string(kWorkloadFormatVersion) +
                                          ", found " + std::to_string(*i));
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
      if (!t.IsSequence()) error(t, "tensors", std::string("expected a list of tensors, found ") + node_kind(t));
      else
        for (std::size_t i = 0; i < t.size(); ++i) read_tensor(t[i], "tensors[" + std::to_string(i) + "]", tensors);
    }
    std::vector<PendingOp> ops;
    if (auto o = root["ops"]) {
      if (!o.IsSequence()) error(o, "ops", std::string("expected a list of ops, found ") + node_kind(o));
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

 private:
  SourceLoc at(const YAML::Node& n) const {
    YAML::Mark m = n.Mark();
    if (m.line < 0) return {file_, 0, 0};
    return {file_, m.line + 1, m.column + 1};
  }

  void error(const YAML::Node& n, const std::string& path, const std::string& msg) {
    diags_.push_back({at(n), path, msg});
  }

  // "tensors[0].shape (tensor 'x')" + index 1 -> "tensors[0].shape[1] (tensor 'x')".
  static std::string index_path(const std::string& path, std::size_t i) {
    std::string idx = "[" + std::to_string(i) + "]";
    auto p = path.find(" (");
    return p == std::string::npos ? path + idx : path.substr(0, p) + idx + path.substr(p);
  }

  static std::string join(const std::string& base, const std::string& key) {
    return base.empty() ? key : base + "." + key;
  }

  void check_keys(const YAML::Node& map, const std::string& path, const std::vector<std::string>& allowed,
                  const std::string& suffix = "") {
    for (auto it = map.begin(); it != map.end(); ++it) {
      std::string key = it->first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string near = nearest_candidate(key, allowed);
      std::string valid;
      for (const auto& a : allowed) valid += (valid.empty() ? "" : ", ") + a;
      error(it->first, join(path, key) + suffix,
            "unknown key '" + key + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                "; valid keys here: " + valid);
    }
  }

  std::optional<std::string> get_str(const YAML::Node& n, const std::string& path) {
    if (!n.IsScalar()) {
      error(n, path, std::string("expected a string, found ") + node_kind(n));
      return std::nullopt;
    }
    return n.Scalar();
  }

  std::optional<std::int64_t> get_int(const YAML::Node& n, const std::string& path) {
    if (!n.IsScalar()) {
      error(n, path, std::string("expected an integer, found ") + node_kind(n));
      return std::nullopt;
    }
    const std::string& s = n.Scalar();
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno == ERANGE) {
      error(n, path, "expected an integer, found '" + s + "'");
      return std::nullopt;
    }
    return static_cast<std::int64_t>(v);
  }

  std::optional<double> get_double(const YAML::Node& n, const std::string& path) {
    if (!n.IsScalar()) {
      error(n, path, std::string("expected a number, found ") + node_kind(n));
      return std::nullopt;
    }
    const std::string& s = n.Scalar();
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0') {
      error(n, path, "expected a number, found '" + s + "'");
      return std::nullopt;
    }
    return v;
  }

  std::optional<bool> get_bool(const YAML::Node& n, const std::string& path) {
    if (n.IsScalar()) {
      const std::string& s = n.Scalar();
      if (s == "true" || s == "True" || s == "1") return true;
      if (s == "false" || s == "False" || s == "0") return false;
      error(n, path, "expected true or false, found '" + s + "'");
    } else {
      error(n, path, std::string("expected true or false, found ") + node_kind(n));
    }
    return std::nullopt;
  }

  // An integer list; a single integer is accepted as a one-element list
  // when `scalar_ok`.
  std::optional<std::vector<std::int64_t>> get_ints(const YAML::Node& n, const std::string& path,
                                                    bool scalar_ok = false) {
    std::vector<std::int64_t> v;
    if (scalar_ok && n.IsScalar()) {
      if (auto i = get_int(n, path)) return std::vector<std::int64_t>{*i};
      return std::nullopt;
    }
    if (!n.IsSequence()) {
      error(n, path, std::string("expected a list of integers, found ") + node_kind(n));
      return std::nullopt;
    }
    bool ok = true;
    for (std::size_t i = 0; i < n.size(); ++i) {
      if (auto x = get_int(n[i], index_path(path, i))) v.push_back(*x);
      else ok = false;
    }
    if (!ok) return std::nullopt;
    return v;
  }

  std::optional<std::vector<std::string>> get_strs(const YAML::Node& n, const std::string& path,
                                                   bool scalar_ok = false) {
    if (scalar_ok && n.IsScalar()) return std::vector<std::string>{n.Scalar()};
    if (!n.IsSequence()) {
      error(n, path, std::string("expected a list of names, found ") + node_kind(n));
      return std::nullopt;
    }
    std::vector<std::string> v;
    bool ok = true;
    for (std::size_t i = 0; i < n.size(); ++i) {
      if (auto s = get_str(n[i], index_path(path, i))) v.push_back(*s);
      else ok = false;
    }
    if (!ok) return std::nullopt;
    return v;
  }

  std::optional<DType> get_dtype(const YAML::Node& n, const std::string& path) {
    auto s = get_str(n, path);
    if (!s) return std::nullopt;
    if (auto d = arch::parse_dtype(*s)) return d;
    std::vector<std::string> names;
    for (DType t : arch::kAllDTypes) names.emplace_back(arch::dtype_name(t));
    std::string near = nearest_candidate(*s, names);
    std::string all;
    for (const auto& x : names) all += (all.empty() ? "" : ", ") + x;
    error(n, path, "unknown dtype '" + *s + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                       "; expected one of " + all);
    return std::nullopt;
  }

  template <class E, class Parse, class Name>
  std::optional<E> get_enum(const YAML::Node& n, const std::string& path, const char* what,
                            std::initializer_list<E> values, Parse parse, Name name) {
    auto s = get_str(n, path);
    if (!s) return std::nullopt;
    if (auto e = parse(*s)) return e;
    std::vector<std::string> names;
    for (E v : values) names.emplace_back(name(v));
    std::string near = nearest_candidate(*s, names), all;
    for (const auto& x : names) all += (all.empty() ? "" : ", ") + x;
    error(n, path, std::string("unknown ") + what + " '" + *s + "'" +
                       (near.empty() ? "" : " (did you mean '" + near + "'?)") + "; expected one of " + all);
    return std::nullopt;
  }

  void read_mesh(const YAML::Node& m, Workload& wl) {
    if (!m.IsMap()) {
      error(m, "mesh", std::string("expected a map of axis name to size (e.g. {data: 4, model: 8}), found ") +
                           node_kind(m));
      return;
    }
    for (auto it = m.begin(); it != m.end(); ++it) {
      std::string name = it->first.Scalar();
      if (auto sz = get_int(it->second, "mesh." + name)) {
        if (*sz < 1) error(it->second, "mesh." + name, "expected a size >= 1, found " + std::to_string(*sz));
        wl.mesh.axes.push_back({name, *sz});
      }
    }
  }

  void read_tensor(const YAML::Node& n, const std::string& path, std::vector<PendingTensor>& out) {
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
    check_keys(n, path, {"name", "shape", "dtype", "kind", "space"}, suffix);
    if (auto v = n["kind"])
      if (auto k = get_enum<TensorKind>(v, join(path, "kind") + suffix, "tensor kind",
                                        {TensorKind::input, TensorKind::weight, TensorKind::activation,
                                         TensorKind::kv_cache, TensorKind::output},
                                        parse_tensor_kind, tensor_kind_name))
        p.t.kind = *k;
    if (auto v = n["space"])
      if (auto s = get_enum<MemSpace>(v, join(path, "space") + suffix, "memory space",
                                      {MemSpace::hbm, MemSpace::vmem, MemSpace::cmem}, parse_mem_space,
                                      mem_space_name))
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
    out.push_back(std::move(p));
  }

  // Keys each op kind accepts besides name/op/inputs/output(s).
  static std::vector<std::string> attr_keys(OpKind k) {
    switch (k) {
      case OpKind::matmul:
        return {"equation", "lhs_batch", "rhs_batch", "lhs_contracting", "rhs_contracting", "out_dtype"};
      case OpKind::conv2d: return {"stride", "dilation", "padding", "groups", "out_dtype"};
      case OpKind::elementwise: return {"fn", "to"};
      case OpKind::reduce: return {"fn", "axes", "keep_dims"};
      case OpKind::softmax: return {"axis"};
      case OpKind::layer_norm:
      case OpKind::rms_norm: return {"axis", "epsilon"};
      case OpKind::attention: return {"causal", "scale"};
      case OpKind::gather: return {};
      case OpKind::transpose: return {"perm"};
      case OpKind::reshape: return {"shape"};
      case OpKind::concat: return {"axis"};
      case OpKind::slice: return {"start", "limit", "stride"};
      case OpKind::all_gather: return {"mesh_axes", "dim"};
      case OpKind::reduce_scatter: return {"mesh_axes", "dim", "reduce"};
      case OpKind::all_reduce: return {"mesh_axes", "reduce"};
      case OpKind::all_to_all: return {"mesh_axes", "split_dim", "concat_dim"};
      case OpKind::collective_permute: return {"mesh_axes", "pairs"};
      case OpKind::broadcast: return {"mesh_axes", "root"};
    }
    return {};
  }

  // A pair [h, w] or a single integer for both.
  bool get_hw(const YAML::Node& n, const std::string& path, std::int64_t& h, std::int64_t& w) {
    auto v = get_ints(n, path, true);
    if (!v) return false;
    if (v->size() == 1) {
      h = w = (*v)[0];
      return true;
    }
    if (v->size() == 2) {
      h = (*v)[0];
      w = (*v)[1];
      return true;
    }
    error(n, path, "expected an integer or [h, w], found " + std::to_string(v->size()) + " values");
    return false;
  }

  void read_op(const YAML::Node& n, std::size_t index, std::vector<PendingOp>& out) {
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
      error(kind_node, key("op"), "unknown op kind '" + *kind_str + "'" +
                                      (near.empty() ? "" : " (did you mean '" + near + "'?)"));
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

  template <class Key>
  void read_attrs(const YAML::Node& n, Op& op, std::optional<EwKind> shorthand, Key key, PendingOp& p) {
    auto opt_dtype = [&](std::optional<DType>& dst, const char* k) {
      if (auto v = n[k])
        if (auto d = get_dtype(v, key(k))) dst = d;
    };
    auto int_key = [&](std::int64_t& dst, const char* k, bool required) {
      if (auto v = n[k]) {
        if (auto i = get_int(v, key(k))) dst = *i;
      } else if (required) {
        error(n, key(k), "missing key (expected an integer)");
      }
    };
    auto ints_key = [&](std::vector<std::int64_t>& dst, const char* k, bool required, bool scalar_ok) {
      if (auto v = n[k]) {
        if (auto i = get_ints(v, key(k), scalar_ok)) dst = *i;
      } else if (required) {
        error(n, key(k), "missing key (expected a list of integers)");
      }
    };
    auto reduce_enum = [&](const YAML::Node& v, const std::string& path) {
      return get_enum<ReduceKind>(v, path, "reduction",
                                  {ReduceKind::sum, ReduceKind::max, ReduceKind::min, ReduceKind::mean},
                                  parse_reduce_kind, reduce_kind_name);
    };
    switch (op.kind) {
      case OpKind::matmul: {
        auto& a = op.as<MatmulAttrs>();
        opt_dtype(a.out_dtype, "out_dtype");
        bool dims = n["lhs_contracting"] || n["rhs_contracting"] || n["lhs_batch"] || n["rhs_batch"];
        if (auto v = n["equation"]) {
          if (dims) error(v, key("equation"), "give either equation or the *_batch/*_contracting dims, not both");
          if (auto s = get_str(v, key("equation"))) {
            a.equation = *s;
            try {
              parse_einsum(*s);
            } catch (const WorkloadError& e) {
              error(v, key("equation"), e.diagnostics().at(0).message);
            }
          }
        } else if (dims) {
          std::vector<std::int64_t> lb, rb, lc, rc;
          ints_key(lb, "lhs_batch", false, false);
          ints_key(rb, "rhs_batch", false, false);
          ints_key(lc, "lhs_contracting", true, false);
          ints_key(rc, "rhs_contracting", true, false);
          p.default_equation = true;  // ranks needed: resolved with the input shapes
          p.dot_dims = {lb, rb, lc, rc};
        } else {
          p.default_equation = true;
        }
        break;
      }
      case OpKind::conv2d: {
        auto& a = op.as<Conv2dAttrs>();
        if (auto v = n["stride"]) get_hw(v, key("stride"), a.stride_h, a.stride_w);
        if (auto v = n["dilation"]) get_hw(v, key("dilation"), a.dilation_h, a.dilation_w);
        int_key(a.groups, "groups", false);
        opt_dtype(a.out_dtype, "out_dtype");
        if (auto v = n["padding"]) {
          if (v.IsScalar() && (v.Scalar() == "same" || v.Scalar() == "valid")) {
            a.padding = *parse_padding_mode(v.Scalar());
          } else if (auto pads = get_ints(v, key("padding"), true)) {
            a.padding = PaddingMode::explicit_pads;
            if (pads->size() == 1) {
              a.pad_top = a.pad_bottom = a.pad_left = a.pad_right = (*pads)[0];
            } else if (pads->size() == 4) {
              a.pad_top = (*pads)[0];
              a.pad_bottom = (*pads)[1];
              a.pad_left = (*pads)[2];
              a.pad_right = (*pads)[3];
            } else {
              error(v, key("padding"), "expected same, valid, an integer or [top, bottom, left, right], found " +
                                           std::to_string(pads->size()) + " values");
            }
          } else {
            diags_.back().message = "expected same, valid, an integer or [top, bottom, left, right], found '" +
                                    (v.IsScalar() ? v.Scalar() : std::string(node_kind(v))) + "'";
          }
        }
        break;
      }
      case OpKind::elementwise: {
        auto& a = op.as<ElementwiseAttrs>();
        if (shorthand) {
          a.kind = *shorthand;
        } else if (auto v = n["fn"]) {
          std::vector<std::string> names;
          for (auto e : all_ew_kind_names()) names.emplace_back(e);
          if (auto s = get_str(v, key("fn"))) {
            if (auto e = parse_ew_kind(*s)) {
              a.kind = *e;
            } else {
              std::string near = nearest_candidate(*s, names), all;
              for (const auto& x : names) all += (all.empty() ? "" : ", ") + x;
              error(v, key("fn"), "unknown elementwise function '" + *s + "'" +
                                      (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                                      "; expected one of " + all);
            }
          }
        } else {
          error(n, key("fn"), "missing key (expected the elementwise function, e.g. fn: add)");
        }
        opt_dtype(a.to, "to");
        break;
      }
      case OpKind::reduce: {
        auto& a = op.as<ReduceAttrs>();
        if (auto v = n["fn"]) {
          if (auto r = reduce_enum(v, key("fn"))) a.kind = *r;
        } else {
          error(n, key("fn"), "missing key (expected sum, max, min or mean)");
        }
        ints_key(a.axes, "axes", true, true);
        if (auto v = n["keep_dims"])
          if (auto b = get_bool(v, key("keep_dims"))) a.keep_dims = *b;
        break;
      }
      case OpKind::softmax: int_key(op.as<SoftmaxAttrs>().axis, "axis", false); break;
      case OpKind::layer_norm:
      case OpKind::rms_norm: {
        auto& a = op.as<NormAttrs>();
        int_key(a.axis, "axis", false);
        if (auto v = n["epsilon"])
          if (auto d = get_double(v, key("epsilon"))) a.epsilon = *d;
        break;
      }
      case OpKind::attention: {
        auto& a = op.as<AttentionAttrs>();
        if (auto v = n["causal"])
          if (auto b = get_bool(v, key("causal"))) a.causal = *b;
        if (auto v = n["scale"])
          if (auto d = get_double(v, key("scale"))) a.scale = *d;
        break;
      }
      case OpKind::gather: break;
      case OpKind::transpose: ints_key(op.as<TransposeAttrs>().perm, "perm", true, false); break;
      case OpKind::reshape: ints_key(op.as<ReshapeAttrs>().shape, "shape", true, false); break;
      case OpKind::concat: int_key(op.as<ConcatAttrs>().axis, "axis", true); break;
      case OpKind::slice: {
        auto& a = op.as<SliceAttrs>();
        ints_key(a.start, "start", true, false);
        ints_key(a.limit, "limit", true, false);
        ints_key(a.stride, "stride", false, false);
        break;
      }
      case OpKind::all_gather:
      case OpKind::reduce_scatter:
      case OpKind::all_reduce:
      case OpKind::all_to_all:
      case OpKind::collective_permute:
      case OpKind::broadcast: {
        auto& a = op.as<CollectiveAttrs>();
        if (auto v = n["mesh_axes"]) {
          if (auto s = get_strs(v, key("mesh_axes"), true)) a.mesh_axes = *s;
        } else {
          error(n, key("mesh_axes"), "missing key (expected the mesh axis names to run over)");
        }
        bool dim_req = op.kind == OpKind::all_gather || op.kind == OpKind::reduce_scatter;
        int_key(a.dim, "dim", dim_req);
        bool a2a = op.kind == OpKind::all_to_all;
        int_key(a.split_dim, "split_dim", a2a);
        int_key(a.concat_dim, "concat_dim", a2a);
        int_key(a.root, "root", false);
        if (auto v = n["reduce"])
          if (auto r = reduce_enum(v, key("reduce"))) a.reduce = *r;
        if (auto v = n["pairs"]) {
          if (!v.IsSequence()) {
            error(v, key("pairs"), std::string("expected a list of [source, target] pairs, found ") + node_kind(v));
          } else {
            for (std::size_t i = 0; i < v.size(); ++i) {
              auto pr = get_ints(v[i], index_path(key("pairs"), i));
              if (pr && pr->size() == 2) a.pairs.emplace_back((*pr)[0], (*pr)[1]);
              else if (pr)
                error(v[i], index_path(key("pairs"), i),
                      "expected [source, target], found " + std::to_string(pr->size()) + " values");
            }
          }
        }
        break;
      }
    }
  }

  // Fills undeclared/partial output tensors by inference, in dependency order.
  void resolve(Workload& wl, std::vector<PendingTensor>& tensors, std::vector<PendingOp>& ops) {
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
            Tensor t{name, outs[k].shape, outs[k].dtype, MemSpace::hbm,
                     consumed.count(name) ? TensorKind::activation : TensorKind::output, op.loc};
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
          diags_.push_back({op.loc, path, "unknown tensor '" + in + "' referenced as input " + std::to_string(k) +
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

  void resolve_equation(PendingOp& p, const std::vector<TensorType>& in) {
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

  std::string file_;
  std::vector<Diagnostic> diags_;
};

Workload parse(const std::string& text, const std::string& filename) {
  YAML::Node root;
  try {
    root = load_yaml_strict(text);
  } catch (const YAML::Exception& e) {
    throw WorkloadError(SourceLoc{filename, e.mark.line + 1, e.mark.column + 1}, "",
                        "YAML syntax error: " + e.msg);
  }
  return Reader(filename).read(root);
}

}  // namespace

Workload read_workload_string(const std::string& text, const std::string& filename) {
  return parse(text, filename);
}

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
