// The lowering driver: plans fusion and memory, then lowers each anchor
// operator with its rule (op_lowering.h), fills its roofline and emits its
// steps as a software pipeline (pipeline.h), chaining operators through
// the instructions that write their inputs.
#include "sim/lowering/lowering.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_map>

#include "sim/lowering/chip_figures.h"
#include "sim/lowering/collective_matmul.h"
#include "sim/lowering/fusion.h"
#include "sim/lowering/memory_plan.h"
#include "sim/lowering/op_lowering.h"
#include "sim/lowering/pipeline.h"
#include "sim/lowering/roofline.h"
#include "sim/lowering/schedule.h"
#include "workloads/ir/cost.h"
#include "workloads/ir/shape_inference.h"

namespace tpusim::sim {

using arch::InstrId;
using workloads::Op;

namespace {

std::string shapes_of(const workloads::TensorIndex& index, const Op& op) {
  std::ostringstream os;
  for (std::size_t k = 0; k < op.inputs.size(); ++k)
    os << (k ? " x " : "") << workloads::shape_str(index.find(op.inputs[k])->shape);
  os << " -> " << workloads::shape_str(index.find(op.outputs[0])->shape);
  return os.str();
}

}  // namespace

std::uint64_t hbm_plan_peak(const workloads::Workload& wl, const arch::TpuConfig& cfg, const LoweringOptions& opt) {
  LoweringOptions o = opt;
  o.check_hbm_capacity = false;
  const workloads::TensorIndex index(wl);
  const lowering::ChipFigures f = lowering::chip_figures(cfg, o);
  const lowering::FusionPlan fusion = lowering::plan_fusion(wl, index, o.fusion);
  return lowering::plan_memory(wl, index, fusion, cfg, o, f.vmem_budget).hbm_peak_bytes;
}

LoweredWorkload lower(const workloads::Workload& wl, const arch::TpuConfig& cfg, const LoweringOptions& opt) {
  const workloads::TensorIndex index(wl);
  const lowering::ChipFigures f = lowering::chip_figures(cfg, opt);
  const lowering::FusionPlan fusion = lowering::plan_fusion(wl, index, opt.fusion);
  const lowering::MemoryPlan mem = lowering::plan_memory(wl, index, fusion, cfg, opt, f.vmem_budget);
  const lowering::LowerContext cx{wl, index, cfg, f, mem, fusion, opt};

  LoweredWorkload out;
  out.program.cores = f.cores;
  out.program.instrs.reserve(wl.ops.size() * 16);
  out.hbm_peak_bytes = mem.hbm_peak_bytes;
  out.ops.resize(wl.ops.size());
  lowering::ProgramBuilder pb(out.program, cfg.dma.engines, 256 * 1024,
                              static_cast<std::uint32_t>(std::lround(f.step_overhead)),
                              static_cast<std::uint32_t>(std::lround(f.launch_overhead)));
  std::unordered_map<std::string, std::vector<InstrId>> ready;  // tensor -> instrs writing it
  // `except`: a tensor not to wait for (a collective matmul's slices wait
  // for their own chunk of the gathered operand only).
  auto deps_of = [&](std::size_t i, const std::string& except = std::string()) {
    std::vector<InstrId> d;
    auto add_tensor = [&](const std::string& name) {
      if (!except.empty() && name == except) return;
      auto it = ready.find(name);
      if (it != ready.end()) d.insert(d.end(), it->second.begin(), it->second.end());
    };
    for (const std::string& in : wl.ops[i].inputs) add_tensor(in);
    for (std::size_t j : fusion.chain[i])
      for (const std::string& in : wl.ops[j].inputs) add_tensor(in);
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    return d;
  };

  // The instructions grow chunk by chunk and never move
  // (arch::ChunkedVector). The pool of waits (Program::dep_pool, run-length
  // encoded: an eighth of their bytes in a MoE training step) grows by
  // projection rather than doubling: once it is three quarters full, it
  // is reserved for 1.5x the whole workload at the waits per operator
  // emitted so far (at least double, at most 8x: an instruction-heavy
  // first operator, e.g. a long sequence's attention, would otherwise
  // project terabytes, which the allocator refuses), so it is copied a
  // few times rather than through every doubling; reserved and untouched
  // capacity costs address space only.
  std::size_t done_ops = 0;
  auto grow_by_projection = [&](auto& v) {
    if (done_ops == 0 || v.size() * 4 < v.capacity() * 3) return;
    const double per_op = static_cast<double>(v.size()) / static_cast<double>(done_ops);
    const double projected = per_op * static_cast<double>(wl.ops.size()) * 1.5;
    const double most = 8.0 * static_cast<double>(v.size());
    v.reserve(std::max(2 * v.size(), static_cast<std::size_t>(std::min(projected, most))));
  };
  const lowering::Schedule schedule = lowering::schedule_ops(wl, fusion, opt.prefetch_collectives && opt.multi_chip);
  const std::vector<std::size_t>& order = schedule.order;
  const lowering::CollectiveMatmulPlan cm = lowering::plan_collective_matmul(wl, index, fusion, opt, order);
  lowering::CollectiveMatmulEmitter cm_emit(
      cx, cm, pb, ready, out.ops, [&](std::size_t op, const std::string& except) { return deps_of(op, except); });
  for (const std::size_t i : order) {
    grow_by_projection(out.program.dep_pool);
    ++done_ops;
    const Op& op = wl.ops[i];
    OpPlan& plan = out.ops[i];
    plan.name = op.name;
    plan.kind = std::string(workloads::op_kind_name(op.kind));
    plan.shapes = shapes_of(index, op);
    plan.dtype = std::string(arch::dtype_name(index.find(op.inputs.empty() ? op.outputs[0] : op.inputs[0])->dtype));
    const auto cost = workloads::op_cost(index, op);
    plan.flops = cost.flops;
    plan.macs = cost.macs;
    plan.recompute_macs = cost.recompute_macs;
    plan.masked_macs = cost.masked_macs;
    out.program.op_names.push_back(op.name);
    if (fusion.fused(i)) {
      plan.fused_into = fusion.fused_into[i];
      // Its result is produced by the anchor's stores.
      ready[op.outputs[0]] = ready[wl.ops[static_cast<std::size_t>(fusion.fused_into[i])].outputs[0]];
      continue;
    }
    if (!cm.empty() && cm_emit.emit(i)) continue;
    const lowering::LowerFn rule = lowering::lowering_for(op.kind);
    if (!rule) throw LoweringError("operator '" + op.name + "': no lowering for " + plan.kind);
    const lowering::Epilogue ep = lowering::epilogue_for(cx, i);
    auto deps = deps_of(i);
    if (const int prev = schedule.after[i]; prev >= 0) {
      // One all-gather in flight at a time (schedule.h): this one starts
      // when the previous one has completed.
      const auto& d = ready[wl.ops[static_cast<std::size_t>(prev)].outputs[0]];
      deps.insert(deps.end(), d.begin(), d.end());
    }
    const std::vector<lowering::Step> steps = rule(cx, i, ep, plan);
    if (op.kind == workloads::OpKind::copy) {
      // Asynchronous (lower_host_copy.cpp): its DMAs wait for the producer
      // only, outside the kernel order, like a collective.
      std::vector<InstrId> done;
      for (const lowering::Step& s : steps)
        for (arch::Instr in : s.epilogue) {
          in.op = static_cast<std::uint32_t>(i);
          in.core = static_cast<std::uint16_t>(s.core);
          done.push_back(pb.add(in, deps));
        }
      ready[op.outputs[0]] = done;
      continue;
    }
    for (std::size_t j : fusion.chain[i]) plan.fused.push_back(static_cast<std::uint32_t>(j));
    lowering::fill_roofline(cx, i, steps, plan);
    // An operator that issues nothing (a reshape, a bitcast of its input's
    // bytes) has its result when its inputs are: its readers wait for
    // those, not for nothing (a reader split over another TensorCore than
    // the producer would otherwise start before the producer's result).
    const std::vector<InstrId> done = steps.empty() ? deps : pb.emit_op(static_cast<std::uint32_t>(i), steps, deps);
    ready[op.outputs[0]] = done;
    for (std::size_t j : fusion.chain[i]) ready[wl.ops[j].outputs[0]] = done;
  }
  // Rules may issue on the SparseCores' sequencers, after the TensorCores.
  for (const auto& in : out.program.instrs) out.program.cores = std::max(out.program.cores, in.core + 1);
  return out;
}

}  // namespace tpusim::sim
