// `tpusim validate` end to end on tiny case files: the simulated value is
// the metric's closed form over an independent `tpusim run` of the same
// workload (TFLOP/s = 2mnk / seconds / 1e12, ms = seconds x 1e3); exit codes
// 0 (pass, expected miss), 1 (fail, unexpected pass) and 2 (bad case file,
// bad options); the report files; --list and --filter.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../unit/sim/config_test_util.h"
#include "cli_test_util.h"
#include "csv_rows.h"
#include "sim/results/format.h"
#include "sim/sweep/results_table.h"

namespace {

using tpusim::sim::testing::TempDir;
using tpusim::test::slurp;
using tpusim::test::rows_of;
using Result = tpusim::test::CliResult;
using tpusim::sim::format_real;

Result tpusim(const TempDir& d, const std::string& args) { return tpusim::test::run_tpusim_in(d.path(), args); }


// Seconds that `tpusim run` simulates for a 512^3 bf16 matmul on v5e.
double gemm_seconds(const TempDir& d) {
  const Result r = tpusim(d, "run --arch v5e --gemm 512,512,512 --quiet --out " + d.path() + "/ref");
  EXPECT_EQ(r.rc, 0) << r.err;
  const auto rows = rows_of(d.path() + "/ref/summary.csv");
  EXPECT_EQ(rows.size(), 1u);
  return std::stod(rows.at(0).at("seconds"));
}

std::string case_file(double tflops, double ms, const std::string& extra_tflops = "",
                      const std::string& extra_ms = "") {
  std::ostringstream s;
  s.precision(17);
  s << "family: tiny\n"
       "defaults:\n"
       "  source: \"a test\"\n"
       "  source_metric: \"per chip\"\n"
       "  arch: v5e\n"
       "  workload: {gemm: \"512,512,512\"}\n"
       "  tolerance: 0.01\n"
       "cases:\n"
       "  - id: tiny-tflops\n"
       "    title: 512^3 TFLOP/s\n"
       "    metric: {kind: tflops, unit: TFLOP/s}\n"
       "    measured: "
    << tflops << "\n"
    << extra_tflops
    << "  - id: tiny-ms\n"
       "    title: 512^3 time\n"
       "    metric: {kind: time, unit: ms}\n"
       "    measured: "
    << ms << "\n"
    << extra_ms;
  return s.str();
}

TEST(CliValidate, SimulatedValuesFollowTheMetricFormulas) {
  TempDir d;
  const double sec = gemm_seconds(d);
  ASSERT_GT(sec, 0);
  const double tflops = 2.0 * 512 * 512 * 512 / sec / 1e12, ms = sec * 1e3;
  const std::string f = d.write("cases.yaml", case_file(tflops, ms));
  const Result r = tpusim(d, "validate " + f + " --jobs 2 --out " + d.path() + "/v");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  const auto rows = rows_of(d.path() + "/v/validation.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("id"), "tiny-tflops");
  EXPECT_EQ(rows[0].at("outcome"), "pass");
  // Written with 6 significant digits.
  EXPECT_NEAR(std::stod(rows[0].at("simulated")), tflops, tflops * 1e-5);
  EXPECT_NEAR(std::stod(rows[1].at("simulated")), ms, ms * 1e-5);
  EXPECT_EQ(rows[1].at("unit"), "ms");
  EXPECT_NE(r.out.find("2 cases: 2 pass, 0 fail"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(d.path() + "/v/validation.svg"));
  EXPECT_NE(slurp(d.path() + "/v/validation.html").find("<svg"), std::string::npos);
  // Run folders go unless --keep-runs.
  EXPECT_FALSE(std::filesystem::exists(d.path() + "/v/runs"));
}

TEST(CliValidate, ExitCodesFollowTheOutcomes) {
  TempDir d;
  const double sec = gemm_seconds(d);
  const double tflops = 2.0 * 512 * 512 * 512 / sec / 1e12, ms = sec * 1e3;
  const std::string miss = "    expect: miss\n    reason: \"a test\"\n";
  struct Row {
    const char* name;
    std::string text;
    int rc;
    std::string outcome_tflops, outcome_ms;
  };
  const std::vector<Row> table = {
      {"fail", case_file(tflops * 2, ms), 1, "fail", "pass"},
      {"expected miss", case_file(tflops * 2, ms, miss), 0, "xfail", "pass"},
      {"unexpected pass", case_file(tflops, ms, "", miss), 1, "pass", "xpass"},
  };
  for (const auto& t : table) {
    const std::string f = d.write(std::string("cases_") + std::to_string(&t - table.data()) + ".yaml", t.text);
    const std::string out = d.path() + "/o" + std::to_string(&t - table.data());
    const Result r = tpusim(d, "validate " + f + " --quiet --out " + out);
    EXPECT_EQ(r.rc, t.rc) << t.name << "\n" << r.out << r.err;
    const auto rows = rows_of(out + "/validation.csv");
    ASSERT_EQ(rows.size(), 2u) << t.name;
    EXPECT_EQ(rows[0].at("outcome"), t.outcome_tflops) << t.name;
    EXPECT_EQ(rows[1].at("outcome"), t.outcome_ms) << t.name;
    if (t.outcome_ms == "xpass") {
      EXPECT_NE(r.out.find("remove its expect: miss"), std::string::npos) << r.out;
    }
  }
}

TEST(CliValidate, FilterListAndBadInput) {
  TempDir d;
  const std::string f = d.write("cases.yaml", case_file(1, 1));
  Result r = tpusim(d, "validate " + f + " --list --filter ms$");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("tiny-ms  v5e  512^3 time"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("tiny-tflops"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 cases"), std::string::npos) << r.out;
  // A fitted case says which keys were solved from it.
  std::string fitted_text = case_file(1, 1);
  const std::string id_line = "  - id: tiny-ms\n";
  ASSERT_NE(fitted_text.find(id_line), std::string::npos) << fitted_text;
  fitted_text.replace(fitted_text.find(id_line), id_line.size(), id_line + "    fitted: kernel.launch_overhead\n");
  r = tpusim(d, "validate " + d.write("fitted.yaml", fitted_text) + " --list");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("512^3 time  [fitted: kernel.launch_overhead]\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("512^3 TFLOP/s\n"), std::string::npos) << r.out;  // not fitted: no mark

  r = tpusim(d, "validate " + f + " --list --filter nomatch");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("no case id matches"), std::string::npos) << r.err;
  r = tpusim(d, "validate " + f + " --list --filter '('");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("not a regular expression"), std::string::npos) << r.err;

  const std::string bad = d.write("bad.yaml", "family: x\ncases:\n  - id: a\n    titel: t\n");
  r = tpusim(d, "validate " + bad + " --list");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("bad.yaml:4:5: cases[0].titel: expected one of"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'title'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cases[a].source: expected a value for 'source'"), std::string::npos) << r.err;

  r = tpusim(d, "validate " + d.path() + "/missing_dir --list");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("no such file or folder"), std::string::npos) << r.err;

  // Several CASES run as one suite; an id in two of them is refused.
  std::string renamed = case_file(1, 1);
  for (const std::string id : {"tiny-tflops", "tiny-ms"})
    renamed.replace(renamed.find("id: " + id), 4 + id.size(), "id: " + id + "2");
  r = tpusim(d, "validate " + f + " " + d.write("more.yaml", renamed) + " --list");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("tiny-ms2  v5e"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4 cases"), std::string::npos) << r.out;
  r = tpusim(d, "validate " + f + " " + f + " --list");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("expected an id unique in the suite"), std::string::npos) << r.err;
}

// A case with sample_layers: 2 is the runs of 2 and 4 decoder layers
// (`tpusim run --layers`) extrapolated to the model's 32: exactly the
// formula over independent runs, and within 2.5% of the whole model's run
// (the bound LayerSamplingMatchesTheFullRun holds shard-search to).
TEST(CliValidate, LayerSamplingExtrapolatesTwoRuns) {
  TempDir d;
  const std::string run = "run --arch v5p --model llama3-8b --phase prefill --batch 1 --seq 256 --quiet --out ";
  auto seconds = [&](const std::string& dir, const std::string& extra) {
    const Result r = tpusim(d, run + d.path() + "/" + dir + extra);
    EXPECT_EQ(r.rc, 0) << r.err;
    return std::stod(rows_of(d.path() + "/" + dir + "/summary.csv").at(0).at("seconds"));
  };
  const double s2 = seconds("l2", " --layers 2"), s4 = seconds("l4", " --layers 4"), full = seconds("full", "");
  const double expected_ms = 1e3 * (s2 + 15 * (s4 - s2));
  const std::string f = d.write("cases.yaml",
                                "family: x\ncases:\n  - id: sampled\n    title: t\n    source: s\n"
                                "    source_metric: m\n    arch: v5p\n"
                                "    workload: {model: llama3-8b, phase: prefill, batch: 1, seq: 256, sample_layers: 2}\n"
                                "    metric: {kind: time, unit: ms}\n    measured: " +
                                    format_real(1e3 * full, 17) + "\n    tolerance: 0.025\n");
  const Result r = tpusim(d, "validate " + f + " --quiet --out " + d.path() + "/v");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  const auto rows = rows_of(d.path() + "/v/validation.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("outcome"), "pass") << rows[0].at("message");
  // validation.csv prints 6 significant digits.
  EXPECT_NEAR(std::stod(rows[0].at("simulated")), expected_ms, 1e-5 * expected_ms);
  EXPECT_GT(s4, s2);

  // --layers misused.
  EXPECT_EQ(tpusim(d, "run --arch v5p --gemm 128,128,128 --layers 2 --quiet --out " + d.path() + "/x").rc, 2);
  const Result zero = tpusim(d, run + d.path() + "/x --layers 0");
  EXPECT_EQ(zero.rc, 2);
  EXPECT_NE(zero.err.find("--layers must be in [1, 32], found 0"), std::string::npos) << zero.err;
  EXPECT_EQ(tpusim(d, run + d.path() + "/x --layers 33").rc, 2);
  const Result enc =
      tpusim(d, "run --arch v5p --model bert-base --phase infer --batch 1 --seq 128 --layers 2 --quiet --out " +
                    d.path() + "/x");
  EXPECT_EQ(enc.rc, 2);
  EXPECT_NE(enc.err.find("--layers needs a decoder model"), std::string::npos) << enc.err;
}

TEST(CliValidate, FailedRunIsAnErrorRow) {
  TempDir d;
  // A v5e chip has 16 GiB of HBM: a 65536^3 bf16 matmul's three 8 GiB
  // operands do not fit, so the run exits 2 and the case is an error.
  const std::string f = d.write("cases.yaml",
                                "family: x\ncases:\n  - id: too-big\n    title: t\n    source: s\n"
                                "    source_metric: m\n    arch: v5e\n    workload: {gemm: \"65536,65536,65536\"}\n"
                                "    metric: {kind: time, unit: s}\n    measured: 1\n    tolerance: 0.1\n");
  const Result r = tpusim(d, "validate " + f + " --quiet --out " + d.path() + "/v");
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  const auto rows = rows_of(d.path() + "/v/validation.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("outcome"), "error");
  EXPECT_NE(rows[0].at("message").find("exit 2"), std::string::npos) << rows[0].at("message");
}

}  // namespace
