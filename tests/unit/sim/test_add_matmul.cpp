// How one grid step's matmul is dealt to the MXUs (add_matmul): column
// tiles over the MXUs; with fewer column tiles than MXUs, many rows are
// split over them, while a few rows (a decode step's) split the tile's K
// tiles instead, each MXU taking every row against its own K range, with
// one VPU add of the partial sums, so that no MXU loads weights another
// already holds.
#include <gtest/gtest.h>

#include <variant>

#include "sim/config/config_loader.h"
#include "sim/lowering/chip_figures.h"
#include "sim/lowering/instrs.h"
#include "sim/lowering/pipeline.h"

using namespace tpusim;

namespace {

struct Dealt {
  int mxu = 0, vpu = 0;
  std::int64_t k_sum = 0, k_max = 0, m_max = 0;
};

Dealt deal(const char* arch_name, std::int64_t m, std::int64_t k, std::int64_t n) {
  const arch::TpuConfig cfg = sim::load_tpu_config(arch_name);
  sim::LoweringOptions opt;
  const auto f = sim::lowering::chip_figures(cfg, opt);
  sim::lowering::Step s;
  sim::lowering::add_matmul(s, f, m, k, n, arch::DType::bf16);
  Dealt d;
  for (const auto& c : s.compute) {
    if (const auto* w = std::get_if<arch::MxuWork>(&c.instr.work)) {
      ++d.mxu;
      d.k_sum += w->k;
      d.k_max = std::max(d.k_max, w->k);
      d.m_max = std::max(d.m_max, w->m);
    } else {
      ++d.vpu;
      EXPECT_EQ(c.after.size(), static_cast<std::size_t>(d.mxu)) << "the add waits for every partial";
    }
  }
  return d;
}

}  // namespace

TEST(AddMatmul, EachCaseDealsAsExpected) {
  struct Case {
    const char* why;
    const char* arch;
    std::int64_t m, k, n;
    int mxu, vpu;
    std::int64_t k_sum, k_max, m_max;
  };
  const Case cases[] = {
      // v7: four 256x256 MXUs; one column tile, 16 K tiles, 8 rows: each
      // MXU a quarter of K, every K row once (no tile loaded twice).
      {"few rows split K", "v7", 8, 4096, 256, 4, 1, 4096, 1024, 8},
      // 4096 rows stream far longer than a tile's weight load: the rows
      // are split, each MXU loading the whole K of the tile.
      {"many rows split rows", "v7", 4096, 4096, 256, 4, 0, 4 * 4096, 4096, 1024},
      // v5e: four 128x128 MXUs, 8 column tiles: two each, whole K.
      {"column tiles per MXU", "v5e", 8, 4096, 1024, 4, 0, 4 * 4096, 4096, 8},
      // Two K tiles, one column tile, four MXUs: two MXUs, a K tile each.
      {"K shorter than the MXUs", "v7", 8, 512, 256, 2, 1, 512, 256, 8},
  };
  for (const Case& c : cases) {
    const Dealt d = deal(c.arch, c.m, c.k, c.n);
    EXPECT_EQ(d.mxu, c.mxu) << c.why;
    EXPECT_EQ(d.vpu, c.vpu) << c.why;
    EXPECT_EQ(d.k_sum, c.k_sum) << c.why;
    EXPECT_EQ(d.k_max, c.k_max) << c.why;
    EXPECT_EQ(d.m_max, c.m_max) << c.why;
  }
}
