// Name tables, arities and attribute helpers of workload ops (see op.h).
#include "workloads/ir/op.h"

#include <algorithm>
#include <set>

namespace tpusim::workloads {

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::matmul: return "matmul";
    case OpKind::conv2d: return "conv2d";
    case OpKind::elementwise: return "elementwise";
    case OpKind::reduce: return "reduce";
    case OpKind::softmax: return "softmax";
    case OpKind::layer_norm: return "layer_norm";
    case OpKind::rms_norm: return "rms_norm";
    case OpKind::attention: return "attention";
    case OpKind::gather: return "gather";
    case OpKind::transpose: return "transpose";
    case OpKind::reshape: return "reshape";
    case OpKind::concat: return "concat";
    case OpKind::slice: return "slice";
    case OpKind::all_gather: return "all_gather";
    case OpKind::reduce_scatter: return "reduce_scatter";
    case OpKind::all_reduce: return "all_reduce";
    case OpKind::all_to_all: return "all_to_all";
    case OpKind::collective_permute: return "collective_permute";
    case OpKind::broadcast: return "broadcast";
    case OpKind::copy: return "copy";
  }
  return "?";
}

std::optional<OpKind> parse_op_kind(std::string_view s) {
  for (OpKind k : kAllOpKinds)
    if (op_kind_name(k) == s) return k;
  return std::nullopt;
}

bool is_collective(OpKind k) {
  switch (k) {
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_reduce:
    case OpKind::all_to_all:
    case OpKind::collective_permute:
    case OpKind::broadcast: return true;
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
    case OpKind::copy: return false;
  }
  throw WorkloadInternalError("is_collective: unknown op kind");
}

// ---- matmul equations ---------------------------------------------------

namespace {
// Labels handed out in this order; m, k, n are kept for the default form.
constexpr std::string_view kLabelPool = "abcdefghijlopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

[[noreturn]] void matmul_error(const std::string& msg) { throw WorkloadError(SourceLoc{}, "matmul", msg); }

void check_dims(const char* what, const std::vector<int>& dims, int rank, std::vector<bool>& used) {
  for (int d : dims) {
    if (d < 0 || d >= rank)
      matmul_error(std::string(what) + " dim " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
    if (used[d]) matmul_error(std::string(what) + " dim " + std::to_string(d) + " listed twice");
    used[d] = true;
  }
}
}  // namespace

std::string dot_general_equation(int lhs_rank, int rhs_rank, const std::vector<int>& lhs_batch,
                                 const std::vector<int>& rhs_batch, const std::vector<int>& lhs_contracting,
                                 const std::vector<int>& rhs_contracting) {
  if (lhs_batch.size() != rhs_batch.size())
    matmul_error("lhs_batch has " + std::to_string(lhs_batch.size()) + " dims, rhs_batch has " +
                 std::to_string(rhs_batch.size()));
  if (lhs_contracting.size() != rhs_contracting.size())
    matmul_error("lhs_contracting has " + std::to_string(lhs_contracting.size()) + " dims, rhs_contracting has " +
                 std::to_string(rhs_contracting.size()));
  if (lhs_rank + rhs_rank > static_cast<int>(kLabelPool.size()))
    matmul_error("operand ranks too large for an equation");
  std::vector<bool> lu(lhs_rank, false), ru(rhs_rank, false);
  check_dims("lhs_batch", lhs_batch, lhs_rank, lu);
  check_dims("lhs_contracting", lhs_contracting, lhs_rank, lu);
  check_dims("rhs_batch", rhs_batch, rhs_rank, ru);
  check_dims("rhs_contracting", rhs_contracting, rhs_rank, ru);
  std::size_t next = 0;
  std::string lhs(lhs_rank, '?'), rhs(rhs_rank, '?'), out;
  for (std::size_t i = 0; i < lhs_batch.size(); ++i) {
    char c = kLabelPool[next++];
    lhs[lhs_batch[i]] = c;
    rhs[rhs_batch[i]] = c;
    out += c;
  }
  for (std::size_t i = 0; i < lhs_contracting.size(); ++i) {
    char c = kLabelPool[next++];
    lhs[lhs_contracting[i]] = c;
    rhs[rhs_contracting[i]] = c;
  }
  for (auto* side : {&lhs, &rhs})
    for (char& c : *side)
      if (c == '?') {
        c = kLabelPool[next++];
        out += c;
      }
  return lhs + "," + rhs + "->" + out;
}

std::string default_matmul_equation(int lhs_rank, int rhs_rank) {
  if (lhs_rank == 1 && rhs_rank == 2) return "k,kn->n";
  if (lhs_rank >= 2 && rhs_rank == 2) {
    std::string lead = std::string(kLabelPool.substr(0, lhs_rank - 2)) + "m";
    return lead + "k,kn->" + lead + "n";
  }
  if (lhs_rank == rhs_rank && lhs_rank >= 3) {
    std::string b = std::string(kLabelPool.substr(0, lhs_rank - 2));
    return b + "mk," + b + "kn->" + b + "mn";
  }
  matmul_error("no default equation for lhs rank " + std::to_string(lhs_rank) + " and rhs rank " +
               std::to_string(rhs_rank) +
               ": expected rhs rank 2 ([k, n]) or equal ranks >= 3 (batched); give an equation");
}

// ---- conv2d -------------------------------------------------------------

std::string_view padding_mode_name(PaddingMode m) {
  switch (m) {
    case PaddingMode::explicit_pads: return "explicit";
    case PaddingMode::same: return "same";
    case PaddingMode::valid: return "valid";
  }
  return "?";
}

std::optional<PaddingMode> parse_padding_mode(std::string_view s) {
  for (auto m : {PaddingMode::explicit_pads, PaddingMode::same, PaddingMode::valid})
    if (padding_mode_name(m) == s) return m;
  return std::nullopt;
}

bool Conv2dAttrs::operator==(const Conv2dAttrs& o) const {
  bool pads_equal = padding != PaddingMode::explicit_pads || (pad_top == o.pad_top && pad_bottom == o.pad_bottom &&
                                                              pad_left == o.pad_left && pad_right == o.pad_right);
  return stride_h == o.stride_h && stride_w == o.stride_w && dilation_h == o.dilation_h && dilation_w == o.dilation_w &&
         padding == o.padding && pads_equal && groups == o.groups && out_dtype == o.out_dtype;
}

// ---- elementwise --------------------------------------------------------

namespace {
struct EwInfo {
  EwKind kind;
  std::string_view name;
  int arity;
  EwCost cost;
};
// FLOPs / transcendentals per output element. Why these numbers:
//  exp/log/tanh/sqrt/rsqrt: one EUP op, no VPU arithmetic.
//  sigmoid = 1/(1+exp(-x)): negate, add, divide = 3 flops, and 1 exp.
//  silu = x*sigmoid(x): sigmoid + 1 multiply = 4 flops, 1 exp.
//  gelu (tanh form 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3)))): x^3 2 mul,
//  *0.044715 1, +x 1, *sqrt(2/pi) 1, +1 1, *x 1, *0.5 1 = 8 flops, 1 tanh.
//  clamp = max then min: 2. cast/select/where/relu/abs/neg: 1 VPU op.
//  pow = exp(y*log(x)): 1 multiply, 2 transcendentals.
constexpr EwInfo kEw[] = {
    {EwKind::add, "add", 2, {1, 0}},       {EwKind::sub, "sub", 2, {1, 0}},
    {EwKind::mul, "mul", 2, {1, 0}},       {EwKind::div, "div", 2, {1, 0}},
    {EwKind::max, "max", 2, {1, 0}},       {EwKind::min, "min", 2, {1, 0}},
    {EwKind::pow, "pow", 2, {1, 2}},       {EwKind::exp, "exp", 1, {0, 1}},
    {EwKind::log, "log", 1, {0, 1}},       {EwKind::tanh, "tanh", 1, {0, 1}},
    {EwKind::gelu, "gelu", 1, {8, 1}},     {EwKind::silu, "silu", 1, {4, 1}},
    {EwKind::relu, "relu", 1, {1, 0}},     {EwKind::sigmoid, "sigmoid", 1, {3, 1}},
    {EwKind::rsqrt, "rsqrt", 1, {0, 1}},   {EwKind::sqrt, "sqrt", 1, {0, 1}},
    {EwKind::neg, "neg", 1, {1, 0}},       {EwKind::abs, "abs", 1, {1, 0}},
    {EwKind::square, "square", 1, {1, 0}}, {EwKind::reciprocal, "reciprocal", 1, {1, 0}},
    {EwKind::cast, "cast", 1, {1, 0}},     {EwKind::select, "select", 3, {1, 0}},
    {EwKind::where, "where", 3, {1, 0}},   {EwKind::clamp, "clamp", 3, {2, 0}},
};

const EwInfo& ew_info(EwKind k) {
  for (const auto& e : kEw)
    if (e.kind == k) return e;
  throw WorkloadInternalError("elementwise kind missing from table");
}
}  // namespace

std::string_view ew_kind_name(EwKind k) { return ew_info(k).name; }
int ew_arity(EwKind k) { return ew_info(k).arity; }
EwCost ew_cost(EwKind k) { return ew_info(k).cost; }

std::optional<EwKind> parse_ew_kind(std::string_view s) {
  for (const auto& e : kEw)
    if (e.name == s) return e.kind;
  return std::nullopt;
}

std::vector<std::string_view> all_ew_kind_names() {
  std::vector<std::string_view> v;
  for (const auto& e : kEw) v.push_back(e.name);
  return v;
}

// ---- reduce -------------------------------------------------------------

std::string_view reduce_kind_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::sum: return "sum";
    case ReduceKind::max: return "max";
    case ReduceKind::min: return "min";
    case ReduceKind::mean: return "mean";
  }
  return "?";
}

std::optional<ReduceKind> parse_reduce_kind(std::string_view s) {
  for (auto k : {ReduceKind::sum, ReduceKind::max, ReduceKind::min, ReduceKind::mean})
    if (reduce_kind_name(k) == s) return k;
  return std::nullopt;
}

// ---- attention ----------------------------------------------------------

std::string_view attention_pass_name(AttentionPass p) {
  switch (p) {
    case AttentionPass::forward: return "forward";
    case AttentionPass::grad_q: return "grad_q";
    case AttentionPass::grad_kv: return "grad_kv";
    case AttentionPass::grad_qkv: return "grad_qkv";
  }
  return "?";
}

std::optional<AttentionPass> parse_attention_pass(std::string_view s) {
  for (auto p : {AttentionPass::forward, AttentionPass::grad_q, AttentionPass::grad_kv, AttentionPass::grad_qkv})
    if (attention_pass_name(p) == s) return p;
  return std::nullopt;
}

const AttentionKernel& attention_kernel(AttentionPass p) {
  using F = AttentionMatmulForm;
  constexpr bool v = true, d = false, again = true, fresh = false;
  static const AttentionKernel forward{{{F::scores, d, fresh}, {F::from_scores, v, fresh}}, 5, true};
  static const AttentionKernel grad_q{
      {{F::scores, d, again}, {F::scores, v, fresh}, {F::from_scores, d, fresh}}, 7, false};
  static const AttentionKernel grad_kv{
      {{F::scores, d, again}, {F::scores, v, again}, {F::transposed, v, fresh}, {F::transposed, d, fresh}}, 7, false};
  static const AttentionKernel grad_qkv{{{F::scores, d, again},
                                         {F::scores, v, fresh},
                                         {F::from_scores, d, fresh},
                                         {F::transposed, v, fresh},
                                         {F::transposed, d, fresh}},
                                        7,
                                        false};
  switch (p) {
    case AttentionPass::forward: return forward;
    case AttentionPass::grad_q: return grad_q;
    case AttentionPass::grad_kv: return grad_kv;
    case AttentionPass::grad_qkv: return grad_qkv;
  }
  return forward;
}

double AttentionKernel::flops_per_score(double d, double dv) const {
  double f = vpu_ops_per_score;
  for (const auto& mm : matmuls) f += 2.0 * (mm.value_width ? dv : d);
  return f;
}

// ---- collectives --------------------------------------------------------

bool CollectiveAttrs::operator==(const CollectiveAttrs& o) const {
  return mesh_axes == o.mesh_axes && dim == o.dim && split_dim == o.split_dim && concat_dim == o.concat_dim &&
         reduce == o.reduce && pairs == o.pairs && root == o.root;
}

// ---- kinds vs attributes ------------------------------------------------

OpAttrs default_attrs(OpKind k) {
  switch (k) {
    case OpKind::matmul: return MatmulAttrs{};
    case OpKind::conv2d: return Conv2dAttrs{};
    case OpKind::elementwise: return ElementwiseAttrs{};
    case OpKind::reduce: return ReduceAttrs{};
    case OpKind::softmax: return SoftmaxAttrs{};
    case OpKind::layer_norm: return NormAttrs{};
    case OpKind::rms_norm: return NormAttrs{-1, 1e-6};
    case OpKind::attention: return AttentionAttrs{};
    case OpKind::gather: return GatherAttrs{};
    case OpKind::transpose: return TransposeAttrs{};
    case OpKind::reshape: return ReshapeAttrs{};
    case OpKind::concat: return ConcatAttrs{};
    case OpKind::slice: return SliceAttrs{};
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_reduce:
    case OpKind::all_to_all:
    case OpKind::collective_permute:
    case OpKind::broadcast: return CollectiveAttrs{};
    case OpKind::copy: return CopyAttrs{};
  }
  throw WorkloadInternalError("default_attrs: unknown op kind");
}

bool attrs_match_kind(OpKind k, const OpAttrs& a) { return default_attrs(k).index() == a.index(); }

Arity op_arity(const Op& op) {
  switch (op.kind) {
    case OpKind::matmul:
    case OpKind::conv2d:
    case OpKind::gather: return {2, 2};
    case OpKind::elementwise: {
      if (const auto* e = std::get_if<ElementwiseAttrs>(&op.attrs)) {
        int n = ew_arity(e->kind);
        return {n, n};
      }
      return {1, 3};
    }
    case OpKind::layer_norm: return {1, 3};
    case OpKind::rms_norm: return {1, 2};
    case OpKind::attention: return {3, 3};
    case OpKind::concat: return {1, 1 << 20};
    case OpKind::reduce:
    case OpKind::softmax:
    case OpKind::transpose:
    case OpKind::reshape:
    case OpKind::slice:
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_reduce:
    case OpKind::all_to_all:
    case OpKind::collective_permute:
    case OpKind::broadcast:
    case OpKind::copy: return {1, 1};
  }
  throw WorkloadInternalError("op_arity: unknown op kind");
}

}  // namespace tpusim::workloads
