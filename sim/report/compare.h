// `tpusim compare A B`: two result directories of `tpusim run` side by
// side. Totals from summary.csv (time, FLOPs, TFLOP/s, MXU and HBM
// utilization, HBM bytes, every energy column when present), ICI bytes
// summed over ops.csv's collectives, time per operator kind and per
// operator matched by name (ops.csv cycles / clock_hz); each row with the
// delta B - A and the ratio B / A.
// Leaves out: units.csv statistics, runs on the spot from configs.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tpusim::sim::report {

struct CompareRow {
  std::string section;  // total | kind | op
  std::string name;
  double a = 0, b = 0;
  bool in_a = true, in_b = true;  // ops present in one run only
  double delta() const { return b - a; }
  double ratio() const { return a != 0 ? b / a : 0; }  // 0 = undefined
};

struct Comparison {
  std::string dir_a, dir_b;
  std::string workload_a, workload_b, arch_a, arch_b;
  std::vector<CompareRow> rows;
};

// Throws std::runtime_error naming the file when a directory lacks a
// readable summary.csv or ops.csv.
Comparison compare_runs(const std::string& dir_a, const std::string& dir_b);

void print_comparison(const Comparison& c, std::ostream& os, int top = 10);
std::string comparison_csv(const Comparison& c);
std::string comparison_html(const Comparison& c);

}  // namespace tpusim::sim::report
