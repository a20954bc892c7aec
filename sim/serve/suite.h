// Benchmark suites as files (configs/suites/, docs/serving.md): a YAML
// file lists serving scenarios (MLPerf Inference Offline and Server,
// fixed-rate Poisson, closed-loop), each one `tpusim serve` run; the
// suite's table (suite.csv) holds one row per scenario with the numbers a
// serving benchmark reports, and two tables diff cell by cell for
// regression tracking.
// Scenario kinds:
//   offline  every request at time 0 (MLPerf Offline: throughput)
//   server   Poisson arrivals, the highest rate meeting `slo` on the
//            summary percentiles (MLPerf Server: the highest query rate
//            whose p99 TTFT and TPOT meet the constraints)
//   poisson  Poisson arrivals at `rate`
//   closed   `concurrency` clients, closed loop
// Leaves out: MLPerf's minimum run duration (600 s) and query counts, its
// early-stopping statistics and its accuracy runs; a suite runs the number
// of requests its file says.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tpusim::sim::serve {

struct SuiteScenario {
  std::string name;
  std::string kind;                           // offline | server | poisson | closed
  std::map<std::string, std::string> values;  // key -> text (suite keys, defaults merged in)
  std::vector<std::string> sets;              // set: key=value overrides
  std::string notes;                          // copied into the table
  // The arguments of `tpusim serve` for this scenario (without --out).
  std::vector<std::string> serve_args() const;
};

struct Suite {
  std::string file;
  std::string name;
  std::vector<SuiteScenario> scenarios;  // in file order
};

// Reads and checks a suite file; every mistake is a ConfigError diagnostic
// naming the file, line, column and key (all collected, then thrown).
Suite load_suite(const std::string& path);
// The same from the file's text (`path` names it in diagnostics).
Suite parse_suite(const std::string& text, const std::string& path);

// suite.csv: one header row, one row per scenario.
struct SuiteTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};
// The table's columns, and one scenario's row from its summary.csv text
// (`summary_file` names it in errors).
const std::vector<std::string>& suite_columns();
std::vector<std::string> suite_row(const Suite& s, const SuiteScenario& sc, const std::string& summary_text,
                                   const std::string& summary_file);
void write_suite_table(const std::string& path, const SuiteTable& t);
SuiteTable read_suite_table(const std::string& path);  // UsageError naming the file
std::string format_suite_table(const SuiteTable& t);   // aligned text for the terminal

// Differences between two tables, rows matched by (suite, scenario):
// numbers differing by more than `rel_tol` (relative; 0 = any change),
// other text that differs, rows or columns only in one table. One line
// each; empty when the tables agree.
std::vector<std::string> diff_suite_tables(const SuiteTable& a, const SuiteTable& b, double rel_tol);

}  // namespace tpusim::sim::serve
