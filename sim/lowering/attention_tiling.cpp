#include "sim/lowering/attention_tiling.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "sim/lowering/instrs.h"

namespace tpusim::sim::lowering {

namespace {

std::vector<std::int64_t> powers_up_to(std::int64_t lo, std::int64_t full, std::int64_t cap) {
  std::vector<std::int64_t> v;
  for (std::int64_t b = lo; b < full && b <= cap; b *= 2) v.push_back(b);
  if (full <= cap || v.empty()) v.push_back(std::min(full, std::max(cap, lo)));
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> v;
  for (std::int64_t d = 1; d <= n; ++d)
    if (n % d == 0) v.push_back(d);
  return v;
}

// Cycles one MXU takes for an [m, k] x [k, n] product: each weight tile
// streams m rows at the dtype's rate, at least its weight load.
double mxu_cycles(const ChipFigures& f, double m, std::int64_t k, std::int64_t n, double tp) {
  const double tiles = static_cast<double>(ceil_div(k, f.rows) * ceil_div(n, f.cols));
  return tiles * std::max(m / tp, static_cast<double>(f.rows));
}

double vpu_cycles(const ChipFigures& f, double elements, double alu, double trans) {
  const auto& v = f.cfg->vpu;
  const double vregs = elements / (static_cast<double>(v.sublanes) * v.lanes);
  return std::max(vregs * alu / v.alus_per_lane, vregs * trans / v.transcendental_rate);
}

}  // namespace

double attention_mxu_cycles(const AttentionShape& a, const ChipFigures& f, double rows, std::int64_t sub, double tp) {
  // The kernel's matmuls (workloads::attention_kernel) over one sub-block
  // of keys; the transposed ones (dV, dK) stream dkv_group sub-blocks of
  // keys at once, a share of them per sub-block.
  const double g = static_cast<double>(dkv_group(sub)), keys = g * static_cast<double>(sub);
  const auto r = static_cast<std::int64_t>(rows);
  double c = 0;
  for (const auto& mm : workloads::attention_kernel(a.pass).matmuls) {
    const std::int64_t w = mm.width(a.head_dim, a.v_dim);
    switch (mm.form) {
      case workloads::AttentionMatmulForm::scores: c += mxu_cycles(f, rows, w, sub, tp); break;
      case workloads::AttentionMatmulForm::from_scores: c += mxu_cycles(f, rows, sub, w, tp); break;
      case workloads::AttentionMatmulForm::transposed: c += mxu_cycles(f, keys, r, w, tp) / g; break;
    }
  }
  return c;
}

std::pair<std::int64_t, std::int64_t> AttentionShape::key_blocks(std::int64_t q_first, std::int64_t q_last,
                                                                 std::int64_t bkv) const {
  const std::int64_t end = std::max<std::int64_t>(1, ceil_div(visible(q_last), bkv));
  return {std::min(first_visible(q_first) / bkv, end - 1), end};
}

std::int64_t attention_sub_block(const ChipFigures& f, std::int64_t bkv) { return std::min<std::int64_t>(bkv, f.cols); }

std::optional<AttentionTiling> choose_attention_tiling(const AttentionShape& a, const ChipFigures& f, int cores) {
  const double tp = f.throughput(a.q_dtype);
  const std::int64_t G = a.group();
  const double qb = static_cast<double>(arch::dtype_bits(a.q_dtype)) / 8,
               kb = static_cast<double>(arch::dtype_bits(a.kv_dtype)) / 8,
               ob = static_cast<double>(arch::dtype_bits(a.out_dtype)) / 8;
  // At least one sublane tile of rows (8) per head: bp x group >= 8.
  const std::int64_t bp_lo = std::max<std::int64_t>(1, ceil_div(8, G));
  const auto bps =
      a.blocks.q > 0 ? std::vector<std::int64_t>{std::min(a.blocks.q, a.q_len)} : powers_up_to(bp_lo, a.q_len, 4096);
  const auto bkvs = a.blocks.kv > 0 ? std::vector<std::int64_t>{std::min(a.blocks.kv, round_up(a.kv_len, f.cols))}
                                    : powers_up_to(f.cols, round_up(a.kv_len, f.cols), 8192);
  // Fixed blocks: splash attention's one head per grid step (the caller
  // gives every query head its own KV head, lower_attention).
  const auto hbs = a.blocks.fixed() ? std::vector<std::int64_t>{1} : divisors(a.kv_heads);
  // Sequences per step: one, or for a batched kernel powers of two up to
  // its bound (and the whole batch when that is smaller).
  const auto sbs = a.max_step_seqs > 1 && !a.blocks.fixed() ? powers_up_to(1, a.batch, a.max_step_seqs)
                                                            : std::vector<std::int64_t>{1};
  std::optional<AttentionTiling> best;
  double best_t = std::numeric_limits<double>::max();
  for (std::int64_t sb : sbs)
    for (std::int64_t hb : hbs)
      for (std::int64_t bp : bps)
        for (std::int64_t bkv : bkvs) {
          const double rows = static_cast<double>(bp * G);  // per head
          const double h = static_cast<double>(hb), seqs = static_cast<double>(sb);
          const std::int64_t sub = attention_sub_block(f, bkv);
          // The backward kernels also hold dO's block beside Q's, the scores
          // twice (P and dS), and grad_kv (and the fused grad_qkv) its dK and
          // dV accumulators.
          const double bwd = a.backward() ? 1.0 : 0.0;
          const double grad_kv = a.dkv() ? 1.0 : 0.0;
          // A batched step holds every one of its sequences' blocks.
          const double vmem = seqs * (2 * (h * rows * a.head_dim * qb * (1 + bwd) + h * bkv * a.kv_width() * kb) +
                                      static_cast<double>(attention_lookahead(f, bp * G) + 1) * h * rows *
                                          static_cast<double>(sub) * 4 * (1 + bwd) +
                                      h * rows * a.v_dim * 4 + grad_kv * h * bkv * (a.head_dim + a.v_dim) * 4 +
                                      2 * h * rows * a.v_dim * ob);
          if (vmem > static_cast<double>(f.vmem_budget)) continue;
          // Steps: (batch, head group, query block) units, each over the key
          // blocks from the one holding its first query's first key (a
          // window's start; else 0) to the one holding its last query's last.
          const std::int64_t nq = ceil_div(a.q_len, bp);
          double kv_blocks = 0, kv_positions = 0;
          std::vector<double> blocks_of(static_cast<std::size_t>(nq));
          for (std::int64_t qi = 0; qi < nq; ++qi) {
            const std::int64_t q_last = std::min(a.q_len, (qi + 1) * bp) - 1, vis = a.visible(q_last);
            const auto [first, end] = a.key_blocks(qi * bp, q_last, bkv);
            blocks_of[static_cast<std::size_t>(qi)] = static_cast<double>(end - first);
            kv_blocks += blocks_of[static_cast<std::size_t>(qi)];
            kv_positions += static_cast<double>(std::min(round_up(vis, bkv) - first * bkv, round_up(a.kv_len, f.cols)));
          }
          const std::int64_t groups = a.kv_heads / hb;  // hb divides kv_heads
          // (sequence, head group) pairs, whose K/V every step reads, and
          // (batch block, head group) units, each a step per key block.
          const double seq_units = static_cast<double>(a.batch) * static_cast<double>(groups);
          const std::int64_t batch_blocks = ceil_div(a.batch, sb);
          const double units = static_cast<double>(batch_blocks) * static_cast<double>(groups);
          const double steps = units * kv_blocks;
          // The busiest core's steps: (batch, group, query block) units are
          // dealt round robin (lower_attention); beyond a few thousand units
          // the even share plus one unit bounds it.
          const std::int64_t all_units = batch_blocks * groups * nq;
          double core_steps = 0;
          if (all_units <= 4096) {
            std::vector<double> per(static_cast<std::size_t>(cores), 0);
            for (std::int64_t u = 0; u < all_units; ++u)
              per[static_cast<std::size_t>(u % cores)] += blocks_of[static_cast<std::size_t>(u % nq)];
            core_steps = *std::max_element(per.begin(), per.end());
          } else {
            core_steps = steps / cores + *std::max_element(blocks_of.begin(), blocks_of.end());
          }
          // Compute of one full step, per core: sub-blocks pipelined (a
          // batched step's sequences' after one another), the MXU's QK^T and
          // PV against the VPU's softmax followed by the XLU's reductions
          // (max and sum on two XLUs), plus one sub-block's fill.
          const double nsub = seqs * static_cast<double>(ceil_div(bkv, sub));
          const double mxu = h * attention_mxu_cycles(a, f, rows, sub, tp) / static_cast<double>(f.mxus);
          const double vpu = vpu_cycles(f, h * rows * static_cast<double>(sub), a.kernel().vpu_ops_per_score, 1);
          // Row max and sum on the XLUs, one vreg per 8 rows per reduction;
          // the backward kernels take the saved log-sum-exp instead.
          const double xlu = !a.kernel().row_reductions ? 0.0 : f.xlus > 0 ? h * rows / 8.0 : vpu;
          const double compute = core_steps * (nsub * std::max(mxu, vpu + xlu) + mxu + vpu + xlu + f.step_overhead);
          const double kv_bytes = seq_units * kv_positions * h * a.kv_width() * kb;
          const double qo_bytes = static_cast<double>(a.batch) * a.q_len * a.heads * (a.head_dim * qb + a.v_dim * ob);
          const double traffic = (kv_bytes + qo_bytes) / f.hbm_bytes_per_cycle;
          const double first =
              seqs * (h * rows * a.head_dim * qb + h * bkv * a.kv_width() * kb) / f.hbm_bytes_per_cycle;
          const double t = std::max(compute, traffic) + first + core_steps * f.block_latency;
          if (t < best_t) {
            best_t = t;
            best =
                AttentionTiling{hb, bp, bkv, sb, static_cast<std::uint64_t>(vmem), t, static_cast<std::int64_t>(steps)};
          }
        }
  return best;
}

const std::optional<AttentionTiling>& AttentionTilingCache::get(const AttentionShape& a, const ChipFigures& f,
                                                                int cores) {
  const Key k{a.batch,     a.q_len,    a.heads,     a.kv_heads,      a.head_dim, a.v_dim,   a.kv_len,   a.causal,
              a.window,    a.blocks.q, a.blocks.kv, a.max_step_seqs, a.pass,     a.q_dtype, a.kv_dtype, a.out_dtype,
              a.shared_kv, a.v_stored, cores};
  auto it = memo_.find(k);
  if (it == memo_.end()) it = memo_.emplace(k, choose_attention_tiling(a, f, cores)).first;
  return it->second;
}

}  // namespace tpusim::sim::lowering
