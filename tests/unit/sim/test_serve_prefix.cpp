// The shape of a step's prefill beyond its token count: the cached prefix
// its chunks follow (StepShape::prefix: a later chunk of a prompt attends
// to the tokens of its own sequence already in the KV cache) and how many
// prompts its tokens belong to (StepShape::chunks: each attends causally
// to itself only, so many short prompts do less attention than one long
// one). The grid's axes, their interpolation, the cache lines, and the
// shape the schedulers (colocated and disaggregated) give each step, on
// step costs from a known function (no engine; the engine-backed step is
// in tests/cli/test_cli_serve.cpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "serve_test_costs.h"
#include "sim/cli/cli.h"
#include "sim/serve/disaggregated.h"
#include "sim/serve/server.h"
#include "sim/serve/step_cost.h"

namespace tpusim::sim::serve {
namespace {

std::string slurp_for_test(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

using test::cost_fn;

// cost_fn plus attention to the prefix: P x X (bilinear, so the grid's
// multilinear interpolation reproduces it exactly).
double cost_px(double P, double B, double C, double X) { return cost_fn(P, B, C) + 3e-10 * P * X; }

StepCostModel filled_px(std::int64_t max_tokens, std::int64_t max_batch, std::int64_t max_ctx,
                        std::int64_t max_prefix) {
  StepCostModel m(make_grid(max_tokens, max_batch, max_ctx, max_prefix), "0123456789abcdef");
  const auto& g = m.grid();
  for (auto p : g.prefill)
    for (auto b : g.decode) {
      if (p + b == 0) continue;
      for (auto x : p > 0 ? g.prefix : std::vector<std::int64_t>{0}) {
        auto at = [&](std::int64_t c) {
          GridPoint q{p, b, c, 0, x};
          m.add(q, cost_px(static_cast<double>(p), static_cast<double>(b), static_cast<double>(c),
                           static_cast<double>(x)));
        };
        if (b == 0)
          at(0);
        else
          for (auto c : g.context) at(c);
      }
    }
  return m;
}

TEST(ServePrefix, GridAxisRunsFromZeroToTheLongestPrefix) {
  EXPECT_EQ(make_grid(512, 32, 2048).prefix, (std::vector<std::int64_t>{0}));
  EXPECT_EQ(make_grid(512, 32, 2048, 0).prefix, (std::vector<std::int64_t>{0}));
  EXPECT_EQ(make_grid(512, 32, 2048, 100).prefix, (std::vector<std::int64_t>{0, 100}));
  EXPECT_EQ(make_grid(512, 32, 2048, 1024).prefix, (std::vector<std::int64_t>{0, 1024}));
  EXPECT_EQ(make_grid(512, 32, 2048, 1798).prefix, (std::vector<std::int64_t>{0, 1024, 1798}));
  EXPECT_EQ(make_grid(512, 32, 2048, 131070).prefix, (std::vector<std::int64_t>{0, 1024, 8192, 65536, 131070}));
  // Without prefill there is no chunk to follow a prefix.
  EXPECT_EQ(make_grid(0, 32, 2048, 4096).prefix, (std::vector<std::int64_t>{0}));
}

TEST(ServePrefix, BilinearPrefixCostIsInterpolatedExactly) {
  StepCostModel m = filled_px(512, 32, 2048, 1798);
  for (const auto& s : {StepShape{100, 7, 333.3, 0, 555.5}, StepShape{512, 0, 0, 0, 1798},
                        StepShape{300, 0, 0, 0, 0}, StepShape{17, 1, 64, 0, 1000}, StepShape{0, 19, 1500, 0, 0}})
    EXPECT_NEAR(m.cost(s), cost_px(static_cast<double>(s.prefill), static_cast<double>(s.decode), s.context, s.prefix),
                1e-12)
        << s.prefill << " " << s.decode << " " << s.context << " " << s.prefix;
  EXPECT_TRUE(m.missing().empty());
}

TEST(ServePrefix, AStepWithoutAPrefixNeedsNoPrefixCorners) {
  StepCostModel m(make_grid(512, 32, 2048, 1798), "0123456789abcdef");
  for (const auto& p : m.corners({100, 7, 300, 0, 0})) EXPECT_EQ(p.prefix, 0);
  EXPECT_EQ(m.corners({100, 7, 300, 0, 0}).size(), 8u);
  // Off the prefix axis too: twice the corners, each prefill corner at
  // both prefixes around it; decode-only corners (prefill 0) keep prefix 0.
  const auto c = m.corners({100, 7, 300, 0, 1400});
  EXPECT_EQ(c.size(), 16u);
  for (const auto& p : c) EXPECT_TRUE(p.prefix == 1024 || p.prefix == 1798);
  const auto d = m.corners({10, 7, 300, 0, 1400});  // prefill corners 0 and 16
  EXPECT_EQ(d.size(), 12u);                         // 4 decode-only, 8 with the chunk
  for (const auto& p : d) EXPECT_TRUE(p.prefill == 0 ? p.prefix == 0 : (p.prefix == 1024 || p.prefix == 1798));
}

TEST(ServePrefix, CacheLinesKeepThePrefixAndOldLinesStillLoad) {
  const auto path =
      (std::filesystem::temp_directory_path() / ("serve_prefix_cache_" + std::to_string(::getpid()))).string();
  std::filesystem::remove(path);
  StepCostModel a(make_grid(512, 32, 2048, 1798), "aaaaaaaaaaaaaaaa");
  a.add({16, 0, 0, 0, 1798}, 1.5e-3);
  a.add({16, 4, 64, 3, 1024}, 2.5e-3);
  a.add({16, 4, 64, 3, 0}, 2.25e-3);
  a.add({0, 4, 256}, 3.5e-3);
  a.save(path, "a");
  StepCostModel b(make_grid(512, 32, 2048, 1798), "aaaaaaaaaaaaaaaa");
  b.load(path);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_DOUBLE_EQ(b.value({16, 0, 0, 0, 1798}), 1.5e-3);
  EXPECT_DOUBLE_EQ(b.value({16, 4, 64, 3, 1024}), 2.5e-3);
  EXPECT_DOUBLE_EQ(b.value({16, 4, 64, 3, 0}), 2.25e-3);
  EXPECT_DOUBLE_EQ(b.value({0, 4, 256}), 3.5e-3);
  // Lines as earlier versions wrote them (no prefix field) are points of
  // prefix 0.
  std::ofstream(path, std::ios::app) << "aaaaaaaaaaaaaaaa 64 0 0 0.004\naaaaaaaaaaaaaaaa 64 1 64 0.005 2\n";
  StepCostModel c(make_grid(512, 32, 2048, 1798), "aaaaaaaaaaaaaaaa");
  c.load(path);
  EXPECT_DOUBLE_EQ(c.value({64, 0, 0, 0, 0}), 0.004);
  EXPECT_DOUBLE_EQ(c.value({64, 1, 64, 2, 0}), 0.005);
  // A prefix on a step without prefill, a prefix of 0 written out, and
  // adapters 0 without a prefix are malformed lines, named by file:line.
  test::expect_cache_lines_refused(
      path + ".bad", make_grid(512, 32, 2048, 1798),
      {"aaaaaaaaaaaaaaaa 0 4 256 0.1 0 300", "aaaaaaaaaaaaaaaa 16 0 0 0.1 0 0", "aaaaaaaaaaaaaaaa 16 0 0 0.1 0",
       "aaaaaaaaaaaaaaaa 16 0 0 0.1 0 256 9 1", "aaaaaaaaaaaaaaaa 16 0 0 0.1 -1 256"});
  std::filesystem::remove(path);
}

ServerOptions opts(std::int64_t max_tokens) {
  ServerOptions o;
  o.max_batch = 2;
  o.max_tokens = max_tokens;
  o.kv_pages = 1 << 20;
  o.arrival = Arrival::offline;
  return o;
}

// Two prompts of 1000 tokens at time 0, 256 tokens a step, decode first:
// A's chunks follow 0, 256 and 512 cached tokens; the fourth step holds
// A's last 232 tokens (after 768) and B's first 24 (after none), whose
// token-weighted prefix is 232 x 768 / 256 = 696; then A decodes while B's
// next chunk of 255 follows its 24.
TEST(ServePrefix, EachStepCostsItsChunksTokenWeightedPrefix) {
  StepCostModel m = filled_px(256, 2, 1002, 999);
  const std::vector<Request> reqs = {{0, 0.0, 1000, 2}, {1, 0.0, 1000, 2}};
  const ServeResult r = simulate_serving(reqs, opts(256), m);
  ASSERT_GE(r.steps.size(), 5u);
  const double want[] = {0, 256, 512, 696, 24};
  for (int i = 0; i < 5; ++i) {
    const auto& st = r.steps[static_cast<std::size_t>(i)];
    EXPECT_DOUBLE_EQ(st.prefill_prefix, want[i]) << "step " << i;
    EXPECT_NEAR(st.duration,
                cost_px(static_cast<double>(st.prefill_tokens), static_cast<double>(st.decode_seqs), st.mean_context,
                        want[i]),
                1e-12)
        << "step " << i;
  }
  EXPECT_EQ(r.steps[3].prefill_tokens, 256);
  EXPECT_EQ(r.steps[4].prefill_tokens, 255);
  EXPECT_EQ(r.steps[4].decode_seqs, 1);
  EXPECT_TRUE(m.missing().empty());
}

// The disaggregated prefill instance chunks prompts the same way: its
// steps cost their chunks' prefixes too.
TEST(ServePrefix, DisaggregatedPrefillStepsCostTheirPrefixes) {
  StepCostModel pre = filled_px(256, 2, 1002, 999), dec = filled_px(256, 2, 1002, 999);
  const std::vector<Request> reqs = {{0, 0.0, 600, 2}};
  const ServeResult r = simulate_disaggregated(reqs, opts(256), {1e3, 1e12}, pre, dec);
  std::vector<double> prefixes;
  for (const auto& st : r.steps)
    if (st.prefill_tokens > 0) {
      prefixes.push_back(st.prefill_prefix);
      EXPECT_NEAR(st.duration, cost_px(static_cast<double>(st.prefill_tokens), 0, 0, st.prefill_prefix), 1e-12);
    }
  EXPECT_EQ(prefixes, (std::vector<double>{0, 256, 512}));
}

// cost_px plus causal attention within the chunks, P^2 / 2n pairs: linear
// in 1 / n, as the grid interpolates the chunks.
double cost_pxn(double P, double B, double C, double X, double n) { return cost_px(P, B, C, X) + 2e-11 * P * P / n; }

// Every corner the interpolation can ask for: a prefill point P holds the
// chunks axis up to P.
StepCostModel filled_pxn(std::int64_t max_tokens, std::int64_t max_batch, std::int64_t max_ctx, std::int64_t max_prefix,
                         std::int64_t max_chunks) {
  StepCostModel m(make_grid(max_tokens, max_batch, max_ctx, max_prefix, max_chunks), "0123456789abcdef");
  const auto& g = m.grid();
  for (auto p : g.prefill)
    for (auto b : g.decode) {
      if (p + b == 0) continue;
      std::vector<std::int64_t> ns = {1};
      if (p > 0) {
        ns.clear();
        for (auto n : g.chunks)
          if (n < p) ns.push_back(n);
        if (ns.empty() || ns.back() != std::min(p, g.chunks.back())) ns.push_back(std::min(p, g.chunks.back()));
      }
      for (auto x : p > 0 ? g.prefix : std::vector<std::int64_t>{0})
        for (auto n : ns)
          for (auto c : b == 0 ? std::vector<std::int64_t>{0} : g.context)
            m.add({p, b, c, 0, x, n}, cost_pxn(static_cast<double>(p), static_cast<double>(b), static_cast<double>(c),
                                               static_cast<double>(x), static_cast<double>(n)));
    }
  return m;
}

TEST(ServeChunks, GridAxisRunsFromOneToTheMostPromptsAStepHolds) {
  EXPECT_EQ(make_grid(8192, 512, 2048).chunks, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(make_grid(8192, 512, 2048, 0, 33).chunks, (std::vector<std::int64_t>{1, 4, 16, 33}));
  EXPECT_EQ(make_grid(8192, 512, 2048, 0, 2).chunks, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(make_grid(16, 512, 2048, 0, 100).chunks, (std::vector<std::int64_t>{1, 4, 16}));  // at most the tokens
}

TEST(ServeChunks, CausalPairsAreInterpolatedExactlyInOneOverChunks) {
  StepCostModel m = filled_pxn(8192, 32, 2048, 1798, 33);
  // On the prefill axis's points (P^2 / n is not linear in P between them).
  for (const auto& s :
       {StepShape{8192, 0, 0, 0, 0, 10}, StepShape{8192, 5, 700, 0, 300, 2.5}, StepShape{4096, 0, 0, 0, 0, 13.7},
        StepShape{1024, 31, 2000, 0, 1500, 33}, StepShape{256, 0, 0, 0, 0, 1}})
    EXPECT_NEAR(m.cost(s),
                cost_pxn(static_cast<double>(s.prefill), static_cast<double>(s.decode), s.context, s.prefix, s.chunks),
                1e-12)
        << s.prefill << " chunks " << s.chunks;
  EXPECT_TRUE(m.missing().empty());
  // A single chunk needs no corner of more chunks.
  for (const auto& p : m.corners({5000, 3, 100, 0, 0, 1})) EXPECT_EQ(p.chunks, 1);
  // A corner of fewer prefill tokens than chunks holds as many chunks as
  // tokens: the 16-token corner of a 20-token step of 20 one-token prompts.
  bool capped = false;
  for (const auto& p : m.corners({20, 0, 0, 0, 0, 20})) {
    EXPECT_LE(p.chunks, p.prefill);
    capped = capped || (p.prefill == 16 && p.chunks == 16);
  }
  EXPECT_TRUE(capped);
}

// The chunks axis is separable: a step of decodes (or LoRA adapters) and
// several prompts takes its chunks' change from prefill-only corners, so
// the decode corners are simulated at one chunk only.
TEST(ServeChunks, ChunksCornersHoldNoDecodesOrAdapters) {
  StepCostModel m(make_grid(8192, 32, 2048, 1798, 33), "0123456789abcdef");
  bool some = false;
  for (const auto& s : {StepShape{4096, 5, 700, 0, 300, 2.5}, StepShape{3000, 31, 2000, 0, 1500, 20}})
    for (const auto& p : m.corners(s)) {
      if (p.chunks == 1) continue;
      some = true;
      EXPECT_EQ(p.decode, 0);
      EXPECT_EQ(p.context, 0);
      EXPECT_EQ(p.adapters, 0);
    }
  EXPECT_TRUE(some);
  // What a step's chunks save is the prefill-only difference, whatever
  // its decodes cost: here 0.04 of 0.10.
  m.add({4096, 0, 0, 0, 0, 1}, 0.10);
  m.add({4096, 0, 0, 0, 0, 4}, 0.06);
  m.add({4096, 16, 1024, 0, 0, 1}, 0.30);
  EXPECT_NEAR(m.cost({4096, 16, 1024, 0, 0, 4}), 0.26, 1e-12);
  EXPECT_NEAR(m.cost({4096, 0, 0, 0, 0, 4}), 0.06, 1e-12);
  EXPECT_TRUE(m.missing().empty());
  // A cache whose chunks would save more than the step costs (no engine
  // gives that) leaves the step its one-chunk cost, never a time <= 0.
  m.add({4096, 16, 1024, 0, 0, 1}, 0.03);
  EXPECT_NEAR(m.cost({4096, 16, 1024, 0, 0, 4}), 0.03, 1e-12);
}

TEST(ServeChunks, CacheLinesKeepTheChunks) {
  const auto path =
      (std::filesystem::temp_directory_path() / ("serve_chunks_cache_" + std::to_string(::getpid()))).string();
  std::filesystem::remove(path);
  StepCostModel a(make_grid(8192, 32, 2048, 1798, 33), "aaaaaaaaaaaaaaaa");
  a.add({8192, 0, 0, 0, 0, 16}, 0.15);
  a.add({1024, 4, 64, 3, 1024, 4}, 0.05);
  a.save(path, "a");
  StepCostModel b(make_grid(8192, 32, 2048, 1798, 33), "aaaaaaaaaaaaaaaa");
  b.load(path);
  EXPECT_DOUBLE_EQ(b.value({8192, 0, 0, 0, 0, 16}), 0.15);
  EXPECT_DOUBLE_EQ(b.value({1024, 4, 64, 3, 1024, 4}), 0.05);
  EXPECT_NE(slurp_for_test(path).find("aaaaaaaaaaaaaaaa 8192 0 0 0.15 0 0 16\n"), std::string::npos);
  test::expect_cache_lines_refused(path + ".bad", make_grid(8192, 32, 2048, 1798, 33),
                                   {"aaaaaaaaaaaaaaaa 16 0 0 0.1 0 0 1", "aaaaaaaaaaaaaaaa 16 0 0 0.1 0 0 17",
                                    "aaaaaaaaaaaaaaaa 0 4 64 0.1 0 0 2", "aaaaaaaaaaaaaaaa 16 0 0 0.1 0 0 2 1"});
  std::filesystem::remove(path);
}

// Eight prompts of 100 tokens at once, 512 tokens a step: the first
// arrival's step holds its prompt alone; the next holds its decode, five
// whole prompts and 11 tokens of the sixth (chunks 511^2 / (5 x 100^2 +
// 11^2)); the third five decodes, the sixth's other 89 tokens after its 11
// and the last prompt whole.
TEST(ServeChunks, EachStepCostsItsPromptsCausalAttention) {
  StepCostModel m = filled_pxn(512, 8, 512, 510, 7);
  ServerOptions o = opts(512);
  o.max_batch = 8;
  std::vector<Request> reqs;
  for (std::int64_t i = 0; i < 8; ++i) reqs.push_back({i, 0.0, 100, 2});
  const ServeResult r = simulate_serving(reqs, o, m);
  ASSERT_GE(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[0].prefill_tokens, 100);
  EXPECT_DOUBLE_EQ(r.steps[0].prefill_chunks, 1);
  const auto& s1 = r.steps[1];
  EXPECT_EQ(s1.prefill_tokens, 511);
  EXPECT_EQ(s1.prefill_seqs, 6);
  EXPECT_DOUBLE_EQ(s1.prefill_chunks, 511.0 * 511.0 / (5 * 100.0 * 100.0 + 11.0 * 11.0));
  EXPECT_DOUBLE_EQ(s1.prefill_prefix, 0);
  const auto& s2 = r.steps[2];
  EXPECT_EQ(s2.prefill_tokens, 189);
  EXPECT_EQ(s2.decode_seqs, 5);
  EXPECT_DOUBLE_EQ(s2.prefill_chunks, 189.0 * 189.0 / (89.0 * 89.0 + 100.0 * 100.0));
  EXPECT_DOUBLE_EQ(s2.prefill_prefix, 89.0 * 11.0 / 189.0);
  // Off the prefill axis the P^2 / n term is interpolated, not exact: on
  // the axis (P = 512 corner weights) it is; check against the grid's own
  // interpolation of the recorded shape, which must be what the step took.
  for (const auto& st : {s1, s2})
    EXPECT_DOUBLE_EQ(st.duration, m.cost({st.prefill_tokens, st.decode_seqs, st.mean_context, 0, st.prefill_prefix,
                                          st.prefill_chunks}));
  EXPECT_TRUE(m.missing().empty());
}

}  // namespace
}  // namespace tpusim::sim::serve
