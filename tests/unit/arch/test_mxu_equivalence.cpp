// The fast MXU timer (systolic_timing.h) against the PE-by-PE reference
// (pe_array_reference.h): for every op of every case, the first weight-load
// cycle, the first beat cycle and the finish cycle must be identical, and
// the reference's numbers must equal a plain matmul. Cases sweep R, C in
// {2,4,8,16,32}, shapes with K < R, N < C and non-multiples of R and C,
// single tiles and back-to-back sequences with and without ready gaps,
// double buffering on and off, int8 packing (2 rows per beat), a half-rate
// dtype (one row every 2 cycles), slow weight loads and I/O latencies.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "arch/mxu/pe_array_reference.h"
#include "arch/mxu/systolic_timing.h"
#include "mxu_test_support.h"

namespace tpusim::arch {
namespace {

using mxu_test::random_matmul;
using mxu_test::small_config;

struct Outcome {
  int cases = 0;
  int ops = 0;
};

// Runs one case on both models and compares; returns the number of ops.
int check_case(const MxuConfig& cfg, const std::vector<RefMatmul>& ops, const std::string& what) {
  SCOPED_TRACE(what);
  PeArrayReference ref(cfg);
  const std::vector<RefMatmulResult> got = ref.run(ops);
  MxuTimer timer(cfg);
  for (std::size_t o = 0; o < ops.size(); ++o) {
    const RefMatmul& op = ops[o];
    SCOPED_TRACE("op " + std::to_string(o) + " m=" + std::to_string(op.m) + " k=" + std::to_string(op.k) + " n=" +
                 std::to_string(op.n) + " " + std::string(dtype_name(op.dtype)) + " ready=" + std::to_string(op.ready));
    const MxuOpTiming t = timer.issue(MxuOp{op.m, op.k, op.n, op.dtype}, op.ready);
    EXPECT_EQ(t.start, got[o].start);
    EXPECT_EQ(t.stream_start, got[o].stream_start);
    EXPECT_EQ(t.finish, got[o].finish);
    if (op.dtype == DType::int8)
      EXPECT_EQ(got[o].out_i32, mxu_test::plain_matmul_i8(op));
    else
      EXPECT_EQ(got[o].out_f32, mxu_test::plain_matmul_bf16_blocked(op, cfg.rows));
  }
  return static_cast<int>(ops.size());
}

// Ten case shapes per (R, C); returns how many cases ran.
Outcome sweep_rows(int R, unsigned seed) {
  Outcome out;
  std::mt19937 rng(seed);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const auto dt = [&] { return pick(0, 1) ? DType::int8 : DType::bf16; };
  for (int C : {2, 4, 8, 16, 32}) {
    const std::string rc = "R=" + std::to_string(R) + " C=" + std::to_string(C);
    // 0, 1: one partial tile (K < R, N < C), double buffering on and off.
    for (bool db : {true, false}) {
      out.ops +=
          check_case(small_config(R, C, db), {random_matmul(rng, pick(1, 3 * R), pick(1, R - 1), pick(1, C - 1), dt())},
                     rc + " single partial tile db=" + std::to_string(db));
      ++out.cases;
    }
    // 2, 3: a block with K, N non-multiples of R, C (several tiles).
    for (bool db : {true, false}) {
      out.ops +=
          check_case(small_config(R, C, db),
                     {random_matmul(rng, pick(1, 2 * R + 3), pick(R + 1, 3 * R - 1), pick(C + 1, 2 * C + 1), dt())},
                     rc + " block db=" + std::to_string(db));
      ++out.cases;
    }
    // 4: three ops back to back, all ready at 0 (loads overlap streams).
    {
      std::vector<RefMatmul> ops;
      for (int i = 0; i < 3; ++i)
        ops.push_back(random_matmul(rng, pick(1, 2 * R), pick(1, 2 * R), pick(1, 2 * C), dt()));
      out.ops += check_case(small_config(R, C, true), ops, rc + " sequence db");
      ++out.cases;
    }
    // 5: three ops with ready gaps, single-buffered.
    {
      std::vector<RefMatmul> ops;
      MxuCycles ready = 0;
      for (int i = 0; i < 3; ++i) {
        ready += static_cast<MxuCycles>(pick(0, 3 * R));
        ops.push_back(random_matmul(rng, pick(1, 2 * R), pick(1, 2 * R), pick(1, 2 * C), dt(), ready));
      }
      out.ops += check_case(small_config(R, C, false), ops, rc + " sequence gaps single-buffered");
      ++out.cases;
    }
    // 6: slow weight path (L = R + 3), input and output latency, ready gaps.
    {
      MxuConfig cfg = small_config(R, C, pick(0, 1) == 1);
      cfg.weight_load_cycles = R + 3;
      cfg.input_latency = static_cast<int>(pick(0, R + 5));
      cfg.output_latency = 3;
      std::vector<RefMatmul> ops;
      MxuCycles ready = 0;
      for (int i = 0; i < 2; ++i) {
        ready += static_cast<MxuCycles>(pick(0, 2 * R));
        ops.push_back(random_matmul(rng, pick(1, 2 * R), pick(1, 2 * R + 1), pick(1, 2 * C), dt(), ready));
      }
      out.ops += check_case(cfg, ops, rc + " slow load + latencies db=" + std::to_string(cfg.weight_double_buffer));
      ++out.cases;
    }
    // 7: a half-rate bf16 (one row every 2 cycles, e.g. TPUv1's 16-bit mode).
    {
      MxuConfig cfg = small_config(R, C, pick(0, 1) == 1);
      cfg.throughput[DType::bf16] = 0.5;
      std::vector<RefMatmul> ops;
      for (int i = 0; i < 2; ++i)
        ops.push_back(random_matmul(rng, pick(1, R + 2), pick(1, 2 * R), pick(1, 2 * C), DType::bf16));
      out.ops += check_case(cfg, ops, rc + " half rate db=" + std::to_string(cfg.weight_double_buffer));
      ++out.cases;
    }
    // 8: tiny M over many tiles: weight-load bound.
    {
      out.ops += check_case(small_config(R, C, true),
                            {random_matmul(rng, pick(1, 3), pick(2 * R + 1, 3 * R), pick(C, 2 * C), dt())},
                            rc + " load bound");
      ++out.cases;
    }
    // 9: exact multiples, int8 (2 rows per beat, odd M leaves a half beat).
    {
      out.ops += check_case(
          small_config(R, C, false),
          {random_matmul(rng, 2 * pick(1, R) + 1, 2 * R, C, DType::int8), random_matmul(rng, R, R, 2 * C, DType::int8)},
          rc + " multiples int8");
      ++out.cases;
    }
  }
  return out;
}

// One test per R so each runs in its own process and stays short; each
// covers 5 values of C x 10 case shapes = 50 cases (250 in total).
TEST(MxuEquivalence, Rows2) { EXPECT_EQ(sweep_rows(2, 2).cases, 50); }
TEST(MxuEquivalence, Rows4) { EXPECT_EQ(sweep_rows(4, 4).cases, 50); }
TEST(MxuEquivalence, Rows8) { EXPECT_EQ(sweep_rows(8, 8).cases, 50); }
TEST(MxuEquivalence, Rows16) { EXPECT_EQ(sweep_rows(16, 16).cases, 50); }
TEST(MxuEquivalence, Rows32) { EXPECT_EQ(sweep_rows(32, 32).cases, 50); }

}  // namespace
}  // namespace tpusim::arch
