// Collective matmul (XLA's windowed einsum): a tensor-parallel all-gather
// that feeds matmuls, and a matmul whose result is reduce-scattered, are
// lowered as ring steps interleaved with slices of the matmul, so that the
// transfer runs under the compute instead of before or after it, as XLA
// does on TPU with the LIBTPU flags --xla_tpu_decompose_all_gather_einsum
// (set by MaxText's v5p GPT-3 175B recipe: AI-Hypercomputer/tpu-recipes,
// training/v5p/GPT3-175B-MaxText/cluster_toolkit/run_recipe.sh, from
// MaxText configs/tpu/v5p/gpt3_175b/gpt3_175b_base.sh) and
// --xla_tpu_decompose_einsum_reduce_scatter (with the first in the Llama
// 3.1 405B multi-pod recipe of AI-Hypercomputer/torchprime,
// torchprime/torch_xla_models/README.md), and as the JAX scaling book's
// "collective matmul" section describes.
//
// all_gather(x) over one mesh axis of n chips along a free (row) dim of
// the lhs of its matmul consumers: n - 1 collective permutes of one chunk
// (x's shard) around the ring of the axis, each forwarding the chunk the
// previous one brought, and n slices of each consumer, a slice computing
// the rows of one chunk once it has arrived (the chip's own chunk first,
// read from x itself). Bidirectional (the default; XLA's bidirectional
// windowed einsum, SpmdPartitionerOptions::bidirectional_windowed_einsum
// in xla/service/spmd/dot_handler.cc, LIBTPU flag
// xla_tpu_spmd_bidirectional_windowed_einsum): ceil((n-1)/2) steps go one
// way round the ring and the rest the other way, concurrently, so the
// ring's links carry as much at once as a bidirectional ring all-gather;
// unidirectional (the partitioner's default): n - 1 steps one way, twice
// the all-gather's link time. Each chunk lands whole in the gathered
// tensor's buffer (chunk-major), so consumers that are not such matmuls
// read the whole tensor once every step has landed. The consumers of one
// gathered tensor (q, k and v projections) run their slices of a chunk
// together, chunk after chunk, as one einsum over their concatenated
// weights (a fused QKV projection) would; when another operator reads a
// consumer's result between them, each runs its slices at its own place.
//
// reduce_scatter(matmul(...)) over one mesh axis along a free (row) dim of
// the matmul's result (the anchor's fused group's final output, read by
// nothing else): n slices, each computing the rows of one destination
// chunk; a loop fusion adds the partial sum a ring neighbour sent (not in
// the dot: the GPT-3 recipe runs --xla_jf_conv_output_fusion=false) and a
// collective permute passes the sum on; the last slice computes the chip's
// own chunk, added to what both directions brought, into the
// reduce_scatter's result. Bidirectional: the destinations are split
// between the two directions.
//
// The ring permutes are emitted after the kernels that can run while they
// wait: the in-order sequencer stalls on an instruction whose inputs are
// not ready. Only collectives whose larger side has at least
// LoweringOptions::collective_matmul_min_bytes are decomposed (XLA's
// windowed-einsum threshold).
//
// FLOPs are those of the matmul (slices partition its rows); the slices
// read and write the same tensors (no copy of the gathered tensor), each
// slice is a kernel of its own (it pays the launch and reloads the weight
// blocks it needs, a quantized matmul re-quantizes them), and each permute
// pays the collective start-up latency. Leaves out: the local chunk's copy
// into the gathered buffer when a consumer needs the whole tensor; the
// memory plan's saving (XLA need not keep the whole gathered tensor when
// only sliced consumers read it; the plan keeps it, and the partial-sum
// buffers reuse the reduce_scatter's input and result); all-gathers along
// a contracting dim (weight-gradient matmuls wait for the whole gather);
// collectives over several mesh axes. The ring goes round the axis's chips
// in ring_order (LoweringOptions::mesh_dims), between torus neighbours.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/lowering/op_lowering.h"

namespace tpusim::sim::lowering {

// The ring steps of a decomposed collective over n chips: `fwd` permutes
// towards rank + 1 and `bwd` towards rank - 1 (fwd + bwd = n - 1).
struct RingSplit {
  std::int64_t n = 1, fwd = 0, bwd = 0;
};
RingSplit ring_split(std::int64_t n, bool bidirectional);

// The ranks of a group over slice dimensions of lengths `dims` (rank =
// mixed radix, the first fastest) in an order round which each step goes
// to a torus neighbour: rank order on one dimension (a ring with
// wraparound; without it the closing step crosses the line); on two, a
// cycle down the first dimension of even length and back in a snake
// through the other; otherwise the reflected (snake) order, whose steps
// are all neighbours but perhaps the closing one.
std::vector<int> ring_order(const std::vector<int>& dims);

// Chunk positions (0..n-1, 0 = the chip's own) in the order a chip has
// them for an all-gather: its own, then the chunks the two directions
// bring at step 1, 2, ... (+ direction first).
std::vector<std::int64_t> gather_chunk_order(const RingSplit& r);

// An all_gather lowered as ring permutes; its matmul consumers as slices.
struct CmGather {
  std::size_t op = 0;  // the all_gather
  std::string axis;
  std::int64_t n = 1;
  int dim = 0;  // gathered dim of its result (a free dim of each consumer's lhs)
  // Consumers lowered slice by slice, each inner list emitted together
  // (interleaved chunk by chunk) where its last member comes in the
  // emission order.
  std::vector<std::vector<std::size_t>> groups;
};

// A matmul anchor whose fused group's result a reduce_scatter scatters.
struct CmScatter {
  std::size_t op = 0;      // the reduce_scatter
  std::size_t anchor = 0;  // the matmul
  std::string axis;
  std::int64_t n = 1;
  int dim = 0;  // scattered dim (a free dim of the matmul's lhs)
};

struct CollectiveMatmulPlan {
  std::vector<CmGather> gathers;
  std::vector<CmScatter> scatters;
  std::unordered_map<std::size_t, std::size_t> gather_at;   // all_gather op -> gathers
  std::unordered_map<std::size_t, std::size_t> sliced;      // consumer matmul -> gathers
  std::unordered_map<std::size_t, std::size_t> scatter_at;  // reduce_scatter op -> scatters
  std::unordered_map<std::size_t, std::size_t> anchor_of;   // matmul anchor -> scatters
  bool empty() const { return gathers.empty() && scatters.empty(); }
};

// Which collectives to decompose; `order` is the emission order. Empty
// unless opt.multi_chip and opt.collective_matmul.
CollectiveMatmulPlan plan_collective_matmul(const workloads::Workload& wl, const workloads::TensorIndex& index,
                                            const FusionPlan& fusion, const LoweringOptions& opt,
                                            const std::vector<std::size_t>& order);

// Rows of chunk q of n along lhs dim `dim` (a free dim before the
// contracting last dim) of a matmul whose lhs has shape `lhs`.
GemmRows chunk_rows(const workloads::Shape& lhs, int dim, std::int64_t n, std::int64_t q);

// Emits the operators the plan decomposes; the lowering driver hands it
// each operator in emission order and skips those it takes.
class CollectiveMatmulEmitter {
 public:
  // Instructions an operator waits for: those writing its inputs and its
  // fused ops' inputs, except the tensor named `except` ("" = none).
  using DepsFn = std::function<std::vector<arch::InstrId>(std::size_t op, const std::string& except)>;
  CollectiveMatmulEmitter(const LowerContext& cx, const CollectiveMatmulPlan& plan, ProgramBuilder& pb,
                          std::unordered_map<std::string, std::vector<arch::InstrId>>& ready,
                          std::vector<OpPlan>& plans, DepsFn deps)
      : cx_(cx), plan_(plan), pb_(pb), ready_(ready), plans_(plans), deps_(std::move(deps)) {}

  // Emits operator i if the plan decomposes it (or defers it to its
  // group's last member); false: the driver lowers it as usual.
  bool emit(std::size_t i);

 private:
  void emit_gather(const CmGather& g);
  void emit_slices(const CmGather& g, const std::vector<std::size_t>& group);
  void emit_scatter_anchor(const CmScatter& s);
  // One ring permute of `bytes` over the axis, direction +1 or -1, as op i.
  std::vector<arch::InstrId> permute(std::size_t i, const std::string& axis, std::int64_t n, int dir,
                                     std::uint64_t bytes, arch::DType dt, const std::vector<arch::InstrId>& deps);
  void set_collective_plan(std::size_t i, const std::string& what);

  const LowerContext& cx_;
  const CollectiveMatmulPlan& plan_;
  ProgramBuilder& pb_;
  std::unordered_map<std::string, std::vector<arch::InstrId>>& ready_;
  std::vector<OpPlan>& plans_;
  DepsFn deps_;
  // all_gather op -> the instructions after which each chunk (by
  // position) is in the chip's memory.
  std::unordered_map<std::size_t, std::vector<std::vector<arch::InstrId>>> chunks_;
  // reduce_scatter op -> the instructions writing its result.
  std::unordered_map<std::size_t, std::vector<arch::InstrId>> scattered_;
  // all_gather op -> the instructions writing its input (the own chunk).
  std::unordered_map<std::size_t, std::vector<arch::InstrId>> gather_in_;
};

}  // namespace tpusim::sim::lowering
