// Closed-form tests of the fast MXU timer: each expected cycle count is
// derived by hand in a comment from the model in systolic_timing.h
// (L = weight load, R + C - 2 = skew across and down the array, + 1 for the
// cycle the last row lands). Also: tightness of the back-to-back bounds,
// the peak MAC rate, wasted-MAC accounting and config/dtype errors.
#include <gtest/gtest.h>

#include <string>

#include "arch/common/errors.h"
#include "arch/mxu/systolic_timing.h"
#include "mxu_test_support.h"

namespace tpusim::arch {
namespace {

using mxu_test::small_config;

MxuConfig v5e_mxu() {
  // v5e: 128x128 MXU; int8 2x and int4 4x bf16 (tpu-specs.md: 197 bf16
  // TFLOP/s, 394 int8 TOP/s, 788 int4 TOP/s per chip).
  MxuConfig c;
  c.count = 4;
  c.rows = 128;
  c.cols = 128;
  c.throughput = {{DType::bf16, 1.0}, {DType::f32, 1.0}, {DType::int8, 2.0}, {DType::int4, 4.0}};
  return c;
}

TEST(MxuTiming, SingleTileClosedForm) {
  // R = C = 4, L = R = 4, M = 5, idle, no latencies:
  // load 0..3, first beat at L = 4, last beat at 4 + M - 1 = 8, which
  // reaches PE(3,3) (R - 1 + C - 1 = 6 later) at 14 and lands at 15.
  // cycles = L + (M - 1) + (R - 1) + (C - 1) + 1 = 4 + 4 + 3 + 3 + 1 = 15.
  const MxuOpTiming t = mxu_block_timing(small_config(4, 4), {5, 4, 4, DType::bf16});
  EXPECT_EQ(t.start, 0u);
  EXPECT_EQ(t.stream_start, 4u);
  EXPECT_EQ(t.finish, 15u);
  EXPECT_EQ(t.cycles, 15u);
  EXPECT_EQ(t.weight_tiles, 1u);
  EXPECT_EQ(t.fill_drain_cycles, 6u);  // R + C - 2
}

TEST(MxuTiming, ScalingBookTileOnV5e) {
  // bf16[8,128] @ bf16[128,128] on a 128x128 MXU from idle:
  // weight load 128 + 8 rows + fill/drain 127 + 127 = 390.
  const MxuOpTiming t = mxu_block_timing(v5e_mxu(), {8, 128, 128, DType::bf16});
  EXPECT_EQ(t.cycles, 128u + 8u + 254u);
  // The array input is busy 8 cycles per 8 rows: one [8,128] every 8 cycles.
  EXPECT_EQ(t.stream_cycles, 8u);
}

TEST(MxuTiming, DoubleBufferedBlockStreamBound) {
  // A[512,4096] @ B[4096,512], 128x128: T = 32 x 4 = 128 tiles, M = 512 >= L,
  // so loads hide behind streams (period M): 128 + 128 * 512 + 254.
  const MxuOpTiming t = mxu_block_timing(v5e_mxu(), {512, 4096, 512, DType::bf16});
  EXPECT_EQ(t.weight_tiles, 128u);
  EXPECT_EQ(t.cycles, 128u + 128u * 512u + 254u);
  // Only the first load is exposed.
  EXPECT_EQ(t.weight_load_exposed, 128u);
  EXPECT_EQ(t.weight_load_hidden, 127u * 128u);
}

TEST(MxuTiming, DoubleBufferedBlockLoadBound) {
  // M = 8 < L = 128, T = 4 (K = 256, N = 256): period L, so the last tile
  // starts streaming at L + 3L = 512 and lands 8 + 254 later: 4*128 + 8 + 254.
  const MxuOpTiming t = mxu_block_timing(v5e_mxu(), {8, 256, 256, DType::bf16});
  EXPECT_EQ(t.cycles, 4u * 128u + 8u + 254u);
  // Exposed: the first load (128) plus (128 - 8) per later tile.
  EXPECT_EQ(t.weight_load_exposed, 128u + 3u * 120u);
  EXPECT_EQ(t.weight_load_hidden, 4u * 128u - (128u + 3u * 120u));
}

TEST(MxuTiming, SingleBufferedSerializesLoads) {
  // R = C = 4, L = 4, M = 5, K = 12, N = 4: T = 3. Without a shadow register
  // the next load may start only on the cycle the last beat enters (it
  // overwrites PE(0,0) after that beat used it), so the period is
  // (M - 1) + L = 8: last tile streams from 4 + 2*8 = 20, last beat 24,
  // lands 24 + 6 + 1 = 31.
  const MxuOpTiming t = mxu_block_timing(small_config(4, 4, false), {5, 12, 4, DType::bf16});
  EXPECT_EQ(t.cycles, 31u);
  // Exposed per later tile: L - 1 (one load cycle overlaps the last beat).
  EXPECT_EQ(t.weight_load_exposed, 4u + 2u * 3u);
}

TEST(MxuTiming, BackToBackOverlapAndTightness) {
  // R = C = 4, L = 4. Op 1: M = 10, one tile: load 0..3, stream 4..13,
  // lands 13 + 6 + 1 = 20. Its first beat committed the shadow at 4, so op
  // 2's load may start at 4 and its stream right after op 1's, at 14.
  const MxuConfig cfg = small_config(4, 4, true);
  const MxuOp op{10, 4, 4, DType::bf16};
  {
    MxuTimer t(cfg);
    const MxuOpTiming a = t.issue(op, 0);
    EXPECT_EQ(a.finish, 20u);
    const MxuOpTiming b = t.issue(op, 0);
    EXPECT_EQ(b.start, 4u);
    EXPECT_EQ(b.stream_start, 14u);
    EXPECT_EQ(b.finish, 30u);
    EXPECT_EQ(b.weight_load_exposed, 0u);  // fully hidden behind op 1's stream
  }
  // The shadow bound is tight: ready 3 still loads at 4; ready 5 loads at 5.
  for (MxuCycles ready : {3u, 4u, 5u}) {
    MxuTimer t(cfg);
    t.issue(op, 0);
    EXPECT_EQ(t.issue(op, ready).start, std::max<MxuCycles>(ready, 4)) << ready;
  }
  // The stream bound is tight: from ready 10, load 10..13 and stream at 14
  // (both bounds meet); from ready 11 the load ends at 15 and delays it.
  for (MxuCycles ready : {9u, 10u, 11u}) {
    MxuTimer t(cfg);
    t.issue(op, 0);
    EXPECT_EQ(t.issue(op, ready).stream_start, std::max<MxuCycles>(ready + 4, 14)) << ready;
  }
}

TEST(MxuTiming, LatenciesAddOnce) {
  // input_latency 200 > L = 128 delays the first beat to 200; output_latency
  // 5 delays landing: 200 + 8 + 254 + 5.
  MxuConfig c = v5e_mxu();
  c.input_latency = 200;
  c.output_latency = 5;
  const MxuOpTiming t = mxu_block_timing(c, {8, 128, 128, DType::bf16});
  EXPECT_EQ(t.stream_start, 200u);
  EXPECT_EQ(t.cycles, 200u + 8u + 254u + 5u);
  EXPECT_EQ(t.weight_load_exposed, 0u);  // the LHS path was later than the weights
}

TEST(MxuTiming, PackedDtypeStreamsFewerBeats) {
  // int8 at 2x: 2 rows per beat, so M = 512 streams in 256 cycles per tile:
  // 128 + 128 * 256 + 254 for the 128-tile block; int4 (4x): 128 beats.
  const MxuConfig c = v5e_mxu();
  EXPECT_EQ(mxu_block_timing(c, {512, 4096, 512, DType::int8}).cycles, 128u + 128u * 256u + 254u);
  EXPECT_EQ(mxu_block_timing(c, {512, 4096, 512, DType::int4}).cycles, 128u + 128u * 128u + 254u);
}

TEST(MxuTiming, PeakRateAndOverheadExact) {
  // A long op kept fed: A[8192,4096] @ B[4096,4096] on 128x128, double
  // buffered, T = 1024 tiles of M = 8192 >= L. cycles = L + T*B + R + C - 2,
  // so the MAC rate is R*C*f x T*B / (T*B + L + R + C - 2): the overhead is
  // exactly L + R + C - 2 = 382 cycles.
  const MxuConfig c = v5e_mxu();
  for (auto [dt, f] : {std::pair{DType::bf16, 1.0}, std::pair{DType::int8, 2.0}, std::pair{DType::int4, 4.0}}) {
    const MxuOpTiming t = mxu_block_timing(c, {8192, 4096, 4096, dt});
    const double beats = 8192.0 / f;
    const double TB = 1024.0 * beats;
    EXPECT_EQ(static_cast<double>(t.cycles), TB + 382.0) << dtype_name(dt);
    const double rate = static_cast<double>(t.useful_macs) / static_cast<double>(t.cycles);
    const double peak = 128.0 * 128.0 * f;
    EXPECT_DOUBLE_EQ(rate, peak * TB / (TB + 382.0)) << dtype_name(dt);
    EXPECT_GT(rate, 0.9995 * peak) << dtype_name(dt);
    EXPECT_DOUBLE_EQ(MxuGeometry(c).peak_macs_per_cycle(dt), peak);
  }
  // The same peak as the spec sheet: 4 MXUs x 128 x 128 x 2 FLOP x 1.5 GHz
  // = 196.6 TFLOP/s vs 197 published for v5e bf16 (tpu-specs.md), and 2x / 4x
  // for int8 / int4 (394 / 788).
  const double clock = 1.5e9;
  const MxuGeometry g(c);
  EXPECT_NEAR(c.count * g.peak_macs_per_cycle(DType::bf16) * 2 * clock / 197e12, 1.0, 0.01);
  EXPECT_NEAR(c.count * g.peak_macs_per_cycle(DType::int8) * 2 * clock / 394e12, 1.0, 0.01);
  EXPECT_NEAR(c.count * g.peak_macs_per_cycle(DType::int4) * 2 * clock / 788e12, 1.0, 0.01);
}

TEST(MxuTiming, WastedMacsOfPartialTiles) {
  // A[5,3] @ B[3,6] on 4x4: K pads 3 -> 4, N pads 6 -> 8 (2 tiles).
  // bf16: 2 tiles x 5 beats x 16 PEs = 160 slots, 5*3*6 = 90 useful.
  const MxuConfig c = small_config(4, 4);
  const MxuOpTiming b = mxu_block_timing(c, {5, 3, 6, DType::bf16});
  EXPECT_EQ(b.useful_macs, 90u);
  EXPECT_EQ(b.issued_mac_slots, 160u);
  EXPECT_EQ(b.wasted_macs, 70u);
  // int8 (2 rows per beat): 3 beats x 2 lanes (the 6th row is padding) =
  // 2 x 3 x 2 x 16 = 192 slots.
  const MxuOpTiming i = mxu_block_timing(c, {5, 3, 6, DType::int8});
  EXPECT_EQ(i.issued_mac_slots, 192u);
  EXPECT_EQ(i.wasted_macs, 102u);
  // A full tile wastes nothing.
  EXPECT_EQ(mxu_block_timing(c, {4, 4, 4, DType::bf16}).wasted_macs, 0u);
}

TEST(MxuTiming, TotalsAccumulate) {
  MxuTimer t(small_config(4, 4));
  const MxuOpTiming a = t.issue({5, 3, 6, DType::bf16}, 0);
  const MxuOpTiming b = t.issue({8, 8, 8, DType::int8}, 0);
  EXPECT_EQ(t.totals().ops, 2u);
  EXPECT_EQ(t.totals().tiles, a.weight_tiles + b.weight_tiles);
  EXPECT_EQ(t.totals().useful_macs, 90u + 512u);
  EXPECT_EQ(t.totals().last_finish, b.finish);
  EXPECT_EQ(t.drain_busy_until(), b.finish);
  // 9 totals, the VMEM operand bytes, and the MAC slots of each dtype run.
  EXPECT_EQ(t.stats().size(), 12u);
  EXPECT_EQ(t.totals().mac_slots_by_dtype[static_cast<std::size_t>(DType::bf16)], a.issued_mac_slots);
  EXPECT_EQ(t.totals().mac_slots_by_dtype[static_cast<std::size_t>(DType::int8)], b.issued_mac_slots);
  // Operand bytes (f32 results): bf16 5x3 LHS once per column tile
  // (ceil(6/4) = 2) + 3x6 weights + 5x6 results = 2*30 + 36 + 120 = 216;
  // int8 8x8x8: ceil(8/4) = 2 x 64 + 64 + 64 x 4 = 448.
  EXPECT_EQ(t.totals().operand_bytes, 216u + 448u);
  t.reset();
  EXPECT_EQ(t.totals().ops, 0u);
  EXPECT_EQ(t.issue({5, 4, 4, DType::bf16}, 0).finish, 15u);  // idle again: as SingleTileClosedForm
}

TEST(MxuTiming, UnsupportedDtypeThrows) {
  MxuConfig c = small_config(4, 4);
  c.throughput.erase(DType::int8);
  MxuTimer t(c);
  try {
    t.issue({4, 4, 4, DType::int8}, 0);
    FAIL() << "int8 must be rejected";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("int8"), std::string::npos) << msg;
    EXPECT_NE(msg.find("bf16"), std::string::npos) << msg;  // lists what is supported
  }
  EXPECT_THROW(t.issue({4, 4, 4, DType::fp8_e4m3}, 0), ConfigError);
}

TEST(MxuTiming, BadConfigAndOpThrow) {
  MxuConfig c = small_config(4, 4);
  c.throughput[DType::int8] = 1.5;  // no cycle-exact meaning
  EXPECT_THROW(MxuTimer{c}, ConfigError);
  c = small_config(4, 4);
  c.throughput[DType::int8] = 0.3;
  EXPECT_THROW(MxuTimer{c}, ConfigError);
  c = small_config(0, 4);
  EXPECT_THROW(MxuTimer{c}, ConfigError);
  c = small_config(4, 4);
  c.weight_load_cycles = -1;
  EXPECT_THROW(MxuTimer{c}, ConfigError);
  MxuTimer t(small_config(4, 4));
  EXPECT_THROW(t.issue({0, 4, 4, DType::bf16}, 0), ConfigError);
  EXPECT_THROW(t.issue({4, -1, 4, DType::bf16}, 0), ConfigError);
}

TEST(MxuTiming, SparseMetadataSlowsTheWeightLoadOnlyWhenItsPathIsNarrow) {
  // R = C = 4, 2:4 sparsity: 2 bits of metadata per kept value, a tile
  // carries 4 x 4 x 2 / 8 = 4 bytes. At 1 B/cycle that takes 4 cycles =
  // L: unchanged (15 cycles as in SingleTileClosedForm). At 0.5 B/cycle
  // it takes 8: the first beat enters at 8, cycles = 8 + 4 + 3 + 3 + 1 = 19.
  // A dense op on the same MXU keeps L = 4.
  MxuConfig c = small_config(4, 4);
  c.sparsity.n = 2;
  c.sparsity.m = 4;
  c.sparsity.metadata_bytes_per_cycle = 1.0;
  EXPECT_EQ(mxu_block_timing(c, {5, 4, 4, DType::bf16, true}).cycles, 15u);
  c.sparsity.metadata_bytes_per_cycle = 0.5;
  EXPECT_EQ(mxu_block_timing(c, {5, 4, 4, DType::bf16, true}).cycles, 19u);
  EXPECT_EQ(mxu_block_timing(c, {5, 4, 4, DType::bf16, false}).cycles, 15u);
  c.sparsity.n = 4;  // n must be below m
  EXPECT_THROW(MxuTimer{c}, ConfigError);
}

}  // namespace
}  // namespace tpusim::arch
