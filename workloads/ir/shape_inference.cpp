// Shape and dtype inference for every op kind (see shape_inference.h).
#include "workloads/ir/shape_inference.h"

#include <algorithm>
#include <set>

#include "arch/common/checked.h"
#include "workloads/ir/workload.h"

namespace tpusim::workloads {

namespace {

[[noreturn]] void eq_error(const std::string& msg) { throw WorkloadError(SourceLoc{}, "equation", msg); }

bool is_label(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string ints_str(const std::vector<std::int64_t>& v) { return shape_str(v); }

}  // namespace

EinsumSpec parse_einsum(const std::string& equation) {
  EinsumSpec s;
  auto arrow = equation.find("->");
  if (arrow == std::string::npos)
    eq_error("'" + equation + "': expected the form \"lhs,rhs->out\" (e.g. \"bmk,bkn->bmn\"), found no '->'");
  std::string ins = equation.substr(0, arrow);
  s.out = equation.substr(arrow + 2);
  auto comma = ins.find(',');
  if (comma == std::string::npos || ins.find(',', comma + 1) != std::string::npos)
    eq_error("'" + equation + "': expected exactly two operands separated by ','");
  s.lhs = ins.substr(0, comma);
  s.rhs = ins.substr(comma + 1);
  for (const auto* part : {&s.lhs, &s.rhs, &s.out}) {
    std::set<char> seen;
    for (char c : *part) {
      if (!is_label(c))
        eq_error("'" + equation + "': expected letters a-z/A-Z as labels, found '" + std::string(1, c) + "'");
      if (!seen.insert(c).second)
        eq_error("'" + equation + "': label '" + std::string(1, c) + "' repeated in '" + *part + "'");
    }
  }
  auto has = [](const std::string& s2, char c) { return s2.find(c) != std::string::npos; };
  for (char c : s.out)
    if (!has(s.lhs, c) && !has(s.rhs, c))
      eq_error("'" + equation + "': output label '" + std::string(1, c) + "' appears in no operand");
  for (char c : s.lhs) {
    bool r = has(s.rhs, c), o = has(s.out, c);
    if (r && o)
      s.batch += c;
    else if (r)
      s.contracting += c;
    else if (o)
      s.lhs_free += c;
    else
      eq_error("'" + equation + "': label '" + std::string(1, c) +
               "' appears only in lhs and not in the output; reduce it with a reduce op first");
  }
  for (char c : s.rhs) {
    bool l = has(s.lhs, c), o = has(s.out, c);
    if (!l && o)
      s.rhs_free += c;
    else if (!l)
      eq_error("'" + equation + "': label '" + std::string(1, c) +
               "' appears only in rhs and not in the output; reduce it with a reduce op first");
  }
  return s;
}

namespace {
// Sizes of each label; checks ranks and agreement. Throws WorkloadError.
std::int64_t label_size(const EinsumSpec& s, char c, const Shape& lhs, const Shape& rhs) {
  auto l = s.lhs.find(c);
  if (l != std::string::npos) return lhs[l];
  return rhs[s.rhs.find(c)];
}

void check_matmul_shapes(const EinsumSpec& s, const std::string& eq, const Shape& lhs, const Shape& rhs) {
  if (lhs.size() != s.lhs.size())
    throw WorkloadError(SourceLoc{}, "",
                        "equation '" + eq + "' expects lhs rank " + std::to_string(s.lhs.size()) +
                            ", found lhs shape " + shape_str(lhs));
  if (rhs.size() != s.rhs.size())
    throw WorkloadError(SourceLoc{}, "",
                        "equation '" + eq + "' expects rhs rank " + std::to_string(s.rhs.size()) +
                            ", found rhs shape " + shape_str(rhs));
  for (std::size_t i = 0; i < s.lhs.size(); ++i) {
    auto r = s.rhs.find(s.lhs[i]);
    if (r != std::string::npos && lhs[i] != rhs[r])
      throw WorkloadError(SourceLoc{}, "",
                          "shape mismatch on label '" + std::string(1, s.lhs[i]) + "' of '" + eq + "': lhs shape " +
                              shape_str(lhs) + " has " + std::to_string(lhs[i]) + " at dim " + std::to_string(i) +
                              ", rhs shape " + shape_str(rhs) + " has " + std::to_string(rhs[r]) + " at dim " +
                              std::to_string(r));
  }
}
}  // namespace

std::pair<std::int64_t, std::int64_t> matmul_causal_extents(const MatmulAttrs& a, const Shape& lhs, const Shape& rhs) {
  EinsumSpec s = parse_einsum(a.equation);
  check_matmul_shapes(s, a.equation, lhs, rhs);
  const std::string& c = a.causal;
  auto labelled = [&](char x) { return s.lhs.find(x) != std::string::npos || s.rhs.find(x) != std::string::npos; };
  if (c.size() != 2 || c[0] == c[1] || !labelled(c[0]) || !labelled(c[1]))
    throw WorkloadError(
        SourceLoc{}, "causal",
        "expected two distinct labels of the equation '" + a.equation + "' (query, key), found '" + c + "'");
  return {label_size(s, c[0], lhs, rhs), label_size(s, c[1], lhs, rhs)};
}

MatmulDims matmul_dims(const MatmulAttrs& a, const Shape& lhs, const Shape& rhs) {
  EinsumSpec s = parse_einsum(a.equation);
  check_matmul_shapes(s, a.equation, lhs, rhs);
  MatmulDims d;
  // Each product is a sub-product of an operand's or the output's dims,
  // which the tensor size limit bounds; checked all the same.
  auto mul = [&](std::int64_t& acc, char c) {
    auto p = arch::checked_mul(acc, label_size(s, c, lhs, rhs));
    if (!p) throw WorkloadError(SourceLoc{}, "", "equation '" + a.equation + "': a dimension product overflows");
    acc = *p;
  };
  for (char c : s.batch) mul(d.batch, c);
  for (char c : s.lhs_free) mul(d.m, c);
  for (char c : s.contracting) mul(d.k, c);
  for (char c : s.rhs_free) mul(d.n, c);
  return d;
}

namespace {
void conv_dim(PaddingMode mode, std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t dil,
              std::int64_t& lo, std::int64_t& hi, std::int64_t& out) {
  // Inputs are bounded (dims by the tensor size limit, stride, dilation and
  // padding by kMaxConvAttr), but the dilated kernel's extent is checked.
  auto ek_m = arch::checked_mul<std::int64_t>(k - 1, dil);
  if (!ek_m || *ek_m > (std::int64_t{1} << 53))
    throw WorkloadError(SourceLoc{}, "",
                        "filter extent " + std::to_string(k) + " with dilation " + std::to_string(dil) + " overflows");
  std::int64_t ek = *ek_m + 1;  // receptive field of the dilated kernel
  if (mode == PaddingMode::valid) {
    lo = hi = 0;
  } else if (mode == PaddingMode::same) {
    // TensorFlow's SAME: out = ceil(in / stride); odd total pad goes low-first half.
    std::int64_t o = (in + stride - 1) / stride;
    std::int64_t total = std::max<std::int64_t>((o - 1) * stride + ek - in, 0);
    lo = total / 2;
    hi = total - lo;
  }
  std::int64_t padded = in + lo + hi;
  out = padded >= ek ? (padded - ek) / stride + 1 : 0;
}
}  // namespace

Conv2dGeometry conv2d_geometry(const Conv2dAttrs& a, std::int64_t in_h, std::int64_t in_w, std::int64_t kh,
                               std::int64_t kw) {
  Conv2dGeometry g;
  g.pad_top = a.pad_top;
  g.pad_bottom = a.pad_bottom;
  g.pad_left = a.pad_left;
  g.pad_right = a.pad_right;
  conv_dim(a.padding, in_h, kh, a.stride_h, a.dilation_h, g.pad_top, g.pad_bottom, g.out_h);
  conv_dim(a.padding, in_w, kw, a.stride_w, a.dilation_w, g.pad_left, g.pad_right, g.out_w);
  return g;
}

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  std::size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const auto& s : shapes) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      std::size_t o = rank - s.size() + i;
      if (s[i] == out[o] || s[i] == 1) continue;
      if (out[o] == 1) {
        out[o] = s[i];
        continue;
      }
      std::string all;
      for (const auto& t : shapes) all += (all.empty() ? "" : " and ") + shape_str(t);
      throw WorkloadError(SourceLoc{}, "",
                          "shapes " + all + " do not broadcast (dim " + std::to_string(o) +
                              " of the result: " + std::to_string(out[o]) + " vs " + std::to_string(s[i]) + ")");
    }
  }
  return out;
}

namespace {

class Inferer {
 public:
  Inferer(const Op& op, const std::vector<TensorType>& in, const Workload* wl) : op_(op), in_(in), wl_(wl) {}

  [[noreturn]] void fail(const std::string& msg) const {
    throw WorkloadError(op_.loc, "op '" + op_.name + "' (" + std::string(op_kind_name(op_.kind)) + ")", msg);
  }

  // A local-attention window (AttentionAttrs / MatmulAttrs::window): >= 0,
  // and only with a causal mask, which `needs` names.
  void check_window(std::int64_t window, bool causal, const char* needs) const {
    if (window < 0) fail("window: expected >= 1 keys (or 0: none), found " + std::to_string(window));
    if (window > 0 && !causal)
      fail(std::string("window: expected ") + needs + " (a window ends at each query's diagonal)");
  }

  // A flash kernel block size (AttentionBlocks): 0 (searched) or a
  // positive multiple of the vreg's `unit` (splash attention's checks).
  void check_block(std::int64_t b, const char* key, std::int64_t unit, const char* units) const {
    if (b < 0 || b % unit != 0)
      fail(std::string(key) + ": expected a positive multiple of " + std::to_string(unit) + " (" + units +
           ", as splash attention takes it) or 0 (searched), found " + std::to_string(b));
  }

  // A matmul kernel block size (MatmulBlocks): 0 (searched), a positive
  // multiple of the vreg's `unit`, or the whole dimension `full` (Pallas's
  // rule for a block's last two dimensions).
  void check_matmul_block(std::int64_t b, std::int64_t full, const char* key, std::int64_t unit,
                          const char* units) const {
    if (!MatmulBlocks::allowed(b, full, unit))
      fail(std::string(key) + ": expected a positive multiple of " + std::to_string(unit) + " (" + units +
           ", as a Pallas block takes it), the whole dimension (" + std::to_string(full) + ") or 0 (searched), found " +
           std::to_string(b));
  }

  std::int64_t axis(std::int64_t a, std::size_t rank, const char* what) const {
    std::int64_t r = static_cast<std::int64_t>(rank);
    if (a < -r || a >= r)
      fail(std::string(what) + ": expected an axis in [" + std::to_string(-r) + ", " + std::to_string(r - 1) +
           "] for rank " + std::to_string(r) + ", found " + std::to_string(a));
    return a < 0 ? a + r : a;
  }

  void rank_is(std::size_t i, std::size_t rank, const char* what) const {
    if (in_[i].shape.size() != rank)
      fail(std::string(what) + " (input " + std::to_string(i) + " '" + name(i) + "'): expected rank " +
           std::to_string(rank) + ", found shape " + shape_str(in_[i].shape));
  }

  std::string name(std::size_t i) const { return i < op_.inputs.size() ? op_.inputs[i] : "?"; }

  void same_dtype(std::size_t a, std::size_t b) const {
    if (in_[a].dtype != in_[b].dtype)
      fail("dtype mismatch: input '" + name(a) + "' is " + std::string(arch::dtype_name(in_[a].dtype)) + ", input '" +
           name(b) + "' is " + std::string(arch::dtype_name(in_[b].dtype)) + " (insert a cast)");
  }

  std::vector<TensorType> run() {
    Arity ar = op_arity(op_);
    int n = static_cast<int>(in_.size());
    if (n < ar.min_inputs || n > ar.max_inputs) {
      std::string exp =
          ar.min_inputs == ar.max_inputs
              ? std::to_string(ar.min_inputs)
              : (ar.max_inputs > 1000 ? "at least " + std::to_string(ar.min_inputs)
                                      : std::to_string(ar.min_inputs) + " to " + std::to_string(ar.max_inputs));
      fail("wrong operand count: expected " + exp + " inputs, found " + std::to_string(n));
    }
    if (!attrs_match_kind(op_.kind, op_.attrs)) fail("attributes do not belong to this op kind");
    // Inputs are checked too: the reader infers shapes before validate().
    for (std::size_t i = 0; i < in_.size(); ++i) {
      // A dim below 1 (a zero kv_heads divides by zero) before its size.
      for (auto d : in_[i].shape)
        if (d < 1) fail("input '" + name(i) + "': shape: expected dims >= 1, found " + shape_str(in_[i].shape));
      if (auto why = shape_size_problem(in_[i].shape, in_[i].dtype); !why.empty())
        fail("input '" + name(i) + "': " + why);
    }
    try {
      TensorType t = one();
      if (auto why = shape_size_problem(t.shape, t.dtype); !why.empty()) fail("output: " + why);
      return {t};
    } catch (const WorkloadError& e) {
      // Re-anchor helper errors (equation, broadcasting) on this op.
      if (!e.diagnostics().empty() && e.diagnostics()[0].path.rfind("op '", 0) == 0) throw;
      std::string msg;
      for (const auto& d : e.diagnostics())
        msg += (msg.empty() ? "" : "; ") + (d.path.empty() ? "" : d.path + ": ") + d.message;
      fail(msg);
    }
  }

 private:
  TensorType one() {
    switch (op_.kind) {
      case OpKind::matmul: return matmul();
      case OpKind::conv2d: return conv2d();
      case OpKind::elementwise: return elementwise();
      case OpKind::reduce: return reduce();
      case OpKind::softmax: {
        axis(op_.as<SoftmaxAttrs>().axis, in_[0].shape.size(), "axis");
        return in_[0];
      }
      case OpKind::layer_norm:
      case OpKind::rms_norm: return norm();
      case OpKind::attention: return attention();
      case OpKind::gather: return gather();
      case OpKind::transpose: return transpose();
      case OpKind::reshape: return reshape();
      case OpKind::concat: return concat();
      case OpKind::slice: return slice();
      case OpKind::all_gather:
      case OpKind::reduce_scatter:
      case OpKind::all_reduce:
      case OpKind::all_to_all:
      case OpKind::collective_permute:
      case OpKind::broadcast: return collective();
      case OpKind::copy: {
        const MemSpace to = op_.as<CopyAttrs>().to;
        if (to != MemSpace::hbm && to != MemSpace::host)
          fail("to: expected hbm or host, found " + std::string(mem_space_name(to)));
        return in_[0];
      }
    }
    throw WorkloadInternalError("shape inference: unknown op kind");
  }

  TensorType matmul() {
    const auto& a = op_.as<MatmulAttrs>();
    EinsumSpec s = parse_einsum(a.equation);
    check_matmul_shapes(s, a.equation, in_[0].shape, in_[1].shape);
    TensorType t;
    for (char c : s.out) t.shape.push_back(label_size(s, c, in_[0].shape, in_[1].shape));
    t.dtype = a.out_dtype.value_or(in_[0].dtype);
    if (!a.causal.empty()) matmul_causal_extents(a, in_[0].shape, in_[1].shape);
    check_window(a.window, !a.causal.empty(), "causal labels (query, key) with it");
    if (a.blocks.m != 0 || a.blocks.k != 0 || a.blocks.n != 0) {
      const MatmulDims d = matmul_dims(a, in_[0].shape, in_[1].shape);
      check_matmul_block(a.blocks.m, d.m, "block_m", MatmulBlocks::kMUnit, "sublanes");
      check_matmul_block(a.blocks.k, d.k, "block_k", MatmulBlocks::kKUnit, "lanes");
      check_matmul_block(a.blocks.n, d.n, "block_n", MatmulBlocks::kNUnit, "lanes");
    }
    return t;
  }

  TensorType conv2d() {
    const auto& a = op_.as<Conv2dAttrs>();
    rank_is(0, 4, "input [N, H, W, C]");
    rank_is(1, 4, "filter [KH, KW, C/groups, OC]");
    const Shape& x = in_[0].shape;
    const Shape& w = in_[1].shape;
    for (auto v : {a.stride_h, a.stride_w, a.dilation_h, a.dilation_w, a.groups})
      if (v < 1) fail("stride, dilation and groups must be >= 1, found " + std::to_string(v));
    for (auto v : {a.pad_top, a.pad_bottom, a.pad_left, a.pad_right})
      if (v < 0) fail("padding must be >= 0, found " + std::to_string(v));
    for (auto v :
         {a.stride_h, a.stride_w, a.dilation_h, a.dilation_w, a.pad_top, a.pad_bottom, a.pad_left, a.pad_right})
      if (v > kMaxConvAttr)
        fail("stride, dilation and padding must be <= " + std::to_string(kMaxConvAttr) + ", found " +
             std::to_string(v));
    if (x[3] % a.groups != 0)
      fail("input channels " + std::to_string(x[3]) + " (input shape " + shape_str(x) + ") not divisible by groups " +
           std::to_string(a.groups));
    if (w[2] != x[3] / a.groups)
      fail("shape mismatch: filter shape " + shape_str(w) + " expects dim 2 = C/groups = " +
           std::to_string(x[3] / a.groups) + " for input shape " + shape_str(x) + ", found " + std::to_string(w[2]));
    if (w[3] % a.groups != 0)
      fail("output channels " + std::to_string(w[3]) + " (filter shape " + shape_str(w) + ") not divisible by groups " +
           std::to_string(a.groups));
    Conv2dGeometry g = conv2d_geometry(a, x[1], x[2], w[0], w[1]);
    if (g.out_h < 1 || g.out_w < 1)
      fail("filter " + shape_str(w) + " (dilated, with padding) is larger than the input " + shape_str(x) +
           ": output would be empty");
    return {{x[0], g.out_h, g.out_w, w[3]}, a.out_dtype.value_or(in_[0].dtype)};
  }

  TensorType elementwise() {
    const auto& a = op_.as<ElementwiseAttrs>();
    std::vector<Shape> shapes;
    for (const auto& t : in_) shapes.push_back(t.shape);
    Shape out = broadcast_shapes(shapes);
    if (a.kind == EwKind::cast) {
      if (!a.to) fail("cast: expected attribute 'to' (the result dtype), found none");
      return {out, *a.to};
    }
    if (a.to) fail("attribute 'to' is only valid for cast, found it on " + std::string(ew_kind_name(a.kind)));
    if (a.kind == EwKind::select || a.kind == EwKind::where) {
      same_dtype(1, 2);  // input 0 is the condition, any dtype
      return {out, in_[1].dtype};
    }
    for (std::size_t i = 1; i < in_.size(); ++i) same_dtype(0, i);
    return {out, in_[0].dtype};
  }

  TensorType reduce() {
    const auto& a = op_.as<ReduceAttrs>();
    const Shape& x = in_[0].shape;
    if (a.axes.empty()) fail("axes: expected at least one axis, found none");
    std::vector<bool> red(x.size(), false);
    for (auto ax : a.axes) {
      auto n = axis(ax, x.size(), "axes");
      if (red[n]) fail("axes: axis " + std::to_string(ax) + " listed twice in " + ints_str(a.axes));
      red[n] = true;
    }
    TensorType t{{}, in_[0].dtype};
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!red[i])
        t.shape.push_back(x[i]);
      else if (a.keep_dims)
        t.shape.push_back(1);
    }
    return t;
  }

  TensorType norm() {
    const auto& a = op_.as<NormAttrs>();
    const Shape& x = in_[0].shape;
    auto ax = axis(a.axis, x.size(), "axis");
    if (a.epsilon < 0) fail("epsilon: expected >= 0, found " + std::to_string(a.epsilon));
    Shape param(x.begin() + ax, x.end());
    for (std::size_t i = 1; i < in_.size(); ++i)
      if (in_[i].shape != param)
        fail("shape mismatch: " + std::string(i == 1 ? "scale" : "bias") + " '" + name(i) + "' expected shape " +
             shape_str(param) + " (input shape " + shape_str(x) + " from axis " + std::to_string(ax) + "), found " +
             shape_str(in_[i].shape));
    return in_[0];
  }

  TensorType attention() {
    rank_is(0, 4, "query [batch, q_len, heads, head_dim]");
    rank_is(1, 4, "key [batch, kv_len, kv_heads, head_dim]");
    rank_is(2, 4, "value [batch, kv_len, kv_heads, v_head_dim]");
    const Shape &q = in_[0].shape, &k = in_[1].shape, &v = in_[2].shape;
    auto mismatch = [&](const std::string& what, const std::string& a, const Shape& sa, const std::string& b,
                        const Shape& sb) {
      fail("shape mismatch on " + what + ": " + a + " shape " + shape_str(sa) + ", " + b + " shape " + shape_str(sb));
    };
    if (q[0] != k[0] || q[0] != v[0]) mismatch("batch (dim 0)", "query", q, "key/value", k[0] != q[0] ? k : v);
    if (k[1] != v[1]) mismatch("kv_len (dim 1)", "key", k, "value", v);
    if (k[2] != v[2]) mismatch("kv_heads (dim 2)", "key", k, "value", v);
    if (q[3] != k[3]) mismatch("head_dim (dim 3)", "query", q, "key", k);
    if (q[2] % k[2] != 0)
      fail("heads " + std::to_string(q[2]) + " (query shape " + shape_str(q) + ") not a multiple of kv_heads " +
           std::to_string(k[2]) + " (key shape " + shape_str(k) + ")");
    const auto& a = op_.as<AttentionAttrs>();
    if (a.scale && !(*a.scale > 0)) fail("scale: expected > 0, found " + std::to_string(*a.scale));
    check_window(a.window, a.causal, "causal: true");
    check_block(a.blocks.q, "block_q", AttentionBlocks::kQUnit, "sublanes");
    check_block(a.blocks.kv, "block_kv", AttentionBlocks::kKvUnit, "lanes");
    if (a.max_step_seqs < 0 || a.max_step_seqs > AttentionAttrs::kMaxStepSeqsLimit)
      fail("max_step_seqs: expected 0 to " + std::to_string(AttentionAttrs::kMaxStepSeqsLimit) +
           " (sequences a grid step may hold; 0 or 1: one), found " + std::to_string(a.max_step_seqs));
    if (a.max_step_seqs > 1 && a.blocks.fixed())
      fail(
          "max_step_seqs: expected 0 or 1 with fixed blocks (block_q, block_kv: splash attention's kernel walks one "
          "sequence a step), found " +
          std::to_string(a.max_step_seqs));
    if (a.value_dim < 0 || a.value_dim > v[3])
      fail("value_dim: expected 0 (all) to the value's last dim " + std::to_string(v[3]) + " (value shape " +
           shape_str(v) + "), found " + std::to_string(a.value_dim));
    if (a.value_dim > 0 && a.pass != AttentionPass::forward)
      fail("value_dim: expected 0 with pass: " + std::string(attention_pass_name(a.pass)) +
           " (the value columns a forward kernel uses), found " + std::to_string(a.value_dim));
    return {{q[0], q[1], q[2], a.value_width(v[3])}, in_[0].dtype};
  }

  TensorType gather() {
    if (in_[0].shape.empty()) fail("table '" + name(0) + "': expected rank >= 1, found a scalar");
    TensorType t{in_[1].shape, in_[0].dtype};
    t.shape.insert(t.shape.end(), in_[0].shape.begin() + 1, in_[0].shape.end());
    return t;
  }

  TensorType transpose() {
    const auto& p = op_.as<TransposeAttrs>().perm;
    const Shape& x = in_[0].shape;
    std::vector<std::int64_t> sorted(p);
    std::sort(sorted.begin(), sorted.end());
    bool ok = p.size() == x.size();
    for (std::size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<std::int64_t>(i);
    if (!ok)
      fail("perm: expected a permutation of 0.." + std::to_string(static_cast<int>(x.size()) - 1) +
           " for input shape " + shape_str(x) + ", found " + ints_str(p));
    TensorType t{{}, in_[0].dtype};
    for (auto d : p) t.shape.push_back(x[d]);
    return t;
  }

  TensorType reshape() {
    Shape s = op_.as<ReshapeAttrs>().shape;
    const Shape& x = in_[0].shape;
    int inferred = -1;
    std::int64_t known = 1;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == -1) {
        if (inferred >= 0) fail("shape: at most one -1 allowed, found " + shape_str(s));
        inferred = static_cast<int>(i);
      } else if (s[i] < 1) {
        fail("shape: expected dims >= 1 (or one -1), found " + shape_str(s));
      } else {
        auto k = arch::checked_mul(known, s[i]);
        if (!k) fail("shape: the product of dims overflows, found " + shape_str(s));
        known = *k;
      }
    }
    std::int64_t n = num_elements(x);
    if (inferred >= 0) {
      if (n % known != 0)
        fail("shape mismatch: cannot reshape " + shape_str(x) + " (" + std::to_string(n) + " elements) to " +
             shape_str(s));
      s[inferred] = n / known;
    } else if (known != n) {
      fail("shape mismatch: cannot reshape " + shape_str(x) + " (" + std::to_string(n) + " elements) to " +
           shape_str(s) + " (" + std::to_string(known) + " elements)");
    }
    return {s, in_[0].dtype};
  }

  TensorType concat() {
    const Shape& x = in_[0].shape;
    auto ax = axis(op_.as<ConcatAttrs>().axis, x.size(), "axis");
    TensorType t = in_[0];
    for (std::size_t i = 1; i < in_.size(); ++i) {
      const Shape& y = in_[i].shape;
      bool ok = y.size() == x.size();
      for (std::size_t d = 0; ok && d < x.size(); ++d) ok = static_cast<std::int64_t>(d) == ax || x[d] == y[d];
      if (!ok)
        fail("shape mismatch: input '" + name(i) + "' shape " + shape_str(y) + " vs input '" + name(0) + "' shape " +
             shape_str(x) + " (all dims but axis " + std::to_string(ax) + " must agree)");
      same_dtype(0, i);
      auto sum = arch::checked_add(t.shape[ax], y[ax]);
      if (!sum) fail("axis " + std::to_string(ax) + ": the concatenated extent overflows");
      t.shape[ax] = *sum;
    }
    return t;
  }

  TensorType slice() {
    const auto& a = op_.as<SliceAttrs>();
    const Shape& x = in_[0].shape;
    if (a.start.size() != x.size() || a.limit.size() != x.size() || (!a.stride.empty() && a.stride.size() != x.size()))
      fail("start/limit/stride: expected " + std::to_string(x.size()) + " values each for input shape " + shape_str(x) +
           ", found " + std::to_string(a.start.size()) + "/" + std::to_string(a.limit.size()) + "/" +
           std::to_string(a.stride.size()));
    TensorType t{{}, in_[0].dtype};
    for (std::size_t i = 0; i < x.size(); ++i) {
      std::int64_t st = a.stride.empty() ? 1 : a.stride[i];
      if (a.start[i] < 0 || a.start[i] >= a.limit[i] || a.limit[i] > x[i] || st < 1)
        fail("dim " + std::to_string(i) + ": expected 0 <= start < limit <= " + std::to_string(x[i]) +
             " and stride >= 1 (input shape " + shape_str(x) + "), found start " + std::to_string(a.start[i]) +
             ", limit " + std::to_string(a.limit[i]) + ", stride " + std::to_string(st));
      t.shape.push_back((a.limit[i] - a.start[i] + st - 1) / st);
    }
    return t;
  }

  TensorType collective() {
    const auto& a = op_.as<CollectiveAttrs>();
    if (a.mesh_axes.empty()) fail("mesh_axes: expected at least one mesh axis name, found none");
    std::int64_t group = 1;
    std::set<std::string> seen;
    for (const auto& ax : a.mesh_axes) {
      if (!seen.insert(ax).second) fail("mesh_axes: axis '" + ax + "' listed twice");
      std::optional<std::int64_t> sz = wl_ ? wl_->mesh_axis_size(ax) : std::nullopt;
      if (!sz) {
        std::string known;
        if (wl_)
          for (const auto& m : wl_->mesh.axes) known += (known.empty() ? "" : ", ") + m.name;
        fail("mesh_axes: unknown mesh axis '" + ax + "' (declared: " + (known.empty() ? "none" : known) + ")");
      }
      auto g = arch::checked_mul(group, *sz);
      if (!g) fail("mesh_axes: the group size overflows");
      group = *g;
    }
    TensorType t = in_[0];
    Shape& s = t.shape;
    if ((op_.kind == OpKind::all_reduce || op_.kind == OpKind::reduce_scatter) && a.reduce == ReduceKind::mean)
      fail("reduce: expected sum, max or min, found mean");
    switch (op_.kind) {
      case OpKind::all_gather: {
        auto d = axis(a.dim, s.size(), "dim");
        auto g = arch::checked_mul(s[d], group);
        if (!g)
          fail("dim " + std::to_string(d) + " of input shape " + shape_str(s) + " times the group size overflows");
        s[d] = *g;
        break;
      }
      case OpKind::reduce_scatter: {
        auto d = axis(a.dim, s.size(), "dim");
        if (s[d] % group != 0)
          fail("dim " + std::to_string(d) + " of input shape " + shape_str(s) + " not divisible by the group size " +
               std::to_string(group));
        s[d] /= group;
        break;
      }
      case OpKind::all_to_all: {
        auto sd = axis(a.split_dim, s.size(), "split_dim");
        auto cd = axis(a.concat_dim, s.size(), "concat_dim");
        if (s[sd] % group != 0)
          fail("split_dim " + std::to_string(sd) + " of input shape " + shape_str(s) +
               " not divisible by the group size " + std::to_string(group));
        s[sd] /= group;
        auto g = arch::checked_mul(s[cd], group);
        if (!g) fail("concat_dim " + std::to_string(cd) + " times the group size overflows");
        s[cd] = *g;
        break;
      }
      case OpKind::collective_permute:
        for (const auto& p : a.pairs)
          if (p.first < 0 || p.first >= group || p.second < 0 || p.second >= group)
            fail("pairs: expected ranks in [0, " + std::to_string(group) + "), found (" + std::to_string(p.first) +
                 ", " + std::to_string(p.second) + ")");
        break;
      case OpKind::broadcast:
        if (a.root < 0 || a.root >= group)
          fail("root: expected a rank in [0, " + std::to_string(group) + "), found " + std::to_string(a.root));
        break;
      case OpKind::all_reduce: break;  // the output is the input
      case OpKind::matmul:
      case OpKind::conv2d:
      case OpKind::elementwise:
      case OpKind::reduce:
      case OpKind::softmax:
      case OpKind::layer_norm:
      case OpKind::rms_norm:
      case OpKind::attention:
      case OpKind::gather:
      case OpKind::transpose:
      case OpKind::reshape:
      case OpKind::concat:
      case OpKind::slice:
      case OpKind::copy: throw WorkloadInternalError("shape inference: collective() on a non-collective op");
    }
    return t;
  }

  const Op& op_;
  const std::vector<TensorType>& in_;
  const Workload* wl_;
};

}  // namespace

std::vector<TensorType> infer_output_types(const Op& op, const std::vector<TensorType>& inputs,
                                           const Workload* mesh_owner) {
  return Inferer(op, inputs, mesh_owner).run();
}

}  // namespace tpusim::workloads
