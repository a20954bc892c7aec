// `tpusim compare --run-a ARGS --run-b ARGS`: both sides simulated on the
// spot as `tpusim run` children; the comparison must equal the one of two
// folders written by `tpusim run` itself with the same arguments.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "../unit/sim/config_test_util.h"
#include "cli_test_util.h"
#include "csv_rows.h"

namespace {

using tpusim::sim::testing::TempDir;

TEST(CliCompareRun, RunsBothSidesAndMatchesFolders) {
  TempDir t;
  const std::string a = "--arch v5e --gemm 1024,2048,512", b = "--arch v6e --gemm 1024,2048,512";
  auto run = [&](const std::string& args) { return tpusim::test::run_tpusim_in(t.path(), args); };
  ASSERT_EQ(run("compare --run-a '" + a + "' --run-b '" + b + "' --out " + t.path() + "/spot").rc, 0);
  ASSERT_EQ(run("run " + a + " --quiet --out " + t.path() + "/ra").rc, 0);
  ASSERT_EQ(run("run " + b + " --quiet --out " + t.path() + "/rb").rc, 0);
  ASSERT_EQ(run("compare " + t.path() + "/ra " + t.path() + "/rb --out " + t.path() + "/dirs").rc, 0);
  const auto spot = tpusim::test::rows_of(t.path() + "/spot/compare.csv");
  const auto dirs = tpusim::test::rows_of(t.path() + "/dirs/compare.csv");
  ASSERT_EQ(spot.size(), dirs.size());
  ASSERT_GT(spot.size(), 5u);
  for (std::size_t i = 0; i < spot.size(); ++i)
    for (const char* k : {"section", "name", "a", "b", "delta", "ratio"}) EXPECT_EQ(spot[i].at(k), dirs[i].at(k)) << i;
  // The v5e side is the one given as run a.
  const auto sum = tpusim::test::rows_of(t.path() + "/spot/a/summary.csv");
  EXPECT_EQ(sum.at(0).at("arch"), "v5e");
}

TEST(CliCompareRun, AFailedRunNamesItsSide) {
  TempDir t;
  const auto r = tpusim::test::run_tpusim_in(
      t.path(), "compare --run-a '--arch v5e --gemm 64,64,64' --run-b '--arch nosuchchip --gemm 64,64,64' --out " +
                    t.path() + "/o");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("run b failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nosuchchip"), std::string::npos) << r.err;
  const auto both = tpusim::test::run_tpusim_in(t.path(), "compare " + t.path() + " --run-a '--arch v5e' --out " + t.path() + "/o2");
  EXPECT_EQ(both.rc, 2);
  EXPECT_NE(both.err.find("not both"), std::string::npos) << both.err;
}

}  // namespace
