// SparseCore tile timing (arch/sparsecore/sparsecore_timing.h): closed-form
// cycle counts with their derivation, the closed form equal to the
// vector-by-vector twin over a grid of shapes, busy-until between streams,
// and bad configs refused.
#include <gtest/gtest.h>

#include "arch/common/errors.h"
#include "arch/sparsecore/sparsecore_timing.h"

namespace tpusim::arch {
namespace {

SparseCoreConfig v5p_like() { return SparseCoreConfig{16, 8, 2}; }

TEST(SparseCoreTiming, ClosedFormCycles) {
  SparseCoreTimer t(v5p_like());
  // 1 element: one vector on one tile, 1 op: latency 2 + 1 = 3.
  EXPECT_EQ(t.cycles(1, 1), 3u);
  // 128 elements = 16 vectors of 8, one per tile: 2 + 1 = 3.
  EXPECT_EQ(t.cycles(128, 1), 3u);
  // 129 elements = 17 vectors: tile 0 gets two: 2 + 2 = 4 (blocked at 128, not before).
  EXPECT_EQ(t.cycles(129, 1), 4u);
  // 4096 lookups with 2.5 ops each (rounded up to 3 cycles a vector):
  // 512 vectors / 16 tiles = 32 per tile, 2 + 32 x 3 = 98.
  EXPECT_EQ(t.cycles(4096, 2.5), 98u);
  EXPECT_EQ(t.cycles(0, 1), 0u);
}

TEST(SparseCoreTiming, ClosedFormEqualsTileByTileTwin) {
  for (int tiles : {1, 2, 3, 16})
    for (int lanes : {1, 8, 16})
      for (std::uint64_t e : {1ull, 7ull, 8ull, 9ull, 127ull, 128ull, 129ull, 1000ull, 4099ull})
        for (double ops : {0.5, 1.0, 2.0, 3.25}) {
          SparseCoreTimer t(SparseCoreConfig{tiles, lanes, 2});
          EXPECT_EQ(t.cycles(e, ops), t.reference_cycles(e, ops))
              << "tiles " << tiles << " lanes " << lanes << " elements " << e << " ops " << ops;
        }
}

TEST(SparseCoreTiming, StreamsRunOneAfterAnother) {
  SparseCoreTimer t(v5p_like());
  const Interval a = t.issue(128, 1, 10);  // 10 .. 13
  EXPECT_EQ(a.start, 10u);
  EXPECT_EQ(a.finish, 13u);
  const Interval b = t.issue(128, 1, 11);  // waits for the tiles: 13 .. 16
  EXPECT_EQ(b.start, 13u);
  EXPECT_EQ(b.finish, 16u);
  const Interval c = t.issue(128, 1, 20);  // ready later than free: 20 .. 23
  EXPECT_EQ(c.start, 20u);
  EXPECT_EQ(t.stats()[0].value, 3.0);
  EXPECT_EQ(t.stats()[2].value, 9.0);
}

TEST(SparseCoreTiming, RejectsEmptyConfigs) {
  EXPECT_THROW(SparseCoreTimer(SparseCoreConfig{0, 8, 2}), ConfigError);
  EXPECT_THROW(SparseCoreTimer(SparseCoreConfig{16, 0, 2}), ConfigError);
  EXPECT_THROW(SparseCoreTimer(SparseCoreConfig{16, 8, 0}), ConfigError);
}

TEST(SparseCoreTiming, AdapterTakesVpuWork) {
  SparseCoreUnitTiming u(v5p_like());
  Instr in;
  VpuWork w;
  w.elements = 4096;
  w.alu_ops = 2;
  w.transcendental_ops = 0.5;
  in.work = w;
  EXPECT_EQ(u.issue(in, 0).finish, 98u);  // as ClosedFormCycles: 2.5 ops
  in.work = MxuWork{};
  EXPECT_THROW(u.issue(in, 0), InternalError);
}

}  // namespace
}  // namespace tpusim::arch
