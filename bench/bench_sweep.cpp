// Sweep driver cost: what `tpusim sweep` adds per point beyond the
// simulations themselves, and the speed-up of --jobs 2 over --jobs 1, on a
// 40-point sweep of small --gemm runs (tens of ms each, so that driver
// costs are not hidden behind long simulations).
// Per-point overhead is measured two ways:
//   a) (sweep wall time - sum of the children's fork-to-reap times) / 40:
//      row formatting, fsync, polling latency, folder handling;
//   b) (sweep wall time - the same 40 runs spawned back to back by a bare
//      loop) / 40: everything the driver adds over a shell loop.
// plus the up-front config resolution per point (prepare_points).
// Each figure is the minimum of `reps` repetitions (noise on shared
// machines only ever adds time).
// Usage: bench_sweep [path/to/tpusim] [reps]   (or TPUSIM_BINARY)
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <systemc>
#include <thread>

#include "sim/sweep/runner.h"
#include "sim/sweep/sweep_spec.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace tpusim::sim;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// 10 shapes x 2 dtypes x 2 MXU counts = 40 points.
const char* kSpec = R"(name: bench40
base: {arch: v5e, gemm: "128,128,128", set: {published.peak_tflops: "~"}}
axes:
  grid:
    workload.gemm: ["128,128,128", "128,256,128", "256,128,128", "256,256,256", "128,128,512",
                    "512,128,128", "128,512,128", "256,512,128", "384,128,256", "128,384,384"]
    workload.dtype: [bf16, int8]
    arch.mxu.count: [2, 4]
)";

// The speed-up is measured on points of a realistic size (a few hundred ms
// of simulation each, about half a second): with tens of ms per point, process start-up and the
// per-row fsync, which do not parallelise, dominate both runs.
const char* kHeavySpec = R"(name: bench40_heavy
base: {arch: v5e, gemm: "1024,1024,1024", set: {published.peak_tflops: "~"}}
axes:
  grid:
    workload.gemm: ["2048,2048,2048", "2048,3072,2048", "3072,2048,2048", "2048,2048,3072", "2560,2560,2560",
                    "3072,3072,2048", "2048,3072,3072", "3072,2048,3072", "2560,3072,2560", "3072,3072,3072"]
    workload.dtype: [bf16, int8]
    arch.mxu.count: [2, 4]
)";

// One sweep of `pts` into a fresh `dir`; nullopt (after saying so) when a
// point failed, since then the timing means nothing.
std::optional<sweep::SweepRunSummary> timed_sweep(const sweep::SweepSpec& spec,
                                                  const std::vector<sweep::PreparedPoint>& pts, const std::string& exe,
                                                  const fs::path& dir, int jobs) {
  fs::remove_all(dir);
  sweep::SweepRunOptions o;
  o.out_dir = dir.string();
  o.jobs = jobs;
  o.quiet = true;
  o.executable = exe;
  const auto s = sweep::run_sweep(spec, pts, o);
  if (s.ok != pts.size()) {
    std::fprintf(stderr, "%s: %zu of %zu points failed\n", spec.name.c_str(), s.failed, pts.size());
    return std::nullopt;
  }
  return s;
}

double direct_loop(const std::string& exe, const std::vector<sweep::PreparedPoint>& pts, const fs::path& dir) {
  const auto t0 = Clock::now();
  for (const auto& pp : pts) {
    std::vector<std::string> args = {exe};
    args.insert(args.end(), pp.run_args.begin(), pp.run_args.end());
    args.insert(args.end(), {"--out", (dir / pp.point->id).string()});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    if (posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ) != 0) {
      std::fprintf(stderr, "cannot spawn %s\n", exe.c_str());
      std::exit(1);
    }
    posix_spawn_file_actions_destroy(&fa);
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      std::fprintf(stderr, "a direct run failed\n");
      std::exit(1);
    }
  }
  return since(t0);
}

}  // namespace

int sc_main(int argc, char* argv[]) {
  std::string exe = argc > 1 ? argv[1] : "";
  if (exe.empty())
    if (const char* b = std::getenv("TPUSIM_BINARY")) exe = b;
  if (exe.empty()) {
    std::error_code ec;
    exe = (fs::read_symlink("/proc/self/exe", ec).parent_path().parent_path() / "sim" / "tpusim").string();
  }
  if (!fs::exists(exe)) {
    std::fprintf(stderr, "usage: bench_sweep [path/to/tpusim] [reps] (or set TPUSIM_BINARY)\n");
    return 2;
  }
  const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 2;
  const fs::path tmp = fs::temp_directory_path() / ("tpusim_bench_sweep_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  const std::string spec_path = (tmp / "bench40.yaml").string();
  std::ofstream(spec_path) << kSpec;

  const sweep::SweepSpec spec = sweep::load_sweep_spec(spec_path);
  auto t0 = Clock::now();
  const auto pts = sweep::prepare_points(spec, default_search_path());
  const double prepare = since(t0);
  const double n = static_cast<double>(pts.size());

  double direct = 1e30, w1 = 1e30, c1 = 0, w2 = 1e30;
  for (int r = 0; r < reps; ++r) {
    fs::remove_all(tmp / "direct");
    direct = std::min(direct, direct_loop(exe, pts, tmp / "direct"));
    for (int jobs : {1, 2}) {
      const auto s = timed_sweep(spec, pts, exe, tmp / "sweep", jobs);
      if (!s) return 1;
      if (jobs == 1 && s->wall_seconds < w1) {
        w1 = s->wall_seconds;
        c1 = s->child_seconds;
      }
      if (jobs == 2) w2 = std::min(w2, s->wall_seconds);
    }
  }
  // --jobs 2 over --jobs 1 on the heavier 40 points.
  const std::string heavy_path = (tmp / "bench40_heavy.yaml").string();
  std::ofstream(heavy_path) << kHeavySpec;
  const sweep::SweepSpec heavy = sweep::load_sweep_spec(heavy_path);
  const auto hpts = sweep::prepare_points(heavy, default_search_path());
  double h1 = 1e30, h2 = 1e30;
  for (int jobs : {1, 2}) {
    const auto s = timed_sweep(heavy, hpts, exe, tmp / "heavy", jobs);
    if (!s) return 1;
    (jobs == 1 ? h1 : h2) = s->wall_seconds;
  }
  fs::remove_all(tmp);

  std::printf("sweep driver, %zu --gemm points, min of %d reps, %u hardware threads\n", pts.size(), reps,
              std::thread::hardware_concurrency());
  std::printf("  config resolution up front   %8.2f ms/point\n", prepare / n * 1e3);
  std::printf("  direct spawn loop            %8.3f s  (%.1f ms/point)\n", direct, direct / n * 1e3);
  std::printf("  sweep --jobs 1               %8.3f s  (children %.3f s)\n", w1, c1);
  std::printf("  overhead vs child time       %8.2f ms/point (goal < 50)\n", (w1 - c1) / n * 1e3);
  std::printf("  overhead vs direct loop      %8.2f ms/point (goal < 50)\n", (w1 - direct) / n * 1e3);
  std::printf("  sweep --jobs 2               %8.3f s\n", w2);
  std::printf("  speed-up jobs 2 / jobs 1     %8.2fx (40 points of ~24 ms: start-up bound)\n", w1 / w2);
  std::printf("  heavy 40 points --jobs 1     %8.3f s (%.0f ms/point)\n", h1,
              h1 / static_cast<double>(hpts.size()) * 1e3);
  std::printf("  heavy 40 points --jobs 2     %8.3f s\n", h2);
  std::printf("  speed-up jobs 2 / jobs 1     %8.2fx on the heavy points (goal >= 1.8 on 2 cores)\n", h1 / h2);
  return 0;
}

#include "bench/quiet_main.h"
