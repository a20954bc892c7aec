// End-to-end efficiency where the hardware is regular: a bf16 matmul
// 8192 x 8192 x 8192 on v5e (detailed HBM model, the default) lands within
// 1.10x of the compute roofline and never below it. (The two
// memory-bound goals, 1.15x of the HBM bound for an M=8 decode matmul and
// a large elementwise op, are not met - measured 1.20x - and are reported
// in docs/performance.md rather than asserted.)
#include <gtest/gtest.h>

#include "sim/config/config_loader.h"
#include "sim/run/run.h"
#include "workloads/builtin.h"

using namespace tpusim;

TEST(EngineEfficiency, LargeMatmulNearComputeRoofline) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  const auto wl = workloads::builtin::gemm(8192, 8192, 8192);
  const sim::RunReport r = sim::run_workload("v5e", cfg, wl, {});
  // Compute roofline: 8192^3 MACs / (4 MXUs x 128 x 128 MACs per cycle).
  const double compute = 8192.0 * 8192 * 8192 / (4 * 128 * 128);
  EXPECT_DOUBLE_EQ(r.lowered.ops[0].roofline_cycles, compute);
  EXPECT_GE(static_cast<double>(r.sim.end_cycle), compute);
  EXPECT_LE(static_cast<double>(r.sim.end_cycle), 1.10 * compute);
}
