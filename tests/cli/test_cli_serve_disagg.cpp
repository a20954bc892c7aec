// `tpusim serve` with prefill/decode disaggregation and swap preemption
// through the CLI, with the two-layer decoder of
// models/examples/tiny-decoder.yaml: the prefill instance's steps are
// simulated on its own slice (a cache key of their own), steps.csv tells
// the instances apart, and bad combinations are usage errors.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "cli_test_util.h"
#include "csv_rows.h"

namespace {

using tpusim::test::CliResult;
using tpusim::test::rows_of;
using tpusim::test::run_tpusim_in;
using tpusim::test::slurp;
using tpusim::test::TmpDir;

const std::string kBase = "serve --model " TPUSIM_SOURCE_DIR
                          "/models/examples/tiny-decoder.yaml --requests 24 --rate 2000 --max-batch 8"
                          " --max-tokens 256 --quiet --jobs 2";
const std::string kServe = kBase + " --input fixed:256 --output fixed:16";

TEST(CliServeDisagg, PrefillAndDecodeInstancesHaveTheirOwnSteps) {
  TmpDir d("cli_disagg_");
  const CliResult r = run_tpusim_in(d.p.string(), kServe +
                                                      " --slice 2x1 --mesh tensor=2 --prefill-slice 1x1"
                                                      " --kv-link-bandwidth '45 GB/s' --step-cache " +
                                                      (d / "cache") + " --out " + (d / "out"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("disaggregated: prefill on 1x1"), std::string::npos) << r.out;
  const auto sum = rows_of(d / "out/summary.csv").at(0);
  EXPECT_EQ(sum.at("prefill_slice"), "1x1");
  EXPECT_EQ(sum.at("slice"), "2x1");
  EXPECT_EQ(std::stod(sum.at("kv_link_bandwidth")), 45e9);
  std::set<std::string> instances;
  for (const auto& st : rows_of(d / "out/steps.csv")) {
    instances.insert(st.at("replica"));
    if (st.at("replica") == "0") {
      EXPECT_EQ(st.at("decode_seqs"), "0");
    }
    if (st.at("replica") == "1") {
      EXPECT_EQ(st.at("prefill_tokens"), "0");
    }
  }
  EXPECT_EQ(instances, (std::set<std::string>{"0", "1"}));
  // Two cache keys: the decode slice's steps and the prefill slice's.
  std::set<std::string> keys;
  std::istringstream all(slurp(d / "cache"));
  for (std::string line; std::getline(all, line);)
    if (!line.empty() && line[0] != '#') keys.insert(line.substr(0, 16));
  EXPECT_EQ(keys.size(), 2u);
}

TEST(CliServeDisagg, SwapPreemptionReportsItsTransfers) {
  TmpDir d("cli_swap_");
  // 45 pages of 16 tokens hold three prompts of 240 tokens (15 pages
  // each); their first decodes past token 240 need a 16th page: preemption.
  const CliResult r = run_tpusim_in(d.p.string(), kBase +
                                                      " --input fixed:240 --output fixed:32 --kv-pages 45"
                                                      " --preemption swap --out " +
                                                      (d / "out"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("swap: "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("swap: 0 tokens"), std::string::npos) << r.out;
  const auto sum = rows_of(d / "out/summary.csv").at(0);
  EXPECT_GT(std::stoi(sum.at("preemptions")), 0);
}

TEST(CliServeDisagg, BadCombinationsAreUsageErrors) {
  TmpDir d("cli_disagg_bad_");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--prefill-slice 1x1", "needs --kv-link-bandwidth"},
      {"--prefill-slice 1x1 --kv-link-bandwidth fast", "--kv-link-bandwidth 'fast'"},
      {"--prefill-slice 1x1 --kv-link-bandwidth '1 GB/s' --prefill-mesh data=1", "axis 'data' is not served"},
      {"--preemption pause", "--preemption 'pause'"},
  };
  for (const auto& [args, msg] : cases) {
    const CliResult r = run_tpusim_in(d.p.string(), kServe + " " + args + " --out " + (d / "out"));
    EXPECT_EQ(r.rc, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find(msg), std::string::npos) << args << ": " << r.err;
  }
}

}  // namespace
