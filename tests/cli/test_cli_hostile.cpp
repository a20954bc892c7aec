// Hostile command lines end to end (issue 17): user mistakes exit 2 naming
// the flag or path, output that cannot be written exits non-zero, a run
// directory holds one run's files, and sweeps refuse concurrent writers,
// drop duplicate rows on resume and report string arithmetic.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "cli_test_util.h"
#include "sim/sweep/results_table.h"

namespace tpusim::sim {
namespace {

namespace fs = std::filesystem;
using tpusim::test::CliResult;
using tpusim::test::slurp;

struct TmpDir : tpusim::test::TmpDir {
  TmpDir() : tpusim::test::TmpDir("tpusim_hostile_cli_") {}
};

CliResult tpusim(const TmpDir& d, const std::string& args) { return tpusim::test::run_tpusim_in(d.p.string(), args); }
void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(HostileCli, PathMistakesExitTwoNamingTheFlag) {
  TmpDir d;
  write(d / "file", "x");
  ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
  struct C {
    std::string args, expect;
  } cases[] = {
      {"run --gemm 64,64,64 --out ''", "run: --out: expected a directory path, found ''"},
      {"run --gemm 64,64,64 --out " + (d / "file"), "run: --out '" + (d / "file") + "': exists and is not a directory"},
      {"run --gemm 64,64,64 --out " + (d / "o") + " --vcd /nonexistent/dir/w", "run: --vcd '/nonexistent/dir/w.vcd'"},
      {"run --workload /dev/zero --out " + (d / "o"), "run: --workload '/dev/zero': not a regular file"},
      {"run --workload " + (d / "fifo") + " --out " + (d / "o"), "not a regular file"},
      {"run --model llama2-7b --image 0 --out " + (d / "o"), "run: --image must be in [1, 2^40], found 0"},
      {"run --gemm 2147483648,2147483648,1 --out " + (d / "o"), "1 PiB"},
      {"run --gemm 4294967296,4294967296,4294967296 --out " + (d / "o"), "overflows"},
  };
  for (const auto& c : cases) {
    const CliResult r = tpusim(d, c.args);
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  }
}

TEST(HostileCli, RunsBeyondTheSimulatedTimeLimitStopAndSaySo) {
  TmpDir d;
  // A 100 us kernel launch before the first instruction: the run cannot
  // end within 10 us, with or without progress reporting, while the lower
  // bound checked up front (MXU and HBM work at peak, well under 1 us for
  // 256^3) lets it start.
  for (const char* quiet : {" --quiet", ""}) {
    const CliResult r = tpusim(d, std::string("run --gemm 256,256,256 --set kernel.launch_overhead=100us "
                                              "--max-sim-time 1e-5 --out ") +
                                      (d / "o") + quiet);
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("the run passed the simulated-time limit of 1e-05 s"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(d / "o/summary.csv"));
  }
  EXPECT_EQ(tpusim(d, "run --gemm 64,64,64 --max-sim-time nan --out " + (d / "o")).rc, 2);
  EXPECT_EQ(tpusim(d, "run --gemm 64,64,64 --max-sim-time 1e-3 --quiet --out " + (d / "o")).rc, 0);
}

// Running out of memory (here: 400 MB of address space, which a 256-token
// prefill of Llama 3 8B on one chip fits in and two 8192-token sequences,
// whose lowered program holds every instruction of the step, do not) is
// reported as such, exit 1, not as an internal error.
TEST(HostileCli, OutOfMemorySaysSo) {
  TmpDir d;
  const std::string limit = "ulimit -v 400000 &&";
  const std::string run = "run --arch v5p --model llama3-8b --phase prefill --quiet --out " + (d / "o");
  const CliResult small = tpusim::test::run_tpusim_in(d.p.string(), run + " --batch 1 --seq 256", limit);
  EXPECT_EQ(small.rc, 0) << small.err;
  const CliResult big = tpusim::test::run_tpusim_in(d.p.string(), run + " --batch 2 --seq 8192", limit);
  EXPECT_EQ(big.rc, 1) << big.err;
  EXPECT_NE(big.err.find("tpusim: out of memory: this simulation needs more memory"), std::string::npos) << big.err;
  EXPECT_EQ(big.err.find("internal error"), std::string::npos) << big.err;
}

// "A hard ceiling on simulated work": --max-events and the lower bound on
// simulated time refuse a program before anything is simulated.
TEST(HostileCli, WorkBeyondTheCeilingIsRefusedUpFront) {
  TmpDir d;
  const std::string run = "run --gemm 1024,1024,1024 --quiet --out " + (d / "o");
  const CliResult r = tpusim(d, run + " --max-events 1");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("raise --max-events"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(d / "o/summary.csv"));
  // The count in the message is the ceiling: exactly it runs, one less not.
  const auto at = r.err.find("the lowered program is ");
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string events = std::to_string(std::stoull(r.err.substr(at + 23)));
  EXPECT_EQ(tpusim(d, run + " --max-events " + events).rc, 0);
  EXPECT_EQ(tpusim(d, run + " --max-events " + std::to_string(std::stoull(events) - 1)).rc, 2);
  EXPECT_EQ(tpusim(d, run + " --max-events 0").rc, 0);  // no limit
  for (const char* bad : {"-1", "nan", "1.5", "1e30"}) {
    const CliResult b = tpusim(d, run + " --max-events " + bad);
    EXPECT_EQ(b.rc, 2) << bad;
    EXPECT_NE(b.err.find("--max-events"), std::string::npos) << b.err;
  }
  // The default HBM model counts every DMA request; where the calibrated
  // model (one event per transfer) would fit, the refusal says so, with
  // its count, which then runs.
  const std::string cal = " --set hbm.model=calibrated";
  const CliResult c1 = tpusim(d, run + cal + " --max-events 1");
  const auto cat = c1.err.find("the lowered program is ");
  ASSERT_NE(cat, std::string::npos) << c1.err;
  const std::string cal_events = std::to_string(std::stoull(c1.err.substr(cat + 23)));
  ASSERT_LT(std::stoull(cal_events), std::stoull(events));
  const CliResult suggest = tpusim(d, run + " --max-events " + cal_events);
  EXPECT_EQ(suggest.rc, 2) << suggest.err;
  EXPECT_NE(suggest.err.find("use the calibrated HBM model (--set hbm.model=calibrated: " + cal_events + " events"),
            std::string::npos)
      << suggest.err;
  EXPECT_EQ(r.err.find("calibrated HBM model"), std::string::npos) << r.err;  // 1 event: it would not fit either
  EXPECT_EQ(tpusim(d, run + cal + " --max-events " + cal_events).rc, 0);
  // 2 x 4096^3 FLOPs at v5e's peak (4 MXUs x 128 x 128 x 2 FLOP x 1.5 GHz
  // = 196.6 TFLOP/s) take at least 0.699 ms: a 0.5 ms limit is refused
  // before simulating, naming the flag.
  const CliResult t = tpusim(d, "run --arch v5e --gemm 4096,4096,4096 --quiet --max-sim-time 5e-4 --out " + (d / "o"));
  EXPECT_EQ(t.rc, 2) << t.err;
  EXPECT_NE(t.err.find("needs at least 0.000699 s of simulated time"), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("raise --max-sim-time"), std::string::npos) << t.err;
}

// total_cycles of a run's summary.csv (-1 when the run failed).
double run_cycles(const TmpDir& d, const std::string& args) {
  const CliResult r = tpusim(d, args + " --quiet --out " + (d / "c"));
  EXPECT_EQ(r.rc, 0) << args << "\n" << r.err;
  if (r.rc != 0) return -1;
  const std::string csv = slurp(d / "c/summary.csv");
  const auto header_end = csv.find('\n');
  std::vector<std::string> names, values;
  std::stringstream h(csv.substr(0, header_end)), v(csv.substr(header_end + 1));
  for (std::string x; std::getline(h, x, ',');) names.push_back(x);
  for (std::string x; std::getline(v, x, ',');) values.push_back(x);
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i)
    if (names[i] == "total_cycles") return std::stod(values[i]);
  ADD_FAILURE() << "no total_cycles in " << csv;
  return -1;
}

// Item 9: every config value affects the simulation or is rejected.
TEST(HostileCli, XluCountChangesTimingAndZeroRefusesCrossLaneWork) {
  TmpDir d;
  const std::string wl = "run --arch v5e --workload " + std::string(TPUSIM_SOURCE_DIR) + "/configs/workloads/attention_gqa.json";
  // Attention puts its row max and row sum on two XLUs side by side: one
  // XLU serialises them, more than two have nothing more to run.
  const double one = run_cycles(d, wl + " --set xlu.count=1"), two = run_cycles(d, wl + " --set xlu.count=2"),
               four = run_cycles(d, wl + " --set xlu.count=4");
  EXPECT_GT(one, two);
  EXPECT_LE(four, two);
  const CliResult none = tpusim(d, wl + " --set xlu.count=0 --quiet --out " + (d / "o"));
  EXPECT_EQ(none.rc, 2) << none.err;
  EXPECT_NE(none.err.find("needs cross-lane work"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("v5e has no XLU (xlu.count: 0)"), std::string::npos) << none.err;
  // A workload without cross-lane work runs on a chip without XLUs.
  EXPECT_EQ(tpusim(d, "run --arch v5e --gemm 256,256,256 --set xlu.count=0 --quiet --out " + (d / "o")).rc, 0);
}

TEST(HostileCli, VmemBandwidthAndGranuleChangeTiming) {
  TmpDir d;
  const std::string gemm = "run --arch v5e --gemm 1024,1024,1024";
  const double base = run_cycles(d, gemm);
  // v5e's VMEM feeds 4 x 4 KiB per cycle; a hundredth of it (245.76 GB/s,
  // 164 B/cycle at 1.5 GHz) starves the MXUs, the VPU epilogue and the
  // DMA's VMEM side alike.
  EXPECT_GT(run_cycles(d, gemm + " --set vmem.bandwidth=245.76GB/s"), 2 * base);
  // Twice the bandwidth changes nothing: VMEM was not the bound.
  EXPECT_EQ(run_cycles(d, gemm + " --set vmem.bandwidth=49.152TB/s"), base);
  // 64 KiB granules: every 4 KiB vreg or tile access moves 16 times its bytes.
  EXPECT_GT(run_cycles(d, gemm + " --set vmem.granule=64KiB"), base);
  EXPECT_EQ(run_cycles(d, gemm + " --set vmem.granule=1KiB"), base);  // divides 4 KiB: no waste
  // 1 B/s: the 2 MiB of each operand alone takes 2^21 s to pass VMEM, far
  // beyond the default one-hour simulated-time limit.
  const CliResult slow = tpusim(d, gemm + " --set vmem.bandwidth=1B/s --quiet --out " + (d / "o"));
  EXPECT_EQ(slow.rc, 2) << slow.err;
  EXPECT_NE(slow.err.find("simulated-time limit of 3600"), std::string::npos) << slow.err;
}

TEST(HostileCli, StdoutWriteErrorsExitNonZero) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  for (const std::string args : {"config show v5e", "list", "--help"}) {
    const std::string cmd = "'" + tpusim::test::tpusim_binary() + "' " + args + " >/dev/full 2>/dev/null";
    const int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << args << ": status " << status;
  }
}

// Item 10: SystemC's VCD writer ignores write errors; the run must not.
// out.vcd is a link to /dev/full, so every write fails with ENOSPC.
TEST(HostileCli, AVcdOnAFullDiskExitsNonZeroNamingThePath) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  TmpDir d;
  fs::create_symlink("/dev/full", d / "out.vcd");
  const CliResult r = tpusim(d, "run --gemm 256,256,256 --quiet --vcd " + (d / "out.vcd") + " --out " + (d / "o"));
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("cannot write the VCD file " + (d / "out.vcd")), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::strerror(ENOSPC)), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(d / "o/summary.csv"));
  // The same run into a real file writes the whole VCD: it ends after the
  // last value change, so a truncated copy would lack its final timestamp.
  const CliResult ok = tpusim(d, "run --gemm 256,256,256 --quiet --vcd " + (d / "w.vcd") + " --out " + (d / "o"));
  ASSERT_EQ(ok.rc, 0) << ok.err;
  const std::string vcd = slurp(d / "w.vcd");
  EXPECT_NE(vcd.find("$enddefinitions"), std::string::npos);
  EXPECT_NE(vcd.rfind("\n#"), std::string::npos);
}

TEST(HostileCli, ASecondRunIntoTheSameOutLeavesOnlyItsOwnFiles) {
  TmpDir d;
  ASSERT_EQ(tpusim(d, "run --gemm 64,64,64 --trace --quiet --out " + (d / "o")).rc, 0);
  ASSERT_TRUE(fs::exists(d / "o/trace.json"));
  const CliResult r = tpusim(d, "run --gemm 128,64,64 --quiet --out " + (d / "o"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(fs::exists(d / "o/trace.json"));  // the first run's, not this one's
  for (const char* f : {"summary.csv", "ops.csv", "units.csv", "config.effective.yaml"})
    EXPECT_TRUE(fs::exists(d / (std::string("o/") + f))) << f;
  for (const auto& e : fs::directory_iterator(d / "o"))
    EXPECT_EQ(e.path().filename().string().rfind(".staging", 0), std::string::npos) << e.path();
}

TEST(HostileCli, ConsumerBeforeProducerRuns) {
  TmpDir d;
  write(d / "rev.yaml",
        "tpusim_workload: 1\nname: rev\ntensors:\n  - {name: x, shape: [128, 256], dtype: bf16}\n"
        "  - {name: w, shape: [256, 128], dtype: bf16, kind: weight}\n"
        "ops:\n  - {name: act, op: relu, inputs: [mm]}\n  - {name: mm, op: matmul, inputs: [x, w]}\n");
  const CliResult r = tpusim(d, "run --workload " + (d / "rev.yaml") + " --quiet --out " + (d / "o"));
  EXPECT_EQ(r.rc, 0) << r.err;
}

TEST(HostileCli, CmemPlacementOnAChipWithoutCmemIsAnError) {
  TmpDir d;
  write(d / "c.yaml",
        "tpusim_workload: 1\nname: c\ntensors:\n  - {name: x, shape: [128, 128], dtype: bf16, space: cmem}\n"
        "ops:\n  - {name: r, op: relu, inputs: [x]}\n");
  const CliResult r = tpusim(d, "run --arch v5e --workload " + (d / "c.yaml") + " --quiet --out " + (d / "o"));
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("tensor 'x' (" + (d / "c.yaml") + ":4:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("v5e has no CMEM"), std::string::npos) << r.err;
  // v4 has CMEM: the hint is honoured; with --no-cmem it cannot be.
  EXPECT_EQ(tpusim(d, "run --arch v4 --workload " + (d / "c.yaml") + " --quiet --out " + (d / "o")).rc, 0);
  EXPECT_EQ(tpusim(d, "run --arch v4 --no-cmem --workload " + (d / "c.yaml") + " --quiet --out " + (d / "o")).rc, 2);
}

const char* kSpec = R"(name: two
base: {arch: v5e, gemm: "128,128,128", set: {published.peak_tflops: '~'}}
axes:
  grid:
    arch.mxu.count: [2, 4]
)";

TEST(HostileCli, ASweepRefusesASecondWriterOfItsDirectory) {
  TmpDir d;
  write(d / "s.yaml", kSpec);
  fs::create_directories(d / "out");
  // Stands for a first sweep still running in out/ (it holds the lock).
  const int fd = ::open((d / "out/.sweep.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  const CliResult r = tpusim(d, "sweep " + (d / "s.yaml") + " --resume --quiet --out " + (d / "out"));
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("another tpusim sweep running in it"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(d / "out/results.csv"));
  ::close(fd);  // the first sweep ends: the lock goes with it
  const CliResult r2 = tpusim(d, "sweep " + (d / "s.yaml") + " --resume --quiet --out " + (d / "out"));
  EXPECT_EQ(r2.rc, 0) << r2.err;
  EXPECT_EQ(sweep::read_results(d / "out/results.csv").rows.size(), 2u);
}

TEST(HostileCli, ResumeRemovesDuplicateRowsAndStatusFailsOnThem) {
  TmpDir d;
  write(d / "s.yaml", kSpec);
  ASSERT_EQ(tpusim(d, "sweep " + (d / "s.yaml") + " --quiet --out " + (d / "out")).rc, 0);
  const std::string csv = slurp(d / "out/results.csv");
  const std::string last_row = csv.substr(csv.rfind('\n', csv.size() - 2) + 1);
  std::ofstream(d / "out/results.csv", std::ios::app) << last_row;  // one point twice
  ASSERT_EQ(sweep::read_results(d / "out/results.csv").rows.size(), 3u);
  const CliResult st = tpusim(d, "sweep status " + (d / "s.yaml") + " " + (d / "out"));
  EXPECT_EQ(st.rc, 1) << st.out;
  EXPECT_NE(st.out.find("duplicated points"), std::string::npos) << st.out;
  const CliResult r = tpusim(d, "sweep " + (d / "s.yaml") + " --resume --out " + (d / "out"));
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("1 duplicate row(s) removed"), std::string::npos) << r.err;
  EXPECT_EQ(sweep::read_results(d / "out/results.csv").rows.size(), 2u);
  EXPECT_EQ(tpusim(d, "sweep status " + (d / "s.yaml") + " " + (d / "out")).rc, 0);
  fs::remove(d / "out/results.csv");
  const CliResult gap = tpusim(d, "sweep status " + (d / "s.yaml") + " " + (d / "out"));
  EXPECT_EQ(gap.rc, 1) << gap.out;  // every point missing
}

TEST(HostileCli, StringArithmeticInADerivedColumnIsAnErrorRow) {
  TmpDir d;
  write(d / "s.yaml", std::string(kSpec) + "derived:\n  bad: workload.dtype + 1\n");
  const CliResult r = tpusim(d, "sweep " + (d / "s.yaml") + " --quiet --out " + (d / "out"));
  EXPECT_EQ(r.rc, 0) << r.err;
  const auto f = sweep::read_results(d / "out/results.csv");
  ASSERT_EQ(f.rows.size(), 2u);
  const auto& h = f.header;
  const auto col = [&](const char* n) {
    return static_cast<std::size_t>(std::find(h.begin(), h.end(), n) - h.begin());
  };
  for (const auto& row : f.rows) {
    EXPECT_EQ(row.at(col("status")), "error");
    EXPECT_NE(row.at(col("message")).find("derived column 'bad'"), std::string::npos) << row.at(col("message"));
    EXPECT_FALSE(row.at(col("total_cycles")).empty());  // the run's metrics stay
  }
}

TEST(HostileCli, SlurmAndSweepOptionsThatCouldHurtAreRefused) {
  TmpDir d;
  write(d / "s.yaml", kSpec);
  write(d / "nl.yaml", std::string("name: \"x\\necho INJECTED\"\n") + (kSpec + std::string(kSpec).find('\n') + 1));
  struct C {
    std::string args, expect;
  } cases[] = {
      {"sweep slurm " + (d / "nl.yaml") + " --shards 2 --out " + (d / "c1"), "control characters"},
      {"sweep slurm " + (d / "s.yaml") + " --shards 1000000000 --out " + (d / "c2"), "more than the spec's 2 points"},
      {"sweep slurm " + (d / "s.yaml") + " --shards 2 --job-name 'a b' --out " + (d / "c3"), "job name"},
      {"sweep slurm " + (d / "s.yaml") + " --shards 2 --point-timeout nan --out " + (d / "c4"), "--point-timeout"},
      {"sweep " + (d / "s.yaml") + " --point-timeout nan --out " + (d / "c5"), "--point-timeout"},
  };
  for (const auto& c : cases) {
    const CliResult r = tpusim(d, c.args);
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
  }
  EXPECT_FALSE(fs::exists(d / "c1/sweep.sbatch"));
}

}  // namespace
}  // namespace tpusim::sim
