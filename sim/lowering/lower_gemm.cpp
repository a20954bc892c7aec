// Matmul-shaped operators: matmuls (einsums with batch, M, K, N) and
// convolutions as implicit GEMMs (depthwise ones on the VPU). The block
// loop walks output blocks (the loop order from the tiling search) and K
// blocks inside; each block's matmul is spread over the MXUs by column
// tiles, or also by rows when there are fewer column tiles than MXUs.
// Quantized and N:M sparse operands (gemm_quant.h) add their conversion,
// scale and metadata loads and VPU work to the blocks that load them.
#include <cmath>
#include <sstream>

#include "sim/lowering/gemm_quant.h"
#include "sim/lowering/gemm_tiling.h"
#include "sim/lowering/op_lowering.h"
#include "workloads/ir/shape_inference.h"

namespace tpusim::sim::lowering {

using arch::DType;

namespace {

// Where the GEMM's operands live (the shape is what the tiling sees) and
// the tensors themselves (their scales and sparsity).
struct GemmOperands {
  Ref a, b;
  const Tensor* at = nullptr;
  const Tensor* bt = nullptr;
};

// B's rows of a K block as stored: N:M compressed along K.
std::int64_t stored_rows(const Tensor& t, std::int64_t k) {
  if (t.sparsity.dense()) return k;
  return std::max<std::int64_t>(
      1, (k / t.sparsity.m) * t.sparsity.n + std::min<std::int64_t>(k % t.sparsity.m, t.sparsity.n));
}

// `w`: the rows the steps cover (GemmRows; rows 0 = all, batch by batch).
std::vector<Step> gemm_steps(const LowerContext& cx, GemmShape g, const GemmOperands& at, const Epilogue& ep,
                             const GemmQuant& q, OpPlan& plan, const GemmRows& w = {}) {
  const ChipFigures& f = cx.f;
  const Tensor& bt = *at.bt;
  g.mxu_dtype = q.mxu;
  g.mxu_k_fraction = q.mxu_k_fraction;
  if (q.sparse_mxu) g.stream_b = cx.cfg.mxu.sparsity.operand == arch::SparseOperand::activations;
  const std::uint64_t b_elems = static_cast<std::uint64_t>(std::max<std::int64_t>(1, bt.num_elements()));
  if (bt.bytes() != bt.value_bytes() || !bt.sparsity.dense() || bt.dtype != g.w_dtype)
    g.b_bits = static_cast<double>(bt.bytes()) * 8.0 / static_cast<double>(b_elems);
  plan.mxu_dtype = std::string(arch::dtype_name(q.mxu));
  plan.mxu_k_fraction = q.mxu_k_fraction;
  const int cores = cx.cores();
  const auto tiling = choose_gemm_tiling(g, f, cores);
  if (!tiling)
    throw LoweringError((g.fixed_blocks() ? "the blocks " + plan.name + " fixes (block_m " +
                                                std::to_string(g.fixed_bm) + ", block_k " + std::to_string(g.fixed_bk) +
                                                ", block_n " + std::to_string(g.fixed_bn) + "; 0 = searched) do not fit"
                                          : "no block of " + plan.name + " fits") +
                        " the VMEM budget of " + std::to_string(f.vmem_budget) + " bytes (kernel.scoped_vmem)");
  const std::int64_t bm = tiling->bm, bk = tiling->bk, bn = tiling->bn;
  const bool n_outer = tiling->n_outer;
  plan.vmem_peak = tiling->vmem;
  {
    std::ostringstream os;
    os << "bm=" << bm << " bk=" << bk << " bn=" << bn << (n_outer ? " n-outer" : " m-outer")
       << (tiling->stream_b ? " b-streams" : "");
    plan.blocking = os.str();
  }

  const std::int64_t nm = ceil_div(g.m, bm), nk = ceil_div(g.k, bk), nn = ceil_div(g.n, bn);
  const std::int64_t outer = n_outer ? nn : nm, inner = n_outer ? nm : nn;
  const std::int64_t total_out_blocks = g.batch * outer * inner;
  const std::uint64_t out_elems = static_cast<std::uint64_t>(g.batch * g.m * g.n);
  // A window (GemmRows) is one matrix of outer x rows rows for the MXU,
  // its rows r at row F(r) = row0 + (r / rows) * stride + r % rows of the
  // operand and the output. `pieces` cuts rows [r0, r0 + m) of batch b
  // into runs contiguous there: fn(row in the window, row there, count).
  const bool window = w.rows > 0;
  auto pieces = [&](std::int64_t b, std::int64_t r0, std::int64_t m, const auto& fn) {
    if (!window) {
      fn(b * g.m + r0, b * g.m + r0, m);
      return;
    }
    for (std::int64_t r = r0; r < r0 + m;) {
      const std::int64_t grp = r / w.rows, end = std::min(r0 + m, (grp + 1) * w.rows);
      fn(r, w.row0 + grp * w.stride + (r - grp * w.rows), end - r);
      r = end;
    }
  };
  const std::uint64_t full_elems = window ? static_cast<std::uint64_t>(w.full_rows * g.n) : out_elems;
  Epilogue own_ep;
  if (w.own_out) {
    own_ep = ep;
    own_ep.out = *w.own_out;
  }
  const Epilogue& store_ep = w.own_out ? own_ep : ep;
  std::vector<Step> steps;
  steps.reserve(static_cast<std::size_t>(total_out_blocks * nk));
  // Batch entries per step (GemmTiling::bb). When an entry's stationary
  // tiles (B's column tiles, or A's with stream_b) are fewer than the
  // MXUs, add_matmul would split its rows among the MXUs, each loading the
  // same tiles; a step's entries instead take the MXUs in turn, each
  // matmul whole on its own (the batched matmuls of dense decode
  // attention: a few query rows per sequence and KV head).
  const std::int64_t bb = window ? 1 : tiling->bb;
  const std::int64_t held_cols = tiling->stream_b ? bm : bn;
  const int held_tiles = static_cast<int>(std::min<std::int64_t>(f.mxus, ceil_div(held_cols, f.cols)));
  const int groups = f.mxus / held_tiles;
  if (bb > 1) plan.blocking += " batch-block=" + std::to_string(bb);
  std::vector<std::int64_t> last_as(static_cast<std::size_t>(bb), -1), last_bs(static_cast<std::size_t>(bb), -1);
  int last_core = -1;
  // Where B's metadata and scales follow its values (Tensor::bytes order).
  const Ref b_meta = at.b + bt.value_bytes(), b_scales = b_meta + bt.metadata_bytes();
  const std::uint64_t scale_bytes_each = arch::dtype_bytes(bt.scales.dtype, 1);
  auto quant_vpu = [&](Step& s, std::uint64_t elems, double ops) {
    if (ops <= 0) return;
    const arch::Instr v = vpu(elems, q.mxu, ops, 0, 1, 1);
    plan.quant_vpu_cycles += vpu_cycles(cx.cfg.vpu, v);
    s.compute.push_back({v, {}});
  };
  // A dynamically quantized operand (its max-abs scale needs the whole
  // operand first) is quantized once, as the separate pass XLA runs
  // before the dot; its blocks' later loads find it done. Conversions of
  // stored narrow weights stay per load, in the kernel.
  std::vector<char> a_done(q.a.dynamic ? static_cast<std::size_t>(g.batch * nm * nk) : 0);
  std::vector<char> b_done(q.b.dynamic ? static_cast<std::size_t>((g.b_batched ? g.batch : 1) * nk * nn) : 0);
  for (std::int64_t b0 = 0; b0 < g.batch; b0 += bb)
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t in = 0; in < inner; ++in) {
        const std::int64_t mi = n_outer ? in : o, ni = n_outer ? o : in;
        const std::int64_t first_ob = (b0 * outer + o) * inner + in;
        const int core = static_cast<int>(first_ob * cores / std::max<std::int64_t>(1, total_out_blocks));
        if (core != last_core) {
          std::fill(last_as.begin(), last_as.end(), -1);
          std::fill(last_bs.begin(), last_bs.end(), -1);
          last_core = core;
        }
        const std::int64_t m = std::min(bm, g.m - mi * bm), n = std::min(bn, g.n - ni * bn);
        const std::int64_t b_end = std::min(g.batch, b0 + bb);
        for (std::int64_t ki = 0; ki < nk; ++ki) {
          const std::int64_t k = std::min(bk, g.k - ki * bk);
          Step s;
          s.core = core;
          // Up to one matmul per MXU, conversions and the epilogue's pass:
          // reserved, as millions of steps grew these one by one.
          s.compute.reserve(2 * static_cast<std::size_t>(f.mxus) + 2);
          for (std::int64_t b = b0; b < b_end; ++b) {
            const std::int64_t ob_index = (b * outer + o) * inner + in;
            std::int64_t& last_a = last_as[static_cast<std::size_t>(b - b0)];
            std::int64_t& last_b = last_bs[static_cast<std::size_t>(b - b0)];
            const std::int64_t a_id = (b * nm + mi) * nk + ki;
            const std::int64_t b_id = ((g.b_batched ? b : 0) * nk + ki) * nn + ni;
            bool convert_b = false;
            if (a_id != last_a) {
              if (!q.a.dynamic || !a_done[static_cast<std::size_t>(a_id)])
                quant_vpu(s, static_cast<std::uint64_t>(m * k), q.a.ops);
              if (q.a.dynamic) a_done[static_cast<std::size_t>(a_id)] = 1;
              if (g.a_read_factor == 1.0) {
                if (w.own_a)
                  s.loads.push_back(load_block(*w.own_a, g.in_dtype, {mi * bm, ki * bk, m, k, g.k}));
                else
                  pieces(b, mi * bm, m, [&](std::int64_t, std::int64_t fr, std::int64_t rows) {
                    s.loads.push_back(load_block(at.a, g.in_dtype, {fr, ki * bk, rows, k, g.k}));
                  });
              } else {
                // A convolution's input window: rows of the im2col view.
                const std::uint64_t rows = static_cast<std::uint64_t>(std::ceil(m * g.a_read_factor));
                s.loads.push_back(load(at.a + bytes_of(g.in_dtype, (b * g.m + mi * bm) * g.k + ki * bk),
                                       bytes_of(g.in_dtype, k), std::max<std::uint64_t>(1, rows),
                                       bytes_of(g.in_dtype, g.k)));
              }
              last_a = a_id;
            }
            if (b_id != last_b) {
              const std::int64_t row0 = (g.b_batched ? b : 0) * g.k + ki * bk;
              if (bt.sparsity.dense()) {
                s.loads.push_back(load_block(at.b, g.w_dtype, {row0, ni * bn, k, n, g.n}));
              } else {
                // Compressed values, then their position metadata.
                s.loads.push_back(
                    load_block(at.b, g.w_dtype, {stored_rows(bt, row0), ni * bn, stored_rows(bt, k), n, g.n}));
                const std::uint64_t kept = static_cast<std::uint64_t>(stored_rows(bt, k) * n);
                const std::uint64_t mb = (kept * static_cast<std::uint64_t>(bt.sparsity.metadata_bits()) + 7) / 8;
                const std::uint64_t moff = static_cast<std::uint64_t>(stored_rows(bt, row0) * g.n + ni * bn) *
                                           static_cast<std::uint64_t>(bt.sparsity.metadata_bits()) / 8;
                s.loads.push_back(load(b_meta + std::min(moff, bt.metadata_bytes() - std::min(bt.metadata_bytes(), mb)),
                                       std::max<std::uint64_t>(1, mb)));
                plan.metadata_bytes += mb;
              }
              // The block's scales: one per channel (with the first K block
              // when they reach the accumulator), one per group per channel,
              // or the single per-tensor one with the first block.
              std::uint64_t sc = 0;
              if (bt.scales.kind == workloads::ScaleKind::block)
                sc = block_scale_count(bt, k, n);
              else if (bt.scales.kind == workloads::ScaleKind::channel && (ki == 0 || q.b.ops > 0))
                sc = block_scale_count(bt, k, n);
              else if (bt.scales.kind == workloads::ScaleKind::tensor && ob_index == 0 && ki == 0)
                sc = 1;
              if (sc > 0) {
                const std::uint64_t sb = sc * scale_bytes_each;
                const std::uint64_t soff = std::min(bt.scale_bytes() - std::min(bt.scale_bytes(), sb),
                                                    static_cast<std::uint64_t>(ni * bn) * scale_bytes_each);
                s.loads.push_back(load(b_scales + soff, sb));
                plan.scale_bytes += sb;
              }
              convert_b = q.b.ops > 0 && (!q.b.dynamic || !b_done[static_cast<std::size_t>(b_id)]);
              if (q.b.dynamic) b_done[static_cast<std::size_t>(b_id)] = 1;
              last_b = b_id;
            }
            const std::int64_t kx =
                q.sparse_mxu ? std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(k * q.mxu_k_fraction)))
                             : k;
            // The MXU does not wait for the step's conversions: the compiler
            // interleaves VPU and MXU bundles, so the VPU casts the next
            // vregs of a block while the MXU takes the ones already cast;
            // the step ends when both are done (docs/quantization.md).
            if (convert_b) quant_vpu(s, static_cast<std::uint64_t>(k * n), q.b.ops);
            std::vector<int> mxu_instrs;
            mxu_instrs.reserve(2 * static_cast<std::size_t>(f.mxus));
            const std::size_t first = s.compute.size();
            // A batch block's entries on the MXUs in turn (bb above).
            const bool turns = bb > 1 && groups > 1;
            const int first_mxu = turns ? static_cast<int>((b - b0) % groups) * held_tiles : 0;
            const int mxus = turns ? held_tiles : 0;
            plan.padded_macs += tiling->stream_b ? add_matmul(s, f, n, kx, m, q.mxu, {}, first_mxu, mxus)
                                                 : add_matmul(s, f, m, kx, n, q.mxu, {}, first_mxu, mxus);
            for (std::size_t c = first; c < s.compute.size(); ++c)
              if (s.compute[c].instr.unit == arch::UnitKind::mxu) mxu_instrs.push_back(static_cast<int>(c));
            for (int c : mxu_instrs) {
              if (q.sparse_mxu)
                std::get<arch::MxuWork>(s.compute[static_cast<std::size_t>(c)].instr.work).sparse = true;
            }
            if (q.group_ops > 0) {
              // Block scales at an integer MXU: each K group's partial sum
              // scaled and added into the f32 accumulator.
              const double groups = static_cast<double>(ceil_div(k, q.group));
              const arch::Instr v = vpu(static_cast<std::uint64_t>(m * n), DType::f32, q.group_ops * groups, 0, 2, 1);
              plan.quant_vpu_cycles += vpu_cycles(cx.cfg.vpu, v);
              s.compute.push_back({v, mxu_instrs});
            }
            if (ki == nk - 1) {
              // Partial sums received from ring neighbours are read and added
              // (one more VPU input and add each) before the store.
              const int received = static_cast<int>(w.received.size());
              const AnchorWork work{DType::f32, q.out_ops + received, 0, 1 + received};
              auto block_out = [&](std::int64_t row, std::int64_t rows) -> OutBlock {
                return {static_cast<std::uint64_t>(rows * n),
                        static_cast<std::uint64_t>(n),
                        static_cast<std::uint64_t>(rows),
                        static_cast<std::uint64_t>(g.n),
                        static_cast<std::uint64_t>(row * g.n + ni * bn),
                        true};
              };
              bool first_piece = true;
              pieces(b, mi * bm, m, [&](std::int64_t own, std::int64_t fr, std::int64_t rows) {
                const OutBlock full = block_out(fr, rows);
                add_extra_loads(s, ep, full.offset_elems, full.elems, full_elems, ob_index == 0 && first_piece);
                for (const GemmRows::Received& r : w.received)
                  s.loads.push_back(load_block(r.at, ep.out_dtype, {r.own_coords ? own : fr, ni * bn, rows, n, g.n}));
                if (!w.own_out) add_epilogue(s, ep, full, work);  // each run its own copy
                first_piece = false;
              });
              if (w.own_out) add_epilogue(s, store_ep, block_out(mi * bm, m), work);
              if (q.out_ops > 0)
                plan.quant_vpu_cycles +=
                    arch::vpu_cost(cx.cfg.vpu, {static_cast<std::uint64_t>(m * n), DType::f32, q.out_ops, 0, 1, 1, {}})
                        .alu_cycles;
            }
          }
          steps.push_back(std::move(s));
        }
      }
  return steps;
}

}  // namespace

std::vector<Step> lower_matmul(const LowerContext& cx, std::size_t i, const Epilogue& ep, OpPlan& plan) {
  return lower_matmul_rows(cx, i, ep, {}, plan);
}

std::vector<Step> lower_matmul_rows(const LowerContext& cx, std::size_t i, const Epilogue& ep, const GemmRows& w,
                                    OpPlan& plan) {
  const Op& op = cx.op(i);
  const Tensor& a = cx.tensor(op.inputs[0]);
  const Tensor& b = cx.tensor(op.inputs[1]);
  const auto& attrs = op.as<workloads::MatmulAttrs>();
  const auto d = workloads::matmul_dims(attrs, a.shape, b.shape);
  const auto spec = workloads::parse_einsum(attrs.equation);
  GemmShape g;
  g.batch = d.batch;
  g.m = d.m;
  g.k = d.k;
  g.n = d.n;
  g.in_dtype = a.dtype;
  g.w_dtype = b.dtype;
  g.out_dtype = ep.out_dtype;
  g.b_batched = !spec.batch.empty();
  g.fixed_bm = attrs.blocks.m;
  g.fixed_bk = attrs.blocks.k;
  g.fixed_bn = attrs.blocks.n;
  if (w.rows > 0) {
    if (!spec.batch.empty() || w.outer * w.rows > d.m || w.rows <= 0 || w.outer <= 0)
      throw std::logic_error("lower_matmul_rows: '" + op.name + "' has no such row window");
    g.batch = 1;
    g.m = w.outer * w.rows;
  }
  GemmRows rows = w;
  rows.full_rows = d.m;
  const GemmQuant q = plan_gemm_quant(cx.cfg, a, b, attrs.quantize, op.name);
  return gemm_steps(cx, g, {cx.ref(a.name), cx.ref(b.name), &a, &b}, ep, q, plan, rows);
}

std::vector<Step> lower_conv(const LowerContext& cx, std::size_t i, const Epilogue& ep, OpPlan& plan) {
  const Op& op = cx.op(i);
  const Tensor& x = cx.tensor(op.inputs[0]);
  const Tensor& w = cx.tensor(op.inputs[1]);
  const auto& a = op.as<workloads::Conv2dAttrs>();
  const std::int64_t N = x.shape[0], H = x.shape[1], W = x.shape[2], Cin = x.shape[3];
  const std::int64_t KH = w.shape[0], KW = w.shape[1], OC = w.shape[3];
  const auto geo = workloads::conv2d_geometry(a, H, W, KH, KW);
  const std::int64_t G = a.groups;
  const std::int64_t pixels = N * geo.out_h * geo.out_w;
  if (G > 1 && G == Cin) {
    // Depthwise: no contraction worth an MXU pass; the VPU does KH*KW
    // multiply-adds per output element.
    const std::uint64_t out_elems = static_cast<std::uint64_t>(pixels * OC);
    const std::uint64_t in_bytes = x.bytes();
    const int cores = cx.cores();
    const std::uint64_t chunks = std::max<std::uint64_t>(static_cast<std::uint64_t>(cores) * 8,
                                                         std::min<std::uint64_t>(4096, out_elems / (64 * 1024) + 1));
    std::vector<Step> steps = chunked_steps(
        out_elems, chunks, cores, [&](const Chunk& k, std::uint64_t c, Step& s, const std::vector<Step>& done) {
          const std::uint64_t e0 = k.begin, e1 = k.end;
          const std::uint64_t ib = in_bytes * c / chunks, ie = in_bytes * (c + 1) / chunks;
          s.loads.push_back(load(cx.ref(x.name) + ib, std::max<std::uint64_t>(1, ie - ib)));
          if (c == 0) s.loads.push_back(load(cx.ref(w.name), w.bytes()));
          s.compute.push_back({vpu(e1 - e0, x.dtype, 2.0 * KH * KW, 0, 1, 0), {}});
          add_extra_loads(s, ep, e0, e1 - e0, out_elems, c == 0);
          add_epilogue(s, ep, {e1 - e0, e1 - e0, 1, e1 - e0, e0}, {x.dtype, 0, 0, 1});
        });
    plan.blocking = "depthwise on VPU, " + std::to_string(chunks) + " chunks";
    plan.vmem_peak = 2 * (in_bytes / chunks + bytes_of(x.dtype, static_cast<std::int64_t>(out_elems / chunks)));
    return steps;
  }
  // Implicit GEMM per group: M = output pixels, K = KH*KW*Cin/G, N = OC/G.
  // A block of output pixels reads its input window once (halo included),
  // not the KH*KW-times larger im2col matrix.
  GemmShape g;
  g.batch = G;
  g.m = pixels;
  g.k = KH * KW * (Cin / G);
  g.n = OC / G;
  g.in_dtype = x.dtype;
  g.w_dtype = w.dtype;
  g.out_dtype = ep.out_dtype;
  g.b_batched = G > 1;
  const double window =
      static_cast<double>(a.stride_h * a.stride_w) > 0
          ? std::min(1.0, static_cast<double>(H * W) / static_cast<double>(geo.out_h * geo.out_w * KH * KW))
          : 1.0;
  g.a_read_factor = std::max(window, 1.0 / static_cast<double>(KH * KW));
  const GemmQuant q = plan_gemm_quant(cx.cfg, x, w, std::nullopt, op.name);
  return gemm_steps(cx, g, {cx.ref(x.name), cx.ref(w.name), &x, &w}, ep, q, plan);
}

}  // namespace tpusim::sim::lowering
