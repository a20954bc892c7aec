// A collective's roofline (ops.csv roofline_cycles) sends what a chip
// receives over the links it has within the collective's group: two per
// wrapping axis (a ring), one per axis without wraparound (a line, whose
// end chips have one), summed over the group's axes and at most all the
// ports. On v6e with nominal links and no start-up (the run sets
// ici.link_efficiency=1 and ici.collective_latency=0us; v6e's measured
// 0.967 and 4.4 us would put every collective 3.4% and more above the
// nominal roofline) a single-axis collective then runs within a few
// percent of its roofline, on a line as on a ring, and never below it.
#include <gtest/gtest.h>

#include <string>

#include "../unit/sim/config_test_util.h"
#include "cli_test_util.h"
#include "csv_rows.h"
#include "sim/config/config_loader.h"

namespace {

using tpusim::sim::testing::TempDir;
using tpusim::test::rows_of;

constexpr double kBytes = 8192.0 * 8192 * 2;  // one bf16 [8192, 8192] buffer per chip

struct Row {
  double cycles = 0, roofline = 0;
};

// One collective `op` over `axes` of the mesh `a=A,b=B` on `slice`.
Row run_one(const std::string& slice, int a, int b, const std::string& op, const std::string& axes) {
  TempDir d;
  const std::string dim = op == "all_reduce" ? "" : ", dim: 0";
  d.write("w.yaml", "tpusim_workload: 1\nname: one\nmesh: {a: " + std::to_string(a) + ", b: " + std::to_string(b) +
                        "}\ntensors:\n  - {name: x, shape: [8192, 8192], dtype: bf16, kind: input}\nops:\n"
                        "  - {name: c, op: " +
                        op + ", inputs: [x], mesh_axes: [" + axes + "]" + dim + "}\n");
  const auto r = tpusim::test::run_tpusim_in(d.path(), "run --arch v6e --workload " + d.path() + "/w.yaml --slice " +
                                                           slice + " --mesh a=" + std::to_string(a) +
                                                           ",b=" + std::to_string(b) +
                                                           " --set ici.link_efficiency=1 --set ici.collective_latency=0us"
                                                           " --out " + d.path() + "/out");
  EXPECT_EQ(r.rc, 0) << r.err;
  Row row;
  for (const auto& o : rows_of(d.path() + "/out/ops.csv"))
    if (o.at("name") == "c") {
      row.cycles = std::stod(o.at("cycles"));
      row.roofline = std::stod(o.at("roofline_cycles"));
    }
  return row;
}

double cycles_of(double bytes_over_links, int links) {
  const auto cfg = tpusim::sim::load_tpu_config("v6e");
  return bytes_over_links / (links * cfg.ici.link_bandwidth) * cfg.chip.clock_hz;
}

// The row's roofline is `bytes` over `links` links, and its time is at
// least that, and (slack > 0) under slack x that.
void expect_bound(const Row& r, double bytes, int links, double slack = 0) {
  EXPECT_NEAR(r.roofline, cycles_of(bytes, links), 1.0);
  EXPECT_GE(r.cycles, r.roofline);
  if (slack > 0) {
    EXPECT_LT(r.cycles, slack * r.roofline);
  }
}

}  // namespace

TEST(CliCollectiveRoofline, ALineCountsOneLinkAndItsCollectivesReachIt) {
  // 2x4 (v6e wraps only at 16): b is a line of four. A reduce-scatter
  // receives 3/4 of the buffer, an all-reduce twice that, over one link.
  expect_bound(run_one("2x4", 2, 4, "reduce_scatter", "b"), 0.75 * kBytes, 1, 1.02);
  expect_bound(run_one("2x4", 2, 4, "all_reduce", "b"), 1.5 * kBytes, 1, 1.02);
  // Over both axes: one link on each line, two in all.
  expect_bound(run_one("2x4", 2, 4, "all_reduce", "a, b"), 2 * 0.875 * kBytes, 2);
}

TEST(CliCollectiveRoofline, ARingCountsTwoLinks) {
  // 16x16 wraps: a ring of 16 on each axis, two links per chip.
  // all_gather's buffer is its output, 16 shards of the input.
  expect_bound(run_one("16x16", 16, 16, "all_gather", "a"), 15.0 * kBytes, 2, 1.1);
  // Both axes: four links, all of v6e's ports.
  expect_bound(run_one("16x16", 16, 16, "all_reduce", "a, b"), 2 * 255.0 / 256 * kBytes, 4);
}
