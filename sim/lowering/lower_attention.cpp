// Flash attention (see attention_tiling.h for the blocking): per (batch,
// group of hb KV heads, block of bp query positions) the query rows of
// every head of each KV head's group are folded into M, and K and V blocks
// of bkv positions stream through VMEM. Inside a step the kernel walks
// sub-blocks of the keys, software-pipelined so that the MXU computes the
// next sub-block's scores while the VPU and XLU do this one's online
// softmax: S = Q K^T (MXU), softmax (VPU, EUP; row max and sum on the XLU),
// O += P V (MXU). The normalised output block is stored once per query
// block. Key blocks wholly above the causal diagonal are skipped, and with
// a window (local attention) those wholly before it; blocks on either edge
// are computed whole, as kernels do. A batched kernel's step
// (AttentionTiling::sb > 1) loads the blocks of several sequences and
// walks their sub-blocks one after another as one pipeline.
#include <sstream>

#include "sim/lowering/attention_tiling.h"
#include "sim/lowering/gemm_quant.h"
#include "sim/lowering/op_lowering.h"

namespace tpusim::sim::lowering {

using arch::DType;

namespace {

// The MXU work of one matmul over `hb` heads for sub-block `turn`: heads
// take MXUs in turn (one instruction per MXU when N is whole MXU tiles
// and the heads divide evenly among the MXUs; otherwise each sub-block
// starts where the previous one's heads ended, so that 5 heads on 4 MXUs
// do not leave one MXU twice the others' work).
// With more MXUs than heads, each head is spread over its share of the
// MXUs by rows, unless that leaves an MXU fewer rows than its weight load
// takes (decode: a KV group's few query rows), where every MXU would load
// the same K or V tile for a row or two: then each head's matmul runs on
// one MXU and successive sub-blocks take the MXUs in turn, as a kernel
// spreads independent key sub-blocks over them. Returns the indices of the
// instructions added.
std::vector<int> heads_matmul(Step& s, const ChipFigures& f, std::int64_t hb, std::int64_t m, std::int64_t k,
                              std::int64_t n, DType t, const std::vector<int>& after, std::uint64_t& slots,
                              std::int64_t turn) {
  std::vector<int> ids;
  const int mx = f.mxus;
  if (hb >= mx && hb % mx == 0 && n % f.cols == 0) {
    // One instruction per MXU for its heads, side by side along N: the
    // same weight tiles, each streaming the same rows, as one per head.
    for (int u = 0; u < mx; ++u) {
      const std::int64_t heads = (hb - u + mx - 1) / mx;
      if (heads <= 0) continue;
      slots += add_matmul(s, f, m, k, n * heads, t, after, u, 1);
      ids.push_back(static_cast<int>(s.compute.size()) - 1);
    }
    return ids;
  }
  const int share = hb >= mx ? 1 : mx / static_cast<int>(hb);
  const bool rotate = share > 1 && static_cast<double>(m) / (share * f.throughput(t)) < static_cast<double>(f.rows);
  for (std::int64_t h = 0; h < hb; ++h) {
    const std::size_t before = s.compute.size();
    if (hb >= mx || rotate) {
      slots += add_matmul(s, f, m, k, n, t, after, static_cast<int>((h + turn * hb) % mx), 1);
    } else {
      slots += add_matmul(s, f, m, k, n, t, after, static_cast<int>(h) * share, share);
    }
    for (std::size_t i = before; i < s.compute.size(); ++i) ids.push_back(static_cast<int>(i));
  }
  return ids;
}

}  // namespace

std::vector<Step> lower_attention(const LowerContext& cx, std::size_t i, const Epilogue& ep, OpPlan& plan) {
  const Op& op = cx.op(i);
  const ChipFigures& f = cx.f;
  const Tensor& q = cx.tensor(op.inputs[0]);
  const Tensor& k = cx.tensor(op.inputs[1]);
  const Tensor& v = cx.tensor(op.inputs[2]);
  const auto& attrs = op.as<workloads::AttentionAttrs>();
  AttentionShape a;
  a.batch = q.shape[0];
  a.q_len = q.shape[1];
  a.heads = q.shape[2];
  a.head_dim = q.shape[3];
  a.kv_len = k.shape[1];
  a.kv_heads = k.shape[2];
  // The value columns PV uses (AttentionAttrs::value_dim), of the Dv the
  // value tensor stores: a separate value's blocks load whole rows.
  const std::int64_t dv_stored = v.shape[3];
  a.v_dim = attrs.value_width(dv_stored);
  a.v_stored = dv_stored;
  a.causal = attrs.causal;
  a.window = attrs.window;
  a.blocks = attrs.blocks;
  a.max_step_seqs = attrs.max_step_seqs;
  // Fixed blocks run as splash attention's kernel does: one query head
  // per grid step, its K and V blocks read for it (the kernel's grid walks
  // query heads; GQA maps each to its KV head), no heads folded into M.
  const std::int64_t kv_stored = a.kv_heads, group_stored = a.group();
  const bool per_q_head = a.blocks.fixed();
  if (per_q_head) a.kv_heads = a.heads;
  a.pass = attrs.pass;
  // One array as key and value (MLA's latent cache): a forward kernel
  // reads each block once for QK^T and PV (V = its first v_dim columns).
  a.shared_kv = op.inputs[1] == op.inputs[2] && !a.backward();
  a.q_dtype = q.dtype;
  a.kv_dtype = k.dtype;
  a.out_dtype = ep.out_dtype;
  // The MXU runs the wider of the query and KV dtypes (an int8 or fp8 KV
  // cache with bf16 queries runs in bf16), widened to one this MXU has;
  // operands stored otherwise are converted on the VPU after their blocks
  // load (a cast, and a multiply by their scales where they have any).
  const DType stored = arch::dtype_bits(k.dtype) > arch::dtype_bits(q.dtype) ? k.dtype : q.dtype;
  const std::optional<DType> run_as = mxu_dtype_for(cx.cfg.mxu, stored);
  if (!run_as || f.throughput(*run_as) <= 0)
    throw LoweringError("the MXU of " + cx.cfg.chip.name + " does not support " +
                        std::string(arch::dtype_name(stored)) + " attention");
  const DType t = *run_as;
  a.q_dtype = t;
  plan.mxu_dtype = std::string(arch::dtype_name(t));
  auto convert_ops = [&](const Tensor& x) {
    return x.dtype == t ? 0.0 : 1.0 + (x.scales.kind == workloads::ScaleKind::none ? 0.0 : 1.0);
  };
  // A shared block is converted once, as the key.
  const double q_ops = convert_ops(q), k_ops = convert_ops(k), v_ops = a.shared_kv ? 0.0 : convert_ops(v);
  // A block's share of a tensor's scales (per-tensor: negligible).
  auto scale_share = [](const Tensor& x, std::uint64_t elems) -> std::uint64_t {
    const std::uint64_t sb = x.scale_bytes();
    const auto n = static_cast<std::uint64_t>(x.num_elements());
    return sb == 0 || n == 0 ? 0 : (sb * elems + n - 1) / n;
  };
  const int cores = cx.cores();
  const auto& tiling = cx.attention_tilings.get(a, f, cores);
  if (!tiling)
    throw LoweringError((a.blocks.fixed()
                             ? "the blocks " + plan.name + " fixes (block_q " + std::to_string(a.blocks.q) +
                                   ", block_kv " + std::to_string(a.blocks.kv) + "; 0 = searched) do not fit"
                             : "no block of " + plan.name + " fits") +
                        " the VMEM budget of " + std::to_string(f.vmem_budget) + " bytes (kernel.scoped_vmem)");
  const std::int64_t hb = tiling->hb, bp = tiling->bp, bkv = tiling->bkv, sb = tiling->sb, G = a.group();
  const std::int64_t B = a.batch, Lq = a.q_len, H = a.heads, D = a.head_dim, Dv = a.v_dim, Lkv = a.kv_len,
                     KVH = a.kv_heads;
  // The KV head a step's (first) head reads: per query head, its group's.
  auto kv_head = [&](std::int64_t h) { return per_q_head ? h / group_stored : h; };
  const std::int64_t sub = attention_sub_block(f, bkv);
  // The pass's kernel (workloads::attention_kernel), its matmuls by form.
  const workloads::AttentionKernel& kern = a.kernel();
  std::vector<workloads::AttentionMatmul> score_mms, from_mms, trans_mms;
  for (const auto& mm : kern.matmuls)
    (mm.form == workloads::AttentionMatmulForm::scores        ? score_mms
     : mm.form == workloads::AttentionMatmulForm::from_scores ? from_mms
                                                              : trans_mms)
        .push_back(mm);
  const std::int64_t nq = ceil_div(Lq, bp), ng = KVH / hb;
  const std::uint64_t out_elems = static_cast<std::uint64_t>(B * Lq * H * Dv);
  const Ref qr = cx.ref(q.name), kr = cx.ref(k.name), vr = cx.ref(v.name);
  std::vector<Step> steps;
  std::int64_t unit = 0;
  for (std::int64_t b0 = 0; b0 < B; b0 += sb)
    for (std::int64_t g = 0; g < ng; ++g)
      for (std::int64_t qi = 0; qi < nq; ++qi, ++unit) {
        // Units dealt round robin: causal query blocks see more key blocks
        // the later they come, so contiguous ranges would give the last
        // core the most work when there are few units (one sequence and
        // every KV head in one step).
        const int core = static_cast<int>(unit % cores);
        const std::int64_t bn = std::min(sb, B - b0);  // sequences in the step
        const std::int64_t p0 = qi * bp, pn = std::min(bp, Lq - p0);
        const std::int64_t h0 = g * hb;    // first KV head
        const std::int64_t rows = pn * G;  // query rows per KV head
        // Past the diagonal and before a window's start skipped.
        const auto [kj0, kv_blocks] = a.key_blocks(p0, p0 + pn - 1, bkv);
        for (std::int64_t kj = kj0; kj < kv_blocks; ++kj) {
          const std::int64_t c0 = kj * bkv, cn = std::min(bkv, Lkv - c0);
          Step s;
          s.core = core;
          const std::int64_t kh = kv_head(h0);
          // Q [B, Lq, H, D]: pn positions of hb x G heads per sequence; a
          // batched step's sequences' rows follow one another when the
          // block holds every query position (decode), one copy for all.
          const bool rows_contiguous = pn == Lq;
          const std::int64_t row_runs = rows_contiguous ? 1 : bn, run_rows = rows_contiguous ? bn * pn : pn;
          if (kj == kj0)
            for (std::int64_t r = 0; r < row_runs; ++r)
              s.loads.push_back(load(qr + bytes_of(t, (((b0 + r) * Lq + p0) * H + h0 * G) * D), bytes_of(t, hb * G * D),
                                     static_cast<std::uint64_t>(run_rows), bytes_of(t, H * D)));
          for (std::int64_t b = b0; b < b0 + bn; ++b) {
            // K and V head-major [B, KVH, Lkv, D]: one piece per head.
            s.loads.push_back(load(kr + bytes_of(k.dtype, ((b * kv_stored + kh) * Lkv + c0) * D),
                                   bytes_of(k.dtype, cn * D), static_cast<std::uint64_t>(hb),
                                   bytes_of(k.dtype, Lkv * D)));
            if (!a.shared_kv)
              s.loads.push_back(load(vr + bytes_of(v.dtype, ((b * kv_stored + kh) * Lkv + c0) * dv_stored),
                                     bytes_of(v.dtype, cn * dv_stored), static_cast<std::uint64_t>(hb),
                                     bytes_of(v.dtype, Lkv * dv_stored)));
          }
          // K/V (and, first, Q) stored in another dtype than the MXU runs:
          // converted on the VPU before the step's first QK^T.
          std::vector<int> converted;
          const auto seqs = static_cast<std::uint64_t>(bn);
          const auto q_elems = seqs * static_cast<std::uint64_t>(pn * hb * G * D);
          const auto k_elems = seqs * static_cast<std::uint64_t>(cn * hb * D),
                     v_elems = seqs * static_cast<std::uint64_t>(cn * hb * dv_stored);
          const double conv_ops = (kj == kj0 ? q_ops * static_cast<double>(q_elems) : 0.0) +
                                  k_ops * static_cast<double>(k_elems) + v_ops * static_cast<double>(v_elems);
          if (conv_ops > 0) {
            const std::uint64_t conv_elems =
                (kj == kj0 && q_ops > 0 ? q_elems : 0) + (k_ops > 0 ? k_elems : 0) + (v_ops > 0 ? v_elems : 0);
            const arch::Instr cv = vpu(conv_elems, t, conv_ops / static_cast<double>(conv_elems), 0, 1, 1);
            plan.quant_vpu_cycles += vpu_cycles(cx.cfg.vpu, cv);
            s.compute.push_back({cv, {}});
            converted.push_back(static_cast<int>(s.compute.size()) - 1);
            const std::uint64_t sb_bytes = scale_share(k, k_elems) + (a.shared_kv ? 0 : scale_share(v, v_elems)) +
                                           (kj == kj0 ? scale_share(q, q_elems) : 0);
            if (sb_bytes > 0) {
              s.loads.push_back(load(kr, sb_bytes));  // the block's scales, beside its values
              plan.scale_bytes += sb_bytes;
            }
          }
          // Sub-blocks, pipelined: QK(j+1) is issued before softmax(j); the
          // row max and row sum go to the two XLUs side by side. A batched
          // step walks its sequences' sub-blocks one after another as one
          // pipeline (item x = sequence x / ns, sub-block x % ns), so one
          // sequence's QK^T runs ahead of the previous one's softmax.
          const std::int64_t ns = ceil_div(cn, sub), items = bn * ns;
          auto width = [&](std::int64_t x) { return std::min(sub, cn - (x % ns) * sub); };
          // The kernel's score matmuls (S; the backward kernels' dP = dO
          // V^T beside it) are issued ahead of the VPU's softmax (forward,
          // with the row max and sum on the XLUs) or P and dS (backward: the
          // forward's log-sum-exp is saved); then the matmuls from the
          // scores (O = PV; dQ = dS K); the transposed ones (dV = P^T dO,
          // dK = dS^T Q) take kDkvComputeKeys keys at once in M, the block's
          // query rows contracted.
          std::vector<std::vector<int>> qk(static_cast<std::size_t>(items));
          const std::int64_t ahead = attention_lookahead(f, rows);
          // Matmuls of one form stream different rows, so they are separate
          // MXU passes; two that fill whole MXU tiles (the same
          // contraction, N a multiple of the columns) go to an MXU as one
          // instruction of the tiles of both: the same time, and fewer
          // instructions to simulate.
          auto pairs = [&](const std::vector<workloads::AttentionMatmul>& mms, std::int64_t n) {
            return mms.size() == 2 && mms[0].width(D, Dv) == mms[1].width(D, Dv) && n % f.cols == 0;
          };
          auto scores_of = [&](std::int64_t x) {
            std::vector<int> ids;
            if (pairs(score_mms, width(x))) {
              ids = heads_matmul(s, f, hb, rows, score_mms[0].width(D, Dv), 2 * width(x), t, converted,
                                 plan.padded_macs, x);
            } else {
              for (const auto& mm : score_mms) {
                const std::vector<int> m =
                    heads_matmul(s, f, hb, rows, mm.width(D, Dv), width(x), t, converted, plan.padded_macs, x);
                ids.insert(ids.end(), m.begin(), m.end());
              }
            }
            qk[static_cast<std::size_t>(x)] = std::move(ids);
          };
          for (std::int64_t x = 0; x < std::min<std::int64_t>(items, ahead); ++x) scores_of(x);
          std::vector<int> dkv_after;  // the sub-blocks' VPU work the next transposed matmuls read
          std::int64_t dkv_keys = 0;
          for (std::int64_t x = 0; x < items; ++x) {
            if (x + ahead < items) scores_of(x + ahead);
            const std::int64_t j = x % ns;
            const std::uint64_t w = static_cast<std::uint64_t>(width(x));
            const std::uint64_t scores = static_cast<std::uint64_t>(hb * rows) * w;
            s.compute.push_back(
                {vpu(scores, DType::f32, kern.vpu_ops_per_score, 1, 1, 1), qk[static_cast<std::size_t>(x)]});
            const int soft = static_cast<int>(s.compute.size()) - 1;
            std::vector<int> ready = {soft};
            if (kern.row_reductions) {
              s.compute.push_back({xlu(f, arch::XluOp::reduce, scores, DType::f32, w), {soft}});
              s.compute.push_back({xlu(f, arch::XluOp::reduce, scores, DType::f32, w), {soft}});
              const int red = static_cast<int>(s.compute.size()) - 1;
              ready = {red - 1, red};
            }
            for (const auto& mm : from_mms)
              heads_matmul(s, f, hb, rows, width(x), mm.width(D, Dv), t, ready, plan.padded_macs, x);
            if (trans_mms.empty()) continue;
            dkv_after.push_back(soft);
            dkv_keys += width(x);
            if ((j + 1) % dkv_group(sub) == 0 || j + 1 == ns) {
              if (pairs(trans_mms, trans_mms[0].width(D, Dv))) {
                heads_matmul(s, f, hb, dkv_keys, rows, trans_mms[0].width(D, Dv) + trans_mms[1].width(D, Dv), t,
                             dkv_after, plan.padded_macs, x);
              } else {
                for (const auto& mm : trans_mms)
                  heads_matmul(s, f, hb, dkv_keys, rows, mm.width(D, Dv), t, dkv_after, plan.padded_macs, x);
              }
              dkv_after.clear();
              dkv_keys = 0;
            }
          }
          if (kj == kv_blocks - 1) {
            // The output block, stored like Q's rows were loaded: one run
            // of rows, or one per sequence (each its own copy, add_epilogue).
            for (std::int64_t r = 0; r < row_runs; ++r) {
              const std::uint64_t off = static_cast<std::uint64_t>((((b0 + r) * Lq + p0) * H + h0 * G) * Dv);
              const std::uint64_t blk = static_cast<std::uint64_t>(run_rows * hb * G * Dv);
              add_extra_loads(s, ep, off, blk, out_elems, unit == 0 && r == 0);
              add_epilogue(s, ep,
                           {blk, static_cast<std::uint64_t>(hb * G * Dv), static_cast<std::uint64_t>(run_rows),
                            static_cast<std::uint64_t>(H * Dv), off},
                           {DType::f32, 1, 0, 1});
            }
          }
          steps.push_back(std::move(s));
        }
      }
  plan.vmem_peak = tiling->vmem;
  std::ostringstream os;
  if (per_q_head)
    os << "splash q_heads=1 block_q=" << bp << " block_kv=" << bkv;
  else
    os << "heads=" << hb << " bq=" << bp * G << " bkv=" << bkv;
  if (sb > 1) os << " seqs=" << sb;
  plan.blocking = os.str();
  return steps;
}

}  // namespace tpusim::sim::lowering
