// A workload: named tensors and a list of ops, with the dependency graph
// derived from tensor names (an op depends on the op producing each input).
// Models: one SPMD program as seen by one chip; the optional mesh names the
// axes collectives run over.
// Leaves out: scheduling/placement (the engine's job), multiple programs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "workloads/ir/mesh.h"
#include "workloads/ir/op.h"
#include "workloads/ir/tensor.h"

namespace tpusim::workloads {

inline constexpr int kWorkloadFormatVersion = 1;

// Largest mesh axis: 2^20 chips, far beyond any TPU pod (configs/ give the
// pod sizes); keeps products of a few axes inside 64 bits.
inline constexpr std::int64_t kMaxMeshSize = std::int64_t{1} << 20;

class Workload {
 public:
  std::string name;
  std::string description;  // free text, kept through files
  int version = kWorkloadFormatVersion;
  MeshSpec mesh;
  std::vector<Tensor> tensors;
  std::vector<Op> ops;
  SourceLoc loc;  // the file, when read from one

  // nullptr when absent. Linear scan; build an index() for hot loops.
  const Tensor* find_tensor(const std::string& name) const;
  Tensor* find_tensor(const std::string& name);
  const Op* find_op(const std::string& name) const;
  std::optional<std::int64_t> mesh_axis_size(const std::string& axis) const;

  // Checks everything and throws one WorkloadError listing every problem:
  // duplicate names, unknown tensors, tensors produced twice or never
  // produced (non-source tensors), wrong operand counts, attribute/kind
  // mismatch, shape/dtype inference failures and mismatches against the
  // declared output tensor, unknown mesh axes, cycles. Each diagnostic names
  // the op (or tensor) and its file:line:column when read from a file.
  void validate() const;

  // deps[i] = indices of the ops producing op i's inputs (sorted, unique).
  // Unknown/unproduced inputs contribute nothing. Throws WorkloadError if a
  // tensor has two producers.
  std::vector<std::vector<std::size_t>> dependencies() const;
  // Op indices in dependency order; among ready ops the lowest index comes
  // first, so a workload already in order keeps its order. Throws
  // WorkloadError naming the ops on a cycle.
  std::vector<std::size_t> topo_order() const;
  // Reorders `ops` into topo_order(), so that every op follows the ops
  // producing its inputs (files may list ops in any order; the lowering
  // walks them in list order). Throws like topo_order() on a cycle.
  void order_ops();
  // Index of the op producing each tensor (tensor name -> op index).
  std::unordered_map<std::string, std::size_t> producers() const;
  // Index of each op that reads a tensor (tensor name -> op indices).
  std::unordered_map<std::string, std::vector<std::size_t>> consumers() const;

  // Equality of the IR (ignores source locations).
  bool operator==(const Workload& o) const {
    return name == o.name && description == o.description && version == o.version && mesh == o.mesh &&
           tensors == o.tensors && ops == o.ops;
  }
  bool operator!=(const Workload& o) const { return !(*this == o); }
};

// O(1) name -> tensor lookup for hot loops (Workload::find_tensor scans).
// Points into the workload: rebuild it after tensors are added or moved.
class TensorIndex {
 public:
  explicit TensorIndex(const Workload& wl);
  const Tensor* find(const std::string& name) const;

 private:
  std::unordered_map<std::string, const Tensor*> map_;
};

}  // namespace tpusim::workloads
