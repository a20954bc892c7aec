// A tensor of the workload IR: a named, shaped, typed value with a hint of
// where it lives and what role it plays (input, weight, KV cache, ...).
// Models: static shapes only; sizes in bytes from arch::DType widths.
// Leaves out: values, layouts/tiling (the lowering decides those), dynamic
// shapes, strides. Note arch::DType has no int32: index tensors (gather) use
// whichever listed dtype has the byte width wanted (f32 for 4-byte indices).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arch/common/dtype.h"
#include "workloads/ir/errors.h"

namespace tpusim::workloads {

using arch::DType;
using Shape = std::vector<std::int64_t>;

// Where a tensor is placed before the program runs; a hint to the lowering.
// host: the hosts memory behind the chips host link (PCIe); only the
// output of a `copy` op to host (offloaded activations) lives there.
enum class MemSpace : std::uint8_t { hbm, vmem, cmem, host };
// Role of a tensor. activation = produced by an op and consumed inside the
// workload; output = a result the workload returns.
enum class TensorKind : std::uint8_t { input, weight, activation, kv_cache, output };

std::string_view mem_space_name(MemSpace s);
std::optional<MemSpace> parse_mem_space(std::string_view s);
std::string_view tensor_kind_name(TensorKind k);
std::optional<TensorKind> parse_tensor_kind(std::string_view s);

// How a quantized tensor's scales are stored: none (no scales; a float
// tensor, or scales folded elsewhere), one scale for the whole tensor, one
// per output channel (the last dim), or one per block of `group` elements
// along the contracting (second-to-last) dim per output channel (GPTQ/AWQ
// style int4 groups). Scales are stored beside the values in `scale_dtype`.
enum class ScaleKind : std::uint8_t { none, tensor, channel, block };
std::string_view scale_kind_name(ScaleKind k);
std::optional<ScaleKind> parse_scale_kind(std::string_view s);

struct QuantScales {
  ScaleKind kind = ScaleKind::none;
  std::int64_t group = 0;  // block: elements per scale along the contracting dim
  DType dtype = DType::f32;
  bool operator==(const QuantScales& o) const { return kind == o.kind && group == o.group && dtype == o.dtype; }
};

// N:M structured sparsity: at most n of every m consecutive elements along
// the contracting (second-to-last) dim are non-zero. Stored compressed:
// the n kept values of each group plus ceil(log2(m)) bits of position
// metadata per kept value (NVIDIA's 2:4 format: 2-bit indices, "Accelerating
// Sparse Deep Neural Networks", Mishra et al. 2021, arXiv:2104.08378).
// n == 0: dense.
struct NmSparsity {
  int n = 0, m = 0;
  bool dense() const { return n == 0; }
  int metadata_bits() const;  // per kept value
  bool operator==(const NmSparsity& o) const { return n == o.n && m == o.m; }
};

struct Tensor {
  std::string name;
  Shape shape;  // empty = scalar
  DType dtype = DType::bf16;
  MemSpace space = MemSpace::hbm;
  TensorKind kind = TensorKind::activation;
  SourceLoc loc;        // not part of equality
  QuantScales scales{};   // quantization scales stored with it (weights, KV cache)
  NmSparsity sparsity{};  // compressed N:M storage (weights)

  std::int64_t num_elements() const;
  // Stored bytes: the values (only the kept ones when N:M sparse), their
  // sparsity metadata and their quantization scales.
  std::uint64_t bytes() const {
    if (scales.kind == ScaleKind::none && sparsity.dense())  // the common case, on hot paths
      return arch::dtype_bytes(dtype, static_cast<std::uint64_t>(num_elements()));
    return value_bytes() + metadata_bytes() + scale_bytes();
  }
  std::uint64_t value_bytes() const;
  std::uint64_t metadata_bytes() const;
  std::uint64_t scale_bytes() const;
  // Number of scales (0 without scales).
  std::uint64_t scale_count() const;
  int rank() const { return static_cast<int>(shape.size()); }
  // Tensors a workload receives from outside (not produced by an op).
  bool is_source() const {
    return kind == TensorKind::input || kind == TensorKind::weight || kind == TensorKind::kv_cache;
  }

  bool operator==(const Tensor& o) const {
    return name == o.name && shape == o.shape && dtype == o.dtype && space == o.space && kind == o.kind &&
           scales == o.scales && sparsity == o.sparsity;
  }
  bool operator!=(const Tensor& o) const { return !(*this == o); }
};

// "[8, 4096]" for messages.
std::string shape_str(const Shape& s);
// Product of dims (1 for a scalar). Unchecked: callers hold validated shapes.
std::int64_t num_elements(const Shape& s);

// The largest tensor a workload may declare or infer: 2^50 bytes (1 PiB),
// thousands of times the HBM of any chip in configs/. It keeps every
// element count below 2^53 (exact in a double) and every byte count, and
// products of two of them with small factors, inside 64 bits.
inline constexpr std::uint64_t kMaxTensorBytes = std::uint64_t{1} << 50;
// Product of dims, or nullopt when it overflows int64 (dims must be >= 1).
std::optional<std::int64_t> checked_num_elements(const Shape& s);
// Empty when a shape of this dtype is representable (every dim >= 1 is
// assumed), else why not ("has more than 2^63 elements", "needs ... bytes,
// above the 1 PiB limit").
std::string shape_size_problem(const Shape& s, DType dtype);

}  // namespace tpusim::workloads
