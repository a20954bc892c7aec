// Child-process execution of sweep points, crash-safe row appends and the
// progress display; see runner.h.
#include "sim/sweep/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "sim/results/format.h"
#include "sim/sweep/results_table.h"

namespace tpusim::sim::sweep {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The child's stderr as one line: lines joined with " | ", at most 1000
// characters (the start holds the error; later lines are usually context).
std::string stderr_line(const std::string& text) {
  std::string out;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    out += (out.empty() ? "" : " | ") + line;
  }
  if (out.size() > 1000) out = out.substr(0, 997) + "...";
  return out;
}

std::string duration_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = std::lround(s);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

class Progress {
 public:
  Progress(std::ostream* os, bool tty, std::size_t total, std::size_t already)
      : os_(os), tty_(tty), total_(total), done_(already), start_(Clock::now()), last_(start_) {}

  void finished(bool ok) {
    ++done_;
    ++session_;
    failed_ += ok ? 0 : 1;
    show(false);
  }
  void tick() { show(false); }
  void end() { show(true); }

 private:
  void show(bool final) {
    if (!os_) return;
    const double now = since(start_);
    const double gap = since(last_);
    if (!final && gap < (tty_ ? 0.2 : 5.0)) return;
    last_ = Clock::now();
    const double rate = now > 0 ? static_cast<double>(session_) / now : 0;
    const double eta = rate > 0 ? static_cast<double>(total_ - done_) / rate : NAN;
    char stats[200];
    std::snprintf(stats, sizeof stats, "%zu/%zu points, %zu failed, %.2f points/s, elapsed %s, ETA %s", done_, total_,
                  failed_, rate, duration_text(now).c_str(), done_ == total_ ? "0:00" : duration_text(eta).c_str());
    if (tty_) {
      constexpr int kWidth = 30;
      const int fill = total_ ? static_cast<int>(kWidth * done_ / total_) : kWidth;
      *os_ << "\r[" << std::string(fill, '#') << std::string(kWidth - fill, '.') << "] " << stats << "\x1b[K";
      if (final) *os_ << "\n";
    } else {
      *os_ << "sweep: " << stats << "\n";
    }
    os_->flush();
  }

  std::ostream* os_;
  bool tty_;
  std::size_t total_, done_, session_ = 0, failed_ = 0;
  Clock::time_point start_, last_;
};

struct Running {
  const PreparedPoint* pp = nullptr;
  pid_t pid = -1;
  Clock::time_point start;
  bool timed_out = false;
  std::string dir;
};

// The running binary itself: in the forked child /proc/self/exe is still
// the parent's inode, so a rebuild of tpusim during a sweep does not mix
// two versions in one results.csv.
std::string self_exe() {
  if (::access("/proc/self/exe", X_OK) != 0)
    throw std::runtime_error(std::string("cannot execute /proc/self/exe: ") + std::strerror(errno));
  return "/proc/self/exe";
}

pid_t spawn(const std::string& exe, const std::vector<std::string>& args, const std::string& dir, bool keep_stdout) {
  // Everything the child touches is built before fork(): after it only
  // async-signal-safe calls are allowed.
  std::vector<std::string> all = {exe};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  // stdout (the human summary) is only worth a file when the run folder
  // is kept; each file costs a create and an unlink on a slow filesystem.
  const std::string out = keep_stdout ? dir + "/stdout.txt" : "/dev/null", err = dir + "/stderr.txt";
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    // A child must not outlive a killed sweep: it would write into a run
    // folder that the resumed sweep reuses.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the sweep blocks SIGCHLD; the run must not inherit that
    if (::getppid() != parent) ::_exit(126);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);  // /dev/null ignores the flags
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o >= 0) ::dup2(o, 1);
    if (e >= 0) ::dup2(e, 2);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::execv(argv[0], argv.data());
    const char msg[] = "tpusim sweep: cannot execute the tpusim binary\n";
    ssize_t ignored = ::write(2, msg, sizeof msg - 1);
    (void)ignored;
    ::_exit(127);
  }
  return pid;
}

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
        const Value v = d.expr.eval(
            [&](const std::string& n) { return lookup_point_value(spec, *pp.point, n, &metrics); });
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

std::vector<std::string> finish(const SweepSpec& spec, const std::vector<std::string>& header, const Running& r,
                                int status, bool* ok) {
  std::map<std::string, std::string> metrics;
  std::string message;
  const std::string err = stderr_line(slurp(r.dir + "/stderr.txt"));
  if (r.timed_out) {
    message = "timeout: killed after the point timeout";
  } else if (WIFSIGNALED(status)) {
    message = "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
    if (!err.empty()) message += ": " + err;
  } else if (WEXITSTATUS(status) != 0) {
    message = "exit " + std::to_string(WEXITSTATUS(status)) + ": " + err;
  } else {
    const auto rows = parse_csv(slurp(r.dir + "/summary.csv"));
    if (rows.size() < 2 || rows[0].size() != rows[1].size()) {
      message = "the run exited 0 but wrote no readable summary.csv";
    } else {
      for (std::size_t i = 0; i < rows[0].size(); ++i) metrics[rows[0][i]] = rows[1][i];
      // The child resolved the config itself; the digest must agree with
      // the one computed up front, or the row would describe another chip.
      if (metrics["config_hash"] != r.pp->config_hash)
        message = "config hash mismatch: the sweep resolved " + r.pp->config_hash + ", the run wrote " +
                  metrics["config_hash"];
    }
  }
  *ok = message.empty();
  if (!*ok) metrics.clear();
  std::vector<std::string> row = make_row(spec, header, *r.pp, *ok ? "ok" : "error", message, metrics);
  *ok = *ok && row[base_row(spec, *r.pp).size()] == "ok";
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
  } catch (const std::exception&) {
  }
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

SweepRunSummary run_sweep(const SweepSpec& spec, const std::vector<PreparedPoint>& points,
                          const SweepRunOptions& opt) {
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
      const std::size_t status = static_cast<std::size_t>(
          std::find(header.begin(), header.end(), "status") - header.begin());
      const auto keep_end = std::stable_partition(existing.rows.begin(), existing.rows.end(),
                                                  [&](const auto& r) { return r.at(status) == "ok"; });
      sum.retried = static_cast<std::size_t>(existing.rows.end() - keep_end);
      existing.rows.erase(keep_end, existing.rows.end());
    }
    // A point with two rows (a file written before the lock existed, or
    // edited by hand) keeps one: its first ok row, else its first row.
    {
      const std::size_t status = static_cast<std::size_t>(
          std::find(header.begin(), header.end(), "status") - header.begin());
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
  Progress progress(opt.quiet ? nullptr : opt.progress, opt.progress_tty, sum.shard_points, sum.already_done);
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

  const std::string exe = opt.executable.empty() ? self_exe() : opt.executable;
  int jobs = opt.jobs > 0 ? opt.jobs : static_cast<int>(std::thread::hardware_concurrency());
  if (jobs < 1) jobs = 1;
  // SIGCHLD stays blocked so that sigtimedwait() sleeps until a child
  // ends (or the next timeout/progress check) instead of polling; a child
  // that ends between waitpid() and sigtimedwait() leaves the signal
  // pending, so no exit is missed.
  sigset_t chld, old_mask;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, &old_mask);
  struct MaskGuard {
    sigset_t m;
    ~MaskGuard() { ::sigprocmask(SIG_SETMASK, &m, nullptr); }
  } guard{old_mask};
  std::vector<Running> running;
  std::size_t next = 0;
  while (next < runnable.size() || !running.empty()) {
    while (static_cast<int>(running.size()) < jobs && next < runnable.size()) {
      const PreparedPoint* pp = runnable[next++];
      Running r;
      r.pp = pp;
      r.dir = (fs::path(opt.out_dir) / "runs" / pp->point->id).string();
      fs::remove_all(r.dir);  // a folder left by a killed sweep
      fs::create_directories(r.dir);
      std::vector<std::string> args;
      for (const auto& d : opt.config_path) args.insert(args.end(), {"--config-path", d});
      args.insert(args.end(), pp->run_args.begin(), pp->run_args.end());
      args.insert(args.end(), {"--out", r.dir});
      r.start = Clock::now();
      r.pid = spawn(exe, args, r.dir, opt.keep_runs);
      ++sum.ran;
      running.push_back(std::move(r));
    }
    bool reaped = false;
    for (std::size_t i = 0; i < running.size();) {
      Running& r = running[i];
      int status = 0;
      const pid_t w = ::waitpid(r.pid, &status, WNOHANG);
      if (w == r.pid) {
        sum.child_seconds += since(r.start);
        bool ok = false;
        const std::vector<std::string> row = finish(spec, header, r, status, &ok);
        record(row, ok);
        if (!opt.keep_runs) fs::remove_all(r.dir);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
        reaped = true;
        continue;
      }
      if (opt.point_timeout > 0 && !r.timed_out && since(r.start) > opt.point_timeout) {
        ::kill(r.pid, SIGKILL);
        r.timed_out = true;
      }
      ++i;
    }
    if (!reaped) {
      progress.tick();
      const timespec wait = {0, 100 * 1000 * 1000};  // timeouts and progress are checked at least every 100 ms
      ::sigtimedwait(&chld, nullptr, &wait);
    }
  }
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
