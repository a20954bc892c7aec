#include "sim/validate/reference_check.h"

#include <algorithm>
#include <map>
#include <set>

#include "arch/common/errors.h"
#include "sim/sweep/results_table.h"
#include "sim/validate/report.h"

namespace tpusim::sim::validate {

namespace {

// Free text that describes a case rather than a simulated figure.
const std::set<std::string> kDescriptive = {"title", "source"};

struct Table {
  std::vector<std::string> header;
  std::map<std::string, std::vector<std::string>> rows;  // by id
};

Table read_table(const std::string& text, const std::string& name) {
  std::string torn;
  auto recs = sweep::parse_csv(text, &torn);
  if (!torn.empty()) recs.push_back(sweep::parse_csv(torn + "\n").at(0));
  if (recs.empty()) throw arch::ConfigError(name + ": empty file, expected validation.csv");
  Table t;
  t.header = recs.front();
  const auto id_col = std::find(t.header.begin(), t.header.end(), "id");
  if (id_col != t.header.begin() || std::find(t.header.begin(), t.header.end(), "simulated") == t.header.end())
    throw arch::ConfigError(name + ":1: expected the validation.csv header (id, ..., simulated, ...), found '" +
                            (t.header.empty() ? std::string() : t.header.front()) + ", ...'");
  for (std::size_t r = 1; r < recs.size(); ++r) {
    if (recs[r].size() != t.header.size())
      throw arch::ConfigError(name + ":" + std::to_string(r + 1) + ": " + std::to_string(recs[r].size()) +
                              " fields, the header has " + std::to_string(t.header.size()));
    t.rows[recs[r].front()] = recs[r];
  }
  return t;
}

}  // namespace

std::vector<std::string> reference_differences(const std::string& reference_csv, const std::string& name,
                                               const std::vector<CaseResult>& results, bool whole_suite) {
  const Table ref = read_table(reference_csv, name);
  const Table now = read_table(csv_text(results), "this run");
  std::vector<std::string> out;
  for (const auto& [id, row] : now.rows) {
    auto it = ref.rows.find(id);
    if (it == ref.rows.end()) {
      out.push_back("case " + id + ": not in " + name + " (a new case)");
      continue;
    }
    std::string changes;
    for (std::size_t k = 0; k < now.header.size(); ++k) {
      const std::string& col = now.header[k];
      if (kDescriptive.count(col)) continue;
      const auto rk = std::find(ref.header.begin(), ref.header.end(), col);
      const std::string was = rk == ref.header.end() ? "(no column)" : it->second[rk - ref.header.begin()];
      if (was == row[k]) continue;
      changes += (changes.empty() ? "" : ", ") + col + " " + (was.empty() ? "''" : was) + " -> " +
                 (row[k].empty() ? "''" : row[k]);
    }
    if (!changes.empty()) out.push_back("case " + id + ": " + changes);
  }
  if (whole_suite)
    for (const auto& [id, row] : ref.rows)
      if (!now.rows.count(id)) out.push_back("case " + id + ": in " + name + " but not in the suite (removed)");
  return out;
}

}  // namespace tpusim::sim::validate
