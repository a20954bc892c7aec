// The per-operator lowering rules. Each rule turns one (anchor) operator,
// with the elementwise ops fused into its epilogue, into pipeline steps
// (see pipeline.h) and fills the parts of its OpPlan it decides (blocking,
// VMEM use, padded MACs). All rules have one signature and are found by
// op kind through `lowering_for`; each lives in its own file
// (lower_<family>.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "sim/lowering/attention_tiling.h"
#include "sim/lowering/chip_figures.h"
#include "sim/lowering/fusion.h"
#include "sim/lowering/instrs.h"
#include "sim/lowering/lowering.h"
#include "sim/lowering/memory_plan.h"
#include "sim/lowering/pipeline.h"
#include "workloads/ir/workload.h"

namespace tpusim::sim::lowering {

using workloads::Op;
using workloads::OpKind;
using workloads::Tensor;

// Everything a rule reads; nothing in it changes while rules run.
struct LowerContext {
  const workloads::Workload& wl;
  const workloads::TensorIndex& index;
  const arch::TpuConfig& cfg;
  const ChipFigures& f;
  const MemoryPlan& mem;
  const FusionPlan& fusion;
  const LoweringOptions& opt;
  // Searches repeated across layers, done once per shape.
  mutable AttentionTilingCache attention_tilings{};

  const workloads::Op& op(std::size_t i) const { return wl.ops[i]; }
  const workloads::Tensor& tensor(const std::string& name) const { return *index.find(name); }
  Ref ref(const std::string& name) const { return mem.of(name); }
  // TensorCores one operator is split over.
  int cores() const { return opt.megacore_split ? f.cores : 1; }
};

using LowerFn = std::vector<Step> (*)(const LowerContext& cx, std::size_t op, const Epilogue& ep, OpPlan& plan);

std::vector<Step> lower_matmul(const LowerContext& cx, std::size_t op, const Epilogue& ep, OpPlan& plan);

// A window of a matmul's rows (its lhs free dims flattened in order; the
// output's rows are the same): `outer` groups of `rows` consecutive rows,
// group o starting at row `row0 + o * stride`, computed as one matrix of
// outer x rows rows (a collective matmul's slice for one ring step,
// collective_matmul.h). Its lhs rows are read from those rows of the lhs,
// or, with `own_a`, from a buffer holding just the window's rows
// contiguously (a chunk that arrived whole); its result is stored to those
// rows of the group's output, or, with `own_out`, to such a buffer. Each
// of `received` is a partial sum from a ring neighbour, added in the
// epilogue: laid out like the output (own_coords false) or like `own_out`.
struct GemmRows {
  std::int64_t outer = 1, rows = 0, stride = 0, row0 = 0;
  std::int64_t full_rows = 0;  // of the whole output (lower_matmul_rows sets it)
  std::optional<Ref> own_out;
  std::optional<Ref> own_a;
  struct Received {
    Ref at;
    bool own_coords = false;
  };
  std::vector<Received> received;
};
// `w.rows` 0: every row. Needs an equation without batch dims whose lhs
// is its free dims then the contracting dim (collective_matmul.h checks).
std::vector<Step> lower_matmul_rows(const LowerContext& cx, std::size_t op, const Epilogue& ep, const GemmRows& w,
                                    OpPlan& plan);
std::vector<Step> lower_conv(const LowerContext& cx, std::size_t op, const Epilogue& ep, OpPlan& plan);
std::vector<Step> lower_stream(const LowerContext& cx, std::size_t op, const Epilogue& ep, OpPlan& plan);
std::vector<Step> lower_rows(const LowerContext& cx, std::size_t op, const Epilogue& ep, OpPlan& plan);
std::vector<Step> lower_attention(const LowerContext& cx, std::size_t op, const Epilogue& ep, OpPlan& plan);
std::vector<Step> lower_gather(const LowerContext& cx, std::size_t op, const Epilogue& ep, OpPlan& plan);
std::vector<Step> lower_copy(const LowerContext& cx, std::size_t op, const Epilogue& ep, OpPlan& plan);
// Sets plan's roofline itself; its DMAs (in the steps' epilogues) are
// emitted asynchronously by the driver.
std::vector<Step> lower_host_copy(const LowerContext& cx, std::size_t op, const Epilogue& ep, OpPlan& plan);
// Sets plan.roofline_cycles itself: a collective's bound is its links'.
std::vector<Step> lower_collective(const LowerContext& cx, std::size_t op, const Epilogue& ep, OpPlan& plan);
// The one step of a collective: its ICI instruction and who takes part.
Step collective_step(const arch::IciWork& w, arch::CollectiveGroup group);

// The rule for an op kind (a switch without default: a new kind that is
// not handled here is a compiler warning).
LowerFn lowering_for(workloads::OpKind kind);

// The anchor's epilogue: its fused ops' work and operands, and where the
// group's final output goes.
Epilogue epilogue_for(const LowerContext& cx, std::size_t anchor);

}  // namespace tpusim::sim::lowering
