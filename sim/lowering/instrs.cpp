#include "sim/lowering/instrs.h"

#include <algorithm>

namespace tpusim::sim::lowering {

using arch::DType;
using arch::DmaWork;
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

Instr xlu(const ChipFigures& f, arch::XluOp op, std::uint64_t elements, DType t) {
  if (f.xlus == 0) return vpu(elements, t, 1, 0, 1, 1);
  Instr in;
  in.unit = UnitKind::xlu;
  in.work = arch::XluWork{op, elements, t};
  return in;
}

std::uint64_t chunk_count(int cores, std::uint64_t per_core, std::uint64_t traffic_bytes, std::uint64_t cap) {
  const std::uint64_t wanted =
      std::max<std::uint64_t>(static_cast<std::uint64_t>(cores) * per_core, traffic_bytes / (4u << 20) + 1);
  return std::min(wanted, std::max<std::uint64_t>(1, cap));
}

bool first_on_core(std::uint64_t chunk, const Step& s, const std::vector<Step>& steps) {
  return chunk == 0 || steps.empty() || s.core != steps.back().core;
}

void add_epilogue(Step& s, const Epilogue& ep, const OutBlock& b, const AnchorWork& w) {
  // Each fused operand as large as the output is one more VMEM stream.
  int inputs = w.inputs;
  for (const auto& x : ep.extras) inputs += x.full ? 1 : 0;
  const double alu = w.alu + ep.alu;
  if (alu > 0 || ep.trans + w.trans > 0 || w.acc != ep.out_dtype || !ep.extras.empty())
    s.epilogue.push_back(vpu(b.elems, w.acc, std::max(1.0, alu), ep.trans + w.trans, inputs, 1));
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
