// `tpusim check` end to end on the custom model (models/examples/
// custom-3000.yaml): it names head_dim 100 and d_ff 8000 on v6e; its
// simulated before/after step times equal independent `tpusim run`s of the
// model and of a model file with the change written out by hand; the
// bars in report.html carry the numbers of check.csv; bad input exits 2
// with the key named.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "../unit/sim/config_test_util.h"
#include "cli_test_util.h"
#include "csv_rows.h"
#include "sim/sweep/results_table.h"

namespace {

using tpusim::sim::testing::TempDir;
using tpusim::test::rows_of;
using tpusim::test::slurp;
using Result = tpusim::test::CliResult;

const std::string kModel = TPUSIM_SOURCE_DIR "/models/examples/custom-3000.yaml";
// Small enough to simulate quickly; the shapes keep every dimension.
const std::string kPhase = "--phase decode --batch 2 --context 256";

Result tpusim(const TempDir& d, const std::string& args) { return tpusim::test::run_tpusim_in(d.path(), args); }

std::string run_seconds(const TempDir& d, const std::string& model, const std::string& out) {
  const Result r =
      tpusim(d, "run --arch v6e --model " + model + " " + kPhase + " --quiet --out " + d.path() + "/" + out);
  EXPECT_EQ(r.rc, 0) << r.err;
  const auto rows = rows_of(d.path() + "/" + out + "/summary.csv");
  return rows.empty() ? "" : rows[0].at("seconds");
}

TEST(CliCheck, CustomModelOnV6e) {
  TempDir d;
  const Result r =
      tpusim(d, "check --model " + kModel + " --arch v6e " + kPhase + " --jobs 2 --out " + d.path() + "/c");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("attention.head_dim 100 -> 256"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ffn.size 8000 -> 8192"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("head_dim 100 -> 128"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("d_ff 8000 -> 8192"), std::string::npos) << r.out;

  const auto rows = rows_of(d.path() + "/c/check.csv");
  std::map<std::string, std::map<std::string, std::string>> sugg;
  std::string step;
  for (const auto& row : rows) {
    if (row.at("section") == "suggestion") sugg[row.at("name")] = row;
    if (row.at("section") == "step") step = row.at("before_s");
  }
  ASSERT_TRUE(sugg.count("attention.head_dim=128"));
  ASSERT_TRUE(sugg.count("ffn.size=8192"));
  // Every suggestion's "before" is the model's own simulated step.
  for (const auto& [id, row] : sugg) EXPECT_EQ(row.at("before_s"), step) << id;
  // ... which `tpusim run` of the same model and phase gives too.
  EXPECT_EQ(run_seconds(d, kModel, "base"), step);
  // "after" of d_ff 8192 is a run of the model file with ffn.size 8192.
  std::string text = slurp(kModel);
  text.replace(text.find("size: 8000"), 10, "size: 8192");
  const std::string changed = d.path() + "/ffn8192.yaml";
  std::ofstream(changed) << text;
  EXPECT_EQ(run_seconds(d, changed, "ffn"), sugg["ffn.size=8192"].at("after_s"));
  // Parameters: d_ff +192 adds 3 x 3000 x 192 per layer over 24 layers.
  EXPECT_EQ(sugg["ffn.size=8192"].at("params_delta"), std::to_string(3 * 3000 * 192 * 24));

  // The report's bars carry the CSV's before/after in ms.
  const std::string html = slurp(d.path() + "/c/report.html");
  for (const char* id : {"attention.head_dim=128", "ffn.size=8192"}) {
    const std::regex bar(std::string("data-series=\"after\" data-category=\"") + id + "\" data-value=\"([0-9.e+-]+)\"");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(html, m, bar)) << id;
    EXPECT_NEAR(std::stod(m[1]), std::stod(sugg[id].at("after_s")) * 1e3, 1e-5 * std::stod(m[1])) << id;
  }
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // no network reference
}

TEST(CliCheck, AnalysisOnlyAndBadInput) {
  TempDir d;
  const Result ok = tpusim(d, "check --model " + kModel + " --arch v5e,v7 --no-simulate --out " + d.path() + "/a");
  ASSERT_EQ(ok.rc, 0) << ok.err;
  EXPECT_NE(ok.out.find("v5e (MXU 128x128): hidden 3000 -> 3072"), std::string::npos) << ok.out;
  const Result phase = tpusim(d, "check --model " + kModel + " --phase decod --out " + d.path() + "/b");
  EXPECT_EQ(phase.rc, 2);
  EXPECT_NE(phase.err.find("unknown --phase 'decod'"), std::string::npos) << phase.err;
  const Result arch = tpusim(d, "check --model " + kModel + " --arch v6x --no-simulate --out " + d.path() + "/b");
  EXPECT_EQ(arch.rc, 2);
  EXPECT_NE(arch.err.find("v6x"), std::string::npos) << arch.err;
  const Result change =
      tpusim(d, "check point --model " + kModel + " --arch v6e --phase decode --change attention.kv_heads=4 --out " +
                    d.path() + "/p");
  EXPECT_EQ(change.rc, 2);
  EXPECT_NE(change.err.find("attention.kv_heads"), std::string::npos) << change.err;
  const Result key = tpusim(d, "check point --model " + kModel +
                                   " --arch v6e --phase decode --change ffn.sise=8192 --out " + d.path() + "/p");
  EXPECT_EQ(key.rc, 2);
  EXPECT_NE(key.err.find("did you mean 'ffn.size'"), std::string::npos) << key.err;
}

TEST(CliCheck, NarrowHeadsAreWidenedToEachGenerationsMxu) {
  // BERT-base's heads of 64, checked on v5e (MXU 128) and v6e (256): each
  // generation simulates the candidate sized for its own MXU (6 heads of
  // 128 on v5e, 3 of 256 on v6e), not the other's.
  TempDir d;
  const Result r = tpusim(
      d, "check --model bert-base --arch v5e,v6e --phase infer --batch 2 --seq 128 --jobs 2 --out " + d.path() + "/c");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::map<std::string, std::vector<std::string>> by_arch;
  for (const auto& row : rows_of(d.path() + "/c/check.csv"))
    if (row.at("section") == "suggestion") by_arch[row.at("arch")].push_back(row.at("name"));
  auto has = [&](const std::string& arch, const std::string& id) {
    const auto& v = by_arch[arch];
    return std::find(v.begin(), v.end(), id) != v.end();
  };
  EXPECT_TRUE(has("v5e", "attention.head_dim=128,heads=6"));
  EXPECT_FALSE(has("v5e", "attention.head_dim=256,heads=3"));
  EXPECT_TRUE(has("v6e", "attention.head_dim=256,heads=3"));
  EXPECT_FALSE(has("v6e", "attention.head_dim=128,heads=6"));
}

// The terminal report reads as a table: with two phases each before->after
// column keeps a gap before the next (their labels are wider than the
// figures), a dimension every degree divides says only that, and a fit
// line lists its dtypes without a dangling separator.
TEST(CliCheck, ReportColumnsAndListsWithTwoPhases) {
  TempDir d;
  const Result r = tpusim(
      d, "check --model " + kModel +
             " --arch v6e --phase prefill,decode --batch 2 --seq 128 --context 256 --jobs 2 --out " + d.path() + "/c");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("  prefill ms before->after  decode ms before->after"), std::string::npos) << r.out;
  // Suggestion rows: "a -> b" figures with at least two spaces between phases.
  const std::regex row(R"(\d+\.\d{3} -> \d+\.\d{3}  +\d+\.\d{3} -> \d+\.\d{3} )");
  EXPECT_TRUE(std::regex_search(r.out, row)) << r.out;
  EXPECT_NE(r.out.find("ffn.size 8000: divides by 2,4,8,16,32,64\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("not by none"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hidden 3000: divides by 2,4,8; not by 16,32,64\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(");\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(smallest slice 1x1); fp8_e4m3 weights"), std::string::npos) << r.out;
}

// Without --phase a model that has no decode (a UNet) is checked in infer,
// and the report names its widths and head_dim against the MXU.
TEST(CliCheck, UnetDefaultsToInferAndNamesItsPadding) {
  TempDir d;
  const Result r = tpusim(d, "check --model sdxl-unet --arch v6e --no-simulate --out " + d.path() + "/u");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("phases infer"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("channels[0] 320 -> 512 (37.5% padding)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("head_dim 64 -> 256 (75.0% padding)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("none to check: a unet model shards over data only"), std::string::npos) << r.out;
  const Result decode =
      tpusim(d, "check --model sdxl-unet --arch v6e --phase decode --no-simulate --out " + d.path() + "/u2");
  EXPECT_EQ(decode.rc, 2);
  EXPECT_NE(decode.err.find("phase: expected one of infer for a unet model, found decode"), std::string::npos)
      << decode.err;
  // `model show` counts a UNet's parameters per sample, not per token.
  const Result show = tpusim(d, "model show sdxl-unet");
  ASSERT_EQ(show.rc, 0) << show.err;
  EXPECT_NE(show.out.find("parameters:       2567463684 (2.567 G)"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("active / sample:  2567463684"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("FLOPs per sample: 6.777 TFLOP"), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("per token"), std::string::npos) << show.out;
}

// The report of a model that shards over data only says so instead of an
// empty divisibility table, and its time-by-layer-type chart leaves out
// the types fused into other kernels (no time of their own; check.csv
// still lists them at 0). A small UNet: its width 64 is offered rounded
// up to the MXU's 128 and not down to 0.
TEST(CliCheck, ReportOmitsEmptyTablesAndTimelessTypes) {
  TempDir d;
  const std::string m = d.write("u.yaml",
                                "name: tiny-unet\nfamily: unet\nchannels: [64, 128]\ntransformer_depth: [0, 1]\n"
                                "head_dim: 32\ncross_attention_dim: 64\nimage_size: 64\n");
  const Result r = tpusim(d, "check --model " + m + " --arch v5e --batch 1 --out " + d.path() + "/o");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string html = slurp(d.path() + "/o/report.html");
  EXPECT_NE(html.find("None to check: a unet model shards over data only."), std::string::npos);
  int zero = 0, timed = 0;
  for (const auto& row : rows_of(d.path() + "/o/check.csv")) {
    if (row.at("section") != "time_share") continue;
    const bool has_time = std::stod(row.at("time_share_pct")) > 0;
    (has_time ? timed : zero) += 1;
    EXPECT_EQ(html.find(">" + row.at("name") + "<") != std::string::npos, has_time) << row.at("name");
  }
  EXPECT_GT(zero, 0);
  EXPECT_GT(timed, 0);
  EXPECT_NE(r.out.find("channels[0] 64 -> 128 (multiple of MXU 128)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("channels[0] 64 -> 0"), std::string::npos) << r.out;
}

}  // namespace
