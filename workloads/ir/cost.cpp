// FLOP, MAC, transcendental and minimum-HBM-byte counts per op (see cost.h
// for the conventions).
#include "workloads/ir/cost.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "arch/common/checked.h"

#include "workloads/ir/shape_inference.h"
#include "workloads/ir/workload.h"

namespace tpusim::workloads {

OpCost& OpCost::operator+=(const OpCost& o) {
  flops += o.flops;
  macs += o.macs;
  recompute_macs += o.recompute_macs;
  masked_macs += o.masked_macs;
  transcendentals += o.transcendentals;
  bytes_read += o.bytes_read;
  bytes_written += o.bytes_written;
  return *this;
}

std::uint64_t attention_score_pairs(std::int64_t q_len, std::int64_t kv_len, bool causal, std::int64_t window) {
  __extension__ typedef unsigned __int128 u128;
  if (q_len <= 0 || kv_len <= 0) return 0;
  u128 n;
  if (!causal) {
    n = static_cast<u128>(q_len) * static_cast<u128>(kv_len);
  } else {
    // Query i sees min(kv_len, max(0, i + kv_len - q_len + 1)) keys; the
    // last query sees kv_len, each earlier one one fewer, down to 1 (or to
    // kv_len - q_len + 1 when kv_len >= q_len): an arithmetic series x =
    // first..kv_len. A window caps each term at `window`: the series up
    // to the window, then `window` for every larger x.
    const std::int64_t first = std::max<std::int64_t>(1, kv_len - q_len + 1);
    auto series = [](std::int64_t a, std::int64_t b) {  // a + ... + b, 0 when b < a
      return b < a ? u128{0} : (static_cast<u128>(a) + static_cast<u128>(b)) * static_cast<u128>(b - a + 1) / 2;
    };
    if (window <= 0 || window >= kv_len) {
      n = series(first, kv_len);
    } else {
      const std::int64_t capped_from = std::max(first, window + 1);
      n = series(first, std::min(kv_len, window)) +
          static_cast<u128>(window) * static_cast<u128>(std::max<std::int64_t>(0, kv_len - capped_from + 1));
    }
  }
  return n > std::numeric_limits<std::uint64_t>::max() ? std::numeric_limits<std::uint64_t>::max()
                                                       : static_cast<std::uint64_t>(n);
}

namespace {
using u64 = std::uint64_t;
u64 U(std::int64_t v) { return static_cast<u64>(v); }

// Checked arithmetic for one op's counts: a count beyond 64 bits is the
// op's problem, reported with its name rather than wrapped.
struct Counter {
  const Op& op;
  [[noreturn]] void overflow() const {
    throw WorkloadError(op.loc, "op '" + op.name + "' (" + std::string(op_kind_name(op.kind)) + ")",
                        "its FLOP, MAC or byte count exceeds 2^64: the op is too large to simulate");
  }
  u64 mul(u64 a, u64 b) const {
    auto r = arch::checked_mul(a, b);
    if (!r) overflow();
    return *r;
  }
  u64 add(u64 a, u64 b) const {
    auto r = arch::checked_add(a, b);
    if (!r) overflow();
    return *r;
  }
};
}  // namespace

namespace {
template <class Find>
OpCost cost_impl(Find find, const Op& op);
}  // namespace

// One op: a linear scan is cheaper than building an index.
OpCost op_cost(const Workload& wl, const Op& op) {
  return cost_impl([&](const std::string& n) { return wl.find_tensor(n); }, op);
}

OpCost op_cost(const TensorIndex& index, const Op& op) {
  return cost_impl([&](const std::string& n) { return index.find(n); }, op);
}

namespace {
template <class Find>
OpCost cost_impl(Find find, const Op& op) {
  std::vector<const Tensor*> in, out;
  for (const auto& n : op.inputs) {
    const Tensor* t = find(n);
    if (!t) throw WorkloadError(op.loc, "op '" + op.name + "'", "unknown tensor '" + n + "'");
    in.push_back(t);
  }
  for (const auto& n : op.outputs) {
    const Tensor* t = find(n);
    if (!t) throw WorkloadError(op.loc, "op '" + op.name + "'", "unknown tensor '" + n + "'");
    out.push_back(t);
  }
  OpCost c;
  const Counter k{op};
  // Minimum traffic: each distinct input once, each output once.
  std::set<std::string> seen;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!seen.insert(in[i]->name).second) continue;
    if (op.kind == OpKind::gather && i == 0) {
      const Tensor& table = *in[0];
      u64 row_elems = U(table.num_elements() / std::max<std::int64_t>(table.shape[0], 1));
      u64 rows = U(in.size() > 1 ? in[1]->num_elements() : 0);
      c.bytes_read =
          k.add(c.bytes_read, std::min(table.bytes(), k.mul(rows, arch::dtype_bytes(table.dtype, row_elems))));
    } else {
      c.bytes_read = k.add(c.bytes_read, in[i]->bytes());
    }
  }
  for (const auto* t : out) c.bytes_written = k.add(c.bytes_written, t->bytes());
  if (in.empty() || out.empty()) return c;
  const u64 out_elems = U(out[0]->num_elements());

  switch (op.kind) {
    case OpKind::matmul: {
      const auto& a = op.as<MatmulAttrs>();
      MatmulDims d = matmul_dims(a, in.at(0)->shape, in.at(1)->shape);
      c.macs = k.mul(k.mul(U(d.batch), U(d.m)), k.mul(U(d.k), U(d.n)));
      if (c.macs > u64{1} << 62) k.overflow();  // MatmulDims::macs() is int64
      c.flops = k.mul(2, c.macs);
      if (!a.causal.empty()) {
        // Both labels are dims of the product: every (query, key) pair
        // has macs / (q x k) MACs; the masked pairs' are not useful.
        const auto [ql, kl] = matmul_causal_extents(a, in.at(0)->shape, in.at(1)->shape);
        const u64 kept = attention_score_pairs(ql, kl, true, a.window), all = k.mul(U(ql), U(kl));
        if (kept == std::numeric_limits<u64>::max()) k.overflow();
        if (all > 0) c.masked_macs = c.macs - k.mul(c.macs / all, kept);
      }
      break;
    }
    case OpKind::conv2d: {
      // Each output element is a dot product of KH*KW*(C/groups) terms.
      const Shape& w = in.at(1)->shape;
      c.macs = k.mul(out_elems, k.mul(k.mul(U(w[0]), U(w[1])), U(w[2])));
      c.flops = k.mul(2, c.macs);
      break;
    }
    case OpKind::elementwise: {
      EwCost e = ew_cost(op.as<ElementwiseAttrs>().kind);
      c.flops = k.mul(out_elems, U(e.flops));
      c.transcendentals = k.mul(out_elems, U(e.transcendentals));
      break;
    }
    case OpKind::reduce: {
      u64 in_elems = U(in[0]->num_elements());
      c.flops = in_elems - out_elems;
      if (op.as<ReduceAttrs>().kind == ReduceKind::mean) c.flops += out_elems;
      break;
    }
    case OpKind::softmax: {
      const Shape& x = in[0]->shape;
      std::int64_t ax = op.as<SoftmaxAttrs>().axis;
      if (ax < 0) ax += static_cast<std::int64_t>(x.size());
      u64 r = U(x.at(ax));
      u64 rows = out_elems / r;
      // max (r-1) + subtract r + sum (r-1) + divide r per row; exp per element.
      c.flops = k.mul(rows, 4 * r - 2);
      c.transcendentals = out_elems;
      break;
    }
    case OpKind::layer_norm:
    case OpKind::rms_norm: {
      const Shape& x = in[0]->shape;
      std::int64_t ax = op.as<NormAttrs>().axis;
      if (ax < 0) ax += static_cast<std::int64_t>(x.size());
      u64 r = U(num_elements(Shape(x.begin() + ax, x.end())));
      u64 per = op.kind == OpKind::layer_norm ? 5 : 3;
      per += in.size() - 1;  // scale and bias: one op per element each
      c.flops = k.mul(out_elems, per);
      c.transcendentals = out_elems / r;  // one rsqrt per normalised row
      break;
    }
    case OpKind::attention: {
      const Shape &q = in.at(0)->shape, &v = in.at(2)->shape;
      u64 heads = k.mul(U(q[0]), U(q[2]));  // batch x heads
      const auto& aa = op.as<AttentionAttrs>();
      const u64 per_head = attention_score_pairs(q[1], v[1], aa.causal, aa.window);
      if (per_head == std::numeric_limits<u64>::max()) k.overflow();
      u64 pairs = k.mul(heads, per_head);
      // Per score, the kernel's matmuls (attention_kernel: forward QK^T
      // and PV; the backward kernels' recomputed S = QK^T, dP = dO V^T and
      // gradient matmuls) and its VPU ops (forward's softmax 5, backward's
      // P and dS 7).
      const AttentionKernel& kern = attention_kernel(op.as<AttentionAttrs>().pass);
      const std::int64_t dv = aa.value_width(v[3]);
      u64 per = 0, again = 0;
      for (const auto& mm : kern.matmuls) {
        per = k.add(per, U(mm.width(q[3], dv)));
        if (mm.recomputed) again = k.add(again, U(mm.width(q[3], dv)));
      }
      const u64 vpu = U(kern.vpu_ops_per_score);
      c.macs = k.mul(pairs, per);
      c.recompute_macs = k.mul(pairs, again);
      c.flops = k.add(k.mul(2, c.macs), k.mul(vpu, pairs));
      c.transcendentals = pairs;
      break;
    }
    // Data movement only: no arithmetic.
    case OpKind::gather:
    case OpKind::transpose:
    case OpKind::reshape:
    case OpKind::concat:
    case OpKind::slice:
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_reduce:
    case OpKind::all_to_all:
    case OpKind::collective_permute:
    case OpKind::broadcast:
    case OpKind::copy: break;
  }
  return c;
}
}  // namespace

OpCost workload_cost(const Workload& wl) {
  OpCost total;
  TensorIndex index(wl);
  for (const auto& op : wl.ops) {
    OpCost c = op_cost(index, op);
    for (auto [sum, part] : {std::pair{&total.flops, c.flops},
                             {&total.macs, c.macs},
                             {&total.recompute_macs, c.recompute_macs},
                             {&total.masked_macs, c.masked_macs},
                             {&total.transcendentals, c.transcendentals},
                             {&total.bytes_read, c.bytes_read},
                             {&total.bytes_written, c.bytes_written}}) {
      auto r = arch::checked_add(*sum, part);
      if (!r)
        throw WorkloadError(op.loc, "op '" + op.name + "'", "the workload's total FLOP or byte count exceeds 2^64");
      *sum = *r;
    }
  }
  return total;
}

}  // namespace tpusim::workloads
