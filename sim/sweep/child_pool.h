// Runs `tpusim` child processes, at most `jobs` at a time: each child gets
// its own folder (stderr.txt there, stdout.txt when asked for), a child
// that overruns the timeout is killed, and the caller hears of every exit
// in the parent, as it happens. Sweeps (runner.h) and the validation suite
// (sim/validate/) both run their simulations through it, since SystemC
// elaborates only once per process.
// Leaves out: retries, CPU pinning, remote execution.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tpusim::sim::sweep {

struct ChildSpec {
  std::vector<std::string> args;  // after the executable
  std::string dir;                // created (emptied first); receives stderr.txt
  bool keep_stdout = false;       // stdout to DIR/stdout.txt instead of /dev/null
};

struct ChildExit {
  int status = 0;          // waitpid() status
  bool timed_out = false;  // killed after the timeout
  double seconds = 0;      // fork to reap
};

struct ChildPoolOptions {
  std::string executable;  // empty = /proc/self/exe (the running tpusim)
  int jobs = 0;            // 0 = all cores
  double timeout = 0;      // seconds per child; 0 = none
};

// Starts child i (in index order) with start(i), calls done(i, exit) in the
// parent when it ends, and tick() at least every 100 ms while waiting.
// Throws std::runtime_error when fork or the executable fails.
void run_children(std::size_t count, const ChildPoolOptions& opt, const std::function<ChildSpec(std::size_t)>& start,
                  const std::function<void(std::size_t, const ChildExit&)>& done,
                  const std::function<void()>& tick = {});

// "exit 2: <stderr>", "killed by signal 9 (Killed): <stderr>", "timeout: ..."
// for a failed child; empty when it exited 0. `dir` holds its stderr.txt.
std::string child_failure(const ChildExit& e, const std::string& dir);

// The child's stderr as one line: lines joined with " | ", at most 1000
// characters (the start holds the error; later lines are usually context).
std::string stderr_line(const std::string& text);

// The whole content of a file ("" when missing).
std::string slurp_file(const std::string& path);

// What a `tpusim run` child wrote to `dir`/summary.csv, its one row as
// column -> value; empty when the file is missing or is not a header and
// a row of the same width (kNoSummary says so in a row's message).
std::map<std::string, std::string> read_run_summary(const std::string& dir);
inline constexpr const char* kNoSummary = "the run exited 0 but wrote no readable summary.csv";

}  // namespace tpusim::sim::sweep
