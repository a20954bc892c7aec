// The PE-level MXU reference: its numbers equal a plain matmul (int8
// exactly; bf16 inputs bit-exactly against an f32 sum in the array's order),
// bf16 rounding is round-to-nearest-even, and every bound its controller
// obeys is tight: a schedule forced one cycle earlier than the fast model's
// corrupts data and the array detects it (PeHazardError), while the fast
// model's cycle runs clean.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "arch/common/errors.h"
#include "arch/mxu/bf16.h"
#include "arch/mxu/pe_array_reference.h"
#include "arch/mxu/systolic_timing.h"
#include "mxu_test_support.h"

namespace tpusim::arch {
namespace {

using mxu_test::random_matmul;
using mxu_test::small_config;

TEST(Bf16, RoundToNearestEven) {
  // bf16 keeps 7 mantissa bits: the spacing just above 1 is 2^-7.
  EXPECT_EQ(round_to_bf16(1.0f), 1.0f);
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f), 1.0f);                       // tie, 1.0 is even
  EXPECT_EQ(round_to_bf16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);         // tie, rounds up to even
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);  // above the tie
  EXPECT_EQ(round_to_bf16(-1.0f - 0x1p-8f), -1.0f);
  // FLT_MAX is above bf16 max + half a bf16 ulp ((2 - 2^-8) * 2^127): rounds to inf.
  EXPECT_EQ(round_to_bf16(std::numeric_limits<float>::max()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(round_to_bf16(0x1.fep127f), 0x1.fep127f);  // bf16 max itself
  EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(round_to_bf16(0x1p-130f), 0x1p-130f);  // a denormal with few bits survives
}

TEST(PeReference, Int8ExactOnPartialTiles) {
  std::mt19937 rng(1);
  // K and N not multiples of R and C, M odd with 2 rows per beat.
  for (auto [m, k, n] : {std::tuple{7, 9, 5}, std::tuple{1, 3, 3}, std::tuple{16, 16, 16}, std::tuple{13, 20, 11}}) {
    for (bool db : {true, false}) {
      const RefMatmul op = random_matmul(rng, m, k, n, DType::int8);
      PeArrayReference ref(small_config(4, 4, db));
      EXPECT_EQ(ref.run({op})[0].out_i32, mxu_test::plain_matmul_i8(op)) << m << "x" << k << "x" << n;
    }
  }
}

TEST(PeReference, Int8ExtremesOneRowPerBeat) {
  // -128 * -128 * 64 = 1048576: exact, and a mix of extremes with int8 at 1x.
  MxuConfig c = small_config(8, 8);
  c.throughput[DType::int8] = 1.0;
  RefMatmul op;
  op.m = 3;
  op.k = 64;
  op.n = 5;
  op.dtype = DType::int8;
  op.a.assign(3 * 64, -128.f);
  op.b.assign(64 * 5, -128.f);
  for (std::size_t i = 0; i < op.b.size(); i += 3) op.b[i] = 127.f;
  PeArrayReference ref(c);
  const auto got = ref.run({op})[0].out_i32;
  EXPECT_EQ(got, mxu_test::plain_matmul_i8(op));
  // Column 1 of B: entries 1, 6, 11, ... hold 127 where (k*5 + 1) % 3 == 0.
  std::int64_t expect = 0;
  for (int kk = 0; kk < 64; ++kk) expect += -128LL * (((kk * 5 + 1) % 3 == 0) ? 127 : -128);
  EXPECT_EQ(got[1], expect);
}

TEST(PeReference, Bf16BitExactInArrayOrder) {
  std::mt19937 rng(2);
  for (auto [R, C] : {std::pair{4, 4}, std::pair{8, 2}, std::pair{2, 8}}) {
    const RefMatmul op = random_matmul(rng, 9, 3 * R + 1, 2 * C + 1, DType::bf16);
    PeArrayReference ref(small_config(R, C));
    const std::vector<float> got = ref.run({op})[0].out_f32;
    EXPECT_EQ(got, mxu_test::plain_matmul_bf16_blocked(op, R)) << R << "x" << C;
    // And it is a matmul: close to the double-precision product of the
    // bf16-rounded inputs (f32 sums of ~13 terms of size ~1).
    for (std::int64_t m = 0; m < op.m; ++m)
      for (std::int64_t n = 0; n < op.n; ++n) {
        double s = 0;
        for (std::int64_t k = 0; k < op.k; ++k)
          s += static_cast<double>(round_to_bf16(op.a[static_cast<std::size_t>(m * op.k + k)])) *
               round_to_bf16(op.b[static_cast<std::size_t>(k * op.n + n)]);
        EXPECT_NEAR(got[static_cast<std::size_t>(m * op.n + n)], s, 1e-5 * (1 + std::fabs(s)));
      }
  }
}

TEST(PeReference, Bf16RoundsOperandsOnEntry) {
  // 1 + 2^-8 rounds to 1 in bf16, so 4 x (1 x 1) = 4, not 4.0156.
  RefMatmul op;
  op.m = 1;
  op.k = 4;
  op.n = 1;
  op.dtype = DType::bf16;
  op.a.assign(4, 1.0f + 0x1p-8f);
  op.b.assign(4, 1.0f);
  PeArrayReference ref(small_config(4, 4));
  EXPECT_EQ(ref.run({op})[0].out_f32, std::vector<float>{4.0f});
}

TEST(PeReference, SingleTileCycleHandDerived) {
  // As MxuTiming.SingleTileClosedForm, but measured on the PE grid: load
  // 0..3, beats 4..8, the last reaches PE(3,3) at 14 and lands at 15.
  std::mt19937 rng(3);
  PeArrayReference ref(small_config(4, 4));
  const auto r = ref.run({random_matmul(rng, 5, 4, 4, DType::bf16)});
  EXPECT_EQ(r[0].start, 0u);
  EXPECT_EQ(r[0].stream_start, 4u);
  EXPECT_EQ(r[0].finish, 15u);
  EXPECT_EQ(ref.pe_cycles_simulated(), 16u * ref.cycles_simulated());
}

// Two one-tile ops on 4x4 (tiles 0 and 1), run with tile 1 forced to `at`.
std::vector<RefMatmulResult> run_forced(bool db, std::int64_t m0, std::int64_t m1, bool load, MxuCycles at) {
  std::mt19937 rng(4);
  const RefMatmul a = random_matmul(rng, m0, 4, 4, DType::bf16);
  const RefMatmul b = random_matmul(rng, m1, 4, 4, DType::bf16);
  RefForcedSchedule f;
  (load ? f.load_start : f.stream_start)[1] = at;
  PeArrayReference ref(small_config(4, 4, db));
  auto r = ref.run({a, b}, f);
  EXPECT_EQ(r[0].out_f32, mxu_test::plain_matmul_bf16_blocked(a, 4));
  EXPECT_EQ(r[1].out_f32, mxu_test::plain_matmul_bf16_blocked(b, 4));
  return r;
}

TEST(PeReference, ShadowLoadBoundIsTight) {
  // Double-buffered, op 0 M = 10: its first beat enters (commits the
  // shadow) at L = 4, so tile 1 may load from 4: at 3 it would overwrite
  // PE(0,0)'s shadow one cycle before the commit reads it.
  EXPECT_THROW(run_forced(true, 10, 10, true, 3), PeHazardError);
  const auto r = run_forced(true, 10, 10, true, 4);
  MxuTimer t(small_config(4, 4, true));
  t.issue({10, 4, 4, DType::bf16}, 0);
  EXPECT_EQ(t.issue({10, 4, 4, DType::bf16}, 0).start, 4u);  // the fast model picks exactly 4
  EXPECT_EQ(r[1].finish, 30u);                               // stream 14..23 (after op 0's 4..13), lands 23 + 6 + 1
}

TEST(PeReference, LoadCompleteBoundIsTight) {
  // Op 0 M = 2 (stream 4..5), tile 1 loads 4..7 and may stream from 8 =
  // 4 + L: at 7 row 0 commits a shadow whose last shift lands at the end of
  // cycle 7. At 8: finish = 8 + (3 - 1) + 6 + 1 = 17, as the fast model says.
  EXPECT_THROW(run_forced(true, 2, 3, false, 7), PeHazardError);
  const auto r = run_forced(true, 2, 3, false, 8);
  EXPECT_EQ(r[1].finish, 17u);
  MxuTimer t(small_config(4, 4, true));
  t.issue({2, 4, 4, DType::bf16}, 0);
  EXPECT_EQ(t.issue({3, 4, 4, DType::bf16}, 0).finish, 17u);
}

TEST(PeReference, StreamOrderBoundIsTight) {
  // Op 0 M = 10 streams 4..13; tile 1 may not enter before 14.
  EXPECT_THROW(run_forced(true, 10, 10, false, 13), PeHazardError);
  EXPECT_EQ(run_forced(true, 10, 10, false, 14)[1].finish, 30u);
}

TEST(PeReference, SingleBufferLoadBoundIsTight) {
  // Single-buffered, op 0 M = 5: beats 4..8. The next load may overwrite
  // PE(0,0) from cycle 8 (its last beat reads W in cycle 8, the new value
  // lands at the edge); at 7 the last beat would see tile 1's weights.
  EXPECT_THROW(run_forced(false, 5, 5, true, 7), PeHazardError);
  const auto r = run_forced(false, 5, 5, true, 8);
  // Load 8..11, stream 12..16, lands 16 + 6 + 1 = 23.
  EXPECT_EQ(r[1].finish, 23u);
  MxuTimer t(small_config(4, 4, false));
  t.issue({5, 4, 4, DType::bf16}, 0);
  EXPECT_EQ(t.issue({5, 4, 4, DType::bf16}, 0).finish, 23u);
}

TEST(PeReference, BadInputsThrow) {
  PeArrayReference ref(small_config(4, 4));
  std::mt19937 rng(5);
  RefMatmul op = random_matmul(rng, 2, 2, 2, DType::int8);
  op.a[0] = 1.5f;
  EXPECT_THROW(ref.run({op}), ConfigError);
  op.a[0] = 128.f;
  EXPECT_THROW(ref.run({op}), ConfigError);
  op = random_matmul(rng, 2, 2, 2, DType::bf16);
  op.b.pop_back();
  EXPECT_THROW(ref.run({op}), ConfigError);
  op = random_matmul(rng, 2, 2, 2, DType::bf16);
  op.dtype = DType::fp8_e4m3;
  EXPECT_THROW(ref.run({op}), ConfigError);
  MxuConfig no_int8 = small_config(4, 4);
  no_int8.throughput.erase(DType::int8);
  EXPECT_THROW(PeArrayReference(no_int8).run({random_matmul(rng, 2, 2, 2, DType::int8)}), ConfigError);
  MxuConfig fast_load = small_config(4, 4);
  fast_load.weight_load_cycles = 3;  // 4 rows cannot shift in 3 cycles
  EXPECT_THROW(PeArrayReference{fast_load}, ConfigError);
}

}  // namespace
}  // namespace tpusim::arch
