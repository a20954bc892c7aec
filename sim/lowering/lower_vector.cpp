// Vector operators: elementwise ops (and chains fused into them) stream
// the flattened output in chunks; row-wise ops (reduce, softmax, layer and
// RMS norm) stream rows, the VPU doing the arithmetic and the XLU the
// cross-lane reductions.
#include "sim/lowering/op_lowering.h"
#include "workloads/ir/cost.h"

namespace tpusim::sim::lowering {

std::vector<Step> lower_stream(const LowerContext& cx, std::size_t i, const Epilogue& ep, OpPlan& plan) {
  const Op& op = cx.op(i);
  const Tensor& out = cx.tensor(op.outputs[0]);
  const std::uint64_t elems = static_cast<std::uint64_t>(out.num_elements());
  const auto cost = workloads::ew_cost(op.as<workloads::ElementwiseAttrs>().kind);
  const int cores = cx.cores();
  std::uint64_t traffic = 0;
  for (const auto& in : op.inputs) traffic += cx.tensor(in).bytes();
  traffic += out.bytes();
  const std::uint64_t chunks = chunk_count(cx.f, cores, 16, traffic, elems / 1024);
  std::vector<Step> steps =
      chunked_steps(elems, chunks, cores, [&](const Chunk& k, std::uint64_t c, Step& s, const std::vector<Step>& done) {
        const std::uint64_t e0 = k.begin, e1 = k.end;
        int inputs = 0;
        for (const auto& name : op.inputs) {
          const Tensor& t = cx.tensor(name);
          const std::uint64_t te = static_cast<std::uint64_t>(t.num_elements());
          if (te == elems) {
            s.loads.push_back(load(cx.ref(name) + bytes_of(t.dtype, static_cast<std::int64_t>(e0)),
                                   bytes_of(t.dtype, static_cast<std::int64_t>(e1 - e0))));
            ++inputs;
          } else if (first_on_core(c, s, done)) {
            s.loads.push_back(load(cx.ref(name), std::max<std::uint64_t>(1, t.bytes())));
          }
        }
        s.compute.push_back({vpu(e1 - e0, cx.tensor(op.inputs[0]).dtype, std::max(1, cost.flops), cost.transcendentals,
                                 std::max(1, inputs), 0),
                             {}});
        add_extra_loads(s, ep, e0, e1 - e0, elems, c == 0);
        add_epilogue(s, ep, {e1 - e0, e1 - e0, 1, e1 - e0, e0}, {out.dtype, 0, 0, 1});
      });
  plan.vmem_peak = 2 * traffic / chunks + 1;
  plan.blocking = std::to_string(chunks) + " chunks";
  return steps;
}

std::vector<Step> lower_rows(const LowerContext& cx, std::size_t i, const Epilogue& ep, OpPlan& plan) {
  const Op& op = cx.op(i);
  const Tensor& x = cx.tensor(op.inputs[0]);
  const Tensor& out = cx.tensor(op.outputs[0]);
  const std::uint64_t elems = static_cast<std::uint64_t>(x.num_elements());
  const std::uint64_t out_elems = static_cast<std::uint64_t>(out.num_elements());
  const auto cost = workloads::op_cost(cx.index, op);
  const double alu = elems ? static_cast<double>(cost.flops) / static_cast<double>(elems) : 0;
  const double trans = elems ? static_cast<double>(cost.transcendentals) / static_cast<double>(elems) : 0;
  const int reductions = op.kind == OpKind::softmax ? 2 : op.kind == OpKind::layer_norm ? 2 : 1;
  // The reduced extent: what a reduce folds per output element, else the
  // last dimension (norms and softmax reduce over it).
  const std::uint64_t row_len = out_elems > 0 && out_elems < elems
                                    ? elems / out_elems
                                    : static_cast<std::uint64_t>(x.shape.empty() ? 1 : x.shape.back());
  const int cores = cx.cores();
  const std::uint64_t traffic = x.bytes() + out.bytes();
  const std::uint64_t chunks = chunk_count(cx.f, cores, 16, traffic, std::min(elems, out_elems ? out_elems : 1));
  std::vector<Step> steps =
      chunked_steps(elems, chunks, cores, [&](const Chunk& k, std::uint64_t c, Step& s, const std::vector<Step>& done) {
        const std::uint64_t e0 = k.begin, e1 = k.end;
        const std::uint64_t o0 = out_elems * c / chunks, o1 = out_elems * (c + 1) / chunks;
        s.loads.push_back(load(cx.ref(x.name) + bytes_of(x.dtype, static_cast<std::int64_t>(e0)),
                               bytes_of(x.dtype, static_cast<std::int64_t>(e1 - e0))));
        for (std::size_t k = 1; k < op.inputs.size(); ++k)
          if (first_on_core(c, s, done))
            s.loads.push_back(load(cx.ref(op.inputs[k]), std::max<std::uint64_t>(1, cx.tensor(op.inputs[k]).bytes())));
        s.compute.push_back({vpu(e1 - e0, x.dtype, std::max(1.0, alu), trans, 1, 1), {}});
        for (int r = 0; r < reductions; ++r)
          s.compute.push_back(
              {xlu(cx.f, arch::XluOp::reduce, e1 - e0, x.dtype, row_len), {static_cast<int>(s.compute.size()) - 1}});
        add_extra_loads(s, ep, o0, o1 - o0, out_elems, c == 0);
        const std::uint64_t on = std::max<std::uint64_t>(1, o1 - o0);
        add_epilogue(s, ep, {on, on, 1, on, o0}, {out.dtype, 0, 0, 1});
      });
  plan.vmem_peak = 2 * traffic / chunks + 1;
  plan.blocking = std::to_string(chunks) + " chunks";
  return steps;
}

}  // namespace tpusim::sim::lowering
