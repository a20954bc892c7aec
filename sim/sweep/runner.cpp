// Sweep points run as child processes (child_pool.h), crash-safe row
// appends and the progress display; see runner.h.
#include "sim/sweep/runner.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "sim/results/format.h"
#include "sim/sweep/child_pool.h"
#include "sim/sweep/progress.h"
#include "sim/sweep/results_table.h"

namespace tpusim::sim::sweep {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<std::string> base_row(const SweepSpec& spec, const PreparedPoint& pp) {
  std::vector<std::string> row = {pp.point->id, pp.config_hash};
  for (const auto& a : spec.axes) {
    const SweptValue* v = pp.point->find(a);
    row.push_back(v ? v->text : "");
  }
  return row;
}

// The full row of a point: status and message, then the metrics of its
// summary.csv (when ok) and the derived columns.
std::vector<std::string> make_row(const SweepSpec& spec, const std::vector<std::string>& header,
                                  const PreparedPoint& pp, const std::string& status, const std::string& message,
                                  const std::map<std::string, std::string>& metrics) {
  std::vector<std::string> row = base_row(spec, pp);
  const std::size_t status_at = row.size();
  row.push_back(status);
  row.push_back(message);
  for (std::size_t i = row.size(); i < header.size() - spec.derived.size(); ++i) {
    auto it = metrics.find(header[i]);
    row.push_back(it == metrics.end() ? "" : it->second);
  }
  for (const auto& d : spec.derived) {
    std::string cell;
    if (status == "ok") {
      try {
        const Value v =
            d.expr.eval([&](const std::string& n) { return lookup_point_value(spec, *pp.point, n, &metrics); });
        cell = v.is_number ? format_real(v.number) : v.text;
      } catch (const ExprError& e) {
        // A type mismatch for this point (arithmetic on a string): an
        // error row that says so, its metrics kept (docs/sweeps.md).
        if (row[status_at] == "ok") {
          row[status_at] = "error";
          row[status_at + 1] = "derived column '" + d.name + "': " + e.what();
        }
      }
    }
    row.push_back(cell);
  }
  return row;
}

std::vector<std::string> finish(const SweepSpec& spec, const std::vector<std::string>& header, const PreparedPoint& pp,
                                const std::string& dir, const ChildExit& e, bool* ok) {
  std::map<std::string, std::string> metrics;
  std::string message = child_failure(e, dir);
  if (message.empty()) {
    metrics = read_run_summary(dir);
    if (metrics.empty()) {
      message = kNoSummary;
    } else {
      // The child resolved the config itself; the digest must agree with
      // the one computed up front, or the row would describe another chip.
      // (`tpusim serve` writes none: its steps resolve the config in the
      // step children, keyed by the same resolved config.)
      if (!spec.serve && metrics["config_hash"] != pp.config_hash)
        message =
            "config hash mismatch: the sweep resolved " + pp.config_hash + ", the run wrote " + metrics["config_hash"];
    }
  }
  *ok = message.empty();
  if (!*ok) metrics.clear();
  std::vector<std::string> row = make_row(spec, header, pp, *ok ? "ok" : "error", message, metrics);
  *ok = *ok && row[base_row(spec, pp).size()] == "ok";
  return row;
}

}  // namespace

std::pair<int, int> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  try {
    if (slash != std::string::npos) {
      std::size_t a = 0, b = 0;
      const int i = std::stoi(text.substr(0, slash), &a);
      const int n = std::stoi(text.substr(slash + 1), &b);
      if (a == slash && b == text.size() - slash - 1 && n >= 1 && i >= 0 && i < n) return {i, n};
    }
  } catch (const std::exception&) {}
  throw std::invalid_argument("--shard expects I/N with 0 <= I < N (e.g. 0/4), found '" + text + "'");
}

namespace {
// An exclusive flock on OUT/.sweep.lock for the whole run: two sweeps into
// one directory (a Slurm task resubmitted while the first still runs)
// would both append the same points. The kernel drops the lock when the
// process dies, so a killed sweep never leaves a stale lock behind.
class DirLock {
 public:
  explicit DirLock(const std::string& dir) {
    const std::string file = (fs::path(dir) / ".sweep.lock").string();
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot create " + file + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd_);
      Diagnostic d;
      d.file = dir;
      d.expected = "an output directory no other sweep is writing to";
      d.found = err == EWOULDBLOCK ? "another tpusim sweep running in it (it holds " + file + ")"
                                   : "a lock that cannot be taken: " + std::string(std::strerror(err));
      throw ConfigError(d);
    }
  }
  ~DirLock() { ::close(fd_); }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};
}  // namespace

SweepRunSummary run_sweep(const SweepSpec& spec, const std::vector<PreparedPoint>& points, const SweepRunOptions& opt) {
  const auto t0 = Clock::now();
  SweepRunSummary sum;
  fs::create_directories(opt.out_dir);
  const DirLock lock(opt.out_dir);
  const std::vector<std::string> header = results_header(spec);
  const std::string path = (fs::path(opt.out_dir) / "results.csv").string();
  std::set<std::string> done;
  if (fs::exists(path)) {
    if (!opt.resume) {
      Diagnostic d;
      d.file = path;
      d.expected = "a new output directory, or --resume to continue this sweep";
      d.found = "an existing results.csv";
      throw ConfigError(d);
    }
    ResultsFile existing = read_results(path, &header);
    sum.dropped = existing.dropped;
    if (opt.retry_failed) {
      // Error rows go (their points run again); ok rows stay. The file is
      // rewritten atomically, so a crash leaves either every old row or the
      // ok ones, and a later --resume runs whatever is missing.
      const std::size_t status =
          static_cast<std::size_t>(std::find(header.begin(), header.end(), "status") - header.begin());
      const auto keep_end = std::stable_partition(existing.rows.begin(), existing.rows.end(),
                                                  [&](const auto& r) { return r.at(status) == "ok"; });
      sum.retried = static_cast<std::size_t>(existing.rows.end() - keep_end);
      existing.rows.erase(keep_end, existing.rows.end());
    }
    // A point with two rows (a file written before the lock existed, or
    // edited by hand) keeps one: its first ok row, else its first row.
    {
      const std::size_t status =
          static_cast<std::size_t>(std::find(header.begin(), header.end(), "status") - header.begin());
      std::map<std::string, std::size_t> keep;  // id -> index of the row kept
      for (std::size_t i = 0; i < existing.rows.size(); ++i) {
        const auto& r = existing.rows[i];
        auto [it, fresh] = keep.emplace(r[0], i);
        if (!fresh && existing.rows[it->second].at(status) != "ok" && r.at(status) == "ok") it->second = i;
      }
      if (keep.size() != existing.rows.size()) {
        std::vector<std::vector<std::string>> kept;
        for (std::size_t i = 0; i < existing.rows.size(); ++i)
          if (keep.at(existing.rows[i][0]) == i) kept.push_back(existing.rows[i]);
        sum.duplicates_removed = existing.rows.size() - kept.size();
        existing.rows = std::move(kept);
      }
    }
    // A torn last line (a crash in the middle of a write) must go before
    // anything is appended after it.
    if (existing.dropped || sum.retried || sum.duplicates_removed)
      write_results_atomically(path, header, existing.rows);
    for (const auto& r : existing.rows) done.insert(r[0]);
  }

  std::vector<const PreparedPoint*> pending;
  for (const auto& pp : points) {
    if (!in_shard(*pp.point, opt.shard_index, opt.shard_count)) continue;
    ++sum.shard_points;
    if (done.count(pp.point->id))
      ++sum.already_done;
    else
      pending.push_back(&pp);
  }

  ResultsAppender out(path, header);
  Progress progress(opt.quiet ? nullptr : opt.progress, opt.progress_tty, sum.shard_points, sum.already_done, "sweep", "points");
  auto record = [&](const std::vector<std::string>& row, bool ok) {
    out.append(row);
    (ok ? sum.ok : sum.failed) += 1;
    progress.finished(ok);
  };

  std::vector<const PreparedPoint*> runnable;
  for (const PreparedPoint* pp : pending) {
    if (!pp->error.empty())
      record(make_row(spec, header, *pp, "error", pp->error, {}), false);
    else
      runnable.push_back(pp);
  }

  ChildPoolOptions pool;
  pool.executable = opt.executable;
  pool.jobs = opt.jobs;
  pool.timeout = opt.point_timeout;
  auto dir_of = [&](std::size_t i) { return (fs::path(opt.out_dir) / "runs" / runnable[i]->point->id).string(); };
  run_children(
      runnable.size(), pool,
      [&](std::size_t i) {
        ChildSpec c;
        c.dir = dir_of(i);
        for (const auto& d : opt.config_path) c.args.insert(c.args.end(), {"--config-path", d});
        c.args.insert(c.args.end(), runnable[i]->run_args.begin(), runnable[i]->run_args.end());
        c.args.insert(c.args.end(), {"--out", c.dir});
        c.keep_stdout = opt.keep_runs;
        ++sum.ran;
        return c;
      },
      [&](std::size_t i, const ChildExit& e) {
        sum.child_seconds += e.seconds;
        bool ok = false;
        const std::vector<std::string> row = finish(spec, header, *runnable[i], dir_of(i), e, &ok);
        record(row, ok);
        if (!opt.keep_runs) fs::remove_all(dir_of(i));
      },
      [&] { progress.tick(); });
  progress.end();

  // Every point of the shard has a row: put them in spec order.
  ResultsFile final_rows = read_results(path, &header);
  std::set<std::string> have;
  for (const auto& r : final_rows.rows) have.insert(r[0]);
  bool complete = true;
  for (const auto& pp : points)
    if (in_shard(*pp.point, opt.shard_index, opt.shard_count) && !have.count(pp.point->id)) complete = false;
  if (complete) {
    sort_rows(spec, final_rows.rows);
    write_results_atomically(path, header, final_rows.rows);
  }
  std::error_code ec;
  if (!opt.keep_runs) fs::remove(fs::path(opt.out_dir) / "runs", ec);  // only if empty
  sum.wall_seconds = since(t0);
  return sum;
}

}  // namespace tpusim::sim::sweep
