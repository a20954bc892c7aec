// `tpusim run --all-chips` against the default shared mode (one simulated
// chip standing for all), through the executable: two runs, two
// processes, since SystemC elaborates once per process.
//
// Expected relations. In shared mode the chip waits for each collective
// until its last message has landed anywhere on the slice, i.e. until the
// latest of the per-chip completions. With --all-chips the chip whose part
// completes last (the slowest chip) therefore has exactly the shared
// chip's timeline: same program, same start, same collective completion,
// and the same compute afterwards on identical hardware. Other chips can
// only complete earlier and go on earlier. So summary.csv and ops.csv,
// which report the slowest chip, equal the shared run's; the chips' own
// ends differ when the slice is asymmetric (an axis without wraparound)
// and coincide on a ring (a wrapping axis: every chip alike).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "../unit/sim/config_test_util.h"
#include "cli_test_util.h"

namespace {

using tpusim::sim::testing::TempDir;

using tpusim::test::slurp;

struct Result {
  int rc = -1;
  std::string err;
};

Result run_tpusim(const std::string& args, const TempDir& d) {
  const tpusim::test::CliResult r = tpusim::test::run_tpusim_in(d.path(), args);
  return {r.rc, r.err};
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string f;
  while (std::getline(ss, f, sep)) v.push_back(f);
  return v;
}

// summary.csv without its sim_wall_seconds column (host time varies).
std::string summary_without_wall(const std::string& file) {
  const auto lines = split(slurp(file), '\n');
  const auto h = split(lines.at(0), ','), r = split(lines.at(1), ',');
  std::string out;
  for (std::size_t i = 0; i < h.size() && i < r.size(); ++i)
    if (h[i] != "sim_wall_seconds") out += h[i] + "=" + r[i] + ";";
  return out;
}

// units.csv value of block,stat (-1 when absent).
double unit_stat(const std::string& file, const std::string& block, const std::string& stat) {
  for (const std::string& line : split(slurp(file), '\n')) {
    const auto f = split(line, ',');
    if (f.size() >= 3 && f[0] == block && f[1] == stat) return std::stod(f[2]);
  }
  return -1;
}

// An all_reduce over `axis`, then a matmul on its result.
std::string workload(int nx, int ny, const std::string& axis) {
  return "tpusim_workload: 1\nname: ar_mm\nmesh: {x: " + std::to_string(nx) + ", y: " + std::to_string(ny) +
         "}\ntensors:\n"
         "  - {name: g, shape: [512, 1024], dtype: bf16, kind: input}\n"
         "  - {name: w, shape: [1024, 1024], dtype: bf16, kind: weight}\n"
         "ops:\n"
         "  - {name: ar, op: all_reduce, inputs: [g], mesh_axes: [" +
         axis +
         "]}\n"
         "  - {name: mm, op: matmul, inputs: [ar, w]}\n";
}

void compare(const std::string& slice, int nx, int ny, const std::string& axis, bool symmetric) {
  TempDir d;
  const std::string wl = d.write("wl.yaml", workload(nx, ny, axis));
  const std::string args = "run --arch v5e --workload " + wl + " --slice " + slice + " --quiet --out " + d.path();
  ASSERT_EQ(run_tpusim(args + "/shared", d).rc, 0);
  const Result all = run_tpusim(args + "/all --all-chips", d);
  ASSERT_EQ(all.rc, 0) << all.err;
  EXPECT_EQ(summary_without_wall(d.path() + "/shared/summary.csv"),
            summary_without_wall(d.path() + "/all/summary.csv"));
  EXPECT_EQ(slurp(d.path() + "/shared/ops.csv"), slurp(d.path() + "/all/ops.csv"));
  const std::string units = d.path() + "/all/units.csv";
  const double spread = unit_stat(units, "chips", "end_spread_cycles");
  if (symmetric) {
    EXPECT_EQ(spread, 0.0);
  } else {
    EXPECT_GT(spread, 0.0);
  }
  // Every chip's blocks, prefixed; the shared run has them unprefixed.
  EXPECT_GT(unit_stat(units, "chip" + std::to_string(nx * ny - 1) + ".tc0.sequencer", "instructions"), 0.0);
  EXPECT_EQ(unit_stat(units, "tc0.sequencer", "instructions"), -1.0);
  EXPECT_GT(unit_stat(d.path() + "/shared/units.csv", "tc0.sequencer", "instructions"), 0.0);
}

}  // namespace

TEST(CliAllChips, RingAxisGivesTheSharedResultAndNoSpread) {
  // v5e 16x2: the x axis (length 16) wraps.
  compare("16x2", 16, 2, "x", true);
}

TEST(CliAllChips, LineAxisDriftsButTheSlowestChipIsTheSharedOne) {
  // v5e 4x4: no axis wraps (only length 16 does).
  compare("4x4", 4, 4, "x", false);
}

TEST(CliAllChips, RefusedOnLargeSlicesAndWithoutASlice) {
  TempDir d;
  const std::string wl = d.write("wl.yaml", workload(16, 16, "x"));
  const Result big =
      run_tpusim("run --arch v5e --workload " + wl + " --slice 16x16 --all-chips --out " + d.path() + "/o", d);
  EXPECT_EQ(big.rc, 2);
  EXPECT_NE(big.err.find("256 chips"), std::string::npos) << big.err;
  EXPECT_NE(big.err.find("64"), std::string::npos) << big.err;
  const Result none = run_tpusim("run --arch v5e --gemm 64,64,64 --all-chips --out " + d.path() + "/o", d);
  EXPECT_EQ(none.rc, 2);
  EXPECT_NE(none.err.find("--all-chips needs --slice"), std::string::npos) << none.err;
}
