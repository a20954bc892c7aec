// Per-op attributes of the workload reader: the keys each op kind accepts
// and their parsing into the op's attribute struct (matmul equation or
// dot_general dims, conv2d stride/padding, elementwise fn, reductions,
// collectives, ...). See workload_reader.h.
#include "workloads/io/workload_reader.h"
#include "workloads/ir/shape_inference.h"

namespace tpusim::workloads::detail {

std::vector<std::string> Reader::attr_keys(OpKind k) {
  switch (k) {
    case OpKind::matmul:
      return {"equation", "lhs_batch", "rhs_batch", "lhs_contracting", "rhs_contracting", "out_dtype",
              "quantize", "causal",    "window",    "block_m",         "block_k",         "block_n"};
    case OpKind::conv2d: return {"stride", "dilation", "padding", "groups", "out_dtype"};
    case OpKind::elementwise: return {"fn", "to"};
    case OpKind::reduce: return {"fn", "axes", "keep_dims"};
    case OpKind::softmax: return {"axis"};
    case OpKind::layer_norm:
    case OpKind::rms_norm: return {"axis", "epsilon"};
    case OpKind::attention:
      return {"causal", "scale", "pass", "window", "block_q", "block_kv", "max_step_seqs", "value_dim"};
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
    case OpKind::copy: return {"to"};
  }
  return {};
}

void Reader::read_attrs(const YAML::Node& n, Op& op, std::optional<EwKind> shorthand, const KeyFn& key, PendingOp& p) {
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
      opt_dtype(a.quantize, "quantize");
      if (auto v = n["causal"])
        if (auto s = get_str(v, key("causal"))) a.causal = *s;
      int_key(a.window, "window", false);
      int_key(a.blocks.m, "block_m", false);
      int_key(a.blocks.k, "block_k", false);
      int_key(a.blocks.n, "block_n", false);
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
            error(v, key("padding"),
                  "expected same, valid, an integer or [top, bottom, left, right], found " +
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
            error(v, key("fn"),
                  "unknown elementwise function '" + *s + "'" +
                      (near.empty() ? "" : " (did you mean '" + near + "'?)") + "; expected one of " + all);
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
      if (auto v = n["pass"])
        if (auto ps = get_enum<AttentionPass>(
                v, key("pass"), "attention pass",
                {AttentionPass::forward, AttentionPass::grad_q, AttentionPass::grad_kv, AttentionPass::grad_qkv},
                parse_attention_pass, attention_pass_name))
          a.pass = *ps;
      int_key(a.window, "window", false);
      int_key(a.blocks.q, "block_q", false);
      int_key(a.blocks.kv, "block_kv", false);
      int_key(a.max_step_seqs, "max_step_seqs", false);
      int_key(a.value_dim, "value_dim", false);
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
            if (pr && pr->size() == 2)
              a.pairs.emplace_back((*pr)[0], (*pr)[1]);
            else if (pr)
              error(v[i], index_path(key("pairs"), i),
                    "expected [source, target], found " + std::to_string(pr->size()) + " values");
          }
        }
      }
      break;
    }
    case OpKind::copy: {
      if (auto v = n["to"]) {
        if (auto s = get_enum<MemSpace>(v, key("to"), "memory space", {MemSpace::hbm, MemSpace::host}, parse_mem_space,
                                        mem_space_name))
          op.as<CopyAttrs>().to = *s;
      } else {
        error(n, key("to"), "missing key (expected the memory space to copy to: hbm or host)");
      }
      break;
    }
  }
}

}  // namespace tpusim::workloads::detail
