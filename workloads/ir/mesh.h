// The device mesh: named axes with sizes ("fsdp=16,tensor=4"), in the
// order given, each name at most once. Every chip of the mesh runs the same
// per-chip (SPMD) program. One representation for the --mesh option, the
// model zoo's sharding (models/sharding.h), a workload's `mesh:` section
// and a multi-chip run's options; the engine maps it onto the slice's
// dimensions (sim/engine/slice_setup.h, arch::ici::Mesh).
// Leaves out: what an axis name means (the model zoo gives data, fsdp,
// tensor, expert and sequence their meaning; workload files name any axes).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "arch/common/diagnostic.h"

namespace tpusim::workloads {

// Where an axis lies on the slice, when given ("tensor=4@x%2*y%2"): parts
// of slice axes, the first fastest in rank order. A part is a slice axis
// (x, y, z or dcn) with an optional stride ("/S") and length ("%L"): the
// chips whose coordinate on it is (c / S) % L; without "%L" the part runs
// to the axis's end. The engine checks the parts against the slice
// (sim/engine/slice_setup.h).
struct MeshPart {
  std::string axis;         // "x", "y", "z" or "dcn"
  std::int64_t stride = 1;  // >= 1
  std::int64_t length = 0;  // >= 1, or 0: up to the axis's end
  bool operator==(const MeshPart& o) const { return axis == o.axis && stride == o.stride && length == o.length; }
};

struct MeshAxis {
  std::string name;
  std::int64_t size = 1;
  std::vector<MeshPart> placement{};  // empty: placed by the engine's rule
  bool operator==(const MeshAxis& o) const { return name == o.name && size == o.size && placement == o.placement; }
};

struct MeshSpec {
  std::vector<MeshAxis> axes;  // in the order given; each name at most once

  bool empty() const { return axes.empty(); }
  // Size of a named axis; nullopt when the mesh does not have it.
  std::optional<std::int64_t> find(const std::string& axis) const;
  // Size of a named axis; 1 when the mesh does not have it.
  std::int64_t size(const std::string& axis) const { return find(axis).value_or(1); }
  // Chips of the mesh: the product of the sizes (1 for an empty mesh).
  std::int64_t chips() const;
  // "fsdp=16,tensor=4" (the form parse_mesh reads, placements after '@');
  // "" when empty.
  std::string str() const;
  bool operator==(const MeshSpec& o) const { return axes == o.axes; }
};

// Every problem of a --mesh string, as diagnostics.
class MeshError : public std::invalid_argument {
 public:
  explicit MeshError(std::vector<arch::Diagnostic> d);
  const std::vector<arch::Diagnostic>& diagnostics() const { return diags_; }

 private:
  std::vector<arch::Diagnostic> diags_;
};

// Parses "name=size[@placement][,name=size...]" (spaces allowed around
// items and '='; "" is the empty mesh); a placement is parts joined by
// '*' (MeshPart: "x", "y/2", "x%4", "y/2%4", "dcn"). `axis_names`, when
// not empty, are the only names allowed (the nearest is suggested for
// another). Throws MeshError listing every problem: malformed item,
// unknown name, size not an integer >= 1, name given twice, a malformed
// part, parts whose lengths (where given) multiply past the size. Each diagnostic has file "--mesh '<text>'", line 1,
// the 1-based column of the item and key "mesh" or "mesh.<name>".
MeshSpec parse_mesh(const std::string& text, const std::vector<std::string>& axis_names = {});

}  // namespace tpusim::workloads
