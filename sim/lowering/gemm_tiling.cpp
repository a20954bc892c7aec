#include "sim/lowering/gemm_tiling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "sim/lowering/instrs.h"

namespace tpusim::sim::lowering {

namespace {

// `fixed` > 0: that block alone (the whole dimension when it covers it).
std::vector<std::int64_t> candidates(std::int64_t full, std::int64_t unit, std::int64_t lo, std::int64_t fixed) {
  std::vector<std::int64_t> v;
  const std::int64_t top = round_up(full, unit);
  if (fixed > 0) return {fixed >= full ? top : fixed};
  for (std::int64_t b = lo; b < top && b <= 65536; b *= 2)
    if (b % unit == 0 || unit % b == 0) v.push_back(round_up(b, std::min(unit, b)));
  v.push_back(top);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

std::optional<GemmTiling> choose_gemm_tiling(const GemmShape& g, const ChipFigures& f, int cores) {
  const double tp = f.throughput(g.mxu_dtype.value_or(g.in_dtype));
  const std::int64_t R = f.rows, C = f.cols;
  const double ab = arch::dtype_bits(g.in_dtype), bb = g.b_bits > 0 ? g.b_bits : arch::dtype_bits(g.w_dtype),
               ob = arch::dtype_bits(g.out_dtype);
  // The K an MXU pass streams: compressed on an N:M sparse MXU.
  auto mxu_k = [&](std::int64_t k) {
    return g.mxu_k_fraction < 1.0
               ? std::max<std::int64_t>(1,
                                        static_cast<std::int64_t>(std::ceil(static_cast<double>(k) * g.mxu_k_fraction)))
               : k;
  };
  const auto bms = candidates(g.m, 8, 8, g.fixed_bm), bks = candidates(g.k, R, R, g.fixed_bk),
             bns = candidates(g.n, C, C, g.fixed_bn);
  std::optional<GemmTiling> best;
  double best_t = std::numeric_limits<double>::max(), best_pieces = 0;
  // Batch blocks: 1, and for batched matmuls powers of two up to the batch
  // (tried only with blocks covering a whole entry).
  std::vector<std::int64_t> bbs = {1};
  if (g.batch > 1 && g.b_batched && !g.fixed_blocks())
    for (std::int64_t x = 2; x < 2 * g.batch; x *= 2) bbs.push_back(std::min(x, g.batch));
  for (std::int64_t m : bms)
    for (std::int64_t k : bks)
      for (std::int64_t n : bns)
        for (std::int64_t e : bbs) {
          if (e > 1 && (m < g.m || n < g.n)) break;
          const std::uint64_t vmem = static_cast<std::uint64_t>(
              std::floor(static_cast<double>(e) *
                         (2 * (static_cast<double>(m * k) * ab + static_cast<double>(k * n) * bb) +
                          static_cast<double>(m * n) * 32 + 2 * static_cast<double>(m * n) * ob) /
                         8));
          if (vmem > f.vmem_budget) break;
          const double nm = static_cast<double>(ceil_div(g.m, m)), nk = static_cast<double>(ceil_div(g.k, k)),
                       nn = static_cast<double>(ceil_div(g.n, n));
          const double a_bytes = static_cast<double>(g.batch) * g.m * g.k * ab / 8.0 * g.a_read_factor;
          const double b_bytes = static_cast<double>(g.b_batched ? g.batch : 1) * g.k * g.n * bb / 8.0;
          const double c_bytes = static_cast<double>(g.batch) * g.m * g.n * ob / 8.0;
          const double b_reloads = g.b_batched ? 1.0 : static_cast<double>(g.batch);
          const double t_m_outer = a_bytes * (nk == 1 ? 1 : nn) + b_bytes * nm * b_reloads;
          const double t_n_outer = a_bytes * nn + b_bytes * (nk == 1 ? 1 : nm) * b_reloads;
          const bool no = !g.fixed_blocks() && t_n_outer < t_m_outer;
          const double traffic = (no ? t_n_outer : t_m_outer) + c_bytes;
          // Compute: the output blocks are dealt to the cores (a block's K
          // loop stays on one core), so the busiest core runs
          // ceil(blocks / cores) of them; its weight tiles spread over its
          // MXUs, each streaming m rows (at the dtype's rate) or, when m is
          // short, taking at least its weight load.
          const double out_blocks = static_cast<double>(g.batch) * nm * nn;
          const double per_core = std::ceil(out_blocks / cores) * nk;
          // Grid steps of the busiest core (a batch block is one step).
          const double steps_per_core = std::ceil(std::ceil(out_blocks / static_cast<double>(e)) / cores) * nk;
          const double a_stat = per_core * static_cast<double>(ceil_div(mxu_k(k), R) * ceil_div(n, C)) *
                                std::max(static_cast<double>(m) / tp, static_cast<double>(R));
          const double b_stream = per_core * static_cast<double>(ceil_div(mxu_k(k), R) * ceil_div(m, C)) *
                                  std::max(static_cast<double>(n) / tp, static_cast<double>(R));
          const bool flip = g.stream_b.value_or(b_stream < a_stat);
          const double compute = (flip ? b_stream : a_stat) / static_cast<double>(f.mxus);
          const double blocks = out_blocks * nk, steps = std::ceil(out_blocks / static_cast<double>(e)) * nk;
          const double first = static_cast<double>(e) *
                               (static_cast<double>(m * k) * ab + static_cast<double>(k * n) * bb) / 8.0 /
                               f.hbm_bytes_per_cycle;
          const double last = static_cast<double>(e) * static_cast<double>(m * n) * ob / 8.0 / f.hbm_bytes_per_cycle +
                              static_cast<double>(R + C);
          const double t = std::max(compute + steps_per_core * f.step_overhead, traffic / f.hbm_bytes_per_cycle) +
                           first + last + steps * f.block_latency;
          // Among blocks whose estimates are within 2%, the one whose
          // weight blocks come in the fewest DMA pieces (a block as wide as
          // B is one contiguous piece, else one piece per tile row): long
          // contiguous reads keep more DRAM rows open.
          const double pieces = blocks * (n >= g.n ? 1.0 : static_cast<double>(ceil_div(k, tile_rows(g.w_dtype))));
          const bool better = !best || t < best_t * 0.98 || (t <= best_t * 1.02 && pieces < best_pieces) ||
                              (t < best_t && pieces <= best_pieces);
          if (better) {
            best_t = t;
            best_pieces = pieces;
            best = GemmTiling{m, k, n, no, flip, e, vmem, t};
          }
        }
  return best;
}

}  // namespace tpusim::sim::lowering
