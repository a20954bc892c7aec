// Serve points of a sweep (sim/sweep/serve_points.h): a spec with serve.*
// keys runs `tpusim serve` at each point, one row per point with the serve
// summary's columns, so a throughput-latency curve is one sweep. Checked
// against direct `tpusim serve` runs of the same points, with the
// two-layer decoder of models/examples/tiny-decoder.yaml.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "csv_rows.h"

namespace {

using tpusim::test::CliResult;
using tpusim::test::rows_of;
using tpusim::test::run_tpusim_in;
using tpusim::test::slurp;
using tpusim::test::TmpDir;

const std::string kModel = TPUSIM_SOURCE_DIR "/models/examples/tiny-decoder.yaml";

std::string spec(const std::string& axes) {
  return "name: curve\n"
         "base:\n"
         "  model: " +
         kModel +
         "\n"
         "  requests: 40\n"
         "  input: fixed:32\n"
         "  output: fixed:32\n"
         "  max_batch: 4\n"
         "  max_tokens: 64\n"
         "  slo: ttft_p99=1ms\n"
         "  step_cache: steps.cache\n"
         "axes:\n" +
         axes;
}

TEST(SweepServe, ACurveIsOneSweepWithARowPerServePoint) {
  TmpDir d("sweep_serve_");
  std::ofstream(d / "curve.yaml") << spec(
      "  grid:\n    serve.rate: [200, 400, 800]\n"
      "  points:\n    - {serve.concurrency: 4, serve.max_batch: 2}\n");
  const CliResult r =
      run_tpusim_in(d.p.string(), "sweep " + (d / "curve.yaml") + " --out " + (d / "out") + " --jobs 2 --quiet");
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  const auto rows = rows_of(d / "out/results.csv");
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& row : rows) EXPECT_EQ(row.at("status"), "ok") << row.at("message");
  EXPECT_EQ(rows[0].at("arrival"), "poisson");
  EXPECT_EQ(rows[3].at("arrival"), "closed");
  EXPECT_EQ(rows[3].at("concurrency"), "4");
  EXPECT_EQ(rows[3].at("max_batch"), "2");
  // More offered load is more served below saturation, and TTFT does not fall.
  EXPECT_GT(std::stod(rows[1].at("throughput_rps")), std::stod(rows[0].at("throughput_rps")));
  EXPECT_GE(std::stod(rows[2].at("ttft_p99_s")), std::stod(rows[0].at("ttft_p99_s")) * 0.999);

  // The rate-400 point is the direct serve run of the same options: its
  // row holds that run's summary, column for column (and every column of
  // the row is one the serve summary has, so the two cannot drift apart).
  const CliResult direct = run_tpusim_in(
      d.p.string(), "serve --model " + kModel +
                        " --requests 40 --input fixed:32 --output fixed:32 --max-batch 4"
                        " --max-tokens 64 --slo ttft_p99=1ms --arrival poisson --rate 400 --quiet --jobs 2"
                        " --step-cache " +
                        (d / "steps.cache") + " --out " + (d / "direct"));
  ASSERT_EQ(direct.rc, 0) << direct.err;
  EXPECT_NE(direct.out.find(" 0 simulated now"), std::string::npos) << direct.out;  // the sweep's shared cache
  const auto sum = rows_of(d / "direct/summary.csv").at(0);
  const auto header = tpusim::sim::sweep::parse_csv(slurp(d / "out/results.csv")).at(0);
  std::size_t compared = 0;
  bool metrics = false;
  for (const auto& c : header) {
    if (c == "message") {
      metrics = true;
      continue;
    }
    if (!metrics) continue;
    ASSERT_TRUE(sum.count(c)) << "column " << c << " is not in serve's summary.csv";
    EXPECT_EQ(rows[1].at(c), sum.at(c)) << c;
    ++compared;
  }
  EXPECT_GT(compared, 40u);
}

TEST(SweepServe, BadServeKeysAreSpecErrorsOrErrorRows) {
  TmpDir d("sweep_serve_bad_");
  const std::vector<std::pair<std::string, std::string>> spec_errors = {
      {"  grid:\n    serve.rat: [1, 2]\n", "did you mean 'serve.rate'"},
      {"  grid:\n    serve.rate: [1, -2]\n", "a rate in requests per second"},
      {"  grid:\n    serve.input: ['fixed:0']\n", "a length distribution"},
      {"  grid:\n    serve.arrival: [bursty]\n", "poisson, closed or offline"},
  };
  for (const auto& [axes, msg] : spec_errors) {
    std::ofstream(d / "s.yaml") << spec(axes);
    const CliResult r = run_tpusim_in(d.p.string(), "sweep " + (d / "s.yaml") + " --out " + (d / "out") + " --dry-run");
    EXPECT_EQ(r.rc, 2) << axes << r.out;
    EXPECT_NE(r.err.find(msg), std::string::npos) << axes << ": " << r.err;
    EXPECT_NE(r.err.find("s.yaml:"), std::string::npos) << r.err;
  }
  // A `tpusim run` key beside serve keys: the point cannot run, an error row.
  std::ofstream(d / "s.yaml") << spec("  grid:\n    serve.rate: [100]\n    model.batch: [8]\n");
  const CliResult r = run_tpusim_in(d.p.string(), "sweep " + (d / "s.yaml") + " --out " + (d / "out2") + " --quiet");
  const auto rows = rows_of(d / "out2/results.csv");
  ASSERT_EQ(rows.size(), 1u) << r.err;
  EXPECT_EQ(rows[0].at("status"), "error");
  EXPECT_NE(rows[0].at("message").find("'model.batch' is a `tpusim run` key"), std::string::npos)
      << rows[0].at("message");
}

}  // namespace
