#include "sim/lowering/roofline.h"

#include <algorithm>

#include "workloads/ir/cost.h"

namespace tpusim::sim::lowering {

using arch::DmaWork;
using arch::MemSpace;
using workloads::OpKind;

void fill_roofline(const LowerContext& cx, std::size_t i, const std::vector<Step>& steps, OpPlan& plan) {
  const workloads::Op& op = cx.op(i);
  const auto& chain = cx.fusion.chain[i];
  auto add_dma = [&](const arch::Instr& in) {
    const DmaWork& w = std::get<DmaWork>(in.work);
    // A copy between two places of the same memory moves its bytes twice.
    plan.dma_bytes += w.bytes() * ((w.src == MemSpace::hbm) + (w.dst == MemSpace::hbm));
    plan.cmem_dma_bytes += w.bytes() * ((w.src == MemSpace::cmem) + (w.dst == MemSpace::cmem));
  };
  for (const Step& s : steps) {
    for (const arch::Instr& l : s.loads) add_dma(l);
    for (const arch::Instr& e : s.epilogue)
      if (e.unit == arch::UnitKind::dma) add_dma(e);
  }
  if (workloads::is_collective(op.kind)) {
    plan.hbm_bytes = 0;
    plan.memory_cycles = 0;
    return;  // roofline_cycles: the link bound from lower_collective
  }
  std::uint64_t bytes = 0, cmem = 0;
  auto count = [&](const std::string& name, std::uint64_t b) {
    if (cx.mem.in(name, MemSpace::vmem)) return;  // resident: no traffic
    (cx.mem.in(name, MemSpace::cmem) ? cmem : bytes) += b;
  };
  if (op.kind != OpKind::reshape) {
    bytes = workloads::op_cost(cx.index, op).bytes_read;
    // op_cost reads every non-gather operand whole; move those in CMEM.
    if (op.kind != OpKind::gather)
      for (const auto& in : op.inputs)
        if (!cx.mem.in(in, MemSpace::hbm)) {
          bytes -= std::min(bytes, cx.tensor(in).bytes());
          if (cx.mem.in(in, MemSpace::cmem)) cmem += cx.tensor(in).bytes();
        }
    for (std::size_t j : chain)
      for (const auto& in : cx.op(j).inputs) {
        bool internal = in == op.outputs[0];
        for (std::size_t q : chain) internal = internal || in == cx.op(q).outputs[0];
        if (!internal) count(in, cx.tensor(in).bytes());
      }
    const std::string& final_out = cx.fusion.final_output(cx.wl, i);
    count(final_out, cx.tensor(final_out).bytes());
  }
  if (plan.dma_bytes < bytes) bytes = plan.dma_bytes;
  if (plan.cmem_dma_bytes < cmem) cmem = plan.cmem_dma_bytes;
  plan.hbm_bytes = bytes;
  plan.cmem_bytes = cmem;
  const bool mxu_op = op.kind == OpKind::conv2d || op.kind == OpKind::matmul || op.kind == OpKind::attention;
  // The MXU's peak at the dtype it ran (gemm_quant.h); an N:M sparse MXU
  // streams only n/m of K.
  arch::DType run = mxu_op ? cx.tensor(op.inputs[0]).dtype : arch::DType::bf16;
  if (!plan.mxu_dtype.empty()) run = arch::parse_dtype(plan.mxu_dtype).value_or(run);
  const double peak = cx.f.peak_macs(run);
  const double t_math = peak > 0 ? static_cast<double>(plan.macs) * plan.mxu_k_fraction / peak : 0;
  double t_mem = static_cast<double>(bytes) / cx.f.hbm_bytes_per_cycle;
  if (cmem > 0) t_mem = std::max(t_mem, static_cast<double>(cmem) / cx.f.cmem_bytes_per_cycle);
  plan.memory_cycles = t_mem;
  plan.roofline_cycles = std::max(t_math, t_mem);
}

}  // namespace tpusim::sim::lowering
