// The source keys of a sweep spec (model or workload: what a point runs),
// shared by the spec parser (sweep_spec.cpp) and the per-point resolution
// (sweep_points.cpp). Internal to sim/sweep.
#pragma once

#include <string>
#include <vector>

namespace tpusim::sim::sweep {

inline const std::vector<std::string> kSourceKeys = {"model.name", "workload.file", "workload.gemm", "workload.conv",
                                                     "workload.attention"};

inline bool is_source(const std::string& key) {
  for (const auto& s : kSourceKeys)
    if (s == key) return true;
  return false;
}

}  // namespace tpusim::sim::sweep
