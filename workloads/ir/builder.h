// WorkloadBuilder: the code API for writing workload generators (model zoo,
// micro-workloads). Each call adds an op, infers its output tensor (named
// after the op unless out_name is given) and returns a handle to it.
// Errors (unknown tensor, shape mismatch, duplicate name) throw
// WorkloadError at the call that caused them, naming the op.
// Leaves out: graph rewrites (a builder only appends).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "workloads/ir/op.h"
#include "workloads/ir/shape_inference.h"
#include "workloads/ir/workload.h"

namespace tpusim::workloads {

// A snapshot of a tensor the builder knows: its name plus type, so that
// generators can compute follow-up shapes (x.shape[0], x.dtype).
struct TensorRef {
  std::string name;
  Shape shape;
  DType dtype = DType::bf16;
  int rank() const { return static_cast<int>(shape.size()); }
  std::int64_t dim(int i) const { return shape.at(i < 0 ? shape.size() + i : i); }
};

class WorkloadBuilder {
 public:
  explicit WorkloadBuilder(std::string name);

  void mesh_axis(const std::string& name, std::int64_t size);

  // Source tensors.
  TensorRef input(const std::string& name, Shape shape, DType dtype, MemSpace space = MemSpace::hbm);
  TensorRef weight(const std::string& name, Shape shape, DType dtype, MemSpace space = MemSpace::hbm);
  TensorRef kv_cache(const std::string& name, Shape shape, DType dtype, MemSpace space = MemSpace::hbm);
  TensorRef tensor(const std::string& name, Shape shape, DType dtype, TensorKind kind, MemSpace space = MemSpace::hbm);

  // equation empty = default_matmul_equation(lhs rank, rhs rank).
  // causal: MatmulAttrs::causal (two labels of the equation, or "");
  // window: MatmulAttrs::window (with causal labels; 0 = none);
  // blocks: the kernel's block sizes (MatmulBlocks; 0 = searched).
  TensorRef matmul(const std::string& name, const TensorRef& lhs, const TensorRef& rhs,
                   const std::string& equation = "", std::optional<DType> out_dtype = std::nullopt,
                   const std::string& causal = "", std::int64_t window = 0, MatmulBlocks blocks = {});
  TensorRef conv2d(const std::string& name, const TensorRef& input, const TensorRef& filter,
                   const Conv2dAttrs& attrs = {});
  // kind by name ("silu", "add", ...); throws WorkloadError for unknown kinds.
  TensorRef elementwise(const std::string& name, const std::string& kind, const std::vector<TensorRef>& inputs);
  TensorRef elementwise(const std::string& name, EwKind kind, const std::vector<TensorRef>& inputs);
  TensorRef cast(const std::string& name, const TensorRef& x, DType to);
  TensorRef add(const std::string& name, const TensorRef& a, const TensorRef& b) {
    return elementwise(name, EwKind::add, {a, b});
  }
  TensorRef mul(const std::string& name, const TensorRef& a, const TensorRef& b) {
    return elementwise(name, EwKind::mul, {a, b});
  }
  TensorRef reduce(const std::string& name, const TensorRef& x, ReduceKind kind, std::vector<std::int64_t> axes,
                   bool keep_dims = false);
  TensorRef softmax(const std::string& name, const TensorRef& x, std::int64_t axis = -1);
  TensorRef layer_norm(const std::string& name, const TensorRef& x,
                       const std::optional<TensorRef>& scale = std::nullopt,
                       const std::optional<TensorRef>& bias = std::nullopt, std::int64_t axis = -1,
                       double epsilon = 1e-5);
  TensorRef rms_norm(const std::string& name, const TensorRef& x, const std::optional<TensorRef>& scale = std::nullopt,
                     std::int64_t axis = -1, double epsilon = 1e-6);
  // window: AttentionAttrs::window (0 = none; causal only); blocks: the
  // kernel's block sizes (AttentionBlocks; 0 = searched); value_dim:
  // AttentionAttrs::value_dim (0 = the value's every column).
  TensorRef attention(const std::string& name, const TensorRef& q, const TensorRef& k, const TensorRef& v, bool causal,
                      std::optional<double> scale = std::nullopt, AttentionPass pass = AttentionPass::forward,
                      std::int64_t window = 0, AttentionBlocks blocks = {}, std::int64_t value_dim = 0);
  TensorRef gather(const std::string& name, const TensorRef& table, const TensorRef& indices);
  TensorRef transpose(const std::string& name, const TensorRef& x, std::vector<std::int64_t> perm);
  TensorRef reshape(const std::string& name, const TensorRef& x, Shape shape);
  TensorRef concat(const std::string& name, const std::vector<TensorRef>& xs, std::int64_t axis);
  TensorRef slice(const std::string& name, const TensorRef& x, std::vector<std::int64_t> start,
                  std::vector<std::int64_t> limit, std::vector<std::int64_t> stride = {});

  TensorRef all_gather(const std::string& name, const TensorRef& x, std::vector<std::string> mesh_axes,
                       std::int64_t dim);
  TensorRef reduce_scatter(const std::string& name, const TensorRef& x, std::vector<std::string> mesh_axes,
                           std::int64_t dim, ReduceKind reduce = ReduceKind::sum);
  TensorRef all_reduce(const std::string& name, const TensorRef& x, std::vector<std::string> mesh_axes,
                       ReduceKind reduce = ReduceKind::sum);
  TensorRef all_to_all(const std::string& name, const TensorRef& x, std::vector<std::string> mesh_axes,
                       std::int64_t split_dim, std::int64_t concat_dim);
  TensorRef collective_permute(const std::string& name, const TensorRef& x, std::vector<std::string> mesh_axes,
                               std::vector<std::pair<std::int64_t, std::int64_t>> pairs);
  TensorRef broadcast(const std::string& name, const TensorRef& x, std::vector<std::string> mesh_axes,
                      std::int64_t root = 0);

  // Generic form: appends op (inputs by name, attrs set), creates its
  // output tensor(s) by inference. op.outputs empty = one output named
  // like the op. Returns the first output.
  TensorRef add_op(Op op);
  // The same, but the op goes before the op at index `at` of the ops so
  // far (training generators insert forward ops after the fact, e.g. an
  // activation's copy to host right after the op producing it).
  TensorRef insert_op(std::size_t at, Op op);

  // Marks a produced tensor as a workload result (TensorKind::output).
  void mark_output(const TensorRef& t);
  // Looks up a tensor added so far; throws WorkloadError if unknown.
  TensorRef ref(const std::string& name) const;

  // Validates and returns the workload. Tensors produced but never consumed
  // and not marked become outputs, so a builder graph always has results.
  Workload build() const;
  // The workload so far, unvalidated (for inspection in generators/tests).
  const Workload& peek() const { return wl_; }

 private:
  TensorRef add_source(const std::string& name, Shape shape, DType dtype, TensorKind kind, MemSpace space);
  std::unordered_map<std::string, std::size_t> tensor_index_;
  std::unordered_map<std::string, std::size_t> op_index_;
  Workload wl_;
};

}  // namespace tpusim::workloads
