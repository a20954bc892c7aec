#include "sim/lowering/op_lowering.h"

#include "workloads/ir/cost.h"

namespace tpusim::sim::lowering {

using workloads::OpKind;

LowerFn lowering_for(OpKind kind) {
  switch (kind) {
    case OpKind::matmul: return lower_matmul;
    case OpKind::conv2d: return lower_conv;
    case OpKind::elementwise: return lower_stream;
    case OpKind::reduce:
    case OpKind::softmax:
    case OpKind::layer_norm:
    case OpKind::rms_norm: return lower_rows;
    case OpKind::attention: return lower_attention;
    case OpKind::gather: return lower_gather;
    case OpKind::transpose:
    case OpKind::reshape:
    case OpKind::concat:
    case OpKind::slice: return lower_copy;
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_reduce:
    case OpKind::all_to_all:
    case OpKind::collective_permute:
    case OpKind::broadcast: return lower_collective;
    case OpKind::copy: return lower_host_copy;
  }
  return nullptr;
}

Epilogue epilogue_for(const LowerContext& cx, std::size_t anchor) {
  Epilogue ep;
  const workloads::Tensor& anchor_out = cx.tensor(cx.op(anchor).outputs[0]);
  ep.out_dtype = anchor_out.dtype;
  std::string produced = anchor_out.name;
  for (std::size_t i : cx.fusion.chain[anchor]) {
    const workloads::Op& op = cx.op(i);
    const auto cost = workloads::ew_cost(op.as<workloads::ElementwiseAttrs>().kind);
    ep.alu += cost.flops;
    ep.trans += cost.transcendentals;
    for (const std::string& in : op.inputs) {
      if (in == produced) continue;
      const workloads::Tensor& t = cx.tensor(in);
      ep.extras.push_back({cx.ref(in), t.bytes(), t.num_elements() == anchor_out.num_elements()});
    }
    produced = op.outputs[0];
    ep.out_dtype = cx.tensor(produced).dtype;
  }
  ep.out = cx.ref(produced);
  return ep;
}

}  // namespace tpusim::sim::lowering
