// `tpusim sweep` end to end through the binary ($TPUSIM_BINARY) with small
// --gemm points (a tenth of a second each): rows for valid, invalid and
// timed-out points; a sweep killed with SIGKILL mid-run and resumed gives
// every point exactly once with the config digest the spec predicts;
// shards + merge reproduce the single-machine sweep; merge refuses
// duplicates and reports gaps; status and the Slurm script.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "cli_test_util.h"
#include "sim/sweep/results_table.h"
#include "sim/sweep/sweep_spec.h"

namespace tpusim::sim::sweep {
namespace {

namespace fs = std::filesystem;

using tpusim::test::tpusim_binary;

struct TmpDir : tpusim::test::TmpDir {
  TmpDir() : tpusim::test::TmpDir("tpusim_sweep_cli_") {}
};

using tpusim::test::slurp;
using Result = tpusim::test::CliResult;

Result tpusim(const TmpDir& d, const std::string& args) { return tpusim::test::run_tpusim_in(d.p.string(), args); }

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Rows of results.csv by point id, failing on a duplicate id.
std::map<std::string, std::map<std::string, std::string>> rows_by_id(const std::string& path) {
  ResultsFile f = read_results(path);
  EXPECT_EQ(f.dropped, 0u) << path;
  std::map<std::string, std::map<std::string, std::string>> m;
  for (const auto& r : f.rows) {
    std::map<std::string, std::string> cells;
    for (std::size_t i = 0; i < f.header.size(); ++i) cells[f.header[i]] = r[i];
    EXPECT_TRUE(m.emplace(r[0], cells).second) << "point " << r[0] << " twice in " << path;
  }
  return m;
}

// The spec's own view: id -> predicted config digest (or "" when invalid).
std::map<std::string, std::string> predicted(const std::string& spec_path) {
  const SweepSpec s = load_sweep_spec(spec_path);
  std::map<std::string, std::string> m;
  for (const auto& pp : prepare_points(s, default_search_path())) m[pp.point->id] = pp.config_hash;
  return m;
}

// 12 gemm points: 3 sizes x 2 dtypes x 2 MXU counts (published peak
// dropped so that mxu.count may change).
const char* kGemmSpec = R"(name: gemm12
base:
  arch: v5e
  gemm: 128,128,128
  set: {published.peak_tflops: '~'}
axes:
  grid:
    workload.gemm: ["128,128,128", "256,256,256", "128,512,256"]
    workload.dtype: [bf16, int8]
    arch.mxu.count: [2, 4]
derived:
  tflops_per_mxu: achieved_tflops / arch.mxu.count
)";

// The third point runs an 8192^3 gemm on the detailed HBM model (13 s of
// CPU on the project machine), far beyond the 1 s point timeout.
TEST(SweepCli, ValidInvalidAndTimedOutPointsEachGetARow) {
  TmpDir d;
  write(d / "s.yaml", R"(base: {arch: v5e, gemm: "128,128,128", set: {published.peak_tflops: '~'}}
axes:
  points:
    - {arch.mxu.rows: 128}
    - {arch.mxu.rows: 0}
    - {arch.mxu.rows: 256, arch.hbm.model: detailed, workload.gemm: "8192,8192,8192"}
derived:
  util_x100: mxu_utilization * 100
)");
  Result r = tpusim(d, "sweep " + (d / "s.yaml") + " --out " + (d / "out") + " --jobs 2 --point-timeout 1 --quiet");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto rows = rows_by_id(d / "out/results.csv");
  auto pred = predicted(d / "s.yaml");
  ASSERT_EQ(rows.size(), 3u);
  int ok = 0, config_err = 0, timeout = 0;
  for (auto& [id, row] : rows) {
    EXPECT_EQ(row["config_hash"], pred.at(id));
    if (row["status"] == "ok") {
      ++ok;
      EXPECT_EQ(row["arch.mxu.rows"], "128");
      EXPECT_GT(std::stod(row["total_cycles"]), 0);
      // The derived column is computed from the metric of the same row.
      EXPECT_NEAR(std::stod(row["util_x100"]), std::stod(row["mxu_utilization"]) * 100, 1e-3);
    } else if (row["message"].find("mxu.rows") != std::string::npos) {
      ++config_err;
      EXPECT_EQ(row["status"], "error");
      EXPECT_EQ(row["total_cycles"], "");
      EXPECT_EQ(row["util_x100"], "");
    } else {
      ++timeout;
      EXPECT_EQ(row["status"], "error");
      EXPECT_NE(row["message"].find("timeout"), std::string::npos) << row["message"];
    }
  }
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(config_err, 1);
  EXPECT_EQ(timeout, 1);
  EXPECT_FALSE(fs::exists(d / "out/runs")) << "run folders are removed without --keep-runs";
  // A second run into the same folder without --resume is refused.
  EXPECT_EQ(tpusim(d, "sweep " + (d / "s.yaml") + " --out " + (d / "out") + " --quiet").rc, 2);
}

// A model point without model.phase runs the phase `tpusim run` takes
// unsaid: decode for a decoder, infer for a ResNet (which has no decode),
// both in one sweep; the row carries the workload of that phase, and an
// expression reading model.phase reads that phase.
TEST(SweepCli, ModelPointsWithoutPhaseTakeTheFamilysOwn) {
  TmpDir d;
  write(d / "s.yaml", R"(base: {arch: v5e, batch: 1}
axes:
  grid:
    model.name: [resnet50, )" +
                          std::string(TPUSIM_SOURCE_DIR) + R"(/models/examples/custom-3000.yaml]
derived:
  infers: model.phase == "infer"
)");
  Result r = tpusim(d, "sweep " + (d / "s.yaml") + " --out " + (d / "out") + " --jobs 2 --quiet");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto rows = rows_by_id(d / "out/results.csv");
  ASSERT_EQ(rows.size(), 2u);
  std::set<std::string> workloads;
  for (auto& [id, row] : rows) {
    EXPECT_EQ(row["status"], "ok") << row["message"];
    workloads.insert(row["workload"]);
    // An expression reads the phase the point ran.
    EXPECT_EQ(row["infers"], row["workload"] == "resnet50.infer" ? "1" : "0") << row["workload"];
  }
  EXPECT_EQ(workloads.count("resnet50.infer"), 1u);
  EXPECT_EQ(std::count_if(workloads.begin(), workloads.end(),
                          [](const std::string& w) { return w.find(".decode") != std::string::npos; }),
            1);
}

TEST(SweepCli, RetryFailedRunsOnlyTheErrorRowsAgain) {
  TmpDir d;
  write(d / "s.yaml", R"(base: {arch: v5e, gemm: "128,128,128"}
axes:
  points:
    - {workload.gemm: "128,128,128"}
    - {workload.gemm: "128,256,128"}
)");
  const std::string base = "sweep " + (d / "s.yaml") + " --out " + (d / "out") + " --jobs 1 --quiet";
  // A timeout far below a process start makes both points error rows.
  ASSERT_EQ(tpusim(d, base + " --point-timeout 0.000001").rc, 0);
  auto before = rows_by_id(d / "out/results.csv");
  ASSERT_EQ(before.size(), 2u);
  for (auto& [id, row] : before) ASSERT_EQ(row["status"], "error") << id;
  // --resume alone keeps error rows: nothing runs.
  ASSERT_EQ(tpusim(d, base + " --resume").rc, 0);
  EXPECT_EQ(rows_by_id(d / "out/results.csv"), before);
  // --retry-failed without --resume is a usage error.
  EXPECT_EQ(tpusim(d, base + " --retry-failed").rc, 2);
  // With it, both run again and become ok rows, each point still once.
  Result r = tpusim(d, "sweep " + (d / "s.yaml") + " --out " + (d / "out") + " --jobs 1 --resume --retry-failed");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("2 failed point(s) retried"), std::string::npos) << r.err;
  auto after = rows_by_id(d / "out/results.csv");
  ASSERT_EQ(after.size(), 2u);
  for (auto& [id, row] : after) {
    EXPECT_EQ(row["status"], "ok") << id << ": " << row["message"];
    EXPECT_GT(std::stod(row["total_cycles"]), 0);
  }
  // Ok rows are never rerun: a second retry changes nothing.
  ASSERT_EQ(tpusim(d, base + " --resume --retry-failed").rc, 0);
  auto again = rows_by_id(d / "out/results.csv");
  for (auto& [id, row] : again) row.erase("sim_wall_seconds");
  for (auto& [id, row] : after) row.erase("sim_wall_seconds");
  EXPECT_EQ(again, after);
}

TEST(SweepCli, KilledWithSigkillAndResumedGivesEveryPointOnce) {
  TmpDir d;
  write(d / "s.yaml", kGemmSpec);
  const std::string csv = d / "out/results.csv";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string bin = tpusim_binary(), spec = d / "s.yaml", out = d / "out";
    ::freopen("/dev/null", "w", stderr);
    ::execl(bin.c_str(), bin.c_str(), "sweep", spec.c_str(), "--out", out.c_str(), "--jobs", "1", "--keep-runs",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Kill once a few rows are in, well before the 12th.
  std::size_t rows_at_kill = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    rows_at_kill = read_results(csv).rows.size();
    if (rows_at_kill >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the sweep finished before it could be killed";
  const std::size_t before = read_results(csv).rows.size();
  ASSERT_GE(before, 3u);
  ASSERT_LT(before, 12u);
  // As if the kill had hit in the middle of a write: a torn last line.
  { std::ofstream(csv, std::ios::app) << "pdeadbeef0000,0123"; }

  Result r = tpusim(d, "sweep " + (d / "s.yaml") + " --out " + (d / "out") + " --resume --jobs 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find(std::to_string(before) + " already done"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1 torn line(s) dropped"), std::string::npos) << r.err;
  auto rows = rows_by_id(csv);
  auto pred = predicted(d / "s.yaml");
  ASSERT_EQ(rows.size(), 12u);
  std::set<std::string> hashes;
  for (auto& [id, row] : rows) {
    ASSERT_TRUE(pred.count(id)) << id;
    EXPECT_EQ(row["status"], "ok") << row["message"];
    // Digest of the resolved config: the one predicted for this point.
    EXPECT_EQ(row["config_hash"], pred[id]);
    hashes.insert(row["config_hash"]);
  }
  EXPECT_EQ(hashes.size(), 2u) << "two chips (mxu.count 2 and 4)";
  // The header is written once and rows end up in spec order.
  const std::string text = slurp(csv);
  EXPECT_EQ(text.find("point,"), 0u);
  EXPECT_EQ(text.find("\npoint,"), std::string::npos);
  const SweepSpec s = load_sweep_spec(d / "s.yaml");
  ResultsFile f = read_results(csv);
  for (std::size_t i = 0; i < f.rows.size(); ++i) EXPECT_EQ(f.rows[i][0], s.points[i].id);
}

TEST(SweepCli, ShardsMergeToTheSameRowsAndMergeChecksInputs) {
  TmpDir d;
  write(d / "s.yaml", kGemmSpec);
  const std::string spec = d / "s.yaml";
  for (int i = 0; i < 3; ++i) {
    Result r = tpusim(d, "sweep " + spec + " --shard " + std::to_string(i) + "/3 --out " + (d / "shard-") +
                             std::to_string(i) + " --jobs 2 --quiet");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(read_results(d / ("shard-" + std::to_string(i) + "/results.csv")).rows.size(), 4u);
  }
  Result st = tpusim(d, "sweep status " + spec + " " + d.p.string() + " --shards 3");
  EXPECT_EQ(st.rc, 0);
  EXPECT_NE(st.out.find("done:    12 (12 ok, 0 failed)"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("missing: 0"), std::string::npos) << st.out;

  Result m = tpusim(d, "sweep merge " + spec + " --out " + (d / "merged") + " " + (d / "shard-0") + " " +
                           (d / "shard-1") + " " + (d / "shard-2"));
  ASSERT_EQ(m.rc, 0) << m.err;
  auto merged = rows_by_id(d / "merged/results.csv");
  auto pred = predicted(spec);
  ASSERT_EQ(merged.size(), 12u);
  for (auto& [id, row] : merged) EXPECT_EQ(row["config_hash"], pred.at(id));

  // Duplicate input: refused, nothing written.
  Result dup = tpusim(d, "sweep merge " + spec + " --out " + (d / "dup") + " " + (d / "shard-0") + " " +
                             (d / "shard-1") + " " + (d / "shard-0/results.csv") + " " + (d / "shard-2"));
  EXPECT_EQ(dup.rc, 2);
  EXPECT_NE(dup.err.find("more than one input"), std::string::npos) << dup.err;
  EXPECT_FALSE(fs::exists(d / "dup/results.csv"));

  // A missing shard: merged, with the gap named.
  Result gap =
      tpusim(d, "sweep merge " + spec + " --out " + (d / "gap") + " " + (d / "shard-0") + " " + (d / "shard-2"));
  EXPECT_EQ(gap.rc, 1);
  EXPECT_NE(gap.err.find("4 point(s) missing"), std::string::npos) << gap.err;
  const SweepSpec s = load_sweep_spec(spec);
  for (const auto& p : s.points)
    if (in_shard(p, 1, 3)) {
      EXPECT_NE(gap.err.find(p.id), std::string::npos) << p.id;
    }
  fs::remove_all(d / "shard-1");
  Result st2 = tpusim(d, "sweep status " + spec + " " + d.p.string() + " --shards 3");
  EXPECT_NE(st2.out.find("missing: 4"), std::string::npos) << st2.out;
  EXPECT_NE(st2.out.find("sbatch --array=1 "), std::string::npos) << st2.out;
}

TEST(SweepCli, SlurmScriptRunsEachShardWithResume) {
  TmpDir d;
  write(d / "s.yaml", kGemmSpec);
  Result r = tpusim(d, "sweep slurm " + (d / "s.yaml") + " --shards 4 --out " + (d / "cl"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string script = slurp(d / "cl/sweep.sbatch");
  EXPECT_NE(script.find("#SBATCH --array=0-3\n"), std::string::npos) << script;
  EXPECT_NE(script.find("--shard \"$TASK/4\" --resume"), std::string::npos) << script;
  EXPECT_NE(script.find("/shard-\"$TASK\""), std::string::npos) << script;
  EXPECT_TRUE(fs::is_directory(d / "cl/logs"));
  // Running the script by hand as task 2 does shard 2 of 4 (3 points).
  const std::string cmd =
      "SLURM_ARRAY_TASK_ID=2 SLURM_CPUS_PER_TASK=2 bash " + (d / "cl/sweep.sbatch") + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(read_results(d / "cl/shard-2/results.csv").rows.size(), 3u);
}

// The shipped Pallas block sweep (configs/sweeps/pallas_blocks.yaml): a
// 4096^3 GEMM with fixed blocks on v5e and v6e. The blocks over a chip's
// scoped VMEM are error rows naming the op and its blocks; every fixed-block
// point takes at least the searched blocks' time on its chip, and on each
// chip 128^3 blocks (32,768 grid steps) are the slowest.
TEST(SweepCli, ShippedPallasBlockSweep) {
  TmpDir d;
  const std::string spec = std::string(TPUSIM_SOURCE_DIR) + "/configs/sweeps/pallas_blocks.yaml";
  Result r = tpusim(d, "sweep " + spec + " --out " + (d / "out") + " --jobs 2 --quiet");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto rows = rows_by_id(d / "out/results.csv");
  ASSERT_EQ(rows.size(), 14u);
  std::map<std::string, double> searched, slowest;
  std::map<std::string, std::string> slowest_spec;
  int errors = 0;
  for (auto& [id, row] : rows) {
    const std::string& arch = row["arch"];
    if (row["status"] != "ok") {
      ++errors;
      EXPECT_NE(row["message"].find("the blocks c fixes (block_m 2048, block_k 512, block_n 2048"), std::string::npos)
          << row["message"];
      continue;
    }
    const double t = std::stod(row["seconds"]);
    if (row["workload.gemm"].find("bm=") == std::string::npos) {
      searched[arch] = t;
    } else if (t > slowest[arch]) {
      slowest[arch] = t;
      slowest_spec[arch] = row["workload.gemm"];
    }
  }
  EXPECT_EQ(errors, 2);
  for (auto& [id, row] : rows) {
    if (row["status"] == "ok") {
      EXPECT_GE(std::stod(row["seconds"]), searched[row["arch"]]) << row["workload.gemm"];
    }
  }
  for (const char* arch : {"v5e", "v6e"}) {
    ASSERT_GT(searched[arch], 0) << arch;
    EXPECT_EQ(slowest_spec[arch], "m=4096,k=4096,n=4096,bm=128,bk=128,bn=128") << arch;
  }
}

}  // namespace
}  // namespace tpusim::sim::sweep
