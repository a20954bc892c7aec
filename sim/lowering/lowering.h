// Lowering: each workload operator becomes a tiled, software-pipelined
// program for the TensorCores (see pipeline.h): block sizes chosen by a
// search under the kernel's scoped VMEM with double-buffered inputs,
// HBM<->VMEM DMA of tiled-layout blocks, MXU passes padded to the array
// shape, VPU/XLU work, elementwise consumers fused into their producer's
// epilogue as XLA would (unless fusion is off), work split across the
// TensorCores of megacore chips, and the kernels' launch and per-step
// overheads (kernel.* config keys). Intermediate activations that fit stay
// in the alternate memory, CMEM on v4/v4i and otherwise the VMEM kernels
// leave free (memory_plan.h). Collectives become ICI instructions on
// multi-chip runs, a tensor-parallel all-gather or reduce-scatter next to
// its matmuls as XLA's collective matmul (collective_matmul.h). Quantized
// and N:M sparse matmuls are priced by
// gemm_quant.h. The parts: fusion.h, memory_plan.h, gemm_tiling.h and
// attention_tiling.h (the pure block searches), op_lowering.h (one rule per
// op family, dispatched by op kind, in lower_<family>.cpp), roofline.h,
// pipeline.h. Leaves out: prefetching weights into CMEM or VMEM ahead of
// their operator, prologue fusion (norms into the next matmul).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "arch/chip/isa.h"
#include "arch/common/chip_config.h"
#include "workloads/ir/workload.h"

namespace tpusim::sim {

struct LoweringOptions {
  bool fusion = true;
  bool megacore_split = true;  // split each operator over the TensorCores
  bool cmem = true;            // place intermediates in CMEM where the chip has it
  // Keep intermediates that fit in the VMEM kernels leave free (chips
  // without CMEM), as XLA's memory-space assignment does.
  bool vmem_residency = true;
  double vmem_budget_fraction = 0.75;  // of VMEM per core that blocks may use
  // Multi-chip runs: the mesh axes of the slice (name, size). Collectives
  // are lowered to ICI instructions only when this is set, and each one's
  // axes must be mesh axes whose sizes match the workload's mesh.
  bool multi_chip = false;
  std::vector<std::pair<std::string, std::int64_t>> mesh;
  // Schedule asynchronous collectives as XLA's latency-hiding scheduler
  // does (schedule.h): one whose operands are ready starts before the
  // compute operator that precedes it, and weight all-gathers run one at a
  // time, each as soon as the previous one completes. Off: collectives
  // start where the workload lists them.
  bool prefetch_collectives = true;
  // Multi-chip runs: lower an all-gather over one mesh axis that feeds
  // matmuls along their rows, and a matmul whose result is reduce-
  // scattered along its rows, as XLA's collective matmul (windowed
  // einsum): ring permutes interleaved with slices of the matmul
  // (collective_matmul.h). Off: the matmul waits for the whole all-gather
  // (the reduce-scatter for the whole matmul). Bidirectional: half the
  // ring steps go each way round the ring.
  bool collective_matmul = true;
  bool collective_matmul_bidirectional = true;
  // Only collectives whose larger side (the gathered tensor, the
  // reduce-scattered one) has at least this many bytes are decomposed:
  // XLA's threshold_for_windowed_einsum_mib, 256 MiB by default
  // (xla/service/spmd/spmd_partitioner.h, SpmdPartitionerOptions: "The
  // minimum size in MiB of an einsum operand to be considered using
  // windowed implementation"). Below it the ring's per-step start-up and
  // the slices' weight re-reads cost more than the overlap saves.
  std::uint64_t collective_matmul_min_bytes = std::uint64_t{256} << 20;
  // Multi-chip runs: per mesh axis, the lengths of the slice dimensions it
  // spans (its group's ranks count the first fastest), so that collective
  // matmul rings go between torus neighbours (collective_matmul.h,
  // ring_order). An axis not listed rings in rank order.
  std::vector<std::pair<std::string, std::vector<int>>> mesh_dims;
  // Multi-chip runs: per mesh axis, the ICI links every chip of one of
  // its groups has to the group's other chips (each slice-axis part: 2
  // where its ring wraps, 1 on a line, whose end chips have one). A
  // collective's roofline sends what a chip receives over these links,
  // not over all its ports. An axis not listed counts every port.
  std::vector<std::pair<std::string, int>> mesh_links;
  // Multislice runs ("N*SHAPE"): the mesh axis that spans the DCN (its
  // slowest-varying num_slices ranks are the slices), empty if none.
  // Collectives over it are not decomposed into collective matmuls (XLA
  // windows einsums over ICI rings), and their roofline counts the DCN.
  std::string dcn_axis;
  int num_slices = 1;
  // Refuse a workload whose HBM peak exceeds the chip's capacity. Off for
  // cost probes: `tpusim serve` simulates the corners of its step grid
  // (the largest batch at the longest context) to interpolate between,
  // though its KV-cache budget never lets the scheduler form them.
  bool check_hbm_capacity = true;
};

// What the lowering decided and knows about one workload operator.
struct OpPlan {
  std::string name;
  std::string kind;
  std::string shapes;  // "in0 x in1 -> out"
  std::string dtype;
  std::string blocking;  // chosen block sizes, human readable
  std::uint64_t flops = 0;
  std::uint64_t macs = 0;            // useful multiply-accumulates
  std::uint64_t recompute_macs = 0;  // of macs, forward work redone by a backward attention kernel
  std::uint64_t masked_macs = 0;     // of macs, pairs a causal mask discards (MatmulAttrs::causal)
  std::uint64_t padded_macs = 0;     // MAC slots issued on the MXUs, padding included
  std::uint64_t hbm_bytes = 0;       // minimum HBM traffic of the fused group it anchors
  std::uint64_t dma_bytes = 0;       // HBM traffic the program actually moves
  std::uint64_t cmem_bytes = 0;      // minimum CMEM traffic (operands placed in CMEM)
  std::uint64_t cmem_dma_bytes = 0;  // CMEM traffic the program actually moves
  double memory_cycles = 0;          // max(hbm_bytes / HBM, cmem_bytes / CMEM bandwidth)
  std::uint64_t vmem_peak = 0;       // bytes per core
  double roofline_cycles = 0;        // max(FLOPs / peak, memory_cycles)
  // Matmul-shaped ops (sim/lowering/gemm_quant.h): the dtype the MXU ran
  // ("" = the op's dtype), the fraction of K it streamed (N:M sparse MXU:
  // n/m, else 1), the quantization scales and sparsity metadata loaded,
  // and the VPU cycles spent converting, quantizing and rescaling.
  std::string mxu_dtype;
  double mxu_k_fraction = 1;
  std::uint64_t scale_bytes = 0;
  std::uint64_t metadata_bytes = 0;
  std::uint64_t quant_vpu_cycles = 0;
  int fused_into = -1;               // anchor op index when fused, else -1
  std::vector<std::uint32_t> fused;  // ops fused into this one
};

struct LoweredWorkload {
  arch::Program program;
  std::uint64_t hbm_peak_bytes = 0;  // HBM in use at the peak (liveness-based placement)
  std::vector<OpPlan> ops;           // indexed like Workload::ops
};

// Throws ConfigError-like sim::LoweringError for workloads the chip cannot
// run (collectives on one chip, unsupported dtype, blocks that fit nowhere).
LoweredWorkload lower(const workloads::Workload& wl, const arch::TpuConfig& cfg, const LoweringOptions& opt = {});

// The HBM in use at the peak of the memory plan lower() would make (tensors
// placed by liveness), without emitting a single instruction and without
// refusing a peak over the chip's capacity: what a fit check needs.
std::uint64_t hbm_plan_peak(const workloads::Workload& wl, const arch::TpuConfig& cfg, const LoweringOptions& opt = {});

class LoweringError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tpusim::sim
