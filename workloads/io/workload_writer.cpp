// Writer of the workload format as YAML or JSON (see workload_file.h). Both
// come from one ordered document tree so they always carry the same keys.
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "workloads/io/workload_file.h"

namespace tpusim::workloads {

namespace {

// An ordered document: scalars keep whether they are strings (quoted in
// JSON) or literals (numbers, booleans).
struct Doc {
  enum Kind { literal, string, list, map } kind = map;
  std::string text;
  std::vector<Doc> items;
  std::vector<std::pair<std::string, Doc>> fields;
  bool flow = false;  // YAML: print on one line

  static Doc lit(std::string s) {
    Doc d;
    d.kind = literal;
    d.text = std::move(s);
    return d;
  }
  static Doc str(std::string s) {
    Doc d;
    d.kind = string;
    d.text = std::move(s);
    return d;
  }
  static Doc num(std::int64_t v) { return lit(std::to_string(v)); }
  static Doc boolean(bool b) { return lit(b ? "true" : "false"); }
  static Doc real(double v) {
    // Shortest text that reads back to the same double.
    char buf[40];
    for (int prec = 1; prec <= 17; ++prec) {
      std::snprintf(buf, sizeof buf, "%.*g", prec, v);
      if (std::strtod(buf, nullptr) == v) break;
    }
    return lit(buf);
  }
  static Doc ints(const std::vector<std::int64_t>& v) {
    Doc d;
    d.kind = list;
    d.flow = true;
    for (auto x : v) d.items.push_back(num(x));
    return d;
  }
  static Doc strs(const std::vector<std::string>& v) {
    Doc d;
    d.kind = list;
    d.flow = true;
    for (const auto& x : v) d.items.push_back(str(x));
    return d;
  }
  Doc& add(std::string k, Doc v) {
    fields.emplace_back(std::move(k), std::move(v));
    return *this;
  }
};

Doc dtype_doc(DType t) { return Doc::str(std::string(arch::dtype_name(t))); }

Doc tensor_doc(const Tensor& t) {
  Doc d;
  d.flow = true;
  d.add("name", Doc::str(t.name)).add("shape", Doc::ints(t.shape)).add("dtype", dtype_doc(t.dtype));
  d.add("kind", Doc::str(std::string(tensor_kind_name(t.kind))));
  if (t.space != MemSpace::hbm) d.add("space", Doc::str(std::string(mem_space_name(t.space))));
  if (t.scales.kind != ScaleKind::none) {
    d.add("scales", Doc::str(std::string(scale_kind_name(t.scales.kind))));
    if (t.scales.kind == ScaleKind::block) d.add("group", Doc::num(t.scales.group));
    if (t.scales.dtype != DType::f32) d.add("scale_dtype", dtype_doc(t.scales.dtype));
  }
  if (!t.sparsity.dense())
    d.add("sparsity", Doc::str(std::to_string(t.sparsity.n) + ":" + std::to_string(t.sparsity.m)));
  return d;
}

// A collective's mesh axes, the first of its attributes.
Doc& collective_doc(const Op& op, Doc& d) { return d.add("mesh_axes", Doc::strs(op.as<CollectiveAttrs>().mesh_axes)); }
Doc reduce_doc(const Op& op) { return Doc::str(std::string(reduce_kind_name(op.as<CollectiveAttrs>().reduce))); }

void attrs_doc(const Op& op, Doc& d) {
  switch (op.kind) {
    case OpKind::matmul: {
      const auto& a = op.as<MatmulAttrs>();
      d.add("equation", Doc::str(a.equation));
      if (a.out_dtype) d.add("out_dtype", dtype_doc(*a.out_dtype));
      if (a.quantize) d.add("quantize", dtype_doc(*a.quantize));
      if (!a.causal.empty()) d.add("causal", Doc::str(a.causal));
      if (a.window > 0) d.add("window", Doc::num(a.window));
      if (a.blocks.m > 0) d.add("block_m", Doc::num(a.blocks.m));
      if (a.blocks.k > 0) d.add("block_k", Doc::num(a.blocks.k));
      if (a.blocks.n > 0) d.add("block_n", Doc::num(a.blocks.n));
      break;
    }
    case OpKind::conv2d: {
      const auto& a = op.as<Conv2dAttrs>();
      d.add("stride", Doc::ints({a.stride_h, a.stride_w}));
      d.add("dilation", Doc::ints({a.dilation_h, a.dilation_w}));
      if (a.padding == PaddingMode::explicit_pads)
        d.add("padding", Doc::ints({a.pad_top, a.pad_bottom, a.pad_left, a.pad_right}));
      else
        d.add("padding", Doc::str(std::string(padding_mode_name(a.padding))));
      d.add("groups", Doc::num(a.groups));
      if (a.out_dtype) d.add("out_dtype", dtype_doc(*a.out_dtype));
      break;
    }
    case OpKind::elementwise: {
      const auto& a = op.as<ElementwiseAttrs>();
      d.add("fn", Doc::str(std::string(ew_kind_name(a.kind))));
      if (a.to) d.add("to", dtype_doc(*a.to));
      break;
    }
    case OpKind::reduce: {
      const auto& a = op.as<ReduceAttrs>();
      d.add("fn", Doc::str(std::string(reduce_kind_name(a.kind))));
      d.add("axes", Doc::ints(a.axes)).add("keep_dims", Doc::boolean(a.keep_dims));
      break;
    }
    case OpKind::softmax: d.add("axis", Doc::num(op.as<SoftmaxAttrs>().axis)); break;
    case OpKind::layer_norm:
    case OpKind::rms_norm: {
      const auto& a = op.as<NormAttrs>();
      d.add("axis", Doc::num(a.axis)).add("epsilon", Doc::real(a.epsilon));
      break;
    }
    case OpKind::attention: {
      const auto& a = op.as<AttentionAttrs>();
      d.add("causal", Doc::boolean(a.causal));
      if (a.scale) d.add("scale", Doc::real(*a.scale));
      if (a.pass != AttentionPass::forward) d.add("pass", Doc::str(std::string(attention_pass_name(a.pass))));
      if (a.window > 0) d.add("window", Doc::num(a.window));
      if (a.blocks.q > 0) d.add("block_q", Doc::num(a.blocks.q));
      if (a.blocks.kv > 0) d.add("block_kv", Doc::num(a.blocks.kv));
      if (a.max_step_seqs > 1) d.add("max_step_seqs", Doc::num(a.max_step_seqs));
      if (a.value_dim > 0) d.add("value_dim", Doc::num(a.value_dim));
      break;
    }
    case OpKind::gather: break;
    case OpKind::transpose: d.add("perm", Doc::ints(op.as<TransposeAttrs>().perm)); break;
    case OpKind::reshape: d.add("shape", Doc::ints(op.as<ReshapeAttrs>().shape)); break;
    case OpKind::concat: d.add("axis", Doc::num(op.as<ConcatAttrs>().axis)); break;
    case OpKind::slice: {
      const auto& a = op.as<SliceAttrs>();
      d.add("start", Doc::ints(a.start)).add("limit", Doc::ints(a.limit));
      if (!a.stride.empty()) d.add("stride", Doc::ints(a.stride));
      break;
    }
    case OpKind::all_gather: collective_doc(op, d).add("dim", Doc::num(op.as<CollectiveAttrs>().dim)); break;
    case OpKind::reduce_scatter:
      collective_doc(op, d).add("dim", Doc::num(op.as<CollectiveAttrs>().dim)).add("reduce", reduce_doc(op));
      break;
    case OpKind::all_reduce: collective_doc(op, d).add("reduce", reduce_doc(op)); break;
    case OpKind::all_to_all: {
      const auto& a = op.as<CollectiveAttrs>();
      collective_doc(op, d).add("split_dim", Doc::num(a.split_dim)).add("concat_dim", Doc::num(a.concat_dim));
      break;
    }
    case OpKind::collective_permute: {
      Doc pairs;
      pairs.kind = Doc::list;
      pairs.flow = true;
      for (const auto& p : op.as<CollectiveAttrs>().pairs) pairs.items.push_back(Doc::ints({p.first, p.second}));
      collective_doc(op, d).add("pairs", pairs);
      break;
    }
    case OpKind::broadcast: collective_doc(op, d).add("root", Doc::num(op.as<CollectiveAttrs>().root)); break;
    case OpKind::copy: d.add("to", Doc::str(std::string(mem_space_name(op.as<CopyAttrs>().to)))); break;
  }
}

Doc workload_doc(const Workload& wl) {
  Doc d;
  d.add("tpusim_workload", Doc::num(wl.version)).add("name", Doc::str(wl.name));
  if (!wl.description.empty()) d.add("description", Doc::str(wl.description));
  if (!wl.mesh.empty()) {
    Doc m;
    m.flow = true;
    for (const auto& a : wl.mesh.axes) m.add(a.name, Doc::num(a.size));
    d.add("mesh", m);
  }
  Doc ts;
  ts.kind = Doc::list;
  for (const auto& t : wl.tensors) ts.items.push_back(tensor_doc(t));
  d.add("tensors", ts);
  Doc os;
  os.kind = Doc::list;
  for (const auto& op : wl.ops) {
    Doc o;
    o.add("name", Doc::str(op.name)).add("op", Doc::str(std::string(op_kind_name(op.kind))));
    o.add("inputs", Doc::strs(op.inputs));
    if (op.outputs.size() == 1)
      o.add("output", Doc::str(op.outputs[0]));
    else
      o.add("outputs", Doc::strs(op.outputs));
    attrs_doc(op, o);
    os.items.push_back(o);
  }
  d.add("ops", os);
  return d;
}

// Strings YAML would read as something else (null, empty) get quotes; the
// reader takes every other scalar as text, so "123" stays a name.
bool needs_quotes(const std::string& s) { return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL"; }

void emit_yaml(YAML::Emitter& e, const Doc& d) {
  switch (d.kind) {
    case Doc::literal: e << d.text; break;
    case Doc::string:
      if (needs_quotes(d.text)) e << YAML::DoubleQuoted;
      e << d.text;
      break;
    case Doc::list:
      e << (d.flow ? YAML::Flow : YAML::Block) << YAML::BeginSeq;
      for (const auto& i : d.items) emit_yaml(e, i);
      e << YAML::EndSeq;
      break;
    case Doc::map:
      e << (d.flow ? YAML::Flow : YAML::Block) << YAML::BeginMap;
      for (const auto& [k, v] : d.fields) {
        e << YAML::Key << k << YAML::Value;
        emit_yaml(e, v);
      }
      e << YAML::EndMap;
      break;
  }
}

std::string json_string(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    switch (c) {
      case '"': r += "\\\""; break;
      case '\\': r += "\\\\"; break;
      case '\n': r += "\\n"; break;
      case '\t': r += "\\t"; break;
      case '\r': r += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          r += buf;
        } else {
          r += c;
        }
    }
  }
  return r + "\"";
}

void emit_json(std::string& out, const Doc& d, int indent) {
  std::string pad(indent + 2, ' '), close(indent, ' ');
  switch (d.kind) {
    case Doc::literal: out += d.text; break;
    case Doc::string: out += json_string(d.text); break;
    case Doc::list:
      out += "[";
      for (std::size_t i = 0; i < d.items.size(); ++i) {
        out += i ? (d.flow ? ", " : ",\n" + pad) : (d.flow ? "" : "\n" + pad);
        emit_json(out, d.items[i], indent + 2);
      }
      if (!d.flow && !d.items.empty()) out += "\n" + close;
      out += "]";
      break;
    case Doc::map:
      out += "{";
      for (std::size_t i = 0; i < d.fields.size(); ++i) {
        out += i ? (d.flow ? ", " : ",\n" + pad) : (d.flow ? "" : "\n" + pad);
        out += json_string(d.fields[i].first) + ": ";
        emit_json(out, d.fields[i].second, indent + 2);
      }
      if (!d.flow && !d.fields.empty()) out += "\n" + close;
      out += "}";
      break;
  }
}

}  // namespace

std::string workload_to_yaml(const Workload& wl) {
  YAML::Emitter e;
  emit_yaml(e, workload_doc(wl));
  return std::string(e.c_str()) + "\n";
}

std::string workload_to_json(const Workload& wl) {
  std::string out;
  emit_json(out, workload_doc(wl), 0);
  return out + "\n";
}

void write_workload_file(const Workload& wl, const std::string& path) {
  bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  std::ofstream f(path);
  if (!f) throw WorkloadError(SourceLoc{path, 0, 0}, "", "cannot open file for writing");
  f << (json ? workload_to_json(wl) : workload_to_yaml(wl));
  if (!f) throw WorkloadError(SourceLoc{path, 0, 0}, "", "write failed");
}

}  // namespace tpusim::workloads
