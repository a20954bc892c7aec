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
enum class MemSpace : std::uint8_t { hbm, vmem, cmem };
// Role of a tensor. activation = produced by an op and consumed inside the
// workload; output = a result the workload returns.
enum class TensorKind : std::uint8_t { input, weight, activation, kv_cache, output };

std::string_view mem_space_name(MemSpace s);
std::optional<MemSpace> parse_mem_space(std::string_view s);
std::string_view tensor_kind_name(TensorKind k);
std::optional<TensorKind> parse_tensor_kind(std::string_view s);

struct Tensor {
  std::string name;
  Shape shape;  // empty = scalar
  DType dtype = DType::bf16;
  MemSpace space = MemSpace::hbm;
  TensorKind kind = TensorKind::activation;
  SourceLoc loc;  // not part of equality

  std::int64_t num_elements() const;
  std::uint64_t bytes() const { return arch::dtype_bytes(dtype, static_cast<std::uint64_t>(num_elements())); }
  int rank() const { return static_cast<int>(shape.size()); }
  // Tensors a workload receives from outside (not produced by an op).
  bool is_source() const {
    return kind == TensorKind::input || kind == TensorKind::weight || kind == TensorKind::kv_cache;
  }

  bool operator==(const Tensor& o) const {
    return name == o.name && shape == o.shape && dtype == o.dtype && space == o.space && kind == o.kind;
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
