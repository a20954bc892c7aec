// Flash attention: per (batch, KV head) the query rows of its head group
// are folded into M; for each query block, K and V blocks stream through
// VMEM: S = Q K^T (MXU), online softmax (VPU, XLU), O += P V (MXU); the
// normalised output is stored once per query block. Causal blocks wholly
// above the diagonal are skipped.
#include "sim/lowering/op_lowering.h"

namespace tpusim::sim::lowering {

using arch::DType;
using workloads::Op;
using workloads::Tensor;

std::vector<Step> lower_attention(const LowerContext& cx, std::size_t i, const Epilogue& ep, OpPlan& plan) {
  const Op& op = cx.op(i);
  const ChipFigures& f = cx.f;
  const Tensor& q = cx.tensor(op.inputs[0]);
  const Tensor& k = cx.tensor(op.inputs[1]);
  const Tensor& v = cx.tensor(op.inputs[2]);
  const bool causal = op.as<workloads::AttentionAttrs>().causal;
  const std::int64_t B = q.shape[0], Lq = q.shape[1], H = q.shape[2], D = q.shape[3];
  const std::int64_t Lkv = k.shape[1], KVH = k.shape[2], Dv = v.shape[3];
  const std::int64_t group = H / KVH;
  const std::int64_t rows = Lq * group;  // query rows per KV head
  const DType t = q.dtype;
  if (f.throughput(t) <= 0)
    throw LoweringError("the MXU of " + cx.cfg.chip.name + " does not support " +
                        std::string(arch::dtype_name(t)) + " attention");
  const std::int64_t bq = std::min<std::int64_t>(round_up(rows, 8), 512);
  const std::int64_t bkv = std::min<std::int64_t>(round_up(Lkv, f.cols), 512);
  const int cores = cx.cores();
  const std::int64_t nq = ceil_div(rows, bq);
  const std::int64_t units = B * KVH * nq;
  const std::uint64_t out_elems = static_cast<std::uint64_t>(q.num_elements() / D * Dv);
  const Ref qr = cx.ref(q.name), kr = cx.ref(k.name), vr = cx.ref(v.name);
  std::vector<Step> steps;
  std::int64_t unit = 0;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < KVH; ++h)
      for (std::int64_t qi = 0; qi < nq; ++qi, ++unit) {
        const int core = static_cast<int>(unit * cores / std::max<std::int64_t>(1, units));
        const std::int64_t r0 = qi * bq, rn = std::min(bq, rows - r0);
        // Last query position in this block (rows are [query, head] pairs).
        const std::int64_t q_last = (r0 + rn - 1) / group;
        const std::int64_t visible = causal ? std::min(Lkv, q_last + (Lkv - Lq) + 1) : Lkv;
        const std::int64_t kv_blocks = std::max<std::int64_t>(1, ceil_div(visible, bkv));
        for (std::int64_t kj = 0; kj < kv_blocks; ++kj) {
          const std::int64_t c0 = kj * bkv, cn = std::min(bkv, Lkv - c0);
          Step s;
          s.core = core;
          if (kj == 0)
            s.loads.push_back(load(qr + bytes_of(t, ((b * Lq) * H + h * group) * D + r0 / group * H * D),
                                   bytes_of(t, group * D), static_cast<std::uint64_t>(ceil_div(rn, group)),
                                   bytes_of(t, H * D)));
          s.loads.push_back(load(kr + bytes_of(k.dtype, ((b * Lkv + c0) * KVH + h) * D), bytes_of(k.dtype, D),
                                 static_cast<std::uint64_t>(cn), bytes_of(k.dtype, KVH * D)));
          s.loads.push_back(load(vr + bytes_of(v.dtype, ((b * Lkv + c0) * KVH + h) * Dv), bytes_of(v.dtype, Dv),
                                 static_cast<std::uint64_t>(cn), bytes_of(v.dtype, KVH * Dv)));
          const std::uint64_t scores = static_cast<std::uint64_t>(rn * cn);
          s.compute.push_back({mxu(rn, D, cn, t, 0), {}});
          s.compute.push_back({vpu(scores, DType::f32, 5, 1, 1, 1), {0}});
          s.compute.push_back({xlu(f, arch::XluOp::reduce, 2 * scores, DType::f32), {1}});
          s.compute.push_back({mxu(rn, cn, Dv, t, f.mxus > 1 ? 1 : 0), {2}});
          plan.padded_macs += static_cast<std::uint64_t>(rn * round_up(D, f.rows) * round_up(cn, f.cols) +
                                                         rn * round_up(cn, f.rows) * round_up(Dv, f.cols));
          if (kj == kv_blocks - 1) {
            const std::uint64_t off =
                static_cast<std::uint64_t>(((b * Lq) * H + h * group) * Dv + r0 / group * H * Dv);
            add_extra_loads(s, ep, off, static_cast<std::uint64_t>(rn * Dv), out_elems, unit == 0);
            add_epilogue(s, ep,
                         {static_cast<std::uint64_t>(rn * Dv), static_cast<std::uint64_t>(group * Dv),
                          static_cast<std::uint64_t>(ceil_div(rn, group)), static_cast<std::uint64_t>(H * Dv), off},
                         {DType::f32, 1, 0, 1});
          }
          steps.push_back(std::move(s));
        }
      }
  plan.vmem_peak = 2 * (bytes_of(t, bq * D) + bytes_of(k.dtype, bkv * D) + bytes_of(v.dtype, bkv * Dv)) +
                   static_cast<std::uint64_t>(bq * bkv * 4 + bq * Dv * 4);
  plan.blocking = "bq=" + std::to_string(bq) + " bkv=" + std::to_string(bkv);
  return steps;
}

}  // namespace tpusim::sim::lowering
