// Output shape/dtype inference for every op kind, and the einsum analysis
// that matmul lowering needs (which dims are batch, M, N, K).
// Models: static shapes, numpy broadcasting for elementwise ops.
// Leaves out: layouts and padding to hardware tile sizes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/ir/op.h"
#include "workloads/ir/tensor.h"

namespace tpusim::workloads {

class Workload;

struct TensorType {
  Shape shape;
  DType dtype = DType::bf16;
  bool operator==(const TensorType& o) const { return shape == o.shape && dtype == o.dtype; }
};

// A parsed two-operand einsum with its dims classified.
struct EinsumSpec {
  std::string lhs, rhs, out;  // labels per operand
  std::string batch;          // labels in lhs, rhs and out (lhs order)
  std::string contracting;    // labels in lhs and rhs only (lhs order)
  std::string lhs_free;       // labels in lhs and out only (M dims)
  std::string rhs_free;       // labels in rhs and out only (N dims)
};
// Throws WorkloadError (path "equation") with the reason.
EinsumSpec parse_einsum(const std::string& equation);

// The sizes of the query and key labels of a matmul's `causal` attribute
// (MatmulAttrs::causal); throws WorkloadError when it is not two distinct
// labels of the equation.
std::pair<std::int64_t, std::int64_t> matmul_causal_extents(const MatmulAttrs& a, const Shape& lhs, const Shape& rhs);

// Matmul sizes as products of the classified dims: out = batch x (M x K)(K x N).
// Upper bound on a conv's stride, dilation and padding: 2^20, far beyond
// any real network (strides and dilations are single digits), and small
// enough that stride_h * stride_w and dims plus padding fit in 64 bits.
inline constexpr std::int64_t kMaxConvAttr = std::int64_t{1} << 20;

struct MatmulDims {
  std::int64_t batch = 1, m = 1, k = 1, n = 1;
  std::int64_t macs() const { return batch * m * k * n; }
};
// Throws WorkloadError on rank/size mismatches (naming both shapes).
MatmulDims matmul_dims(const MatmulAttrs& a, const Shape& lhs, const Shape& rhs);

// Padding actually applied by a conv (explicit, or computed for same/valid)
// and the output spatial size.
struct Conv2dGeometry {
  std::int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  std::int64_t out_h = 0, out_w = 0;
};
Conv2dGeometry conv2d_geometry(const Conv2dAttrs& a, std::int64_t in_h, std::int64_t in_w, std::int64_t kh,
                               std::int64_t kw);

// numpy broadcasting of several shapes; throws WorkloadError naming them.
Shape broadcast_shapes(const std::vector<Shape>& shapes);

// Infers the output types of op from its input types. mesh is consulted by
// collectives (may be nullptr when there are none). Throws WorkloadError
// with path "op '<name>'" and the op's loc, message naming expected/found.
std::vector<TensorType> infer_output_types(const Op& op, const std::vector<TensorType>& inputs,
                                           const Workload* mesh_owner);

}  // namespace tpusim::workloads
