// `tpusim suite run` and `tpusim suite diff` end to end with the two-layer
// decoder of models/examples/tiny-decoder.yaml (steps simulate in
// milliseconds): a scenario's row is the summary of the `tpusim serve` run
// it stands for, a server scenario's rate meets its limits, tables diff
// cell by cell (exit 1 on a difference), and malformed suite files are
// errors naming file, line and key. Also: a failing step simulation of
// `tpusim serve` is reported with the child's message, not as an internal
// error.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "csv_rows.h"

namespace {

using tpusim::test::CliResult;
using tpusim::test::run_tpusim_in;
using tpusim::test::slurp;
using tpusim::test::TmpDir;

const std::string kModel = TPUSIM_SOURCE_DIR "/models/examples/tiny-decoder.yaml";

std::string suite_text() {
  return "suite: t\n"
         "defaults:\n"
         "  model: " +
         kModel +
         "\n"
         "  requests: 24\n"
         "  max_batch: 4\n"
         "  max_tokens: 64\n"
         "scenarios:\n"
         "  - name: off\n"
         "    scenario: offline\n"
         "    input: fixed:32\n"
         "    output: fixed:16\n"
         "  - name: srv\n"
         "    scenario: server\n"
         "    input: fixed:32\n"
         "    output: fixed:16\n"
         "    slo: ttft_p99=1ms,tpot_p99=1ms\n"
         "    rate: 100\n";
}

// CSV text into rows of fields (quoted fields keep their commas).
std::vector<std::vector<std::string>> fields(const std::string& file) {
  return tpusim::sim::sweep::parse_csv(slurp(file));
}

struct Suite {
  TmpDir d{"cli_suite_"};
  Suite() { std::ofstream(d / "s.yaml") << suite_text(); }
  CliResult run(const std::string& extra, const std::string& out = "out") {
    return run_tpusim_in(d.p.string(), "suite run " + (d / "s.yaml") + " --jobs 2 --quiet --out " + (d / out) +
                                           " --step-cache " + (d / "cache.txt") + " " + extra);
  }
};

TEST(CliSuite, EachScenarioIsAServeRunAndTheTableHoldsItsSummary) {
  Suite s;
  const CliResult r = s.run("");
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  const auto t = tpusim::test::rows_of(s.d / "out/suite.csv");
  ASSERT_EQ(t.size(), 2u);
  const auto& off = t[0];
  const auto& srv = t[1];
  EXPECT_EQ(off.at("scenario"), "off");
  EXPECT_EQ(off.at("kind"), "offline");
  EXPECT_EQ(off.at("model"), "tiny-decoder");
  // The offline row is the summary of the serve run it names, written to
  // OUT/off: the same numbers as a direct `tpusim serve` of the same
  // requests (served again from the shared cache).
  const CliResult direct =
      run_tpusim_in(s.d.p.string(), "serve --model " + kModel +
                                        " --requests 24 --max-batch 4 --max-tokens 64 --input fixed:32"
                                        " --output fixed:16 --arrival offline --quiet --jobs 2 --step-cache " +
                                        (s.d / "cache.txt") + " --out " + (s.d / "direct"));
  ASSERT_EQ(direct.rc, 0) << direct.err;
  EXPECT_NE(direct.out.find(" 0 simulated now"), std::string::npos) << direct.out;
  const auto dm = tpusim::test::rows_of(s.d / "direct/summary.csv").at(0);
  for (const char* c : {"throughput_rps", "output_tps", "ttft_p99_s", "tpot_p50_s", "e2e_p99_s"})
    EXPECT_EQ(off.at(c), dm.at(c)) << c;
  // The server scenario: the highest rate meeting the limits, and the
  // run at that rate meets them.
  EXPECT_EQ(srv.at("kind"), "server");
  EXPECT_EQ(srv.at("slo"), "ttft_p99=1ms,tpot_p99=1ms");
  EXPECT_EQ(srv.at("slo_met"), "1");
  EXPECT_LE(std::stod(srv.at("ttft_p99_s")), 1e-3);
  EXPECT_LE(std::stod(srv.at("tpot_p99_s")), 1e-3);
  EXPECT_GT(std::stod(srv.at("rate")), 0);
  EXPECT_NE(slurp(s.d / "out/srv/rate_search.csv").find("probe,rate"), std::string::npos);
}

TEST(CliSuite, TablesDiffCellByCellAndAChangeFails) {
  Suite s;
  ASSERT_EQ(s.run("").rc, 0);
  // A second run reproduces the table exactly: suite run --reference agrees.
  CliResult r = s.run("--reference " + (s.d / "out/suite.csv"), "out2");
  EXPECT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("suite tables agree"), std::string::npos) << r.out;

  // One number moved by 1%: a difference naming row, column and both values.
  auto t = fields(s.d / "out/suite.csv");
  std::size_t col = 0;
  while (t[0][col] != "output_tps") ++col;
  const double v = std::stod(t[1][col]);
  std::string text = slurp(s.d / "out/suite.csv");
  const std::string moved = std::to_string(v * 1.01);
  text.replace(text.find(t[1][col]), t[1][col].size(), moved);
  std::ofstream(s.d / "moved.csv") << text;
  r = run_tpusim_in(s.d.p.string(), "suite diff " + (s.d / "out/suite.csv") + " " + (s.d / "moved.csv"));
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.out.find("1 difference(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("t/off output_tps: " + t[1][col] + " -> " + moved), std::string::npos) << r.out;
  // Within a 2% tolerance it passes; within 0.5% it does not.
  EXPECT_EQ(run_tpusim_in(s.d.p.string(),
                          "suite diff " + (s.d / "out/suite.csv") + " " + (s.d / "moved.csv") + " --tolerance 0.02")
                .rc,
            0);
  EXPECT_EQ(run_tpusim_in(s.d.p.string(),
                          "suite diff " + (s.d / "out/suite.csv") + " " + (s.d / "moved.csv") + " --tolerance 0.005")
                .rc,
            1);
  // suite run --reference fails on the moved table.
  r = s.run("--reference " + (s.d / "moved.csv"), "out3");
  EXPECT_EQ(r.rc, 1) << r.err;
  // A row only in one table; --filter runs a subset.
  r = s.run("--filter ^off$", "out4");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(fields(s.d / "out4/suite.csv").size(), 2u);
  r = run_tpusim_in(s.d.p.string(), "suite diff " + (s.d / "out/suite.csv") + " " + (s.d / "out4/suite.csv"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("t/srv: only in the first table"), std::string::npos) << r.out;
}

TEST(CliSuite, BadSuiteFilesAreErrorsNamingLineAndKey) {
  TmpDir d("cli_suite_bad_");
  const std::string head = "defaults:\n  model: " + kModel + "\nscenarios:\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {head + "  - {name: a, scenario: offline, max_bach: 4}\n", "s.yaml:4:"},
      {head + "  - {name: a, scenario: offline, max_bach: 4}\n", "max_batch"},
      {head + "  - {name: a, scenario: ofline}\n", "offline"},
      {head + "  - {name: a, scenario: server}\n", "scenarios[0].slo"},
      {head + "  - {name: a, scenario: poisson}\n", "scenarios[0].rate"},
      {head + "  - {name: a, scenario: offline, input: \"fixed:0\"}\n", "scenarios[0].input"},
      {head + "  - {name: a, scenario: offline, max_batch: -3}\n", "non-negative integer"},
      {head + "  - {name: a, scenario: offline}\n  - {name: a, scenario: offline}\n", "'a' again"},
      {head + "  - {name: 'a b', scenario: offline}\n", "scenarios[0].name"},
      {"scenarios: []\n", "non-empty list"},
      {"scenario:\n  - {name: a}\n", "did you mean"},
  };
  for (const auto& [yaml, msg] : cases) {
    std::ofstream(d / "s.yaml") << yaml;
    const CliResult r = run_tpusim_in(d.p.string(), "suite run " + (d / "s.yaml") + " --out " + (d / "out"));
    EXPECT_EQ(r.rc, 2) << yaml << r.err;
    EXPECT_NE(r.err.find(msg), std::string::npos) << yaml << ": " << r.err;
  }
  const CliResult nofile = run_tpusim_in(d.p.string(), "suite diff " + (d / "none.csv") + " " + (d / "none.csv"));
  EXPECT_EQ(nofile.rc, 2);
  EXPECT_NE(nofile.err.find("none.csv"), std::string::npos) << nofile.err;
}

// A step simulation that fails in its child (here: beyond the simulated
// time limit, 1 ns against the microseconds of the smallest step) is the
// child's error, passed on with its exit code, not an internal error.
TEST(CliSuite, AFailingStepSimulationReportsTheChildsError) {
  TmpDir d("cli_suite_fail_");
  const CliResult r =
      run_tpusim_in(d.p.string(), "serve --model " + kModel +
                                      " --arrival offline --requests 4 --input fixed:16 --output fixed:4"
                                      " --max-batch 4 --max-tokens 64 --max-sim-time 1e-9 --quiet --jobs 2 --out " +
                                      (d / "out"));
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("step simulation failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("simulation limit"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

}  // namespace
