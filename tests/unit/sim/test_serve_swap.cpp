// Swap preemption (sim/serve/server.h): a preempted sequence's K/V go to
// host memory over the host link and come back on readmission, instead of
// being recomputed. Step costs come from a known function (no engine), so
// the transfers' share of every step and the break-even bandwidth against
// recompute follow from it.
#include <gtest/gtest.h>

#include <cmath>

#include "serve_test_costs.h"
#include "sim/serve/request_workload.h"
#include "sim/serve/server.h"
#include "sim/serve/step_cost.h"

namespace tpusim::sim::serve {
namespace {

using test::cost_fn;
// The marginal prefill cost of a token in cost_fn.
constexpr double kPrefillPerToken = cost_fn(1, 0, 0) - cost_fn(0, 0, 0);

std::vector<Request> requests() {
  WorkloadSpec w;
  w.arrival = Arrival::poisson;
  w.rate = 1000;
  w.count = 200;
  w.input = parse_length_dist("t", "fixed:100");
  w.output = parse_length_dist("t", "fixed:300");
  w.seed = 7;
  return synthesize(w);
}

// A cache of 200 pages of 16 tokens (about 8 sequences of 400 tokens)
// under 32 sequences: decodes run out of pages and preempt.
ServerOptions tight(Preemption p, double host_bw) {
  ServerOptions o;
  o.max_batch = 32;
  o.max_tokens = 512;
  o.page_tokens = 16;
  o.kv_pages = 200;
  o.preemption = p;
  o.kv_bytes_per_token = 1e5;  // 100 kB of K/V per token per chip
  o.host_link_bw = host_bw;
  return o;
}

std::int64_t prefill_tokens(const ServeResult& r) {
  std::int64_t n = 0;
  for (const auto& s : r.steps) n += s.prefill_tokens;
  return n;
}

TEST(ServeSwap, EverySwappedTokenComesBackAndTheLinkTimeIsInTheSteps) {
  StepCostModel m = test::filled();
  const auto reqs = requests();
  const ServerOptions o = tight(Preemption::swap, 16e9);
  const ServeResult r = simulate_serving(reqs, o, m);
  std::int64_t preempted = 0;
  for (const auto& q : r.requests) {
    EXPECT_EQ(static_cast<std::int64_t>(q.itl.size()) + 1, q.req.output) << "request " << q.req.id;
    preempted += q.preemptions;
  }
  ASSERT_GT(preempted, 0);
  EXPECT_GT(r.swapped_out_tokens, 0);
  EXPECT_EQ(r.swapped_in_tokens, r.swapped_out_tokens);  // all of it back: every request finished
  // Nothing is prefilled twice: 200 prompts of 100 tokens, once each.
  EXPECT_EQ(prefill_tokens(r), 200 * 100);
  // The transfers: (out + in) tokens x 1e5 B / 16 GB/s, all inside steps.
  const double link = static_cast<double>(r.swapped_out_tokens + r.swapped_in_tokens) * 1e5 / 16e9;
  EXPECT_NEAR(r.swap_seconds, link, 1e-12 * link);
  double extra = 0;
  for (const auto& s : r.steps) extra += s.duration - m.cost({s.prefill_tokens, s.decode_seqs, s.mean_context});
  EXPECT_NEAR(extra, link, 1e-9 * link);
  for (const auto& s : r.steps) EXPECT_LE(s.kv_pages_used, o.kv_pages);
}

// Which wins. A sequence preempted with C cached tokens costs swap 2 C b /
// BW of host-link time (out and back) and recompute the prefill of C
// tokens again, kPrefillPerToken C in the steps that carry it: break-even
// at BW* = 2 b / kPrefillPerToken = 2 x 1e5 / 2e-6 = 1e11 B/s. A hundred
// times above it swap finishes first, a hundred times below recompute does.
TEST(ServeSwap, SwapWinsAboveTheBreakEvenBandwidthAndLosesBelowIt) {
  const auto reqs = requests();
  const double breakeven = 2 * 1e5 / kPrefillPerToken;
  StepCostModel m1 = test::filled(), m2 = test::filled(), m3 = test::filled();
  const ServeResult rc = simulate_serving(reqs, tight(Preemption::recompute, breakeven), m1);
  const ServeResult fast = simulate_serving(reqs, tight(Preemption::swap, 100 * breakeven), m2);
  const ServeResult slow = simulate_serving(reqs, tight(Preemption::swap, breakeven / 100), m3);
  EXPECT_GT(prefill_tokens(rc), 200 * 100);  // recompute prefills again
  EXPECT_LT(fast.end_time, rc.end_time);
  EXPECT_GT(slow.end_time, rc.end_time);
  // The recomputed prefill against the fast swap's transfers: the former
  // is about 100 times the latter (preemption patterns differ a little).
  const double recompute_s = static_cast<double>(prefill_tokens(rc) - 200 * 100) * kPrefillPerToken;
  EXPECT_GT(recompute_s, 20 * fast.swap_seconds);
}

TEST(ServeSwap, SwapNeedsTheBytesAndTheLink) {
  StepCostModel m = test::filled();
  ServerOptions o = tight(Preemption::swap, 0);
  EXPECT_THROW(simulate_serving(requests(), o, m), std::runtime_error);
}

}  // namespace
}  // namespace tpusim::sim::serve
