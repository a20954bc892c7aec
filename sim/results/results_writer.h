// What `tpusim run` leaves behind: the result files of one run (summary,
// per-operator and per-block CSVs, the resolved config, optionally a Chrome
// trace) and the human summary on stdout. Every figure comes from
// compute_metrics (metrics.h); docs/results.md describes every column.
// Files are deterministic: the same run writes byte-identical files, except
// the sim_wall_seconds column of summary.csv.
// Leaves out: JSON/Parquet summaries, sweep aggregation (sweeps read these
// CSVs), multi-chip reports.
#pragma once

#include <ostream>
#include <stdexcept>
#include <string>

#include "sim/results/format.h"
#include "sim/results/metrics.h"
#include "sim/results/run_report.h"
#include "sim/results/trace_writer.h"

namespace tpusim::sim {

struct WriteOptions {
  bool trace = false;  // also write trace.json
};

// A result file or directory could not be created or written (the path
// names it); the run itself was fine.
class ResultsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Creates out_dir (and its parents) and writes summary.csv, ops.csv,
// units.csv, config.effective.yaml and, with o.trace, trace.json,
// replacing files of a previous run. Throws ResultsError on I/O failure,
// arch::InternalError on an inconsistent report.
void write_results(const RunReport& r, const std::string& out_dir, const WriteOptions& o = {});
// The same with the run's metrics already computed (compute_metrics(r)):
// a caller that also prints the summary computes them once.
void write_results(const RunReport& r, const RunMetrics& m, const std::string& out_dir, const WriteOptions& o = {});

// The individual files, for callers that want one of them elsewhere.
void write_summary_csv(const RunReport& r, const RunMetrics& m, std::ostream& os);
void write_ops_csv(const RunReport& r, const RunMetrics& m, std::ostream& os);
void write_units_csv(const RunReport& r, std::ostream& os);
// The rows of the "energy" block of units.csv (nothing without an energy
// model): joules per block, power, and the activity they were charged for.
void write_energy_units(const RunMetrics& m, std::ostream& os);

// The top `top` timed operators by cycles (ties: workload order) with
// kind, cycles, share of the run, bound and MXU utilization, then the run
// totals: time, TFLOP/s, MXU utilization, HBM traffic/bandwidth, VMEM peak.
void print_summary(const RunReport& r, std::ostream& os, int top = 10);
void print_summary(const RunReport& r, const RunMetrics& m, std::ostream& os, int top = 10);

}  // namespace tpusim::sim
