// LoRA in the serving simulation: the adapter cache (LRU slots, serial
// host-link loads), adapter popularity, the adapters axis of the step-cost
// grid and its cache lines, and the event loop's admission waiting for
// loads, on step costs from a known function (no engine).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "models/lora.h"
#include "models/sharding.h"
#include "models/zoo.h"
#include "sim/cli/cli.h"
#include "sim/config/config_loader.h"
#include "sim/serve/adapters.h"
#include "sim/serve/request_workload.h"
#include "sim/serve/server.h"
#include "sim/serve/step_cost.h"

namespace tpusim::sim::serve {
namespace {

const auto none = [](std::int64_t) { return false; };

// 1 ms per distinct adapter on top of a launch cost and per-row work:
// linear in every axis, so the grid reproduces it exactly.
double cost_fn(double P, double B, double C, double n) { return 4e-3 + 2e-6 * P + 1e-5 * B + 4e-9 * B * C + 1e-3 * n; }

StepCostModel filled(std::int64_t max_tokens, std::int64_t max_batch, std::int64_t max_ctx, std::int64_t adapters) {
  StepGrid g = make_grid(max_tokens, max_batch, max_ctx);
  g.adapters = lora_adapter_axis(adapters);
  StepCostModel m(g, "0123456789abcdef");
  for (auto p : g.prefill)
    for (auto b : g.decode)
      for (auto n0 : g.adapters) {
        if (p + b == 0) continue;
        const std::int64_t n = std::min(n0, p + b);
        const auto P = static_cast<double>(p), B = static_cast<double>(b), N = static_cast<double>(n);
        if (b == 0) {
          m.add({p, 0, 0, n}, cost_fn(P, 0, 0, N));
          continue;
        }
        for (auto c : g.context) m.add({p, b, c, n}, cost_fn(P, B, static_cast<double>(c), N));
      }
  return m;
}

std::vector<Request> offline(std::int64_t n, std::int64_t in, std::int64_t out) {
  WorkloadSpec w;
  w.arrival = Arrival::offline;
  w.count = n;
  w.input = parse_length_dist("t", "fixed:" + std::to_string(in));
  w.output = parse_length_dist("t", "fixed:" + std::to_string(out));
  return synthesize(w);
}

ServerOptions opts(std::int64_t slots, double load) {
  ServerOptions o;
  o.arrival = Arrival::offline;
  o.max_batch = 32;
  o.max_tokens = 512;
  o.kv_pages = 1 << 20;
  o.lora.slots = slots;
  o.lora.load_seconds = load;
  return o;
}

}  // namespace

// Loads go one after another over the host link; a loading adapter is
// neither usable nor evictable before its load ends.
TEST(AdapterCache, LoadsAreSerialOnTheHostLink) {
  AdapterCache c(2, 1.0);
  EXPECT_DOUBLE_EQ(c.acquire(0, 0.0, none), 1.0);
  EXPECT_DOUBLE_EQ(c.acquire(1, 0.0, none), 2.0);            // waits for the link
  EXPECT_DOUBLE_EQ(c.acquire(0, 0.5, none), 1.0);            // resident (loading): no new load
  EXPECT_EQ(c.acquire(2, 0.5, none), AdapterCache::kNever);  // both slots loading
  EXPECT_EQ(c.loads(), 2);
  EXPECT_EQ(c.evictions(), 0);
  // The link is idle after t = 2: a load at 5 starts at 5.
  c.touch(1);
  c.touch(0);  // 1 is now the least recently used
  EXPECT_DOUBLE_EQ(c.acquire(2, 5.0, none), 6.0);
  EXPECT_TRUE(c.resident(0));
  EXPECT_FALSE(c.resident(1));
  EXPECT_EQ(c.evictions(), 1);
  EXPECT_DOUBLE_EQ(c.link_busy(), 3.0);
}

// The least recently used adapter that nothing pins goes first.
TEST(AdapterCache, EvictsTheLeastRecentlyUsedUnpinned) {
  AdapterCache c(3, 0.1);
  for (std::int64_t a : {0, 1, 2}) c.acquire(a, 0.0, none);
  c.touch(2);
  c.touch(0);
  c.touch(1);  // LRU order now 2, 0, 1
  auto pin = [](std::set<std::int64_t> p) { return [p](std::int64_t a) { return p.count(a) != 0; }; };
  c.acquire(3, 1.0, pin({2}));  // 2 is pinned: 0 goes
  EXPECT_TRUE(c.resident(2));
  EXPECT_FALSE(c.resident(0));
  c.acquire(4, 2.0, none);  // 2 is the LRU now
  EXPECT_FALSE(c.resident(2));
  EXPECT_EQ(c.acquire(5, 3.0, pin({1, 3, 4})), AdapterCache::kNever);
  EXPECT_EQ(c.evictions(), 2);
}

// Uniform and Zipf popularity, within 5 standard deviations of a binomial
// count over 8000 requests; the seed fixes the draw.
TEST(AdapterDist, UniformAndZipfFrequencies) {
  std::vector<Request> r(8000);
  assign_adapters(r, 8, parse_adapter_dist("t", "uniform"), 3);
  std::vector<int> n(8);
  for (const auto& q : r) ++n[static_cast<std::size_t>(q.adapter)];
  const double sd = std::sqrt(8000.0 / 8 * 7 / 8);
  for (int k : n) EXPECT_NEAR(k, 1000, 5 * sd);
  assign_adapters(r, 8, parse_adapter_dist("t", "zipf:1"), 3);
  std::fill(n.begin(), n.end(), 0);
  for (const auto& q : r) ++n[static_cast<std::size_t>(q.adapter)];
  double h8 = 0;
  for (int i = 1; i <= 8; ++i) h8 += 1.0 / i;
  for (int i = 0; i < 8; ++i) {
    const double p = 1.0 / (i + 1) / h8;
    EXPECT_NEAR(n[static_cast<std::size_t>(i)], 8000 * p, 5 * std::sqrt(8000 * p * (1 - p))) << "adapter " << i;
  }
  std::vector<Request> again(8000);
  assign_adapters(again, 8, parse_adapter_dist("t", "zipf:1"), 3);
  for (std::size_t i = 0; i < r.size(); ++i) ASSERT_EQ(again[i].adapter, r[i].adapter);
  EXPECT_THROW(parse_adapter_dist("t", "zipf:0"), UsageError);
  EXPECT_THROW(parse_adapter_dist("t", "pareto"), UsageError);
}

TEST(ServeLoraGrid, AdapterAxisInterpolatesAndClamps) {
  EXPECT_EQ(lora_adapter_axis(8), (std::vector<std::int64_t>{0, 1, 2, 4, 8}));
  EXPECT_EQ(lora_adapter_axis(6), (std::vector<std::int64_t>{0, 1, 2, 4, 6}));
  StepCostModel m = filled(512, 32, 2048, 8);
  // {0, 6, 100, 6}: the corner of 4 decodes holds at most 4 adapters, so
  // its cost at 6 is extrapolated from 2 and 4 adapters (exact for a cost
  // linear in the adapters).
  for (const auto& s :
       {StepShape{100, 7, 333.3, 3}, StepShape{0, 19, 1500, 8}, StepShape{300, 0, 0, 1}, StepShape{0, 6, 100, 6}})
    EXPECT_NEAR(m.cost(s),
                cost_fn(static_cast<double>(s.prefill), static_cast<double>(s.decode), s.context,
                        static_cast<double>(s.adapters)),
                1e-12);
  // Two decodes with two adapters: no corner has more adapters than rows
  // (1 decode -> 1 adapter, 4 decodes -> 2).
  for (const auto& p : m.corners({0, 2, 100, 2})) EXPECT_LE(p.adapters, p.prefill + p.decode);
  EXPECT_TRUE(m.missing().empty());
}

TEST(ServeLoraGrid, CacheLinesKeepTheAdapters) {
  const auto dir = std::filesystem::temp_directory_path() / "tpusim_lora_cache_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "steps.cache").string();
  std::filesystem::remove(path);
  StepCostModel a(make_grid(64, 4, 256), "0123456789abcdef");
  a.add({16, 4, 64, 0}, 0.25);
  a.add({16, 4, 64, 3}, 0.5);
  a.save(path, "test");
  StepCostModel b(make_grid(64, 4, 256), "0123456789abcdef");
  b.load(path);
  EXPECT_DOUBLE_EQ(b.value({16, 4, 64, 0}), 0.25);
  EXPECT_DOUBLE_EQ(b.value({16, 4, 64, 3}), 0.5);
  // (A seventh field is the chunk's cached prefix: test_serve_prefix.cpp.)
  for (const char* bad :
       {"0123456789abcdef 16 4 64 0.5 0\n", "0123456789abcdef 16 4 64 0.5 x\n", "0123456789abcdef 16 4 64 0.5 2 7 1\n"}) {
    std::ofstream(path) << bad;
    StepCostModel c(make_grid(64, 4, 256), "0123456789abcdef");
    EXPECT_THROW(c.load(path), UsageError) << bad;
  }
  std::filesystem::remove_all(dir);
}

// Four requests, four adapters, every slot free: the loads of all four
// start at time 0 one after another (0.1 s each), and request i is
// admitted when its adapter's load ends, at 0.1 (i + 1).
TEST(ServeLora, RequestsWaitForTheirAdapterLoads) {
  std::vector<Request> reqs = offline(4, 16, 4);
  for (std::size_t i = 0; i < reqs.size(); ++i) reqs[i].adapter = static_cast<std::int64_t>(i);
  StepCostModel m = filled(512, 32, 64, 4);
  const ServeResult r = simulate_serving(reqs, opts(4, 0.1), m);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(r.requests[i].scheduled, 0.1 * static_cast<double>(i + 1), 1e-12);
  EXPECT_EQ(r.adapter_loads, 4);
  EXPECT_EQ(r.adapter_evictions, 0);
  std::int64_t loads = 0;
  for (const auto& st : r.steps) loads += st.adapter_loads;
  EXPECT_EQ(loads, 0);  // all four started before the first step (while idle)
  EXPECT_TRUE(m.missing().empty());
}

// One slot, adapters alternating 0, 1, 0, 1: a request's adapter can
// only replace the previous one once its request has finished (a running
// sequence pins its adapter), so each request starts one load after the
// previous one's finish, and every adapter but the first evicts one.
TEST(ServeLora, OneSlotSerializesRequestsOfDifferentAdapters) {
  std::vector<Request> reqs = offline(4, 16, 4);
  for (std::size_t i = 0; i < reqs.size(); ++i) reqs[i].adapter = static_cast<std::int64_t>(i % 2);
  StepCostModel m = filled(512, 32, 64, 2);
  const ServeResult r = simulate_serving(reqs, opts(1, 0.1), m);
  EXPECT_NEAR(r.requests[0].scheduled, 0.1, 1e-12);
  for (std::size_t i = 1; i < 4; ++i) EXPECT_NEAR(r.requests[i].scheduled, r.requests[i - 1].finish + 0.1, 1e-12);
  EXPECT_EQ(r.adapter_loads, 4);
  EXPECT_EQ(r.adapter_evictions, 3);
}

// Eight requests over eight adapters (all resident after their loads)
// share steps: the steps count up to eight distinct adapters and cost
// more than the same requests on one adapter.
TEST(ServeLora, StepsCountDistinctAdapters) {
  std::vector<Request> eight = offline(8, 16, 32), one = eight;
  for (std::size_t i = 0; i < eight.size(); ++i) eight[i].adapter = static_cast<std::int64_t>(i);
  for (auto& q : one) q.adapter = 0;
  StepCostModel m = filled(512, 32, 64, 8);
  const ServeResult r8 = simulate_serving(eight, opts(8, 1e-6), m);
  const ServeResult r1 = simulate_serving(one, opts(8, 1e-6), m);
  std::int64_t most8 = 0, most1 = 0;
  for (const auto& st : r8.steps) most8 = std::max(most8, st.adapters);
  for (const auto& st : r1.steps) most1 = std::max(most1, st.adapters);
  EXPECT_EQ(most8, 8);
  EXPECT_EQ(most1, 1);
  EXPECT_GT(r8.end_time, r1.end_time);
  EXPECT_TRUE(m.missing().empty());
}

// The fit check on a v5e 2x2 (4 chips of the config's HBM, fsdp=4):
// llama3-8b's full fine-tuning keeps 2 B of gradient and 12 B of Adam
// state per parameter beside the 2 B weight, 16 B x 8.0e9 / 4 = 32 GB per
// chip, twice the 16 GiB; LoRA of rank 16 on every projection keeps
// gradients and state for the adapters only and fits, with the same
// activations (full rematerialization, batch 4 of 2048 tokens).
TEST(LoraFit, FineTuningLlama3_8bFitsOnV5e2x2OnlyWithLora) {
  const auto cfg = load_tpu_config("v5e");
  const models::ModelSpec m = models::load_model("llama3-8b");
  models::PhaseOptions o;
  o.phase = models::Phase::train;
  o.batch = 4;
  o.seq_len = 2048;
  o.remat = models::RematPolicy::full;
  o.mesh = workloads::parse_mesh("fsdp=4", models::mesh_axis_names());
  const models::FitReport full = models::check_fit(m, o, cfg.hbm.capacity_bytes);
  EXPECT_FALSE(full.fits) << full.message;
  EXPECT_GT(full.footprint.gradients + full.footprint.optimizer, cfg.hbm.capacity_bytes);
  o.lora.rank = 16;
  std::string bad;
  ASSERT_TRUE(models::parse_lora_targets("all", &o.lora.targets, &bad));
  const models::FitReport lora = models::check_fit(m, o, cfg.hbm.capacity_bytes);
  EXPECT_TRUE(lora.fits) << lora.message;
  EXPECT_EQ(lora.footprint.activations, full.footprint.activations);
  EXPECT_EQ(lora.footprint.optimizer, 12 * models::lora_params(m, o));
}

}  // namespace tpusim::sim::serve
