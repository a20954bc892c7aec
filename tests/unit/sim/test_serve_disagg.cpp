// Prefill/decode disaggregation (sim/serve/disaggregated.h) on step costs
// from a known function: a request's timeline is its prefill step, the
// K/V transfer at the link's bandwidth and its decode steps, each of the
// instance's own cost; transfers queue on the link; decode steps carry no
// prefill, so long prompts no longer stretch the decoders' TPOT.
#include <gtest/gtest.h>

#include "serve_test_costs.h"
#include "sim/serve/disaggregated.h"
#include "sim/serve/report.h"
#include "sim/serve/request_workload.h"
#include "sim/serve/server.h"
#include "sim/serve/step_cost.h"

namespace tpusim::sim::serve {
namespace {

using test::cost_fn;
// The decode instance's steps may cost `scale` times cost_fn (its own
// slice): the two instances' costs must not be mixed up.
StepCostModel filled(double scale = 1) { return test::filled(512, 32, 2048, scale); }

ServerOptions opts() {
  ServerOptions o;
  o.max_batch = 32;
  o.max_tokens = 512;
  o.page_tokens = 16;
  o.kv_pages = 1 << 20;
  o.arrival = Arrival::offline;
  return o;
}

std::vector<Request> offline(std::int64_t n, std::int64_t in, std::int64_t out) {
  std::vector<Request> r;
  for (std::int64_t i = 0; i < n; ++i) r.push_back({i, 0.0, in, out});
  return r;
}

TEST(ServeDisagg, ARequestIsItsPrefillItsTransferAndItsDecodes) {
  StepCostModel pre = filled(), dec = filled(2);
  const Disaggregation dis{1e5, 1e9};  // 100 kB per token over 1 GB/s: 0.1 ms per token
  // Two prompts of 256 tokens, 9 tokens out. The first arrival starts a
  // prefill step alone (steps start as soon as an instance is idle), the
  // second prompt takes the next one.
  const ServeResult r = simulate_disaggregated(offline(2, 256, 9), opts(), dis, pre, dec);
  const double prefill = cost_fn(256, 0, 0);  // 4.5 ms
  const double xfer = 256 * 1e5 / 1e9;        // 25.6 ms: longer than a prefill step
  ASSERT_EQ(r.requests.size(), 2u);
  const auto& a = r.requests[0];
  const auto& b = r.requests[1];
  EXPECT_DOUBLE_EQ(a.first_token, prefill);
  EXPECT_DOUBLE_EQ(b.first_token, 2 * prefill);
  // Request 0 crosses at once and decodes alone (context 256, the decode
  // instance's doubled cost).
  EXPECT_NEAR(a.itl[0], xfer + 2 * cost_fn(0, 1, 256), 1e-12);
  // The link carries one transfer at a time: request 1's starts when
  // request 0's ends (prefill + xfer, after its own prefill at 2 x
  // prefill), so it reaches the decode instance at prefill + 2 xfer and
  // decodes from the next step on, beside request 0.
  const double b_at_decode = prefill + 2 * xfer;
  EXPECT_GE(b.first_token + b.itl[0], b_at_decode + 2 * cost_fn(0, 2, 256));
  EXPECT_LT(b.first_token + b.itl[0], b_at_decode + 2 * cost_fn(0, 1, 260) + 2 * cost_fn(0, 2, 270));
  for (const auto& q : r.requests) EXPECT_EQ(static_cast<std::int64_t>(q.itl.size()) + 1, q.req.output);
  for (const auto& st : r.steps) {
    if (st.replica % 2 == 0) {
      EXPECT_EQ(st.decode_seqs, 0);
    } else {
      EXPECT_EQ(st.prefill_tokens, 0);
    }
  }
}

TEST(ServeDisagg, OneRequestsTimelineAddsUp) {
  StepCostModel pre = filled(), dec = filled(2);
  const Disaggregation dis{1e5, 1e9};
  const ServeResult r = simulate_disaggregated(offline(1, 256, 9), opts(), dis, pre, dec);
  // prefill + transfer + 8 decode steps at contexts 256..263 (x2: the
  // decode instance's own costs).
  double expect = cost_fn(256, 0, 0) + 256 * 1e5 / 1e9;
  for (int c = 256; c < 264; ++c) expect += 2 * cost_fn(0, 1, c);
  EXPECT_NEAR(r.requests[0].finish, expect, 1e-12);
  EXPECT_NEAR(r.end_time, expect, 1e-12);
}

// Colocated, a step that prefills a 512-token chunk also carries the
// decodes and lasts 2e-6 x 512 = 1 ms longer; disaggregated, decode steps
// never do. With long prompts arriving, the decoders' TPOT p99 is lower.
TEST(ServeDisagg, DecodesNoLongerWaitForPrefillChunks) {
  WorkloadSpec w;
  w.arrival = Arrival::poisson;
  w.rate = 40;
  w.count = 300;
  w.input = parse_length_dist("t", "fixed:1024");
  w.output = parse_length_dist("t", "fixed:64");
  const auto reqs = synthesize(w);
  ServerOptions o = opts();
  o.arrival = Arrival::poisson;
  StepCostModel co = filled(), pre = filled(), dec = filled();
  const Summary colo = summarize(simulate_serving(reqs, o, co), Slo{}, 1);
  const Summary dis = summarize(simulate_disaggregated(reqs, o, {1e4, 1e11}, pre, dec), Slo{}, 1);
  EXPECT_LT(dis.tpot.p99, colo.tpot.p99);
  // Decode steps of at most 32 sequences over <= 1087 tokens: TPOT is at
  // most one such step plus nothing else once decoding.
  EXPECT_LE(dis.tpot.p99, cost_fn(0, 32, 1087) + 1e-12);
  EXPECT_GT(colo.tpot.p99, cost_fn(0, 1, 1024) + 2e-6 * 512 * 0.5);
}

TEST(ServeDisagg, BadSetupsAreRefused) {
  StepCostModel pre = filled(), dec = filled();
  EXPECT_THROW(simulate_disaggregated(offline(1, 8, 8), opts(), {0, 1e9}, pre, dec), std::runtime_error);
  ServerOptions o = opts();
  o.kv_pages = 1;
  EXPECT_THROW(simulate_disaggregated(offline(1, 64, 64), o, {1e5, 1e9}, pre, dec), std::runtime_error);
}

}  // namespace
}  // namespace tpusim::sim::serve
