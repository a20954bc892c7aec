// "Did you mean" support for workload file errors: the nearest candidate to
// a misspelt key or name by edit distance (with transpositions). The one
// implementation: config, workload and model readers all use it.
// Leaves out: phonetic or keyboard-distance heuristics.
#pragma once

#include <string>
#include <vector>

namespace tpusim::workloads {

int edit_distance(const std::string& a, const std::string& b);
// Nearest candidate if plausibly a typo (distance <= max(2, len/3)), else "".
std::string nearest_candidate(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace tpusim::workloads
