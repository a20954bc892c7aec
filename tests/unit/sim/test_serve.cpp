// The serving simulation's scheduler, statistics, workload generation and
// step-cost interpolation, on step costs given by a known function (no
// engine): the checks are consistency laws that hold for any correct
// event loop (Little's law, the decode-bound throughput limit, bounded vs
// unbounded queues around saturation, replicas), so a bookkeeping error
// breaks them. The engine-backed path is tested in tests/cli/test_cli_serve.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "serve_test_costs.h"
#include "sim/cli/cli.h"
#include "sim/serve/rate_search.h"
#include "sim/serve/report.h"
#include "sim/serve/request_workload.h"
#include "sim/serve/server.h"
#include "sim/serve/step_cost.h"

namespace tpusim::sim::serve {
namespace {

using test::cost_fn;
using test::filled;

std::vector<Request> poisson(std::int64_t n, double rate, std::int64_t in, std::int64_t out, std::uint64_t seed = 7) {
  WorkloadSpec w;
  w.arrival = Arrival::poisson;
  w.rate = rate;
  w.count = n;
  w.input = parse_length_dist("t", "fixed:" + std::to_string(in));
  w.output = parse_length_dist("t", "fixed:" + std::to_string(out));
  w.seed = seed;
  return synthesize(w);
}

// n requests all at time 0, lengths drawn from the given distributions.
std::vector<Request> offline(std::int64_t n, const std::string& in, const std::string& out) {
  WorkloadSpec w;
  w.arrival = Arrival::offline;
  w.count = n;
  w.input = parse_length_dist("t", in);
  w.output = parse_length_dist("t", out);
  return synthesize(w);
}

ServerOptions opts(std::int64_t max_batch = 32) {
  ServerOptions o;
  o.max_batch = max_batch;
  o.max_tokens = 512;
  o.kv_pages = 1 << 20;
  return o;
}

TEST(ServeStepCost, MultilinearCostIsInterpolatedExactly) {
  StepCostModel m = filled(512, 32, 2048);
  for (const auto& s : {StepShape{100, 7, 333.3}, StepShape{0, 19, 1500}, StepShape{300, 0, 0}, StepShape{17, 1, 64}}) {
    EXPECT_NEAR(m.cost(s), cost_fn(static_cast<double>(s.prefill), static_cast<double>(s.decode), s.context), 1e-12);
  }
  EXPECT_TRUE(m.missing().empty());
}

TEST(ServeStepCost, MissingCornersAreRecordedWithNonZeroWeightOnly) {
  StepCostModel m(make_grid(512, 32, 2048), "0123456789abcdef");
  // decode 16 is a grid point, context 256 too: one corner only.
  m.cost({0, 16, 256});
  ASSERT_EQ(m.missing().size(), 1u);
  EXPECT_EQ(*m.missing().begin(), (GridPoint{0, 16, 256}));
  m.clear_missing();
  m.cost({100, 7, 300});  // off-grid in all three: 8 corners
  EXPECT_EQ(m.missing().size(), 8u);
}

TEST(ServeStepCost, CacheKeepsOtherKeysAndNeverUsesThem) {
  const auto path = (std::filesystem::temp_directory_path() / ("serve_cache_" + std::to_string(::getpid()))).string();
  std::filesystem::remove(path);
  StepCostModel a(make_grid(512, 32, 2048), "aaaaaaaaaaaaaaaa");
  a.add({16, 0, 0}, 1.5e-3);
  a.add({0, 4, 256}, 2.5e-3);
  a.save(path, "a");
  StepCostModel b(make_grid(512, 32, 2048), "bbbbbbbbbbbbbbbb");
  b.load(path);
  EXPECT_EQ(b.size(), 0u);  // another key: not reused
  b.add({16, 0, 0}, 9e-3);
  b.save(path, "b");
  StepCostModel a2(make_grid(512, 32, 2048), "aaaaaaaaaaaaaaaa");
  a2.load(path);
  ASSERT_EQ(a2.size(), 2u);
  EXPECT_DOUBLE_EQ(a2.cost({16, 0, 0}), 1.5e-3);
  // A malformed line, and seconds no step takes (their interpolation
  // could overflow to infinity).
  test::expect_cache_lines_refused(path + ".bad", make_grid(512, 32, 2048),
                                   {"aaaaaaaaaaaaaaaa 1 2 x 0.1", "aaaaaaaaaaaaaaaa 16 0 0 1.7e308",
                                    "aaaaaaaaaaaaaaaa 16 0 0 2e6", "aaaaaaaaaaaaaaaa 16 0 0 inf"});
  std::filesystem::remove(path);
}

// Little's law L = lambda W over [0, T] with every request arriving and
// leaving inside: the time average of the number in the system equals
// the arrival rate n/T times the mean time in the system. The left side is
// integrated by the event loop, the right side from per-request records.
// The same for the queue before admission, and for the running batch, whose
// time average is taken from steps.csv's records (running x duration; the
// engine is never idle while a sequence runs) against the requests' time
// from admission to finish.
TEST(ServeLaws, LittlesLawHoldsOnTheQueueAndTheBatch) {
  StepCostModel m = filled(512, 32, 2048);
  const auto reqs = poisson(600, 40, 200, 100);
  const ServeResult r = simulate_serving(reqs, opts(), m);
  const Summary s = summarize(r, {}, 1);
  double w = 0, q = 0, run = 0;
  for (const auto& x : r.requests) {
    w += x.finish - x.req.arrival;
    q += x.scheduled - x.req.arrival;
    run += x.finish - x.scheduled;
  }
  const double T = r.end_time, n = static_cast<double>(reqs.size());
  EXPECT_NEAR(s.mean_in_system, n / T * (w / n), 1e-9 * s.mean_in_system);
  EXPECT_GT(s.mean_waiting, 0.01);  // the queue is not trivially empty at 40 req/s
  EXPECT_NEAR(s.mean_waiting, n / T * (q / n), 1e-9 * s.mean_in_system);
  double batch = 0;
  for (const auto& st : r.steps) batch += static_cast<double>(st.running) * st.duration;
  EXPECT_NEAR(batch / T, run / T, 1e-9 * run / T);
}

// Offline at a large batch: every step decodes at most max_batch tokens,
// and a full step at mean context C costs cost(0, B, C), so output tokens/s
// can not exceed B / cost(0, B, C), with C = in + out/2 the mean context of
// a request's decode steps. Prefill steps and the tail (fewer than B left)
// only lower it; with 4096 requests, 16-token prompts and 512-token outputs
// they cost a few percent.
TEST(ServeLaws, OfflineThroughputApproachesTheDecodeBoundLimit) {
  const std::int64_t B = 64, in = 16, out = 512;
  StepCostModel m = filled(512, B, 2048);
  const auto reqs = offline(4096, "fixed:16", "fixed:512");
  ServerOptions o = opts(B);
  o.arrival = Arrival::offline;
  const Summary s = summarize(simulate_serving(reqs, o, m), {}, 1);
  const double limit = static_cast<double>(B) / cost_fn(0, B, in + out / 2.0);
  EXPECT_LT(s.output_tps, limit);
  EXPECT_GT(s.output_tps, 0.95 * limit) << "limit " << limit;
}

// Below saturation the queue is stable: TTFT does not depend on how long
// the run is. Above it the backlog grows with every request, so the mean
// TTFT of a run twice as long is about twice as large. Saturation from
// the decode-bound limit above: lambda_s = (B / cost(0, B, C)) / out.
TEST(ServeLaws, TtftFlatBelowSaturationUnboundedAbove) {
  const std::int64_t B = 32, in = 128, out = 128;
  StepCostModel m = filled(512, B, 2048);
  const double sat = static_cast<double>(B) / cost_fn(0, B, in + out / 2.0) / out;
  auto ttft = [&](double rate, std::int64_t n) {
    return summarize(simulate_serving(poisson(n, rate, in, out), opts(B), m), {}, 1).ttft.mean;
  };
  const double lo1 = ttft(0.5 * sat, 1000), lo2 = ttft(0.5 * sat, 2000);
  EXPECT_LT(lo2 / lo1, 1.2) << lo1 << " " << lo2;
  EXPECT_GT(lo2 / lo1, 0.8) << lo1 << " " << lo2;
  const double hi1 = ttft(2 * sat, 1000), hi2 = ttft(2 * sat, 2000);
  EXPECT_GT(hi2 / hi1, 1.8) << hi1 << " " << hi2;
  EXPECT_GT(hi1, 20 * lo1);
}

// Max throughput (offline) of two data-parallel replicas, each its own
// server on its own chips, is twice one replica's.
TEST(ServeLaws, DoublingDataParallelReplicasDoublesMaxThroughput) {
  StepCostModel m = filled(512, 32, 2048);
  const auto reqs = offline(2048, "uniform:32:256", "uniform:64:256");
  ServerOptions o = opts(32);
  o.arrival = Arrival::offline;
  const double one = summarize(simulate_serving(reqs, o, m), {}, 1).output_tps;
  o.replicas = 2;
  const double two = summarize(simulate_serving(reqs, o, m), {}, 2).output_tps;
  EXPECT_GT(two / one, 1.9);
  EXPECT_LT(two / one, 2.05);
}

// A KV cache too small for every running sequence's growth: sequences are
// preempted and recomputed, yet every request gets exactly its output
// tokens and no replica holds more pages than it has.
TEST(ServeKv, PreemptionByRecomputeKeepsEveryRequestWhole) {
  StepCostModel m = filled(512, 32, 2048);
  const auto reqs = poisson(200, 1000, 100, 300);
  ServerOptions o = opts(32);
  o.page_tokens = 16;
  o.kv_pages = 200;  // 3200 tokens: about 8 sequences of 400
  const ServeResult r = simulate_serving(reqs, o, m);
  std::int64_t preempted = 0;
  for (const auto& q : r.requests) {
    EXPECT_EQ(static_cast<std::int64_t>(q.itl.size()) + 1, q.req.output) << "request " << q.req.id;
    EXPECT_GE(q.finish, q.first_token);
    preempted += q.preemptions;
  }
  EXPECT_GT(preempted, 0);
  EXPECT_LE(r.kv_pages_peak, o.kv_pages);
  for (const auto& st : r.steps) EXPECT_LE(st.kv_pages_used, o.kv_pages);
}

TEST(ServeKv, ARequestLongerThanTheCacheIsRefused) {
  StepCostModel m = filled(512, 32, 2048);
  ServerOptions o = opts(32);
  o.kv_pages = 10;
  EXPECT_THROW(simulate_serving(poisson(1, 1, 100, 100), o, m), UsageError);
}

// With lengths that vary, a static batch waits for its longest request
// (and pads the finished ones), so continuous batching delivers more.
TEST(ServeBatching, ContinuousBeatsStaticOnVariedLengths) {
  StepCostModel m = filled(512, 32, 2048);
  const auto reqs = offline(512, "uniform:16:128", "uniform:16:512");
  ServerOptions o = opts(32);
  o.arrival = Arrival::offline;
  const double cont = summarize(simulate_serving(reqs, o, m), {}, 1).output_tps;
  o.batching = Batching::static_batch;
  const ServeResult st = simulate_serving(reqs, o, m);
  const double stat = summarize(st, {}, 1).output_tps;
  EXPECT_GT(cont, 1.3 * stat);
  for (const auto& q : st.requests) EXPECT_EQ(static_cast<std::int64_t>(q.itl.size()) + 1, q.req.output);
}

// Prefill-first serves new prompts before running decodes, so first
// tokens come sooner and decodes wait longer than with decode-first (with
// room in the batch: a full batch starved of decodes would block
// admissions instead).
TEST(ServeBatching, PrefillFirstTradesTpotForTtft) {
  StepCostModel m = filled(512, 256, 2048);
  const auto reqs = poisson(400, 40, 400, 100);
  ServerOptions o = opts(256);
  o.max_tokens = 256;
  const Summary d = summarize(simulate_serving(reqs, o, m), {}, 1);
  o.priority = Priority::prefill_first;
  const Summary p = summarize(simulate_serving(reqs, o, m), {}, 1);
  EXPECT_LT(p.ttft.mean, d.ttft.mean);
  EXPECT_GT(p.itl.p99, d.itl.p99);
}

// Closed loop: each client sends its next request when the last one ends,
// so the system holds `concurrency` requests until the last ones drain.
TEST(ServeWorkload, ClosedLoopKeepsConcurrencyInTheSystem) {
  StepCostModel m = filled(512, 32, 2048);
  // Arrival times are the server's to set in a closed loop.
  const auto reqs = offline(400, "fixed:64", "fixed:64");
  ServerOptions o = opts(32);
  o.arrival = Arrival::closed;
  o.concurrency = 8;
  const ServeResult r = simulate_serving(reqs, o, m);
  const Summary s = summarize(r, {}, 1);
  EXPECT_LE(s.mean_in_system, 8.0 + 1e-9);
  EXPECT_GT(s.mean_in_system, 7.5);
  for (const auto& st : r.steps) EXPECT_LE(st.running + st.waiting, 8);
}

TEST(ServeWorkload, SeededAndDistributionsHaveTheirMeans) {
  WorkloadSpec w;
  w.count = 20000;
  w.rate = 10;
  w.input = parse_length_dist("t", "normal:1000:100");
  w.output = parse_length_dist("t", "hist:100=1,300=3");
  const auto a = synthesize(w), b = synthesize(w);
  ASSERT_EQ(a.size(), b.size());
  double in = 0, out = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].input, b[i].input);
    EXPECT_EQ(a[i].arrival, b[i].arrival);
    in += static_cast<double>(a[i].input);
    out += static_cast<double>(a[i].output);
  }
  const double n = static_cast<double>(a.size());
  // Standard errors: 100 / sqrt(n) = 0.7 and 87 / sqrt(n) = 0.6 tokens.
  EXPECT_NEAR(in / n, 1000, 4);
  EXPECT_NEAR(out / n, 250, 4);
  EXPECT_NEAR(a.back().arrival, n / 10, 5 * std::sqrt(n) / 10);  // Gamma(n, rate): sd sqrt(n)/rate
  w.seed = 2;
  EXPECT_NE(synthesize(w)[0].input, a[0].input);
}

TEST(ServeWorkload, BadInputIsNamed) {
  for (const char* bad :
       {"fixed:0", "fixed:1.5", "uniform:9:3", "normal:10", "hist:", "hist:5=x", "poisson:3", "hist:10=0",
        // weights whose sum is beyond a double: the first
        // value's share would be 0
        "hist:10=1e308,20=1e308"}) {
    try {
      parse_length_dist("serve: --input", bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--input"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_slo("ttft=2s"), UsageError);
  EXPECT_THROW(parse_slo("ttft_p99=2"), UsageError);
  EXPECT_THROW(parse_slo("ttft_p99=-1s"), UsageError);
  const Slo s = parse_slo("ttft_p99=2s,tpot_p50=100ms,e2e_mean=500us");
  EXPECT_DOUBLE_EQ(s.limits.at("ttft_p99"), 2.0);
  EXPECT_DOUBLE_EQ(s.limits.at("tpot_p50"), 0.1);
  EXPECT_DOUBLE_EQ(s.limits.at("e2e_mean"), 5e-4);

  const auto path = (std::filesystem::temp_directory_path() / ("serve_trace_" + std::to_string(::getpid()) + ".csv"))
                        .string();
  std::ofstream(path) << "arrival,input_tokens,output_tokens\n0.5,10,20\n0.1,5,abc\n";
  try {
    read_trace_csv(path);
    ADD_FAILURE() << "accepted a bad row";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":3: output_tokens"), std::string::npos) << e.what();
  }
  std::ofstream(path) << "arrival,input_tokens,output_tokens\n0.5,10,20\n0.1,5,7\n";
  const auto t = read_trace_csv(path);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].input, 5);  // sorted by arrival
  std::filesystem::remove(path);
}

TEST(ServeReport, PercentilesAreNearestRank) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  const Stats s = stats_of(v);
  EXPECT_EQ(s.p50, 50);
  EXPECT_EQ(s.p90, 90);
  EXPECT_EQ(s.p99, 99);
  EXPECT_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
}

}  // namespace
}  // namespace tpusim::sim::serve

namespace tpusim::sim::serve {
namespace {

// The search brackets the answer: the rate it returns meets the limits,
// a rate within the tolerance above it does not, and both lie below the
// decode-bound saturation rate (B / cost(0, B, C) / out requests/s).
TEST(ServeRateSearch, FindsTheHighestRateMeetingTheSlo) {
  const std::int64_t B = 32, in = 128, out = 128;
  StepCostModel m = filled(512, B, 2048);
  WorkloadSpec w;
  w.count = 1000;
  w.input = parse_length_dist("t", "fixed:128");
  w.output = parse_length_dist("t", "fixed:128");
  const Slo slo = parse_slo("ttft_p99=100ms");
  const auto run = [&](const std::vector<Request>& r) { return simulate_serving(r, opts(B), m); };
  const RateSearchResult f = find_max_rate(w, slo, 1.0, 0.02, 1, run);
  ASSERT_GT(f.rate, 0);
  ASSERT_GT(f.failing, f.rate);
  EXPECT_LE(f.failing / f.rate, 1.02 + 1e-12);
  w.rate = f.rate;
  EXPECT_TRUE(summarize(run(synthesize(w)), slo, 1).meets(slo));
  w.rate = f.failing;
  EXPECT_FALSE(summarize(run(synthesize(w)), slo, 1).meets(slo));
  const double sat = static_cast<double>(B) / cost_fn(0, B, in + out / 2.0) / out;
  EXPECT_LT(f.rate, sat);
  EXPECT_GT(f.rate, 0.5 * sat);  // a loose TTFT limit lets the server run near saturation
}

}  // namespace
}  // namespace tpusim::sim::serve

namespace tpusim::sim::serve {
namespace {

// A draft model a tenth of the target's cost function.
StepCostModel draft_costs(std::int64_t max_tokens, std::int64_t max_batch, std::int64_t max_ctx) {
  StepCostModel m(make_grid(max_tokens, max_batch, max_ctx), "fedcba9876543210");
  StepCostModel t = filled(max_tokens, max_batch, max_ctx);
  for (auto p : m.grid().prefill)
    for (auto b : m.grid().decode)
      for (auto c : b ? m.grid().context : std::vector<std::int64_t>{0})
        if (p + b > 0) m.add({p, b, c}, 0.1 * t.value({p, b, c}));
  return m;
}

SpecDecoding spec(SpecDecoding::Kind kind, std::vector<double> a, int k = 4) {
  SpecDecoding s;
  s.k = k;
  s.kind = kind;
  s.a = std::move(a);
  return s;
}

double tokens_per_verification(const ServeResult& r) {
  double out = 0, seqs = 0;
  for (const auto& st : r.steps) {
    out += static_cast<double>(st.decode_tokens_out);
    seqs += static_cast<double>(st.decode_seqs);
  }
  return out / seqs;
}

// Tokens per verification follow the acceptance model: sum_{j=0..k} a^j
// for a constant rate (3.3616 at a = 0.8, k = 4), 1 + a1 + a1 a2 + ... per
// position, the weighted mean of 1 + accepted for a histogram. The runs
// have ~25,000 verifications (standard error ~0.01 tokens); a request's
// last verification is cut at its remaining tokens, which lowers the mean
// by well under 1% at 512 output tokens.
TEST(ServeSpeculative, TokensPerVerificationFollowTheAcceptanceModel) {
  EXPECT_NEAR(spec(SpecDecoding::Kind::constant, {0.8}).expected_tokens(), (1 - std::pow(0.8, 5)) / 0.2, 1e-12);
  EXPECT_DOUBLE_EQ(spec(SpecDecoding::Kind::constant, {0.0}).expected_tokens(), 1.0);
  EXPECT_DOUBLE_EQ(spec(SpecDecoding::Kind::positions, {0.9, 0.5, 0.5, 0.0}).expected_tokens(), 1 + 0.9 + 0.45 + 0.225);
  EXPECT_DOUBLE_EQ(spec(SpecDecoding::Kind::histogram, {1, 0, 0, 0, 1}).expected_tokens(), 3.0);
  StepCostModel t = filled(512, 64, 2048), d = draft_costs(512, 64, 2048);
  const auto reqs = offline(160, "fixed:64", "fixed:512");
  for (const SpecDecoding& s : {spec(SpecDecoding::Kind::constant, {0.8}),
                                spec(SpecDecoding::Kind::positions, {0.9, 0.7, 0.5, 0.3}),
                                spec(SpecDecoding::Kind::histogram, {1, 1, 2, 2, 4})}) {
    ServerOptions o = opts(64);
    o.arrival = Arrival::offline;
    o.spec = s;
    const ServeResult r = simulate_serving(reqs, o, t, {}, &d);
    EXPECT_NEAR(tokens_per_verification(r) / s.expected_tokens(), 0.995, 0.01) << s.expected_tokens();
    for (const auto& q : r.requests) ASSERT_EQ(static_cast<std::int64_t>(q.itl.size()) + 1, q.req.output);
  }
}

// Acceptance 0: every verification yields one token, so with every
// request there from the start (offline: no arrival depends on the step
// times) the schedule is the plain one step for step, and each step is
// longer by exactly the draft's work: its prefill of the step's chunk and
// k decode steps.
TEST(ServeSpeculative, AcceptanceZeroIsSlowerByTheDraftsCostExactly) {
  StepCostModel t = filled(512, 32, 2048), d = draft_costs(512, 32, 2048);
  const auto reqs = offline(300, "uniform:50:400", "uniform:10:300");
  ServerOptions o = opts(32);
  o.arrival = Arrival::offline;
  const ServeResult plain = simulate_serving(reqs, o, t);
  o.spec = spec(SpecDecoding::Kind::constant, {0.0});
  const ServeResult sp = simulate_serving(reqs, o, t, {}, &d);
  ASSERT_EQ(plain.steps.size(), sp.steps.size());
  for (std::size_t i = 0; i < sp.steps.size(); ++i) {
    const auto& a = plain.steps[i];
    const auto& b = sp.steps[i];
    ASSERT_EQ(a.prefill_tokens, b.prefill_tokens);
    ASSERT_EQ(a.decode_seqs, b.decode_seqs);
    const double draft = (b.prefill_tokens > 0 ? d.cost({b.prefill_tokens, 0, 0}) : 0) +
                         (b.decode_seqs > 0 ? 4 * d.cost({0, b.decode_seqs, b.mean_context}) : 0);
    ASSERT_NEAR(b.duration - a.duration, draft, 1e-12) << "step " << i;
  }
}

// A draft costing a tenth of the target and acceptance 0.8 with k = 4:
// a verification (here as costly as a plain step) plus 4 draft steps
// costs 1.4 plain steps and yields 3.36 tokens, so offline throughput
// rises by about 3.36 / 1.4 = 2.4x (less the prefill share).
TEST(ServeSpeculative, HighAcceptanceWithACheapDraftBeatsPlainDecoding) {
  StepCostModel t = filled(512, 32, 2048), d = draft_costs(512, 32, 2048);
  const auto reqs = offline(256, "fixed:64", "fixed:512");
  ServerOptions o = opts(32);
  o.arrival = Arrival::offline;
  const double plain = summarize(simulate_serving(reqs, o, t), {}, 1).output_tps;
  o.spec = spec(SpecDecoding::Kind::constant, {0.8});
  const double sp = summarize(simulate_serving(reqs, o, t, {}, &d), {}, 1).output_tps;
  EXPECT_GT(sp / plain, 2.1);
  EXPECT_LT(sp / plain, 2.45);
}

}  // namespace
}  // namespace tpusim::sim::serve

namespace tpusim::sim::serve {
namespace {

// Long prompts in chunks with a cache that holds about two requests:
// whatever the budget and policy, the server never stalls (the event loop
// throws when requests are left and no event is) and every request ends
// whole. A sequence in mid-prefill is served first and a new one is
// admitted only with pages for its chunk, so the first always completes.
TEST(ServeKv, ChunkedPrefillNearAFullCacheNeverStalls) {
  StepCostModel m = filled(512, 32, 4096);
  for (int budget : {128, 512, 1000, 1900})
  for (const char* policy : {"decode", "prefill"}) {
    ServerOptions o = opts(32);
    o.max_tokens = budget;
    o.kv_pages = 260;  // 4160 tokens; a request needs 2000 + 64
    o.priority = std::string(policy) == "decode" ? Priority::decode_first : Priority::prefill_first;
    const ServeResult r = simulate_serving(poisson(40, 500, 2000, 64), o, m);
    for (const auto& q : r.requests) EXPECT_EQ(static_cast<std::int64_t>(q.itl.size()) + 1, q.req.output);
    EXPECT_LE(r.kv_pages_peak, o.kv_pages);
  }
}

}  // namespace
}  // namespace tpusim::sim::serve
