// End-to-end efficiency where the hardware is regular: a bf16 matmul
// 8192 x 8192 x 8192 on v5e lands within 1.10x of the compute roofline and
// never below it, with the detailed and the default (channel) HBM model; the two
// memory-bound goals, an M=8 decode matmul and a large elementwise add
// within 1.15x of the HBM bound (bytes / 819.2 GB/s) and never below it,
// with the detailed and the calibrated HBM model.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/config/config_loader.h"
#include "sim/run/run.h"
#include "workloads/builtin.h"

using namespace tpusim;

namespace {

void expect_large_matmul_near_compute_roofline(const std::vector<std::string>& sets) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", sets);
  const auto wl = workloads::builtin::gemm(8192, 8192, 8192);
  const sim::RunReport r = sim::run_workload("v5e", cfg, wl, {});
  // Compute roofline: 8192^3 MACs / (4 MXUs x 128 x 128 MACs per cycle).
  const double compute = 8192.0 * 8192 * 8192 / (4 * 128 * 128);
  EXPECT_DOUBLE_EQ(r.lowered.ops[0].roofline_cycles, compute);
  EXPECT_GE(static_cast<double>(r.sim.end_cycle), compute);
  EXPECT_LE(static_cast<double>(r.sim.end_cycle), 1.10 * compute);
}

}  // namespace

TEST(EngineEfficiency, LargeMatmulNearComputeRooflineDetailed) {
  expect_large_matmul_near_compute_roofline({"hbm.model=detailed"});
}
// The config default (hbm.model: channel), as `tpusim run` simulates it.
TEST(EngineEfficiency, LargeMatmulNearComputeRooflineDefault) { expect_large_matmul_near_compute_roofline({}); }

namespace {

// The memory-bound goal: the operator's cycles within 1.15x of its
// roofline, which is the HBM bound (every byte read or written once at
// peak bandwidth), and never below it.
void expect_memory_bound_within(const workloads::Workload& wl, const std::string& hbm_model) {
  arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  cfg.hbm.model = hbm_model;
  const sim::RunReport r = sim::run_workload("v5e", cfg, wl, {});
  ASSERT_EQ(r.lowered.ops.size(), 1u);
  const auto& op = r.lowered.ops[0];
  // Memory-bound: the HBM time is the roofline.
  ASSERT_DOUBLE_EQ(op.roofline_cycles, op.memory_cycles);
  const double cycles = static_cast<double>(r.sim.end_cycle);
  ::testing::Test::RecordProperty("ratio_permille", static_cast<int>(cycles / op.roofline_cycles * 1000 + 0.5));
  EXPECT_GE(cycles, op.roofline_cycles);
  EXPECT_LE(cycles, 1.15 * op.roofline_cycles) << hbm_model << ": " << cycles << " cycles, HBM bound "
                                               << op.roofline_cycles;
}

}  // namespace

// Decode-like matmul: 8 x 8192 @ 8192 x 8192 bf16 reads 128 MiB of weights
// (plus 128 KiB in and out) at 2 x 8 x 8192^2 FLOPs: far below the ridge.
TEST(EngineEfficiency, DecodeMatmulNearHbmBoundDetailed) {
  expect_memory_bound_within(workloads::builtin::gemm(8, 8192, 8192), "detailed");
}
TEST(EngineEfficiency, DecodeMatmulNearHbmBoundCalibrated) {
  expect_memory_bound_within(workloads::builtin::gemm(8, 8192, 8192), "calibrated");
}

// Elementwise add of two 4096 x 8192 bf16 tensors: 64 MiB read twice and
// written once, one FLOP per 6 bytes.
TEST(EngineEfficiency, LargeElementwiseAddNearHbmBoundDetailed) {
  expect_memory_bound_within(workloads::builtin::elementwise(workloads::EwKind::add, {4096, 8192}),
                             "detailed");
}
TEST(EngineEfficiency, LargeElementwiseAddNearHbmBoundCalibrated) {
  expect_memory_bound_within(workloads::builtin::elementwise(workloads::EwKind::add, {4096, 8192}),
                             "calibrated");
}
