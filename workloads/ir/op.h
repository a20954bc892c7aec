// Operators of the workload IR and their attributes.
// Models: the op kinds a TPU program is made of at the level the simulator
// maps onto MXU/VPU/DMA/ICI: general einsum matmul, conv2d (NHWC/HWIO),
// elementwise (broadcasting), reduce, softmax, layer/RMS norm, fused
// attention (GQA/MQA, causal), gather (embedding lookup), layout ops and
// collectives over named mesh axes. Each op reads named input tensors and
// writes named output tensors; dependencies follow from those names.
// Leaves out: control flow, dynamic shapes, in-place updates, numerics.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "workloads/ir/tensor.h"

namespace tpusim::workloads {

enum class OpKind : std::uint8_t {
  matmul,
  conv2d,
  elementwise,
  reduce,
  softmax,
  layer_norm,
  rms_norm,
  attention,
  gather,
  transpose,
  reshape,
  concat,
  slice,
  all_gather,
  reduce_scatter,
  all_reduce,
  all_to_all,
  collective_permute,
  broadcast,
  copy,
};
inline constexpr OpKind kAllOpKinds[] = {OpKind::matmul,     OpKind::conv2d,     OpKind::elementwise,
                                         OpKind::reduce,     OpKind::softmax,    OpKind::layer_norm,
                                         OpKind::rms_norm,   OpKind::attention,  OpKind::gather,
                                         OpKind::transpose,  OpKind::reshape,    OpKind::concat,
                                         OpKind::slice,      OpKind::all_gather, OpKind::reduce_scatter,
                                         OpKind::all_reduce, OpKind::all_to_all, OpKind::collective_permute,
                                         OpKind::broadcast,  OpKind::copy};

std::string_view op_kind_name(OpKind k);
std::optional<OpKind> parse_op_kind(std::string_view s);
bool is_collective(OpKind k);

// ---- matmul -------------------------------------------------------------
// A two-operand einsum. Every label is one dim; a label in both operands
// and the output is a batch dim, in both operands only a contracting dim,
// in one operand and the output a free dim (M for lhs, N for rhs). Labels
// that appear in a single operand and not in the output are rejected
// (that is a reduce, write it as one).
// A matmul kernel's block sizes, as a Pallas matmul's BlockSpecs set them:
// A blocks of (m, k), B blocks of (k, n), output blocks of (m, n) over the
// GEMM view of the einsum (batch, M, K, N), the grid (M/m, N/n, K/k) with
// K innermost (the JAX Pallas TPU matmul guide's kernel). 0 = the lowering
// searches that size (gemm_tiling.h). Pallas needs a block's last two
// dimensions to be multiples of 8 (sublanes) and 128 (lanes): m a multiple
// of 8, k and n of 128 (k is A's last dimension and B's second-last).
struct MatmulBlocks {
  static constexpr std::int64_t kMUnit = 8;    // sublanes
  static constexpr std::int64_t kKUnit = 128;  // lanes (A's minor dimension)
  static constexpr std::int64_t kNUnit = 128;  // lanes (B's minor dimension)
  std::int64_t m = 0, k = 0, n = 0;
  bool fixed() const { return m > 0 || k > 0 || n > 0; }
  // Whether block size `b` is allowed for a dimension of `full` whose unit
  // is `unit`: 0 (searched), a positive multiple of the unit, or `full`.
  static bool allowed(std::int64_t b, std::int64_t full, std::int64_t unit) {
    return b >= 0 && (b % unit == 0 || b == full);
  }
  bool operator==(const MatmulBlocks& o) const { return m == o.m && k == o.k && n == o.n; }
};

struct MatmulAttrs {
  std::string equation;            // e.g. "bmk,bkn->bmn"; always set in a built IR
  std::optional<DType> out_dtype;  // default: lhs dtype
  // Dynamic quantization inside the kernel: each operand stored wider than
  // this dtype is quantized to it on the VPU (a max-abs reduction per row
  // of A / column of B, then a rescale and cast) and the MXU runs this
  // dtype; the output is rescaled by the product of the scales (AQT, MLPerf
  // int8 training). Unset: operands go to the MXU as stored.
  std::optional<DType> quantize;
  // Two labels "qk" (or ""): the einsum runs over attention's (query, key)
  // pairs under a causal mask (queries aligned with the last keys, as in
  // AttentionAttrs), e.g. dense attention's QK^T and PV and their
  // gradients. Every pair is computed; the masked ones are not useful work
  // (OpCost::masked_macs, left out of model FLOPs).
  std::string causal{};
  // With causal labels: local (sliding-window) attention, each query
  // seeing the `window` keys that end at its diagonal (AttentionAttrs::
  // window); the pairs outside it are masked too. 0 = none.
  std::int64_t window = 0;
  // The kernel's block sizes (MatmulBlocks; all 0: searched).
  MatmulBlocks blocks{};
  bool operator==(const MatmulAttrs& o) const {
    return equation == o.equation && out_dtype == o.out_dtype && quantize == o.quantize && causal == o.causal &&
           window == o.window && blocks == o.blocks;
  }
};

// XLA dot_general-style dims turned into an equation whose output is
// batch dims, then lhs free dims, then rhs free dims (each in operand
// order). Throws WorkloadError (path "matmul") on out-of-range/duplicate dims.
std::string dot_general_equation(int lhs_rank, int rhs_rank, const std::vector<int>& lhs_batch,
                                 const std::vector<int>& rhs_batch, const std::vector<int>& lhs_contracting,
                                 const std::vector<int>& rhs_contracting);
// Equation for "x @ w" style defaults: lhs [..., m, k] and rhs [k, n] gives
// "mk,kn->mn" (rank 2), "amk,kn->amn" (rank 3), "k,kn->n" (rank 1);
// equal-rank (>=3) operands give batched matmul over
// all leading dims. Throws WorkloadError when neither form applies.
std::string default_matmul_equation(int lhs_rank, int rhs_rank);

// ---- conv2d -------------------------------------------------------------
enum class PaddingMode : std::uint8_t { explicit_pads, same, valid };
std::string_view padding_mode_name(PaddingMode m);  // "explicit", "same", "valid"
std::optional<PaddingMode> parse_padding_mode(std::string_view s);

// input [N, H, W, C], filter [KH, KW, C/groups, OC], output [N, OH, OW, OC].
// groups == C == OC/multiplier gives a depthwise convolution.
struct Conv2dAttrs {
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t dilation_h = 1, dilation_w = 1;
  PaddingMode padding = PaddingMode::valid;
  // Used only with explicit_pads; for same/valid the shape inference
  // computes them (same follows TensorFlow: OH = ceil(H / stride), the extra
  // odd pad goes to the bottom/right).
  std::int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  std::int64_t groups = 1;
  std::optional<DType> out_dtype;  // default: input dtype
  bool operator==(const Conv2dAttrs& o) const;
};

// ---- elementwise --------------------------------------------------------
enum class EwKind : std::uint8_t {
  // binary
  add,
  sub,
  mul,
  div,
  max,
  min,
  pow,
  // unary
  exp,
  log,
  tanh,
  gelu,
  silu,
  relu,
  sigmoid,
  rsqrt,
  sqrt,
  neg,
  abs,
  square,
  reciprocal,
  cast,
  // ternary: select/where (cond, on_true, on_false), clamp (x, lo, hi)
  select,
  where,
  clamp,
};
std::string_view ew_kind_name(EwKind k);
std::optional<EwKind> parse_ew_kind(std::string_view s);
std::vector<std::string_view> all_ew_kind_names();
int ew_arity(EwKind k);  // 1, 2 or 3
// Per output element: arithmetic FLOPs and transcendental (EUP) ops.
// See docs/workload-format.md for the table and why.
struct EwCost {
  int flops;
  int transcendentals;
};
EwCost ew_cost(EwKind k);

struct ElementwiseAttrs {
  EwKind kind = EwKind::add;
  std::optional<DType> to;  // cast only: result dtype (required for cast)
  bool operator==(const ElementwiseAttrs& o) const { return kind == o.kind && to == o.to; }
};

// ---- reduce -------------------------------------------------------------
enum class ReduceKind : std::uint8_t { sum, max, min, mean };
std::string_view reduce_kind_name(ReduceKind k);
std::optional<ReduceKind> parse_reduce_kind(std::string_view s);

struct ReduceAttrs {
  ReduceKind kind = ReduceKind::sum;
  std::vector<std::int64_t> axes;  // negative counts from the end
  bool keep_dims = false;
  bool operator==(const ReduceAttrs& o) const { return kind == o.kind && axes == o.axes && keep_dims == o.keep_dims; }
};

// ---- softmax / norms ----------------------------------------------------
struct SoftmaxAttrs {
  std::int64_t axis = -1;
  bool operator==(const SoftmaxAttrs& o) const { return axis == o.axis; }
};

// layer_norm inputs: x [, scale [, bias]]; rms_norm inputs: x [, scale].
// Normalises over dims [axis, rank); scale/bias have shape x.shape[axis:].
struct NormAttrs {
  std::int64_t axis = -1;
  double epsilon = 1e-5;
  bool operator==(const NormAttrs& o) const { return axis == o.axis && epsilon == o.epsilon; }
};

// ---- attention ----------------------------------------------------------
// q [B, Lq, H, D], k [B, Lkv, KVH, D], v [B, Lkv, KVH, Dv] -> [B, Lq, H, Dv].
// H % KVH == 0 (KVH == H: MHA, 1: MQA, else GQA). Causal masks are aligned
// bottom-right: query i sees keys j <= i + (Lkv - Lq), so a decode step
// (Lq = 1) sees the whole cache.
//
// `pass` names the kernel: the forward (S = QK^T, softmax, O = PV) or one
// of the backward kernels of flash attention, which recompute S and P
// from the saved log-sum-exp instead of storing them. Splash attention's
// separate dQ and dK/dV kernels:
//   grad_q:  S = QK^T, dP = dO V^T, dS = P (dP - rowsum(dO O)), dQ = dS K;
//   grad_kv: S = QK^T, dP = dO V^T, dV = P^T dO, dK = dS^T Q;
// or its fused backward kernel (sa_use_fused_bwd_kernel), one pass for all:
//   grad_qkv: S, dP, dV = P^T dO, dK = dS^T Q, dQ = dS K.
// The backward ops keep the forward's three inputs and output shape (the
// model builder passes dO in q's place for grad_q and grad_qkv, and K for
// V in grad_q: the blocks are read); their MACs count every matmul of the
// kernel, the recomputed S (and dP in grad_kv) separately as recompute
// (OpCost).
enum class AttentionPass : std::uint8_t { forward, grad_q, grad_kv, grad_qkv };
std::string_view attention_pass_name(AttentionPass p);
std::optional<AttentionPass> parse_attention_pass(std::string_view s);

// What one attention kernel (AttentionPass) computes per block of query
// rows and keys: its matmuls, in the order the kernel issues them, and
// the VPU work per score. The one description that the cost (OpCost),
// the model's closed form (models/analysis), the tiling search and the
// lowering (sim/lowering) all read. A matmul's form:
//   scores       [rows, w] x [w, keys]: S = Q K^T, dP = dO V^T
//   from_scores  [rows, keys] x [keys, w]: O = P V, dQ = dS K
//   transposed   [keys, rows] x [rows, w]: dV = P^T dO, dK = dS^T Q
// and w the query/key width (D) or the value width (Dv: the op's V
// input's; for grad_q, whose V input is K, D as well).
enum class AttentionMatmulForm : std::uint8_t { scores, from_scores, transposed };
struct AttentionMatmul {
  AttentionMatmulForm form = AttentionMatmulForm::scores;
  bool value_width = false;  // w = Dv (else D)
  bool recomputed = false;   // forward work done again (OpCost::recompute_macs)
  std::int64_t width(std::int64_t d, std::int64_t dv) const { return value_width ? dv : d; }
};
struct AttentionKernel {
  std::vector<AttentionMatmul> matmuls;
  int vpu_ops_per_score = 5;   // forward: the online softmax; backward: P and dS
  bool row_reductions = true;  // forward: row max and sum (XLU); backward reads the saved log-sum-exp
  // FLOPs per score: 2 per MAC of every matmul and the VPU ops.
  double flops_per_score(double d, double dv) const;
};
// forward: S, O = PV. grad_q: S (recomputed), dP, dQ. grad_kv: S and dP
// (both recomputed: the dQ kernel computes dP too), dV, dK. grad_qkv: S
// (recomputed), dP, dV, dK, dQ. Backward kernels: 7 VPU ops per score
// (exp(S - lse), dP - di, the products), no row reductions.
const AttentionKernel& attention_kernel(AttentionPass p);

// The flash kernel's block sizes, as splash attention's BlockSizes set
// them (block_q, block_kv; block_kv_compute = block_kv): `q` query
// positions (of each query head) and `kv` key positions per grid step.
// 0 = the lowering searches the block (attention_tiling.h). Splash takes
// block_q a multiple of 8 (sublanes) and block_kv of 128 (lanes).
struct AttentionBlocks {
  static constexpr std::int64_t kQUnit = 8;     // sublanes: block_q a multiple
  static constexpr std::int64_t kKvUnit = 128;  // lanes: block_kv a multiple
  std::int64_t q = 0, kv = 0;
  bool fixed() const { return q > 0 || kv > 0; }
  bool operator==(const AttentionBlocks& o) const { return q == o.q && kv == o.kv; }
};

// `window` (causal only; 0 = none): local attention, as sliding-window
// layers (Mistral, Gemma 2/3, gpt-oss) and splash attention's LocalMask
// compute it: query i sees the `window` keys ending at its diagonal,
// j in (i' - window, i'] with i' = i + (Lkv - Lq).
struct AttentionAttrs {
  bool causal = false;
  std::optional<double> scale;  // default 1/sqrt(D)
  AttentionPass pass = AttentionPass::forward;
  std::int64_t window = 0;
  AttentionBlocks blocks;
  // Sequences a grid step may hold, at most (0 or 1: one, the default, as
  // flash, splash and paged attention kernels walk the batch): > 1 is a
  // batched kernel (vllm-project/tpu-inference's batched ragged paged
  // attention, pull request #1961), whose steps take several sequences'
  // blocks at once, so that the per-step overhead and the
  // QK^T -> softmax -> PV chain's fill are paid once per step and one
  // sequence's matmuls overlap another's softmax. The lowering searches
  // how many (powers of two up to this bound); searched blocks only.
  std::int64_t max_step_seqs = 0;
  static constexpr std::int64_t kMaxStepSeqsLimit = 256;  // what a file may ask for
  // Value columns the kernel uses, the first value_dim of the value's last
  // dim (0: all): MLA's absorbed decode passes its latent cache (512
  // kv_lora_rank columns, then 64 rope ones) as key and value, and PV
  // takes the 512 (FlashMLA-style kernels). Forward only; the output's
  // last dim.
  std::int64_t value_dim = 0;
  std::int64_t value_width(std::int64_t stored) const { return value_dim > 0 ? value_dim : stored; }
  bool operator==(const AttentionAttrs& o) const {
    return causal == o.causal && scale == o.scale && pass == o.pass && window == o.window && blocks == o.blocks &&
           max_step_seqs == o.max_step_seqs && value_dim == o.value_dim;
  }
};

// ---- gather -------------------------------------------------------------
// inputs: table [V, ...], indices [...] -> indices.shape + table.shape[1:].
struct GatherAttrs {
  bool operator==(const GatherAttrs&) const { return true; }
};

// ---- layout -------------------------------------------------------------
struct TransposeAttrs {
  std::vector<std::int64_t> perm;  // output dim i = input dim perm[i]
  bool operator==(const TransposeAttrs& o) const { return perm == o.perm; }
};
struct ReshapeAttrs {
  Shape shape;  // at most one -1, inferred from the element count
  bool operator==(const ReshapeAttrs& o) const { return shape == o.shape; }
};
struct ConcatAttrs {
  std::int64_t axis = 0;
  bool operator==(const ConcatAttrs& o) const { return axis == o.axis; }
};
// Elements start[i], start[i]+stride[i], ... < limit[i] of each dim.
struct SliceAttrs {
  std::vector<std::int64_t> start, limit, stride;  // stride empty = all 1
  bool operator==(const SliceAttrs& o) const { return start == o.start && limit == o.limit && stride == o.stride; }
};

// ---- copy ---------------------------------------------------------------
// The input, unchanged, in memory space `to`: `host` writes it to host
// memory over the host link (an activation offloaded in forward), `hbm`
// reads a host tensor back (before its backward use). Asynchronous: it
// runs on the DMA engines and the host link while kernels compute.
struct CopyAttrs {
  MemSpace to = MemSpace::hbm;
  bool operator==(const CopyAttrs& o) const { return to == o.to; }
};

// ---- collectives --------------------------------------------------------
// Shapes are per participant (SPMD). The group is the product of the sizes
// of mesh_axes, which must be declared in Workload::mesh.
//   all_gather:          dim *= group
//   reduce_scatter:      dim /= group (must divide), combined by `reduce`
//   all_reduce:          shape unchanged, combined by `reduce`
//   all_to_all:          split_dim /= group, concat_dim *= group
//   collective_permute:  shape unchanged; pairs (source, target) of group ranks
//   broadcast:           shape unchanged; from group rank `root`
struct CollectiveAttrs {
  std::vector<std::string> mesh_axes;
  std::int64_t dim = 0;                                      // all_gather, reduce_scatter
  std::int64_t split_dim = 0;                                // all_to_all
  std::int64_t concat_dim = 0;                               // all_to_all
  ReduceKind reduce = ReduceKind::sum;                       // all_reduce, reduce_scatter (mean invalid)
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;  // collective_permute
  std::int64_t root = 0;                                     // broadcast
  bool operator==(const CollectiveAttrs& o) const;
};

using OpAttrs =
    std::variant<MatmulAttrs, Conv2dAttrs, ElementwiseAttrs, ReduceAttrs, SoftmaxAttrs, NormAttrs, AttentionAttrs,
                 GatherAttrs, TransposeAttrs, ReshapeAttrs, ConcatAttrs, SliceAttrs, CollectiveAttrs, CopyAttrs>;

// Default-constructed attributes of the type a kind uses.
OpAttrs default_attrs(OpKind k);
// Whether attrs holds the alternative kind k uses.
bool attrs_match_kind(OpKind k, const OpAttrs& a);

struct Op {
  std::string name;
  OpKind kind = OpKind::matmul;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  OpAttrs attrs;
  SourceLoc loc;  // not part of equality

  template <class A>
  const A& as() const {
    if (const A* a = std::get_if<A>(&attrs)) return *a;
    throw WorkloadInternalError("op '" + name + "': attributes do not match kind " + std::string(op_kind_name(kind)));
  }
  template <class A>
  A& as() {
    return const_cast<A&>(static_cast<const Op*>(this)->as<A>());
  }

  bool operator==(const Op& o) const {
    return name == o.name && kind == o.kind && inputs == o.inputs && outputs == o.outputs && attrs == o.attrs;
  }
  bool operator!=(const Op& o) const { return !(*this == o); }
};

// Allowed number of inputs of a kind: [min, max]. Every kind has 1 output.
struct Arity {
  int min_inputs;
  int max_inputs;
};
Arity op_arity(const Op& op);

}  // namespace tpusim::workloads
