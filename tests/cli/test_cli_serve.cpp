// `tpusim serve` end to end with a two-layer decoder (steps simulate in
// milliseconds): step costs simulated by `tpusim serve step` children,
// cached in a keyed file and reused, the result files, the decode-bound
// throughput limit computed from the cached step costs, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "tiny_decoder.h"

namespace {

using tpusim::test::CliResult;
using tpusim::test::slurp;
using tpusim::test::TmpDir;

constexpr const char* kTiny = tpusim::test::kTinyDecoder;

struct Serve {
  TmpDir d{"cli_serve_"};
  Serve() { std::ofstream(d / "tiny.yaml") << kTiny; }
  CliResult run(const std::string& extra, const std::string& out = "out",
                const std::string& lengths = "--input fixed:32 --output fixed:32") {
    return tpusim::test::run_tpusim_in(d.p.string(), "serve --model " + (d / "tiny.yaml") +
                                                         " --arrival offline --requests 32 --max-batch 4"
                                                         " --max-tokens 64 --jobs 2 --quiet --step-cache " +
                                                         (d / "cache.txt") + " --out " + (d / out) + " " + lengths +
                                                         " " + extra);
  }
};

// summary.csv: header row and value row into a map.
std::map<std::string, std::string> summary(const std::string& file) {
  std::istringstream in(slurp(file));
  std::string h, v, a, b;
  std::getline(in, h);
  std::getline(in, v);
  std::istringstream hs(h), vs(v);
  std::map<std::string, std::string> m;
  while (std::getline(hs, a, ',') && std::getline(vs, b, ',')) m[a] = b;
  return m;
}

std::size_t lines(const std::string& file) {
  std::istringstream in(slurp(file));
  std::string l;
  std::size_t n = 0;
  while (std::getline(in, l)) ++n;
  return n;
}

TEST(CliServe, SimulatesStepsCachesThemAndReusesTheCache) {
  Serve s;
  CliResult r = s.run("--trace");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find(" 0 simulated now"), std::string::npos) << r.out;
  EXPECT_EQ(lines(s.d / "out/requests.csv"), 33u);
  EXPECT_GT(lines(s.d / "out/steps.csv"), 32u);
  EXPECT_NE(slurp(s.d / "out/trace.json").find("\"request 31\""), std::string::npos);
  const auto a = summary(s.d / "out/summary.csv");

  // Decode-bound limit from the cached costs: every decode step holds at
  // most 4 sequences, whose contexts (32..62 tokens) lie at or below the
  // only context point (the longest decode's cache, 32 + 32 - 1 = 63), so
  // every full decode step costs exactly the grid point (0, 4, 63)
  // (contexts below the first point take its cost): output tokens/s <=
  // 4 / cost(0, 4, 63). Prefill steps only lower it: 32 prompts of 32
  // tokens against 32 x 31 decode tokens.
  double cost = 0;
  std::istringstream cache(slurp(s.d / "cache.txt"));
  std::string key;
  long p = 0, b = 0, c = 0;
  double sec = 0;
  for (std::string line; std::getline(cache, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    ASSERT_TRUE(ls >> key >> p >> b >> c >> sec) << line;
    if (p == 0 && b == 4 && c == 63) cost = sec;
  }
  ASSERT_GT(cost, 0) << slurp(s.d / "cache.txt");
  const double limit = 4 / cost, tps = std::stod(a.at("output_tps"));
  EXPECT_LT(tps, limit);
  EXPECT_GT(tps, 0.8 * limit);

  // Second run: every cost from the cache, the same results.
  r = s.run("", "out2");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find(" 0 simulated now"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(s.d / "out/requests.csv"), slurp(s.d / "out2/requests.csv"));
  EXPECT_EQ(slurp(s.d / "out/summary.csv"), slurp(s.d / "out2/summary.csv"));

  // Another config: the cached points are not its own, so it simulates.
  r = s.run("--set hbm.model=calibrated", "out3");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find(" 0 simulated now"), std::string::npos) << r.out;
  std::set<std::string> keys;
  std::istringstream all(slurp(s.d / "cache.txt"));
  for (std::string line; std::getline(all, line);)
    if (!line.empty() && line[0] != '#') keys.insert(line.substr(0, 16));
  EXPECT_EQ(keys.size(), 2u);  // both configs' points kept in the one file
  EXPECT_NE(summary(s.d / "out3/summary.csv").at("output_tps"), a.at("output_tps"));
}

// Speculative decoding through the CLI: verification steps (k + 1 query
// tokens), the draft's steps and the plain steps for the comparison each
// get their own cache key, and the summary reports the tokens per
// verification against the acceptance model's expectation.
TEST(CliServe, SpeculativeDecodingReportsItsSpeedUp) {
  Serve s;
  std::string draft = kTiny;
  draft.replace(draft.find("layers: 2"), 9, "layers: 1");
  draft.replace(draft.find("tiny-decoder"), 12, "tiny-draft00");
  std::ofstream(s.d / "draft.yaml") << draft;
  const CliResult r = s.run("--spec-tokens 3 --acceptance 0.5 --draft-model " + (s.d / "draft.yaml"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("speculative k=3 (draft tiny-draft00)"), std::string::npos) << r.out;
  const auto m = summary(s.d / "out/summary.csv");
  EXPECT_DOUBLE_EQ(std::stod(m.at("expected_tokens_per_verification")), 1 + 0.5 + 0.25 + 0.125);
  const double got = std::stod(m.at("tokens_per_verification"));
  EXPECT_GT(got, 1.2);  // 32 x 31 decode tokens: a sample mean, sd ~0.03
  EXPECT_LT(got, 2.0);
  std::set<std::string> keys;
  std::istringstream all(slurp(s.d / "cache.txt"));
  for (std::string line; std::getline(all, line);)
    if (!line.empty() && line[0] != '#') keys.insert(line.substr(0, 16));
  EXPECT_EQ(keys.size(), 3u);  // verification, plain and draft steps
}

// --rates: one run per rate over the same requests, a row each in
// curve.csv; throughput follows the offered rate below saturation and
// TTFT does not fall as the rate rises: the median at every step, the p99
// (of 40 requests, the slowest one's: which request lands on another's
// prefill varies with the spacing) from the lowest rate to the highest.
TEST(CliServe, RatesGiveAThroughputLatencyCurve) {
  Serve s;
  const CliResult r = tpusim::test::run_tpusim_in(
      s.d.p.string(), "serve --model " + (s.d / "tiny.yaml") +
                          " --requests 40 --rates 200,400,800 --input fixed:32 --output fixed:32 --max-batch 4"
                          " --max-tokens 64 --jobs 2 --quiet --out " + (s.d / "out"));
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream in(slurp(s.d / "out/curve.csv"));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("probe,rate,meets_slo,throughput_rps", 0), 0u) << line;
  std::vector<std::vector<double>> rows;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<double> v;
    for (std::string f; std::getline(ls, f, ',');) v.push_back(std::stod(f));
    rows.push_back(v);
  }
  ASSERT_EQ(rows.size(), 3u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][1], 200.0 * (1 << i));
    if (i > 0) {
      EXPECT_GE(rows[i][6], rows[i - 1][6] * 0.999);  // ttft_p50
    }
  }
  EXPECT_GT(rows[2][7], rows[0][7]);  // ttft_p99
  EXPECT_GT(rows[1][3], rows[0][3]);  // more offered, more served
  const CliResult bad = tpusim::test::run_tpusim_in(
      s.d.p.string(), "serve --model " + (s.d / "tiny.yaml") + " --rates 1,x --out " + (s.d / "out2"));
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("found 'x'"), std::string::npos) << bad.err;
}

// The step grid spans --max-batch sequences at the longest context, a
// corner whose KV cache (64 x 2047 tokens x 1 KiB = 128 MiB here) exceeds
// the 64 MiB of HBM: the KV budget (about 28 full-length sequences) keeps
// the scheduler from ever forming it, so the grid still simulates it as a
// cost probe rather than refusing the deployment; a plain run of that
// step is refused.
TEST(CliServe, GridCornersBeyondHbmAreProbedNotRefused) {
  Serve s;
  const CliResult r = tpusim::test::run_tpusim_in(
      s.d.p.string(), "serve --model " + (s.d / "tiny.yaml") +
                          " --arrival offline --requests 32 --max-batch 64 --jobs 2 --quiet --set hbm.capacity=64MiB"
                          " --input fixed:1024 --output fixed:1000 --out " +
                          (s.d / "out"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(s.d / "out/summary.csv"));
  const CliResult run = tpusim::test::run_tpusim_in(
      s.d.p.string(), "run --arch v5e --model " + (s.d / "tiny.yaml") +
                          " --phase decode --batch 64 --context 2047 --set hbm.capacity=64MiB --quiet --out " +
                          (s.d / "run"));
  EXPECT_EQ(run.rc, 2);
  EXPECT_NE(run.err.find("does not fit"), std::string::npos) << run.err;
}

// Cache lines of exactly `fields` fields whose last one exceeds `above`
// (7: a prefix > 0; 8: chunks > 1).
int cache_points_with(const std::string& file, std::size_t fields, long above) {
  std::istringstream cache(slurp(file));
  int n = 0;
  for (std::string l; std::getline(cache, l);) {
    if (l.empty() || l[0] == '#') continue;
    std::istringstream ls(l);
    std::vector<std::string> f{std::istream_iterator<std::string>(ls), std::istream_iterator<std::string>()};
    if (f.size() == fields && std::stol(f.back()) > above) ++n;
  }
  return n;
}

double step_seconds(const CliResult& r) {
  const auto at = r.out.find("step_seconds ");
  return at == std::string::npos ? 0 : std::stod(r.out.substr(at + 13));
}

// Chunked prefill: a chunk attends to the cached tokens of its own
// sequence, so a step of the same chunk costs more after a longer prefix
// (more K/V read, more attention work); a grid corner past max_context is a
// cost probe, not refused. In a run of prompts longer than the token
// budget the later chunks' steps carry their prefix (steps.csv) and the
// cache holds points of those prefixes.
TEST(CliServe, ChunksCostTheirCachedPrefix) {
  Serve s;
  auto step = [&](const std::string& args) {
    return tpusim::test::run_tpusim_in(s.d.p.string(), "serve step --model " + (s.d / "tiny.yaml") + " " + args);
  };
  const CliResult r0 = step("--prefill 64 --prefix 0"), r1 = step("--prefill 64 --prefix 1536"),
                  r2 = step("--prefill 64 --prefix 4000");
  ASSERT_EQ(r0.rc, 0) << r0.err;
  ASSERT_EQ(r1.rc, 0) << r1.err;
  ASSERT_EQ(r2.rc, 0) << r2.err;
  EXPECT_GT(step_seconds(r1), step_seconds(r0));
  EXPECT_GT(step_seconds(r2), step_seconds(r1));
  const CliResult bad = step("--prefill 0 --decode 1 --prefix 8");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("--prefix"), std::string::npos) << bad.err;

  const CliResult r = s.run("--interp-check 2", "out", "--input fixed:1500 --output fixed:4");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream steps(slurp(s.d / "out/steps.csv"));
  std::string header, line;
  std::getline(steps, header);
  // The column named prefill_prefix.
  std::size_t col = 0;
  {
    std::istringstream hs(header);
    std::string name;
    for (std::size_t i = 0; std::getline(hs, name, ','); ++i)
      if (name == "prefill_prefix") col = i;
  }
  ASSERT_GT(col, 0u) << header;
  double most = 0;
  while (std::getline(steps, line)) {
    std::istringstream ls(line);
    std::string cell;
    for (std::size_t i = 0; i <= col; ++i) std::getline(ls, cell, ',');
    most = std::max(most, std::stod(cell));
  }
  EXPECT_GE(most, 1400);  // a 1500-token prompt's last chunks of at most 64 follow >= 1436 cached tokens
  EXPECT_GT(cache_points_with(s.d / "cache.txt", 7, 0), 0) << slurp(s.d / "cache.txt");
}

// Several prompts in one step: the same tokens split among more prompts
// do less causal attention, so the step is faster; a run of short prompts
// and a large token budget packs them (steps.csv's prefill_chunks) and
// caches points of several chunks.
TEST(CliServe, PromptsPackedInAStepCostTheirOwnAttention) {
  Serve s;
  auto step = [&](const std::string& args) {
    return tpusim::test::run_tpusim_in(s.d.p.string(), "serve step --model " + (s.d / "tiny.yaml") + " " + args);
  };
  const CliResult one = step("--prefill 2048"), four = step("--prefill 2048 --chunks 4");
  ASSERT_EQ(one.rc, 0) << one.err;
  ASSERT_EQ(four.rc, 0) << four.err;
  EXPECT_LT(step_seconds(four), step_seconds(one));
  for (const char* bad : {"--prefill 16 --chunks 17", "--prefill 16 --chunks 0", "--decode 1 --chunks 2"}) {
    const CliResult r = step(bad);
    EXPECT_EQ(r.rc, 2) << bad;
    EXPECT_NE(r.err.find("--chunks"), std::string::npos) << bad << ": " << r.err;
  }

  const CliResult r = tpusim::test::run_tpusim_in(
      s.d.p.string(), "serve --model " + (s.d / "tiny.yaml") +
                          " --arrival offline --requests 32 --max-batch 32 --max-tokens 1024 --jobs 2 --quiet"
                          " --input fixed:40 --output fixed:4 --step-cache " +
                          (s.d / "cache.txt") + " --out " + (s.d / "out"));
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream steps(slurp(s.d / "out/steps.csv"));
  std::string header, line;
  std::getline(steps, header);
  ASSERT_EQ(header.substr(header.rfind(',') + 1), "prefill_chunks") << header;
  double most = 0;
  while (std::getline(steps, line)) most = std::max(most, std::stod(line.substr(line.rfind(',') + 1)));
  EXPECT_GT(most, 20);  // up to 31 prompts of 40 tokens in a step of 32 sequences
  EXPECT_GT(cache_points_with(s.d / "cache.txt", 8, 1), 0) << slurp(s.d / "cache.txt");
}

// --attention-kernel batched: decode steps whose attention takes several
// sequences a grid step (the per-step costs paid once for them) are
// faster at short contexts; a serving run with it keys its cached steps
// apart from the per-sequence kernel's (a run of each simulates its own
// points), and dense attention, which no serving engine runs, is refused.
TEST(CliServe, BatchedAttentionKernelHasItsOwnSteps) {
  Serve s;
  auto step = [&](const std::string& args) {
    return tpusim::test::run_tpusim_in(s.d.p.string(), "serve step --model " + (s.d / "tiny.yaml") + " " + args);
  };
  const CliResult flash = step("--decode 64 --context 256"),
                  batched = step("--decode 64 --context 256 --attention-kernel batched");
  ASSERT_EQ(flash.rc, 0) << flash.err;
  ASSERT_EQ(batched.rc, 0) << batched.err;
  EXPECT_LT(step_seconds(batched), step_seconds(flash));
  const CliResult dense = step("--decode 8 --attention-kernel dense");
  EXPECT_EQ(dense.rc, 2);
  EXPECT_NE(dense.err.find("--attention-kernel: expected flash or batched"), std::string::npos) << dense.err;

  ASSERT_EQ(s.run("", "a").rc, 0);
  const std::size_t after_flash = lines(s.d / "cache.txt");
  const CliResult r = s.run("--attention-kernel batched", "b");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_GT(lines(s.d / "cache.txt"), after_flash);  // none of the flash points reused
  std::set<std::string> keys;
  std::istringstream cache(slurp(s.d / "cache.txt"));
  for (std::string l; std::getline(cache, l);)
    if (!l.empty() && l[0] != '#') keys.insert(l.substr(0, l.find(' ')));
  EXPECT_EQ(keys.size(), 2u) << slurp(s.d / "cache.txt");
}

TEST(CliServe, BadInputIsAnErrorNamingIt) {
  Serve s;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--mesh data=2 --slice 2x1", "use --replicas"},
      {"--input fixed:0 --output fixed:8", "--input 'fixed:0'"},
      {"--policy lifo", "--policy 'lifo'"},
      {"--slo ttft=1s", "--slo 'ttft=1s'"},
      {"--input fixed:8 --output fixed:4000", "max_context 2048"},
      {"--kv-pages 2", "needs 4 KV pages"},
      {"--spec-tokens 2 --acceptance pos:0.5", "expected 2 rates in [0, 1]"},
      {"--draft-model x.yaml", "--draft-model needs --spec-tokens"},
  };
  for (const auto& [args, msg] : cases) {
    const bool lengths = args.rfind("--input", 0) == 0;
    const CliResult r = lengths ? s.run(args, "out", "") : s.run(args);
    EXPECT_EQ(r.rc, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find(msg), std::string::npos) << args << ": " << r.err;
  }
  std::ofstream(s.d / "trace.csv") << "arrival,input_tokens,output_tokens\n0,8,8\n1,-3,8\n";
  const CliResult r = s.run("--trace-csv " + (s.d / "trace.csv"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("trace.csv:3: input_tokens"), std::string::npos) << r.err;
}

}  // namespace
