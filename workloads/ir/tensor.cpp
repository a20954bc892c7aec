// Name tables and size helpers for workload tensors (see tensor.h).
#include "workloads/ir/tensor.h"

#include <algorithm>

#include "arch/common/checked.h"

namespace tpusim::workloads {

std::string_view mem_space_name(MemSpace s) {
  switch (s) {
    case MemSpace::hbm: return "hbm";
    case MemSpace::vmem: return "vmem";
    case MemSpace::cmem: return "cmem";
    case MemSpace::host: return "host";
  }
  return "?";
}

std::optional<MemSpace> parse_mem_space(std::string_view s) {
  for (MemSpace m : {MemSpace::hbm, MemSpace::vmem, MemSpace::cmem, MemSpace::host})
    if (mem_space_name(m) == s) return m;
  return std::nullopt;
}

std::string_view tensor_kind_name(TensorKind k) {
  switch (k) {
    case TensorKind::input: return "input";
    case TensorKind::weight: return "weight";
    case TensorKind::activation: return "activation";
    case TensorKind::kv_cache: return "kv_cache";
    case TensorKind::output: return "output";
  }
  return "?";
}

std::optional<TensorKind> parse_tensor_kind(std::string_view s) {
  for (TensorKind k :
       {TensorKind::input, TensorKind::weight, TensorKind::activation, TensorKind::kv_cache, TensorKind::output})
    if (tensor_kind_name(k) == s) return k;
  return std::nullopt;
}

std::int64_t num_elements(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

std::optional<std::int64_t> checked_num_elements(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) {
    auto p = arch::checked_mul(n, d);
    if (!p) return std::nullopt;
    n = *p;
  }
  return n;
}

std::string shape_size_problem(const Shape& s, DType dtype) {
  for (auto d : s)
    if (d < 1) return "";  // reported elsewhere as a bad dim
  auto n = checked_num_elements(s);
  if (!n) return "shape " + shape_str(s) + " has more than 2^63 elements (the product of its dims overflows)";
  const std::uint64_t bits = static_cast<std::uint64_t>(arch::dtype_bits(dtype));
  auto b = arch::checked_mul(static_cast<std::uint64_t>(*n), bits);
  if (!b || (*b + 7) / 8 > kMaxTensorBytes)
    return "shape " + shape_str(s) + " of " + std::string(arch::dtype_name(dtype)) + " has " + std::to_string(*n) +
           " elements, more than the 2^50-byte (1 PiB) limit on one tensor";
  return "";
}

std::int64_t Tensor::num_elements() const { return workloads::num_elements(shape); }

std::string_view scale_kind_name(ScaleKind k) {
  switch (k) {
    case ScaleKind::none: return "none";
    case ScaleKind::tensor: return "tensor";
    case ScaleKind::channel: return "channel";
    case ScaleKind::block: return "block";
  }
  return "?";
}

std::optional<ScaleKind> parse_scale_kind(std::string_view s) {
  for (ScaleKind k : {ScaleKind::none, ScaleKind::tensor, ScaleKind::channel, ScaleKind::block})
    if (scale_kind_name(k) == s) return k;
  return std::nullopt;
}

int NmSparsity::metadata_bits() const {
  int bits = 0;
  while ((1 << bits) < m) ++bits;
  return dense() ? 0 : bits;
}

namespace {
// Elements kept by N:M sparsity: n of every m along the contracting dim
// (a partial last group keeps up to n).
std::uint64_t kept_elements(const Tensor& t) {
  const std::uint64_t all = static_cast<std::uint64_t>(t.num_elements());
  if (t.sparsity.dense() || t.shape.size() < 2) return all;
  const std::uint64_t k = static_cast<std::uint64_t>(t.shape[t.shape.size() - 2]);
  const std::uint64_t groups = k / t.sparsity.m, rest = k % t.sparsity.m;
  const std::uint64_t kept_k = groups * t.sparsity.n + std::min<std::uint64_t>(rest, t.sparsity.n);
  return all / k * kept_k;
}
}  // namespace

std::uint64_t Tensor::value_bytes() const { return arch::dtype_bytes(dtype, kept_elements(*this)); }

std::uint64_t Tensor::metadata_bytes() const {
  if (sparsity.dense()) return 0;
  return (kept_elements(*this) * static_cast<std::uint64_t>(sparsity.metadata_bits()) + 7) / 8;
}

std::uint64_t Tensor::scale_count() const {
  const std::uint64_t cols = shape.empty() ? 1 : static_cast<std::uint64_t>(shape.back());
  const std::uint64_t all = static_cast<std::uint64_t>(num_elements());
  switch (scales.kind) {
    case ScaleKind::none: return 0;
    case ScaleKind::tensor: return 1;
    // One per output channel (the last dim) of every leading index.
    case ScaleKind::channel: return shape.size() < 2 ? cols : all / static_cast<std::uint64_t>(shape[shape.size() - 2]);
    case ScaleKind::block: {
      if (shape.size() < 2 || scales.group <= 0) return cols;
      const std::uint64_t k = static_cast<std::uint64_t>(shape[shape.size() - 2]);
      const std::uint64_t g = static_cast<std::uint64_t>(scales.group);
      return all / k * ((k + g - 1) / g);
    }
  }
  return 0;
}

std::uint64_t Tensor::scale_bytes() const { return arch::dtype_bytes(scales.dtype, scale_count()); }

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

}  // namespace tpusim::workloads
