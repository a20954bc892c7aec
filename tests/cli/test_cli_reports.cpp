// The HTML reports end to end: `run --report`, `compare`, `sweep plot` and
// `check` pages are rendered by headless Chromium (Debian's chromium) into
// PNG screenshots that must not be blank, and the numbers the SVG marks
// carry (data-* attributes) are checked against the CSVs they come from:
// roofline points against ops.csv (a fused group's FLOPs over its HBM bytes
// and over its interval), the HBM bandwidth bins against summary.csv's
// hbm_bytes, the sweep points and Pareto front against results.csv, and
// compare's rows against the two runs' own summary.csv and ops.csv.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "../unit/sim/config_test_util.h"
#include "cli_test_util.h"
#include "csv_rows.h"
#include "sim/sweep/results_table.h"

namespace {

using tpusim::sim::testing::TempDir;
using tpusim::test::slurp;
using tpusim::test::rows_of;
using Result = tpusim::test::CliResult;
using Rows = std::vector<std::map<std::string, std::string>>;

Result tpusim(const TempDir& d, const std::string& args) { return tpusim::test::run_tpusim_in(d.path(), args); }


double d(const std::string& s) { return s.empty() ? 0.0 : std::stod(s); }

// Screenshot of an HTML file; true when chromium wrote a PNG.
bool screenshot(const std::string& html, const std::string& png) {
  const std::string cmd = "timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
                          "--window-size=1100,1400 --screenshot='" + png + "' 'file://" + html + "' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0 && std::filesystem::exists(png);
}

// A PNG is blank when its decoded pixels are all one colour. Rather than
// decode PNG here, the test has chromium screenshot a blank page of the
// same size too: a page with content compresses to a much larger file.
std::uintmax_t blank_png_size(const TempDir& t) {
  const std::string html = t.path() + "/blank.html", png = t.path() + "/blank.png";
  std::ofstream(html) << "<!DOCTYPE html><html><body></body></html>";
  EXPECT_TRUE(screenshot(html, png));
  return std::filesystem::file_size(png);
}

void expect_rendered(const TempDir& t, const std::string& html, std::uintmax_t blank) {
  const std::string png = html + ".png";
  ASSERT_TRUE(screenshot(html, png)) << html;
  EXPECT_GT(std::filesystem::file_size(png), 4 * blank) << html << " renders (nearly) blank";
  const std::string page = slurp(html);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  // Self-contained: the only URL is the SVG namespace.
  EXPECT_EQ(std::regex_search(page, std::regex("(src|href)=\"(https?:)?//")), false) << html;
}

std::vector<std::map<std::string, std::string>> marks(const std::string& page, const std::string& tag,
                                                      const std::string& must_have) {
  std::vector<std::map<std::string, std::string>> out;
  const std::regex el("<" + tag + " [^>]*" + must_have + "[^>]*/>");
  const std::regex attr("([a-z-]+)=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), el); it != std::sregex_iterator(); ++it) {
    std::map<std::string, std::string> a;
    const std::string s = it->str();
    for (auto j = std::sregex_iterator(s.begin(), s.end(), attr); j != std::sregex_iterator(); ++j)
      a[(*j)[1]] = (*j)[2];
    out.push_back(a);
  }
  return out;
}

TEST(CliReports, RunReportMatchesCsv) {
  TempDir t;
  const std::uintmax_t blank = blank_png_size(t);
  const std::string out = t.path() + "/run";
  const Result r = tpusim(t, "run --arch v5e --workload " TPUSIM_SOURCE_DIR "/configs/workloads/mlp.yaml --quiet --report --out " + out);
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_rendered(t, out + "/report.html", blank);
  const std::string page = slurp(out + "/report.html");
  const Rows ops = rows_of(out + "/ops.csv");
  const auto summary = rows_of(out + "/summary.csv").at(0);
  const double clock = d(summary.at("clock_hz"));
  // Roofline: every timed anchor with HBM traffic and FLOPs is one point.
  std::map<std::string, double> group_flops;
  for (const auto& o : ops) group_flops[o.at("fused_into").empty() ? o.at("name") : o.at("fused_into")] += d(o.at("flops"));
  std::size_t expected = 0;
  const auto pts = marks(page, "circle", "data-name=");
  for (const auto& o : ops) {
    if (!o.at("fused_into").empty() || d(o.at("cycles")) == 0 || d(o.at("hbm_bytes")) == 0) continue;
    const double flops = group_flops[o.at("name")];
    if (flops == 0) continue;
    ++expected;
    bool found = false;
    for (const auto& p : pts)
      if (p.at("data-name") == o.at("name")) {
        found = true;
        EXPECT_NEAR(d(p.at("data-x")), flops / d(o.at("hbm_bytes")), 1e-5 * d(p.at("data-x"))) << o.at("name");
        EXPECT_NEAR(d(p.at("data-y")), flops / (d(o.at("cycles")) / clock), 1e-5 * d(p.at("data-y"))) << o.at("name");
      }
    EXPECT_TRUE(found) << o.at("name");
  }
  EXPECT_EQ(pts.size(), expected);
  EXPECT_GT(expected, 0u);
  // HBM bandwidth: the bins hold every DMA byte with an HBM end, which is
  // summary.csv's hbm_bytes on one chip (no collectives).
  const auto bw = marks(page, "polyline", "data-bin-bytes=");
  ASSERT_EQ(bw.size(), 1u);
  double sum = 0;
  std::stringstream bins(bw[0].at("data-bin-bytes"));
  for (std::string b; bins >> b;) sum += d(b);
  EXPECT_NEAR(sum, d(summary.at("hbm_bytes")), 1e-6 * sum);
  // Time by kind: the sum of ops.csv cycles of each kind, in ms.
  std::map<std::string, double> kind_ms;
  for (const auto& o : ops) kind_ms[o.at("kind")] += d(o.at("cycles")) / clock * 1e3;
  const auto bars = marks(page, "rect", "data-category=");
  EXPECT_EQ(bars.size(), kind_ms.size());
  for (const auto& b : bars) EXPECT_NEAR(d(b.at("data-value")), kind_ms.at(b.at("data-category")), 1e-5 * kind_ms.at(b.at("data-category")) + 1e-12);
}

TEST(CliReports, CompareMatchesBothRuns) {
  TempDir t;
  const std::uintmax_t blank = blank_png_size(t);
  ASSERT_EQ(tpusim(t, "run --arch v5e --gemm 1024,1024,1024 --quiet --out " + t.path() + "/a").rc, 0);
  ASSERT_EQ(tpusim(t, "run --arch v6e --gemm 1024,1024,1024 --quiet --out " + t.path() + "/b").rc, 0);
  const Result r = tpusim(t, "compare " + t.path() + "/a " + t.path() + "/b --out " + t.path() + "/c");
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_rendered(t, t.path() + "/c/report.html", blank);
  const auto sa = rows_of(t.path() + "/a/summary.csv").at(0), sb = rows_of(t.path() + "/b/summary.csv").at(0);
  std::map<std::string, std::map<std::string, std::string>> rows;
  for (const auto& row : rows_of(t.path() + "/c/compare.csv")) rows[row.at("section") + "/" + row.at("name")] = row;
  for (const char* k : {"seconds", "hbm_bytes", "total_flops"}) {
    const auto& row = rows.at(std::string("total/") + k);
    EXPECT_DOUBLE_EQ(d(row.at("a")), d(sa.at(k))) << k;
    EXPECT_DOUBLE_EQ(d(row.at("b")), d(sb.at(k))) << k;
    EXPECT_NEAR(d(row.at("ratio")), d(sb.at(k)) / d(sa.at(k)), 1e-8) << k;
  }
  // The matmul's own row: ops.csv cycles / clock on each side.
  const auto oa = rows_of(t.path() + "/a/ops.csv").at(0), ob = rows_of(t.path() + "/b/ops.csv").at(0);
  const auto& op = rows.at("op/" + oa.at("name"));
  EXPECT_NEAR(d(op.at("a")), d(oa.at("cycles")) / d(sa.at("clock_hz")), 1e-12);
  EXPECT_NEAR(d(op.at("b")), d(ob.at("cycles")) / d(sb.at("clock_hz")), 1e-12);
  const Result bad = tpusim(t, "compare " + t.path() + "/a " + t.path() + "/nope");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("nope"), std::string::npos) << bad.err;
}

TEST(CliReports, SweepPlotParetoFront) {
  TempDir t;
  const std::uintmax_t blank = blank_png_size(t);
  const std::string spec = t.path() + "/s.yaml";
  std::ofstream(spec) << "name: plot\nbase:\n  gemm: \"512,512,512\"\n  set:\n    published.peak_tflops: \"~\"\naxes:\n  grid:\n"
                         "    arch: [v5e, v6e]\n    arch.mxu.rows: [64, 128]\n    workload.dtype: [bf16, int8]\n";
  const Result s = tpusim(t, "sweep " + spec + " --out " + t.path() + "/sw --jobs 2 --quiet");
  ASSERT_EQ(s.rc, 0) << s.err;
  const Result r = tpusim(t, "sweep plot " + t.path() + "/sw --x arch.mxu.rows --y seconds --color arch");
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_rendered(t, t.path() + "/sw/plot.html", blank);
  const Rows rows = rows_of(t.path() + "/sw/results.csv");
  const auto pts = marks(slurp(t.path() + "/sw/plot.html"), "circle", "data-id=");
  ASSERT_EQ(pts.size(), rows.size());
  for (const auto& row : rows) {
    bool found = false;
    // Pareto: no other point has rows <= and seconds <= with one strictly less.
    bool dominated = false;
    for (const auto& q : rows) {
      const double x0 = d(row.at("arch.mxu.rows")), y0 = d(row.at("seconds"));
      const double x1 = d(q.at("arch.mxu.rows")), y1 = d(q.at("seconds"));
      if (x1 <= x0 && y1 <= y0 && (x1 < x0 || y1 < y0)) dominated = true;
    }
    for (const auto& p : pts)
      if (p.at("data-id") == row.at("point")) {
        found = true;
        EXPECT_EQ(p.at("data-x"), row.at("arch.mxu.rows"));
        EXPECT_DOUBLE_EQ(d(p.at("data-y")), d(row.at("seconds")));
        EXPECT_EQ(p.at("data-pareto"), dominated ? "0" : "1") << row.at("point");
      }
    EXPECT_TRUE(found) << row.at("point");
  }
  const Result bad = tpusim(t, "sweep plot " + t.path() + "/sw --x arch.mxu.rowz --y seconds");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("'arch.mxu.rowz' is not a column"), std::string::npos) << bad.err;
}

TEST(CliReports, CheckReportRenders) {
  TempDir t;
  const std::uintmax_t blank = blank_png_size(t);
  const Result r = tpusim(t, "check --model " TPUSIM_SOURCE_DIR
                             "/models/examples/custom-3000.yaml --arch v6e --phase decode --batch 2 --context 256 "
                             "--jobs 2 --out " + t.path() + "/c");
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_rendered(t, t.path() + "/c/report.html", blank);
}

// shard-search --report: one bar per ranked mesh, in rank order, its value
// the CSV's seconds and its colour class the CSV's bottleneck.
TEST(CliReports, ShardSearchReportMatchesCsv) {
  TempDir t;
  const std::uintmax_t blank = blank_png_size(t);
  const std::string m = t.path() + "/m.yaml";
  std::ofstream(m) << "name: small\nfamily: decoder\nhidden: 1024\nlayers: 2\nvocab: 1024\nmax_context: 4096\n"
                      "norm: rmsnorm\nposition: rotary\ntied_embeddings: false\n"
                      "attention: {heads: 8, kv_heads: 8, head_dim: 128}\nffn: {kind: swiglu, size: 4096}\n";
  const Result r = tpusim(t, "shard-search --model " + m + " --arch v5p --slice 2x2x1 --phase train --batch 4 "
                             "--seq 512 --set hbm.model=calibrated --report --out " + t.path() + "/s");
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_rendered(t, t.path() + "/s/report.html", blank);
  const auto bars = marks(slurp(t.path() + "/s/report.html"), "rect", "data-mesh=");
  Rows ok;
  for (const auto& row : rows_of(t.path() + "/s/shard_search.csv"))
    if (row.at("status") == "ok") ok.push_back(row);
  ASSERT_EQ(bars.size(), ok.size());
  ASSERT_GE(ok.size(), 10u);
  for (std::size_t i = 0; i < ok.size(); ++i) {
    EXPECT_EQ(bars[i].at("data-mesh"), ok[i].at("mesh"));
    EXPECT_EQ(bars[i].at("data-sp"), ok[i].at("sequence_parallel"));
    EXPECT_EQ(bars[i].at("data-bottleneck"), ok[i].at("bottleneck"));
    EXPECT_DOUBLE_EQ(d(bars[i].at("data-value")), d(ok[i].at("seconds")));
    if (i) {
      EXPECT_GE(d(ok[i].at("seconds")), d(ok[i - 1].at("seconds")));
    }
  }
}

}  // namespace
