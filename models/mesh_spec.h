// MeshSpec: the device mesh a model is sharded over, as named axes with
// sizes ("fsdp=16,tensor=4"). Every chip of the mesh runs the same per-chip
// (SPMD) program; the axes say how the model is split across them.
// Models: the axis names the model zoo understands: data (batch split,
// weights replicated), fsdp (batch split, weights/gradients/optimizer state
// sharded, ZeRO-3), tensor (Megatron heads/FFN/vocab split), expert (MoE
// experts split, tokens exchanged all-to-all; also splits the batch) and
// sequence (context parallelism: each sequence's tokens split, K/V
// all_gathered for attention). Megatron sequence parallelism is not an
// axis but an option of tensor (PhaseOptions::sequence_parallel).
// Leaves out: parsing and checks (models/sharding.h), placement on a
// physical slice (the engine maps axes onto ICI dimensions).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tpusim::models {

struct MeshSpec {
  // In the order given; each name at most once.
  std::vector<std::pair<std::string, std::int64_t>> axes;

  bool empty() const { return axes.empty(); }
  // Size of a named axis; 1 when the mesh does not have it.
  std::int64_t size(const std::string& axis) const {
    for (const auto& a : axes)
      if (a.first == axis) return a.second;
    return 1;
  }
  // Chips of the mesh: the product of the sizes (1 for an empty mesh).
  std::int64_t chips() const {
    std::int64_t n = 1;
    for (const auto& a : axes) n *= a.second;
    return n;
  }
  // "fsdp=16,tensor=4" (the form parse_mesh reads); "" when empty.
  std::string str() const {
    std::string s;
    for (const auto& a : axes) s += (s.empty() ? "" : ",") + a.first + "=" + std::to_string(a.second);
    return s;
  }
  bool operator==(const MeshSpec& o) const { return axes == o.axes; }
};

}  // namespace tpusim::models
