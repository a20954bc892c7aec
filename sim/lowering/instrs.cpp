#include "sim/lowering/instrs.h"

#include <algorithm>
#include <cmath>

namespace tpusim::sim::lowering {

using arch::DmaWork;
using arch::DType;
using arch::Instr;
using arch::MemSpace;
using arch::UnitKind;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t round_up(std::int64_t a, std::int64_t b) { return ceil_div(a, b) * b; }

std::uint64_t bytes_of(DType t, std::int64_t n) {
  return arch::dtype_bytes(t, static_cast<std::uint64_t>(std::max<std::int64_t>(n, 0)));
}

namespace {

Instr dma(MemSpace src, MemSpace dst, std::uint64_t addr, std::uint64_t row_bytes, std::uint64_t rows,
          std::uint64_t src_stride, std::uint64_t dst_stride) {
  Instr in;
  in.unit = UnitKind::dma;
  DmaWork w;
  w.src = src;
  w.dst = dst;
  w.src_addr = addr;
  w.dst_addr = addr;  // VMEM addresses are not modelled: both carry the off-chip address
  w.row_bytes = row_bytes;
  w.rows = rows;
  w.src_stride = src_stride ? src_stride : row_bytes;
  w.dst_stride = dst_stride ? dst_stride : row_bytes;
  in.work = w;
  return in;
}

}  // namespace

Instr load(Ref src, std::uint64_t row_bytes, std::uint64_t rows, std::uint64_t stride) {
  return dma(src.space, MemSpace::vmem, src.addr, row_bytes, rows, stride, row_bytes);
}

Instr copy(Ref src, Ref dst, std::uint64_t bytes) {
  Instr in = dma(src.space, dst.space, src.addr, bytes, 1, bytes, bytes);
  std::get<DmaWork>(in.work).dst_addr = dst.addr;
  return in;
}

Instr store(Ref dst, std::uint64_t row_bytes, std::uint64_t rows, std::uint64_t stride) {
  return dma(MemSpace::vmem, dst.space, dst.addr, row_bytes, rows, row_bytes, stride);
}

Instr mxu(std::int64_t m, std::int64_t k, std::int64_t n, DType t, int index) {
  Instr in;
  in.unit = UnitKind::mxu;
  in.index = static_cast<std::int16_t>(index);
  in.work = arch::MxuWork{m, k, n, t};
  return in;
}

std::int64_t tile_rows(DType t) {
  const std::uint64_t bits = arch::dtype_bits(t);
  return bits >= 32 ? 8 : static_cast<std::int64_t>(8 * 32 / std::max<std::uint64_t>(1, bits));
}

namespace {

struct BlockDma {
  std::uint64_t offset = 0, row_bytes = 0, rows = 0, stride = 0;
};

BlockDma block_dma(DType t, const Block2d& b) {
  const std::int64_t tr = tile_rows(t);
  const bool whole_cols = b.cols % 128 == 0 || b.c0 + b.cols == b.total_cols;
  if (b.rows >= tr && b.rows % tr == 0 && b.r0 % tr == 0 && b.c0 % 128 == 0 && b.total_cols % 128 == 0 && whole_cols) {
    // Tile (i, j) starts at (i x total_cols / 128 + j) tiles.
    return {bytes_of(t, b.r0 * b.total_cols + b.c0 * tr), bytes_of(t, tr * b.cols),
            static_cast<std::uint64_t>(b.rows / tr), bytes_of(t, tr * b.total_cols)};
  }
  return {bytes_of(t, b.r0 * b.total_cols + b.c0), bytes_of(t, b.cols), static_cast<std::uint64_t>(b.rows),
          bytes_of(t, b.total_cols)};
}

}  // namespace

Instr load_block(Ref base, DType t, const Block2d& b) {
  const BlockDma d = block_dma(t, b);
  return load(base + d.offset, d.row_bytes, std::max<std::uint64_t>(1, d.rows), d.stride);
}

Instr store_block(Ref base, DType t, const Block2d& b) {
  const BlockDma d = block_dma(t, b);
  return store(base + d.offset, d.row_bytes, std::max<std::uint64_t>(1, d.rows), d.stride);
}

std::uint64_t add_matmul(Step& s, const ChipFigures& f, std::int64_t m, std::int64_t k, std::int64_t n, DType t,
                         const std::vector<int>& after, int first_mxu, int mxus) {
  const std::int64_t R = f.rows, C = f.cols;
  const int mx = mxus > 0 ? mxus : f.mxus;
  const std::int64_t ntiles = ceil_div(n, C);
  std::uint64_t slots = 0;
  if (ntiles >= mx) {
    for (int u = 0; u < mx; ++u) {
      const std::int64_t t0 = ntiles * u / mx, t1 = ntiles * (u + 1) / mx;
      const std::int64_t cols = std::min(n, t1 * C) - t0 * C;
      if (cols <= 0) continue;
      s.compute.push_back({mxu(m, k, cols, t, first_mxu + u), after});
      slots += static_cast<std::uint64_t>(m * round_up(k, R) * round_up(cols, C));
    }
  } else {
    const int per_tile = mx / static_cast<int>(ntiles);
    // A few rows (a decode step's): splitting them leaves every MXU loading
    // the whole tile for its share, so the tile's K tiles are split instead,
    // each MXU taking all the rows against its own K range, and the VPU
    // adds the partial sums, when that is the shorter.
    const std::int64_t kt = ceil_div(k, R);
    const double tp = f.throughput(t);
    auto tile = [&](std::int64_t rows) { return std::max(static_cast<double>(rows) / tp, static_cast<double>(R)); };
    const int ksplit = static_cast<int>(std::min<std::int64_t>(per_tile, kt));
    if (ksplit > 1 &&
        static_cast<double>(ceil_div(kt, ksplit)) * tile(m) < static_cast<double>(kt) * tile(ceil_div(m, per_tile))) {
      std::vector<int> parts;
      int u = 0;
      for (std::int64_t tt = 0; tt < ntiles; ++tt) {
        const std::int64_t cols = std::min(n, (tt + 1) * C) - tt * C;
        for (int r = 0; r < ksplit; ++r, ++u) {
          const std::int64_t k0 = kt * r / ksplit * R, k1 = std::min(k, kt * (r + 1) / ksplit * R);
          if (k1 <= k0) continue;
          parts.push_back(static_cast<int>(s.compute.size()));
          s.compute.push_back({mxu(m, k1 - k0, cols, t, first_mxu + u), after});
          slots += static_cast<std::uint64_t>(m * round_up(k1 - k0, R) * round_up(cols, C));
        }
      }
      s.compute.push_back(
          {vpu(static_cast<std::uint64_t>(m * n), DType::f32, ksplit - 1, 0, ksplit, 1), std::move(parts)});
      return slots;
    }
    int u = 0;
    for (std::int64_t tt = 0; tt < ntiles; ++tt) {
      const std::int64_t cols = std::min(n, (tt + 1) * C) - tt * C;
      for (int r = 0; r < per_tile; ++r, ++u) {
        const std::int64_t r0 = m * r / per_tile, r1 = m * (r + 1) / per_tile;
        if (r1 <= r0) continue;
        s.compute.push_back({mxu(r1 - r0, k, cols, t, first_mxu + u), after});
        slots += static_cast<std::uint64_t>((r1 - r0) * round_up(k, R) * round_up(cols, C));
      }
    }
  }
  return slots;
}

Instr vpu(std::uint64_t elements, DType t, double alu, double trans, int inputs, int outputs) {
  Instr in;
  in.unit = UnitKind::vpu;
  in.index = 0;
  arch::VpuWork w;
  w.elements = elements;
  w.dtype = t;
  w.alu_ops = alu;
  w.transcendental_ops = trans;
  w.inputs = inputs;
  w.outputs = outputs;
  in.work = w;
  return in;
}

Instr xlu(const ChipFigures& f, arch::XluOp op, std::uint64_t elements, DType t, std::uint64_t cols) {
  if (f.xlus == 0) return vpu(elements, t, 1, 0, 1, 1);
  Instr in;
  in.unit = UnitKind::xlu;
  in.work = arch::XluWork{op, elements, t, cols};
  return in;
}

std::uint64_t chunk_count(const ChipFigures& f, int cores, std::uint64_t per_core, std::uint64_t traffic_bytes,
                          std::uint64_t cap) {
  cap = std::max<std::uint64_t>(1, cap);
  if (f.step_overhead <= 0) {
    const std::uint64_t wanted =
        std::max<std::uint64_t>(static_cast<std::uint64_t>(cores) * per_core, traffic_bytes / (4u << 20) + 1);
    return std::min(wanted, cap);
  }
  const double per_core_cycles = static_cast<double>(traffic_bytes) / f.hbm_bytes_per_cycle / cores;
  const auto ideal = static_cast<std::uint64_t>(std::ceil(std::sqrt(2.0 * per_core_cycles / f.step_overhead)));
  std::uint64_t n = static_cast<std::uint64_t>(cores) * std::max<std::uint64_t>(1, ideal);
  if (f.vmem_budget > 0) n = std::max<std::uint64_t>(n, (2 * traffic_bytes + f.vmem_budget - 1) / f.vmem_budget);
  return std::min(n, cap);
}

Chunk chunk_of(std::uint64_t total, std::uint64_t c, std::uint64_t chunks, int cores) {
  return {total * c / chunks, total * (c + 1) / chunks,
          static_cast<int>(c * static_cast<std::uint64_t>(cores) / chunks)};
}

std::vector<Step> chunked_steps(
    std::uint64_t total, std::uint64_t chunks, int cores,
    const std::function<void(const Chunk&, std::uint64_t, Step&, const std::vector<Step>&)>& fill) {
  std::vector<Step> steps;
  for (std::uint64_t c = 0; c < chunks; ++c) {
    const Chunk k = chunk_of(total, c, chunks, cores);
    if (k.empty()) continue;
    Step s;
    s.core = k.core;
    fill(k, c, s, steps);
    steps.push_back(std::move(s));
  }
  return steps;
}

bool first_on_core(std::uint64_t chunk, const Step& s, const std::vector<Step>& steps) {
  return chunk == 0 || steps.empty() || s.core != steps.back().core;
}

void add_epilogue(Step& s, const Epilogue& ep, const OutBlock& b, const AnchorWork& w) {
  // A further output block of the step (a batched attention step's
  // sequences, a collective matmul block's runs of rows, a GEMM batch
  // block's entries) is a copy of its own: a chain of its own, not waiting
  // for the previous block's store.
  if (!s.epilogue.empty()) s.epilogue_chains.push_back(s.epilogue.size());
  // Each fused operand as large as the output is one more VMEM stream.
  int inputs = w.inputs;
  for (const auto& x : ep.extras) inputs += x.full ? 1 : 0;
  const double alu = w.alu + ep.alu;
  if (alu > 0 || ep.trans + w.trans > 0 || w.acc != ep.out_dtype || !ep.extras.empty())
    s.epilogue.push_back(vpu(b.elems, w.acc, std::max(1.0, alu), ep.trans + w.trans, inputs, 1));
  if (b.tiled && b.row_stride_elems > 0) {
    const auto total = static_cast<std::int64_t>(b.row_stride_elems);
    const auto off = static_cast<std::int64_t>(b.offset_elems);
    s.epilogue.push_back(store_block(
        ep.out, ep.out_dtype,
        {off / total, off % total, static_cast<std::int64_t>(b.rows), static_cast<std::int64_t>(b.row_elems), total}));
    return;
  }
  s.epilogue.push_back(store(ep.out + bytes_of(ep.out_dtype, static_cast<std::int64_t>(b.offset_elems)),
                             bytes_of(ep.out_dtype, static_cast<std::int64_t>(b.row_elems)), b.rows,
                             bytes_of(ep.out_dtype, static_cast<std::int64_t>(b.row_stride_elems))));
}

void add_extra_loads(Step& s, const Epilogue& ep, std::uint64_t offset_elems, std::uint64_t elems,
                     std::uint64_t total_elems, bool first_block) {
  for (const auto& x : ep.extras) {
    if (x.full) {
      const std::uint64_t per = total_elems ? x.bytes / total_elems : 0;
      s.loads.push_back(load(x.at + offset_elems * per, std::max<std::uint64_t>(1, elems * per)));
    } else if (first_block) {
      s.loads.push_back(load(x.at, std::max<std::uint64_t>(1, x.bytes)));
    }
  }
}

}  // namespace tpusim::sim::lowering
