// Fuzzes the --mesh text (workloads::parse_mesh, placements included) and
// its mapping onto slices (sim::map_mesh), then plans an all_gather and a
// permute over every mapped axis: parse and map may throw only
// std::invalid_argument (MeshError is one); a mesh that maps must plan.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "arch/ici/collectives.h"
#include "sim/engine/slice_setup.h"
#include "tests/unit/arch/test_ici_util.h"
#include "workloads/ir/mesh.h"

namespace ici = tpusim::arch::ici;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 256) return 0;  // a mesh is a short line
  static const ici::Slice slices[] = {
      ici::Slice(tpusim::arch::test::ici_v5e(), "16x4"),  // x wraps, y a line
      ici::Slice(tpusim::arch::test::ici_v4(), "4x4x8"),  // every axis wraps
      ici::Slice(tpusim::arch::test::ici_v4(), "2x4x1"),  // a line of 2, a ring of 4
  };
  tpusim::workloads::MeshSpec mesh;
  try {
    mesh = tpusim::workloads::parse_mesh(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const std::invalid_argument&) {
    return 0;
  }
  for (const ici::Slice& s : slices) {
    try {
      const ici::Mesh m = tpusim::sim::map_mesh(s, mesh);
      for (const auto& [name, parts] : m.axes()) {
        for (ici::CollectiveKind k : {ici::CollectiveKind::all_gather, ici::CollectiveKind::collective_permute}) {
          const ici::CollectivePlan p = ici::plan_collective(s, m, tpusim::arch::test::req(k, 4096, {name}));
          if (p.group_size < 1) __builtin_trap();
        }
      }
    } catch (const std::invalid_argument&) {}
  }
  return 0;
}
