// Operators that mostly move bytes: embedding lookups (gathers of table
// rows; on the SparseCores where the chip has them) and layout ops (transpose through VMEM and the XLU; concat and
// slice as direct DMAs, or through VMEM when ops are fused into them;
// reshape a relabelling of the same bytes that costs nothing).
#include "sim/lowering/op_lowering.h"

namespace tpusim::sim::lowering {

// Each index fetches one table row (a strided gather from HBM), then the
// rows are stored contiguously. On a chip with SparseCores the lookups run
// there (XLA offloads embedding lookups and their gradients to them,
// openxla.org/xla/sparsecore): the chunks go to the SparseCores' own
// sequencers (cores cx.f.cores .. + sparsecores - 1), whose tiles form the
// addresses while the TensorCores run other kernels; the rows still move
// through the chip's DMA engines and HBM. Without SparseCores the
// TensorCores do it.
std::vector<Step> lower_gather(const LowerContext& cx, std::size_t i, const Epilogue& ep, OpPlan& plan) {
  const Op& op = cx.op(i);
  const Tensor& table = cx.tensor(op.inputs[0]);
  const Tensor& idx = cx.tensor(op.inputs[1]);
  const Tensor& out = cx.tensor(op.outputs[0]);
  const std::int64_t V = table.shape[0];
  const std::int64_t n = idx.num_elements();
  const std::uint64_t row = bytes_of(table.dtype, table.num_elements() / std::max<std::int64_t>(1, V));
  const int sparse = std::max(0, cx.cfg.sparsecores);
  const int cores = sparse > 0 ? sparse : cx.cores();
  const int first_core = sparse > 0 ? cx.f.cores : 0;
  // Eight chunks a core, more where a chunk's rows (double-buffered) would
  // not fit the kernel's VMEM budget: a MoE dispatch of 512 K rows of 14
  // KiB is hundreds of chunks, not one 235 MiB block per step.
  std::uint64_t want = static_cast<std::uint64_t>(cores) * 8;
  if (cx.f.vmem_budget > 0) {
    const std::uint64_t rows = std::max<std::uint64_t>(1, cx.f.vmem_budget / (2 * std::max<std::uint64_t>(1, row)));
    want = std::max<std::uint64_t>(want, static_cast<std::uint64_t>(ceil_div(n, static_cast<std::int64_t>(rows))));
  }
  const std::int64_t chunks = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(std::min<std::uint64_t>(want, static_cast<std::uint64_t>(n))));
  // Lookups land on rows spread over the table; a stride of the table over
  // the lookups stands for that spread in the memory system.
  const std::uint64_t spread =
      row * static_cast<std::uint64_t>(std::max<std::int64_t>(1, V / std::max<std::int64_t>(1, n)));
  const std::uint64_t per = static_cast<std::uint64_t>(out.num_elements() / std::max<std::int64_t>(1, n));
  std::vector<Step> steps;
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t i0 = n * c / chunks, i1 = n * (c + 1) / chunks;
    if (i1 == i0) continue;
    Step s;
    s.core = first_core + static_cast<int>(c * cores / chunks);
    s.loads.push_back(load(cx.ref(idx.name) + bytes_of(idx.dtype, i0), bytes_of(idx.dtype, i1 - i0)));
    s.loads.push_back(
        load(cx.ref(table.name) + static_cast<std::uint64_t>(i0) * spread % std::max<std::uint64_t>(1, table.bytes()),
             row, static_cast<std::uint64_t>(i1 - i0), spread));
    // The VPU pass only forms addresses; rows go straight to the output.
    s.compute.push_back({vpu(static_cast<std::uint64_t>(i1 - i0), idx.dtype, 1, 0, 1, 0), {}});
    const std::uint64_t e0 = static_cast<std::uint64_t>(i0) * per, en = static_cast<std::uint64_t>(i1 - i0) * per;
    add_extra_loads(s, ep, e0, en, static_cast<std::uint64_t>(out.num_elements()), c == 0);
    add_epilogue(s, ep, {en, en, 1, en, e0}, {table.dtype, 0, 0, 0});
    steps.push_back(std::move(s));
  }
  plan.vmem_peak = 2 * (row * static_cast<std::uint64_t>(ceil_div(n, chunks)));
  plan.blocking = std::to_string(chunks) + " chunks" + (sparse > 0 ? " on " + std::to_string(sparse) + " SparseCores" : "");
  return steps;
}

std::vector<Step> lower_copy(const LowerContext& cx, std::size_t i, const Epilogue& ep, OpPlan& plan) {
  const Op& op = cx.op(i);
  const Tensor& out = cx.tensor(op.outputs[0]);
  if (op.kind == OpKind::reshape) {
    plan.blocking = "bitcast";  // the memory plan gave the result its input's bytes
    return {};
  }
  const std::uint64_t elems = static_cast<std::uint64_t>(out.num_elements());
  const int cores = cx.cores();
  // A slice or concat with nothing fused into it moves bytes and computes
  // nothing: XLA emits it as DMAs from the source straight to the result
  // (no VMEM staging), one per input piece, split over the DMA engines.
  // Pieces are taken as contiguous (exact for the major dimension).
  const bool plain = ep.extras.empty() && ep.alu == 0 && ep.trans == 0 && ep.out.space != arch::MemSpace::vmem;
  if (plain && (op.kind == OpKind::slice || op.kind == OpKind::concat)) {
    std::vector<Step> steps;
    std::uint64_t at = 0;
    const std::size_t n_in = op.kind == OpKind::slice ? 1 : op.inputs.size();
    for (std::size_t k = 0; k < n_in; ++k) {
      const std::uint64_t bytes = op.kind == OpKind::slice ? out.bytes() : cx.tensor(op.inputs[k]).bytes();
      for (int c = 0; c < cores; ++c) {
        const std::uint64_t b0 = bytes * static_cast<std::uint64_t>(c) / static_cast<std::uint64_t>(cores),
                            b1 = bytes * static_cast<std::uint64_t>(c + 1) / static_cast<std::uint64_t>(cores);
        if (b1 == b0) continue;
        Step s;
        s.core = c;
        s.epilogue.push_back(copy(cx.ref(op.inputs[k]) + b0, ep.out + (at + b0), b1 - b0));
        steps.push_back(std::move(s));
      }
      at += bytes;
    }
    plan.blocking = "direct DMA, " + std::to_string(steps.size()) + " pieces";
    return steps;
  }
  const std::uint64_t chunks = chunk_count(cx.f, cores, 8, out.bytes(), elems / 1024 + 1);
  std::vector<Step> steps =
      chunked_steps(elems, chunks, cores, [&](const Chunk& k, std::uint64_t c, Step& s, const std::vector<Step>& done) {
        const std::uint64_t e0 = k.begin, e1 = k.end;
        if (op.kind == OpKind::slice) {
          // Read only the selected elements: rows of the innermost extent.
          s.loads.push_back(load(cx.ref(op.inputs[0]) + bytes_of(out.dtype, static_cast<std::int64_t>(e0)),
                                 bytes_of(out.dtype, static_cast<std::int64_t>(e1 - e0))));
        } else {
          for (const auto& in : op.inputs) {
            const Tensor& t = cx.tensor(in);
            const std::uint64_t te = static_cast<std::uint64_t>(t.num_elements());
            const std::uint64_t a0 = te * c / chunks, a1 = te * (c + 1) / chunks;
            if (a1 > a0)
              s.loads.push_back(load(cx.ref(in) + bytes_of(t.dtype, static_cast<std::int64_t>(a0)),
                                     bytes_of(t.dtype, static_cast<std::int64_t>(a1 - a0))));
          }
        }
        if (op.kind == OpKind::transpose)
          s.compute.push_back({xlu(cx.f, arch::XluOp::transpose, e1 - e0, out.dtype), {}});
        else
          s.compute.push_back({vpu(e1 - e0, out.dtype, 1, 0, 1, 0), {}});
        add_extra_loads(s, ep, e0, e1 - e0, elems, c == 0);
        add_epilogue(s, ep, {e1 - e0, e1 - e0, 1, e1 - e0, e0}, {out.dtype, 0, 0, 0});
      });
  plan.vmem_peak = 2 * out.bytes() / chunks + 1;
  plan.blocking = std::to_string(chunks) + " chunks";
  return steps;
}

}  // namespace tpusim::sim::lowering
