// Runs the points of a sweep: each point is one `tpusim run` child process
// (SystemC elaborates once per process), up to `jobs` at a time, each with
// its own out folder under OUT/runs/<point id>/. A row goes to
// OUT/results.csv the moment its point finishes (results_table.h), so a
// sweep killed at any moment loses at most the points in flight; with
// `resume` those are the only ones run again. A point whose child fails,
// crashes or overruns the timeout becomes an error row; the sweep goes on.
// When every point of the shard has a row, results.csv is rewritten in spec
// order (atomically).
// Leaves out: retrying failed points, remote execution (see `sweep slurm`),
// CPU pinning.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "sim/config/config_loader.h"
#include "sim/sweep/sweep_spec.h"

namespace tpusim::sim::sweep {

struct SweepRunOptions {
  std::string out_dir;
  int jobs = 0;               // 0 = all cores
  bool resume = false;        // keep rows already in results.csv and run only the rest
  bool retry_failed = false;  // with resume: drop the error rows and run those points again
  int shard_index = 0;        // run points with index % shard_count == shard_index
  int shard_count = 1;
  double point_timeout = 0;  // seconds; 0 = none
  bool keep_runs = false;    // keep OUT/runs/<id>/ of finished points
  bool quiet = false;
  std::string executable;                // tpusim to run; empty = /proc/self/exe
  std::vector<std::string> config_path;  // --config-path for the children
  std::ostream* progress = nullptr;      // stderr-like stream; null = none
  bool progress_tty = false;             // draw a live bar instead of lines
};

struct SweepRunSummary {
  std::size_t shard_points = 0;        // points in this shard
  std::size_t already_done = 0;        // rows found by --resume
  std::size_t ran = 0;                 // children started
  std::size_t ok = 0, failed = 0;      // of the rows written now (invalid points included in failed)
  std::size_t dropped = 0;             // torn/malformed lines dropped on resume
  std::size_t retried = 0;             // error rows dropped by retry_failed (their points run again)
  std::size_t duplicates_removed = 0;  // extra rows of a point dropped on resume (its ok row stays)
  double wall_seconds = 0;             // whole run_sweep call
  double child_seconds = 0;            // sum over children of fork-to-reap time
};

// Holds an exclusive flock on OUT/.sweep.lock while it runs. Throws
// ConfigError when another sweep holds that lock, when OUT/results.csv
// exists without `resume` or was written by a different spec;
// std::runtime_error on I/O failure.
SweepRunSummary run_sweep(const SweepSpec& spec, const std::vector<PreparedPoint>& points, const SweepRunOptions& opt);

// "I/N" -> (I, N); throws UsageError-like std::invalid_argument unless
// 0 <= I < N.
std::pair<int, int> parse_shard(const std::string& text);

}  // namespace tpusim::sim::sweep
