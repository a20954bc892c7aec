// WorkloadBuilder implementation (see builder.h).
#include "workloads/ir/builder.h"

#include <algorithm>
#include <set>

namespace tpusim::workloads {

WorkloadBuilder::WorkloadBuilder(std::string name) { wl_.name = std::move(name); }

void WorkloadBuilder::mesh_axis(const std::string& name, std::int64_t size) {
  if (wl_.mesh_axis_size(name)) throw WorkloadError(SourceLoc{}, "mesh." + name, "mesh axis declared twice");
  if (size < 1) throw WorkloadError(SourceLoc{}, "mesh." + name, "expected a size >= 1, found " + std::to_string(size));
  wl_.mesh.axes.push_back({name, size, {}});
}

TensorRef WorkloadBuilder::add_source(const std::string& name, Shape shape, DType dtype, TensorKind kind,
                                      MemSpace space) {
  std::string p = "tensor '" + name + "'";
  if (name.empty()) throw WorkloadError(SourceLoc{}, "tensor", "expected a non-empty tensor name");
  if (tensor_index_.count(name)) throw WorkloadError(SourceLoc{}, p, "tensor declared twice");
  for (auto d : shape)
    if (d < 1) throw WorkloadError(SourceLoc{}, p, "shape: expected dims >= 1, found " + shape_str(shape));
  tensor_index_[name] = wl_.tensors.size();
  wl_.tensors.push_back(Tensor{name, shape, dtype, space, kind, {}, {}, {}});
  return {name, std::move(shape), dtype};
}

TensorRef WorkloadBuilder::input(const std::string& n, Shape s, DType t, MemSpace m) {
  return add_source(n, std::move(s), t, TensorKind::input, m);
}
TensorRef WorkloadBuilder::weight(const std::string& n, Shape s, DType t, MemSpace m) {
  return add_source(n, std::move(s), t, TensorKind::weight, m);
}
TensorRef WorkloadBuilder::kv_cache(const std::string& n, Shape s, DType t, MemSpace m) {
  return add_source(n, std::move(s), t, TensorKind::kv_cache, m);
}
TensorRef WorkloadBuilder::tensor(const std::string& n, Shape s, DType t, TensorKind k, MemSpace m) {
  if (k == TensorKind::activation || k == TensorKind::output)
    throw WorkloadError(SourceLoc{}, "tensor '" + n + "'",
                        "builder tensors of kind activation/output are created by ops; expected "
                        "input, weight or kv_cache");
  return add_source(n, std::move(s), t, k, m);
}

TensorRef WorkloadBuilder::add_op(Op op) {
  std::string p = "op '" + op.name + "' (" + std::string(op_kind_name(op.kind)) + ")";
  if (op.name.empty()) throw WorkloadError(SourceLoc{}, "op", "expected a non-empty op name");
  if (op_index_.count(op.name)) throw WorkloadError(SourceLoc{}, p, "op name used twice");
  if (op.outputs.empty()) op.outputs.push_back(op.name);
  std::vector<TensorType> in;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    auto it = tensor_index_.find(op.inputs[i]);
    if (it == tensor_index_.end())
      throw WorkloadError(SourceLoc{}, p,
                          "unknown tensor '" + op.inputs[i] + "' referenced as input " + std::to_string(i));
    const Tensor& t = wl_.tensors[it->second];
    in.push_back({t.shape, t.dtype});
  }
  auto types = infer_output_types(op, in, &wl_);
  if (types.size() != op.outputs.size())
    throw WorkloadError(SourceLoc{}, p,
                        "wrong output count: expected " + std::to_string(types.size()) + ", found " +
                            std::to_string(op.outputs.size()));
  for (std::size_t i = 0; i < op.outputs.size(); ++i)
    if (tensor_index_.count(op.outputs[i]))
      throw WorkloadError(SourceLoc{}, p,
                          "output tensor '" + op.outputs[i] + "' already exists (tensor produced twice or name clash)");
  for (std::size_t i = 0; i < op.outputs.size(); ++i) {
    tensor_index_[op.outputs[i]] = wl_.tensors.size();
    // A copy's result lives where it copies to (host memory for an
    // offloaded activation).
    const MemSpace space = op.kind == OpKind::copy ? op.as<CopyAttrs>().to : MemSpace::hbm;
    wl_.tensors.push_back(
        Tensor{op.outputs[i], types[i].shape, types[i].dtype, space, TensorKind::activation, {}, {}, {}});
  }
  op_index_[op.name] = wl_.ops.size();
  TensorRef r{op.outputs[0], types[0].shape, types[0].dtype};
  wl_.ops.push_back(std::move(op));
  return r;
}

TensorRef WorkloadBuilder::insert_op(std::size_t at, Op op) {
  if (at > wl_.ops.size()) throw WorkloadInternalError("insert_op: position past the end");
  TensorRef r = add_op(std::move(op));
  std::rotate(wl_.ops.begin() + static_cast<std::ptrdiff_t>(at), wl_.ops.end() - 1, wl_.ops.end());
  for (std::size_t i = at; i < wl_.ops.size(); ++i) op_index_[wl_.ops[i].name] = i;
  return r;
}

namespace {
Op make(const std::string& name, OpKind k, std::vector<std::string> ins, OpAttrs a) {
  Op op;
  op.name = name;
  op.kind = k;
  op.inputs = std::move(ins);
  op.attrs = std::move(a);
  return op;
}
std::vector<std::string> names(const std::vector<TensorRef>& xs) {
  std::vector<std::string> v;
  for (const auto& x : xs) v.push_back(x.name);
  return v;
}
}  // namespace

TensorRef WorkloadBuilder::matmul(const std::string& name, const TensorRef& lhs, const TensorRef& rhs,
                                  const std::string& equation, std::optional<DType> out_dtype,
                                  const std::string& causal, std::int64_t window, MatmulBlocks blocks) {
  MatmulAttrs a;
  if (equation.empty()) {
    try {
      a.equation = default_matmul_equation(lhs.rank(), rhs.rank());
    } catch (const WorkloadError& e) {
      throw WorkloadError(SourceLoc{}, "op '" + name + "' (matmul)", e.diagnostics().at(0).message);
    }
  } else {
    a.equation = equation;
  }
  a.out_dtype = out_dtype;
  a.causal = causal;
  a.window = window;
  a.blocks = blocks;
  return add_op(make(name, OpKind::matmul, {lhs.name, rhs.name}, a));
}

TensorRef WorkloadBuilder::conv2d(const std::string& name, const TensorRef& x, const TensorRef& w,
                                  const Conv2dAttrs& attrs) {
  return add_op(make(name, OpKind::conv2d, {x.name, w.name}, attrs));
}

TensorRef WorkloadBuilder::elementwise(const std::string& name, const std::string& kind,
                                       const std::vector<TensorRef>& inputs) {
  auto k = parse_ew_kind(kind);
  if (!k) {
    std::string all;
    for (auto n : all_ew_kind_names()) all += (all.empty() ? "" : ", ") + std::string(n);
    throw WorkloadError(SourceLoc{}, "op '" + name + "' (elementwise)",
                        "unknown elementwise kind '" + kind + "'; expected one of: " + all);
  }
  return elementwise(name, *k, inputs);
}

TensorRef WorkloadBuilder::elementwise(const std::string& name, EwKind kind, const std::vector<TensorRef>& inputs) {
  return add_op(make(name, OpKind::elementwise, names(inputs), ElementwiseAttrs{kind, std::nullopt}));
}

TensorRef WorkloadBuilder::cast(const std::string& name, const TensorRef& x, DType to) {
  return add_op(make(name, OpKind::elementwise, {x.name}, ElementwiseAttrs{EwKind::cast, to}));
}

TensorRef WorkloadBuilder::reduce(const std::string& name, const TensorRef& x, ReduceKind kind,
                                  std::vector<std::int64_t> axes, bool keep_dims) {
  return add_op(make(name, OpKind::reduce, {x.name}, ReduceAttrs{kind, std::move(axes), keep_dims}));
}

TensorRef WorkloadBuilder::softmax(const std::string& name, const TensorRef& x, std::int64_t axis) {
  return add_op(make(name, OpKind::softmax, {x.name}, SoftmaxAttrs{axis}));
}

TensorRef WorkloadBuilder::layer_norm(const std::string& name, const TensorRef& x,
                                      const std::optional<TensorRef>& scale, const std::optional<TensorRef>& bias,
                                      std::int64_t axis, double epsilon) {
  if (bias && !scale)
    throw WorkloadError(SourceLoc{}, "op '" + name + "' (layer_norm)",
                        "a bias needs a scale (inputs are x, scale, bias in that order)");
  std::vector<std::string> ins{x.name};
  if (scale) ins.push_back(scale->name);
  if (bias) ins.push_back(bias->name);
  return add_op(make(name, OpKind::layer_norm, ins, NormAttrs{axis, epsilon}));
}

TensorRef WorkloadBuilder::rms_norm(const std::string& name, const TensorRef& x, const std::optional<TensorRef>& scale,
                                    std::int64_t axis, double epsilon) {
  std::vector<std::string> ins{x.name};
  if (scale) ins.push_back(scale->name);
  return add_op(make(name, OpKind::rms_norm, ins, NormAttrs{axis, epsilon}));
}

TensorRef WorkloadBuilder::attention(const std::string& name, const TensorRef& q, const TensorRef& k,
                                     const TensorRef& v, bool causal, std::optional<double> scale, AttentionPass pass,
                                     std::int64_t window, AttentionBlocks blocks, std::int64_t value_dim) {
  AttentionAttrs a{causal, scale, pass, window, blocks};
  a.value_dim = value_dim;
  return add_op(make(name, OpKind::attention, {q.name, k.name, v.name}, a));
}

TensorRef WorkloadBuilder::gather(const std::string& name, const TensorRef& table, const TensorRef& indices) {
  return add_op(make(name, OpKind::gather, {table.name, indices.name}, GatherAttrs{}));
}

TensorRef WorkloadBuilder::transpose(const std::string& name, const TensorRef& x, std::vector<std::int64_t> perm) {
  return add_op(make(name, OpKind::transpose, {x.name}, TransposeAttrs{std::move(perm)}));
}

TensorRef WorkloadBuilder::reshape(const std::string& name, const TensorRef& x, Shape shape) {
  return add_op(make(name, OpKind::reshape, {x.name}, ReshapeAttrs{std::move(shape)}));
}

TensorRef WorkloadBuilder::concat(const std::string& name, const std::vector<TensorRef>& xs, std::int64_t axis) {
  return add_op(make(name, OpKind::concat, names(xs), ConcatAttrs{axis}));
}

TensorRef WorkloadBuilder::slice(const std::string& name, const TensorRef& x, std::vector<std::int64_t> start,
                                 std::vector<std::int64_t> limit, std::vector<std::int64_t> stride) {
  return add_op(make(name, OpKind::slice, {x.name}, SliceAttrs{std::move(start), std::move(limit), std::move(stride)}));
}

TensorRef WorkloadBuilder::all_gather(const std::string& name, const TensorRef& x, std::vector<std::string> axes,
                                      std::int64_t dim) {
  CollectiveAttrs a;
  a.mesh_axes = std::move(axes);
  a.dim = dim;
  return add_op(make(name, OpKind::all_gather, {x.name}, a));
}

TensorRef WorkloadBuilder::reduce_scatter(const std::string& name, const TensorRef& x, std::vector<std::string> axes,
                                          std::int64_t dim, ReduceKind reduce) {
  CollectiveAttrs a;
  a.mesh_axes = std::move(axes);
  a.dim = dim;
  a.reduce = reduce;
  return add_op(make(name, OpKind::reduce_scatter, {x.name}, a));
}

TensorRef WorkloadBuilder::all_reduce(const std::string& name, const TensorRef& x, std::vector<std::string> axes,
                                      ReduceKind reduce) {
  CollectiveAttrs a;
  a.mesh_axes = std::move(axes);
  a.reduce = reduce;
  return add_op(make(name, OpKind::all_reduce, {x.name}, a));
}

TensorRef WorkloadBuilder::all_to_all(const std::string& name, const TensorRef& x, std::vector<std::string> axes,
                                      std::int64_t split_dim, std::int64_t concat_dim) {
  CollectiveAttrs a;
  a.mesh_axes = std::move(axes);
  a.split_dim = split_dim;
  a.concat_dim = concat_dim;
  return add_op(make(name, OpKind::all_to_all, {x.name}, a));
}

TensorRef WorkloadBuilder::collective_permute(const std::string& name, const TensorRef& x,
                                              std::vector<std::string> axes,
                                              std::vector<std::pair<std::int64_t, std::int64_t>> pairs) {
  CollectiveAttrs a;
  a.mesh_axes = std::move(axes);
  a.pairs = std::move(pairs);
  return add_op(make(name, OpKind::collective_permute, {x.name}, a));
}

TensorRef WorkloadBuilder::broadcast(const std::string& name, const TensorRef& x, std::vector<std::string> axes,
                                     std::int64_t root) {
  CollectiveAttrs a;
  a.mesh_axes = std::move(axes);
  a.root = root;
  return add_op(make(name, OpKind::broadcast, {x.name}, a));
}

void WorkloadBuilder::mark_output(const TensorRef& t) {
  auto it = tensor_index_.find(t.name);
  if (it == tensor_index_.end())
    throw WorkloadError(SourceLoc{}, "tensor '" + t.name + "'", "unknown tensor marked as output");
  Tensor& x = wl_.tensors[it->second];
  if (x.is_source())
    throw WorkloadError(
        SourceLoc{}, "tensor '" + t.name + "'",
        "expected a tensor produced by an op, found one of kind " + std::string(tensor_kind_name(x.kind)));
  x.kind = TensorKind::output;
}

TensorRef WorkloadBuilder::ref(const std::string& name) const {
  auto it = tensor_index_.find(name);
  if (it == tensor_index_.end()) throw WorkloadError(SourceLoc{}, "tensor '" + name + "'", "unknown tensor");
  const Tensor& t = wl_.tensors[it->second];
  return {t.name, t.shape, t.dtype};
}

Workload WorkloadBuilder::build() const {
  Workload w = wl_;
  std::set<std::string> consumed;
  for (const auto& op : w.ops) consumed.insert(op.inputs.begin(), op.inputs.end());
  for (auto& t : w.tensors)
    if (t.kind == TensorKind::activation && !consumed.count(t.name)) t.kind = TensorKind::output;
  w.validate();
  return w;
}

}  // namespace tpusim::workloads
