// Collective matmul end to end (sim/lowering/collective_matmul.h): a
// training step of a tensor-parallel, sequence-parallel transformer on a
// v5p ring of 8 (mesh tensor=8 on a 1x1x8 slice), run with the option on
// (every eligible collective decomposed: --collective-matmul-min-mib 0)
// and off (--no-collective-matmul), with nominal links and no collective
// start-up (v5p's measured 3.8 us start-up is paid by each of a ring's
// permutes: with it the exposed share below is 0.63, not 0.59). With the ring transfers under the
// matmul slices the step is faster and the time the chip spends on
// tensor-axis collectives with no compute running shrinks; the operators,
// their FLOPs and their minimum HBM traffic are the same (only how the
// collectives and matmuls are cut differs).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

#include "../unit/sim/config_test_util.h"
#include "cli_test_util.h"
#include "csv_rows.h"

namespace {

using tpusim::sim::testing::TempDir;

// Hidden 4096 with a 16384-wide FFN: per chip each gathered activation is
// [4, 2048, 4096] bf16 (64 MiB), each ring step moves an 8 MiB shard.
constexpr const char* kModel = R"(name: tp-block
family: decoder
hidden: 4096
layers: 2
vocab: 1024
max_context: 4096
norm: rmsnorm
position: rotary
tied_embeddings: false
attention: {heads: 32, kv_heads: 32, head_dim: 128}
ffn: {kind: swiglu, size: 16384}
)";

double num(const std::map<std::string, std::string>& row, const char* key) { return std::stod(row.at(key)); }

TEST(CliCollectiveMatmul, TensorParallelStepOverlapsItsRingWithTheMatmuls) {
  TempDir t;
  { std::ofstream(t.path() + "/tp.yaml") << kModel; }
  const std::string common = "run --arch v5p --slice 1x1x8 --mesh tensor=8 --model " + t.path() +
                             "/tp.yaml --phase train --batch 4 --seq 2048 --remat full --sequence-parallel "
                             "--set hbm.model=calibrated --set ici.link_efficiency=1 --set ici.collective_latency=0us --quiet --out " +
                             t.path();
  const auto on = tpusim::test::run_tpusim_in(t.path(), common + "/on --collective-matmul-min-mib 0");
  ASSERT_EQ(on.rc, 0) << on.err;
  const auto off = tpusim::test::run_tpusim_in(t.path(), common + "/off --no-collective-matmul");
  ASSERT_EQ(off.rc, 0) << off.err;
  const auto s_on = tpusim::test::rows_of(t.path() + "/on/summary.csv").at(0);
  const auto s_off = tpusim::test::rows_of(t.path() + "/off/summary.csv").at(0);
  EXPECT_LT(num(s_on, "seconds"), num(s_off, "seconds"));
  // The mesh has the tensor axis only, so the exposed collective time (no
  // compute running) is the kernels' wait for tensor-axis collectives.
  // Off, almost every tensor-axis collective is exposed (the matmul
  // waits for its gather, the scatter for its matmul). On, the FFN's
  // rings hide under its 2 x 2048-column slices; the attention block's
  // q, k and v slices (3 x 512 columns) compute for less time than a ring
  // step takes, so part of those rings stays exposed: at most 60% of the
  // exposed time remains.
  EXPECT_LT(num(s_on, "ici_exposed_seconds"), 0.6 * num(s_off, "ici_exposed_seconds"));
  EXPECT_EQ(s_on.at("total_flops"), s_off.at("total_flops"));
  const auto ops_on = tpusim::test::rows_of(t.path() + "/on/ops.csv");
  const auto ops_off = tpusim::test::rows_of(t.path() + "/off/ops.csv");
  ASSERT_EQ(ops_on.size(), ops_off.size());
  int decomposed = 0;
  for (std::size_t i = 0; i < ops_on.size(); ++i) {
    EXPECT_EQ(ops_on[i].at("name"), ops_off[i].at("name"));
    EXPECT_EQ(ops_on[i].at("flops"), ops_off[i].at("flops")) << ops_on[i].at("name");
    const bool cut = ops_on[i].at("blocking").find("collective matmul") != std::string::npos;
    decomposed += cut;
    // A sliced matmul reads its own chunk from the chip's shard, which may
    // be resident on chip, instead of from the gathered tensor in HBM.
    if (!cut) {
      EXPECT_EQ(ops_on[i].at("hbm_bytes"), ops_off[i].at("hbm_bytes")) << ops_on[i].at("name");
    } else if (ops_on[i].at("ici_algorithm").empty()) {
      EXPECT_LE(num(ops_on[i], "hbm_bytes"), num(ops_off[i], "hbm_bytes")) << ops_on[i].at("name");
    }
  }
  // Per layer, forward and its recompute: 2 gathers, 2 scatters and the
  // 5 projections; backward: the 2 + 2 transposed collectives and the
  // grad_lhs matmuls of the projections.
  EXPECT_GE(decomposed, 2 * 9 * 2);
}

}  // namespace
