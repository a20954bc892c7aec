// The software pipeline every lowered operator uses: a sequence of steps,
// each loading its operand blocks from HBM into VMEM (DMA), computing on
// them (MXU/VPU/XLU) and, when an output block is complete, running the
// epilogue and storing it (DMA). Operand and output buffers are double
// buffered: a load into a buffer waits for the compute that last read it,
// an output block's epilogue waits for the store that last used its buffer.
// Instruction order per TensorCore is the one that keeps the blocking,
// in-order sequencer from stalling the compute units:
//   L0 L1 C0 | C1 S0 L2 | C2 S1 L3 | ...
// Each step costs the scalar core a fixed overhead, serial with compute
// (see ProgramBuilder). Leaves out: more than two buffers (a deeper
// pipeline); cross-operator VMEM sharing (each operator's buffers are
// counted on their own).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "arch/chip/isa.h"

namespace tpusim::sim::lowering {

// An instruction inside a step; `after` lists earlier compute instructions
// of the same step (by position) it waits for.
struct StepInstr {
  arch::Instr instr;
  std::vector<int> after;
};

struct Step {
  int core = 0;
  std::vector<arch::Instr> loads;  // DMA into VMEM; empty when the blocks are resident
  std::vector<StepInstr> compute;
  // Epilogue and store of the output block this step completes (empty when
  // the block still accumulates). Each waits for the whole step's compute
  // and for the previous instruction of the epilogue, except the first of
  // each further chain (epilogue_chains).
  std::vector<arch::Instr> epilogue;
  // Positions in `epilogue` where an independent chain starts: that
  // instruction waits for the step's compute only, not for the chain
  // before it (add_epilogue starts one for each further output block of a
  // step: a batched kernel's per-sequence output rows, a collective
  // matmul block's runs of rows, a GEMM batch block's entries). Whatever
  // waits for the step's stores waits for the end of every chain.
  std::vector<std::size_t> epilogue_chains;
  // Who takes part in the step's collective (an ICI instruction in
  // `compute`): emitted into Program::groups, the instruction pointing to it.
  arch::CollectiveGroup collective;
};

class ProgramBuilder {
 public:
  // Copies of at least `split_bytes` are split by rows (or bytes) over up
  // to `dma_engines` descriptors, so that one block load keeps several DMA
  // engines and more of HBM busy at once, as the hardware's many
  // outstanding requests do.
  // `step_overhead_cycles`: the scalar core's bookkeeping per step. It is
  // serial with compute, as in a Pallas/Mosaic pipeline, where the scalar
  // core issues the step's compute bundles itself: a step's first compute
  // instruction waits for the previous step's compute and then carries the
  // overhead as scalar cycles.
  // `launch_overhead_cycles`: the scalar core's cost to start a kernel (an
  // operator); kernels run one after another on a core (an operator's first
  // instruction waits for the previous operator's end on that core), except
  // collectives, which are asynchronous.
  explicit ProgramBuilder(arch::Program& p, int dma_engines = 1, std::uint64_t split_bytes = 256 * 1024,
                          std::uint32_t step_overhead_cycles = 0, std::uint32_t launch_overhead_cycles = 0)
      : p_(p),
        engines_(dma_engines),
        split_bytes_(split_bytes),
        step_overhead_(step_overhead_cycles),
        launch_overhead_(launch_overhead_cycles) {}

  arch::InstrId add(arch::Instr in, const std::vector<arch::InstrId>& deps);

  // Emits the steps of one operator. `op` is its index for reports; `deps`
  // are instructions (of producers) its first instruction on each core
  // must wait for. Returns the ids of the instructions whose completion
  // means the operator is done (its stores, or its last compute).
  std::vector<arch::InstrId> emit_op(std::uint32_t op, const std::vector<Step>& steps,
                                     const std::vector<arch::InstrId>& deps);

  arch::Program& program() { return p_; }

 private:
  // Appends the pieces of `dma` (itself when it is not split) to `out`.
  void split(const arch::Instr& dma, std::vector<arch::Instr>& out) const;

  arch::Program& p_;
  int engines_;
  std::uint64_t split_bytes_;
  std::uint32_t step_overhead_;
  std::uint32_t launch_overhead_;
  std::map<int, std::vector<arch::InstrId>> last_kernel_;  // core -> end of its last kernel
};

}  // namespace tpusim::sim::lowering
