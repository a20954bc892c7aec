// A CSV file as rows of column name -> cell, for tests that read the
// result files of the tpusim executable.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "sim/sweep/results_table.h"

namespace tpusim::test {

inline std::vector<std::map<std::string, std::string>> rows_of(const std::string& file) {
  const auto rows = tpusim::sim::sweep::parse_csv(slurp(file));
  std::vector<std::map<std::string, std::string>> out;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    std::map<std::string, std::string> m;
    for (std::size_t i = 0; i < rows[0].size() && i < rows[r].size(); ++i) m[rows[0][i]] = rows[r][i];
    out.push_back(m);
  }
  return out;
}

}  // namespace tpusim::test
