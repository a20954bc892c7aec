// Child-process pool of sweeps and validation runs; see child_pool.h.
#include "sim/sweep/child_pool.h"

#include "sim/sweep/results_table.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace tpusim::sim::sweep {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The running binary itself: in the forked child /proc/self/exe is still
// the parent's inode, so a rebuild of tpusim during a sweep does not mix
// two versions in one results file.
std::string self_exe() {
  if (::access("/proc/self/exe", X_OK) != 0)
    throw std::runtime_error(std::string("cannot execute /proc/self/exe: ") + std::strerror(errno));
  return "/proc/self/exe";
}

pid_t spawn(const std::string& exe, const ChildSpec& spec) {
  // Everything the child touches is built before fork(): after it only
  // async-signal-safe calls are allowed.
  std::vector<std::string> all = {exe};
  all.insert(all.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  // stdout (the human summary) is only worth a file when the run folder
  // is kept; each file costs a create and an unlink on a slow filesystem.
  const std::string out = spec.keep_stdout ? spec.dir + "/stdout.txt" : "/dev/null";
  const std::string err = spec.dir + "/stderr.txt";
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    // A child must not outlive a killed parent: it would write into a run
    // folder that a resumed sweep reuses.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the pool blocks SIGCHLD; the run must not inherit that
    if (::getppid() != parent) ::_exit(126);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);  // /dev/null ignores the flags
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o >= 0) ::dup2(o, 1);
    if (e >= 0) ::dup2(e, 2);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::execv(argv[0], argv.data());
    const char msg[] = "tpusim: cannot execute the tpusim binary\n";
    ssize_t ignored = ::write(2, msg, sizeof msg - 1);
    (void)ignored;
    ::_exit(127);
  }
  return pid;
}

struct Running {
  std::size_t index = 0;
  pid_t pid = -1;
  Clock::time_point start;
  bool timed_out = false;
};

}  // namespace

std::string slurp_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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

std::string child_failure(const ChildExit& e, const std::string& dir) {
  const std::string err = stderr_line(slurp_file(dir + "/stderr.txt"));
  if (e.timed_out) return "timeout: killed after the point timeout";
  if (WIFSIGNALED(e.status)) {
    std::string m =
        "killed by signal " + std::to_string(WTERMSIG(e.status)) + " (" + strsignal(WTERMSIG(e.status)) + ")";
    return err.empty() ? m : m + ": " + err;
  }
  if (WEXITSTATUS(e.status) != 0) return "exit " + std::to_string(WEXITSTATUS(e.status)) + ": " + err;
  return "";
}

void run_children(std::size_t count, const ChildPoolOptions& opt, const std::function<ChildSpec(std::size_t)>& start,
                  const std::function<void(std::size_t, const ChildExit&)>& done, const std::function<void()>& tick) {
  if (count == 0) return;
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
  // Children still running when an exception leaves (a failed fork, a
  // throwing callback) are killed and reaped, never left behind.
  struct Reaper {
    std::vector<Running>& r;
    ~Reaper() {
      for (auto& c : r) {
        ::kill(c.pid, SIGKILL);
        int st = 0;
        ::waitpid(c.pid, &st, 0);
      }
    }
  } reaper{running};
  std::size_t next = 0;
  while (next < count || !running.empty()) {
    while (static_cast<int>(running.size()) < jobs && next < count) {
      Running r;
      r.index = next++;
      const ChildSpec spec = start(r.index);
      fs::remove_all(spec.dir);  // a folder left by a killed run
      fs::create_directories(spec.dir);
      r.start = Clock::now();
      r.pid = spawn(exe, spec);
      running.push_back(r);
    }
    bool reaped = false;
    for (std::size_t i = 0; i < running.size();) {
      Running& r = running[i];
      int status = 0;
      const pid_t w = ::waitpid(r.pid, &status, WNOHANG);
      if (w == r.pid) {
        const ChildExit e{status, r.timed_out, since(r.start)};
        const std::size_t index = r.index;
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
        reaped = true;
        done(index, e);
        continue;
      }
      if (opt.timeout > 0 && !r.timed_out && since(r.start) > opt.timeout) {
        ::kill(r.pid, SIGKILL);
        r.timed_out = true;
      }
      ++i;
    }
    if (!reaped) {
      if (tick) tick();
      const timespec wait = {0, 100 * 1000 * 1000};  // timeouts and progress are checked at least every 100 ms
      ::sigtimedwait(&chld, nullptr, &wait);
    }
  }
}

std::map<std::string, std::string> read_run_summary(const std::string& dir) {
  const auto rows = parse_csv(slurp_file(dir + "/summary.csv"));
  std::map<std::string, std::string> out;
  if (rows.size() < 2 || rows[1].size() != rows[0].size()) return out;
  for (std::size_t i = 0; i < rows[0].size(); ++i) out[rows[0][i]] = rows[1][i];
  return out;
}

}  // namespace tpusim::sim::sweep
