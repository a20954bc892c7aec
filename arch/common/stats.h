// Named statistics that every block exposes, gem5-style: a name, a value, a
// unit and a description. One collector (sim/results) walks the blocks and
// feeds every writer; blocks never print numbers themselves.
#pragma once

#include <string>
#include <vector>

namespace tpusim::arch {

struct Stat {
  std::string name;  // e.g. "busy_cycles"
  double value = 0;
  std::string unit;  // e.g. "cycles", "bytes", "count", "ratio"
  std::string desc;
};

using StatList = std::vector<Stat>;

}  // namespace tpusim::arch
