// The reader of the YAML/JSON workload format, shared by its parts:
// workload_reader.cpp (document, tensors, ops), workload_reader_fields.cpp
// (typed field getters and key checks), workload_reader_attrs.cpp (per-op
// attributes) and workload_reader_resolve.cpp (output inference in
// dependency order). Internal to workloads/io: the public entry points are
// in workload_file.h.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "workloads/io/suggest.h"
#include "workloads/ir/shape_inference.h"
#include "workloads/ir/workload.h"

namespace tpusim::workloads::detail {

const char* node_kind(const YAML::Node& n);

// A tensor entry before inference: shape/dtype may be left to inference
// for tensors that ops produce.
struct PendingTensor {
  Tensor t;
  bool has_shape = false;
  bool has_dtype = false;
};

struct PendingOp {
  Op op;
  bool default_equation = false;  // matmul without equation/dims: resolve from ranks
  std::string path;               // "ops[3] (op 'name')" for messages
  // dot_general dims (lhs_batch, rhs_batch, lhs_contracting, rhs_contracting)
  // when the file gives them instead of an equation.
  std::vector<std::vector<std::int64_t>> dot_dims;
};

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  Workload read(const YAML::Node& root);

 private:
  // Builds a message path from an op attribute key.
  using KeyFn = std::function<std::string(const std::string&)>;

  // workload_reader_fields.cpp
  SourceLoc at(const YAML::Node& n) const;
  void error(const YAML::Node& n, const std::string& path, const std::string& msg);
  // "tensors[0].shape (tensor 'x')" + index 1 -> "tensors[0].shape[1] (tensor 'x')".
  static std::string index_path(const std::string& path, std::size_t i);
  static std::string join(const std::string& base, const std::string& key);
  void check_keys(const YAML::Node& map, const std::string& path, const std::vector<std::string>& allowed,
                  const std::string& suffix = "");
  std::optional<std::string> get_str(const YAML::Node& n, const std::string& path);
  std::optional<std::int64_t> get_int(const YAML::Node& n, const std::string& path);
  std::optional<double> get_double(const YAML::Node& n, const std::string& path);
  std::optional<bool> get_bool(const YAML::Node& n, const std::string& path);
  // An integer list; a single integer is accepted as a one-element list
  // when `scalar_ok`.
  std::optional<std::vector<std::int64_t>> get_ints(const YAML::Node& n, const std::string& path,
                                                    bool scalar_ok = false);
  std::optional<std::vector<std::string>> get_strs(const YAML::Node& n, const std::string& path,
                                                   bool scalar_ok = false);
  std::optional<DType> get_dtype(const YAML::Node& n, const std::string& path);
  template <class E, class Parse, class Name>
  std::optional<E> get_enum(const YAML::Node& n, const std::string& path, const char* what,
                            std::initializer_list<E> values, Parse parse, Name name) {
    auto s = get_str(n, path);
    if (!s) return std::nullopt;
    if (auto e = parse(*s)) return e;
    std::vector<std::string> names;
    for (E v : values) names.emplace_back(name(v));
    std::string near = nearest_candidate(*s, names), all;
    for (const auto& x : names) all += (all.empty() ? "" : ", ") + x;
    error(n, path,
          std::string("unknown ") + what + " '" + *s + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
              "; expected one of " + all);
    return std::nullopt;
  }
  // A pair [h, w] or a single integer for both.
  bool get_hw(const YAML::Node& n, const std::string& path, std::int64_t& h, std::int64_t& w);

  // workload_reader.cpp
  void read_mesh(const YAML::Node& m, Workload& wl);
  void read_tensor(const YAML::Node& n, const std::string& path, std::vector<PendingTensor>& out);
  void read_op(const YAML::Node& n, std::size_t index, std::vector<PendingOp>& out);
  // workload_reader_quant.cpp: a tensor's scales, group, scale_dtype and
  // sparsity keys.
  void read_storage(const YAML::Node& n, const std::string& path, const std::string& suffix, Tensor& t);

  // workload_reader_attrs.cpp
  // Keys each op kind accepts besides name/op/inputs/output(s).
  static std::vector<std::string> attr_keys(OpKind k);
  void read_attrs(const YAML::Node& n, Op& op, std::optional<EwKind> shorthand, const KeyFn& key, PendingOp& p);

  // workload_reader_resolve.cpp
  // Fills undeclared/partial output tensors by inference, in dependency order.
  void resolve(Workload& wl, std::vector<PendingTensor>& tensors, std::vector<PendingOp>& ops);
  void resolve_equation(PendingOp& p, const std::vector<TensorType>& in);

  std::string file_;
  std::vector<Diagnostic> diags_;
};

}  // namespace tpusim::workloads::detail
