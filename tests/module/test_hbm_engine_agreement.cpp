// End to end: whole workloads on TPU v5e with the calibrated HBM models finish
// within 5% of the detailed model's total. The DMA engines keep 4-8 copies
// in flight (128 KiB - 1 MiB, strided and contiguous), the regime where
// sharing matters. One simulation per process (SystemC), so the detailed
// totals are recorded here rather than run alongside; they were measured with
//   build/sim/tpusim run --arch v5e --gemm 2048,2048,2048   -> 156953 cycles
//   build/sim/tpusim run --arch v5e --gemm 8,8192,8192      -> 279677 cycles
//   build/sim/tpusim run --arch v5e --gemm 1024,1024,1024   -> 27065 cycles
//   build/sim/tpusim run --arch v5e --model resnet50 --phase infer --batch 8
//                                                          -> 1214089 cycles
// (with --set hbm.model=detailed; kernel launch and step overheads, scoped
// VMEM blocks and VMEM-resident activations in the lowering; resnet50
// 1214592 before inputs lived only while read, which moves its HBM
// addresses, and 1216277 before matmuls with few rows split K over the
// MXUs)
// The last two are dominated by small copies (48-256 KiB) issued request
// by request and their latency: the whole-memory calibrated model is 9%
// and 18% short there, so they hold the per-pseudo-channel model
// (hbm.model=channel), which is checked on all four.
// (detailed model with postponed refreshes, hbm.refresh_postpone = 1, and
// the arch/dma engines pacing 512 B requests; before them 157600 and
// 295809; re-measure if the detailed model,
// the lowering or the DMA engine changes). The detailed runs themselves are
// the last two tests, which fail if these recorded totals go stale.
#include <gtest/gtest.h>

#include <cmath>

#include "models/zoo.h"
#include "sim/config/config_loader.h"
#include "sim/run/run.h"
#include "workloads/builtin.h"

using namespace tpusim;

namespace {

constexpr double kGemm2048Detailed = 156953;
constexpr double kGemm8x8192Detailed = 279677;
constexpr double kGemm1024Detailed = 27065;
constexpr double kResnet50Detailed = 1214089;

double cycles(const std::string& model, std::int64_t m, std::int64_t k, std::int64_t n) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=" + model});
  const workloads::Workload wl = workloads::builtin::gemm(m, k, n);
  return static_cast<double>(sim::run_workload("v5e", cfg, wl, {}).sim.end_cycle);
}

double resnet50_cycles(const std::string& model) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=" + model});
  models::PhaseOptions po;
  po.phase = models::Phase::infer;
  po.batch = 8;
  const workloads::Workload wl = models::generate(models::load_model("resnet50"), po);
  return static_cast<double>(sim::run_workload("v5e", cfg, wl, {}).sim.end_cycle);
}

}  // namespace

TEST(HbmEngineAgreement, Gemm2048CalibratedWithinFivePercent) {
  const double c = cycles("calibrated", 2048, 2048, 2048);
  EXPECT_NEAR(c, kGemm2048Detailed, 0.05 * kGemm2048Detailed);
}

TEST(HbmEngineAgreement, Gemm8x8192CalibratedWithinFivePercent) {
  const double c = cycles("calibrated", 8, 8192, 8192);
  EXPECT_NEAR(c, kGemm8x8192Detailed, 0.05 * kGemm8x8192Detailed);
}

TEST(HbmEngineAgreement, Gemm2048ChannelWithinFivePercent) {
  const double c = cycles("channel", 2048, 2048, 2048);
  EXPECT_NEAR(c, kGemm2048Detailed, 0.05 * kGemm2048Detailed);
}

TEST(HbmEngineAgreement, Gemm8x8192ChannelWithinFivePercent) {
  const double c = cycles("channel", 8, 8192, 8192);
  EXPECT_NEAR(c, kGemm8x8192Detailed, 0.05 * kGemm8x8192Detailed);
}

TEST(HbmEngineAgreement, Gemm1024ChannelWithinFivePercent) {
  const double c = cycles("channel", 1024, 1024, 1024);
  EXPECT_NEAR(c, kGemm1024Detailed, 0.05 * kGemm1024Detailed);
}

TEST(HbmEngineAgreement, Resnet50InferenceChannelWithinFivePercent) {
  const double c = resnet50_cycles("channel");
  EXPECT_NEAR(c, kResnet50Detailed, 0.05 * kResnet50Detailed);
}

// The recorded detailed totals are still what the detailed model gives.
TEST(HbmEngineAgreement, Gemm2048DetailedTotalIsCurrent) {
  EXPECT_EQ(cycles("detailed", 2048, 2048, 2048), kGemm2048Detailed);
}

TEST(HbmEngineAgreement, Gemm8x8192DetailedTotalIsCurrent) {
  EXPECT_EQ(cycles("detailed", 8, 8192, 8192), kGemm8x8192Detailed);
}

TEST(HbmEngineAgreement, Gemm1024DetailedTotalIsCurrent) {
  EXPECT_EQ(cycles("detailed", 1024, 1024, 1024), kGemm1024Detailed);
}

TEST(HbmEngineAgreement, Resnet50DetailedTotalIsCurrent) { EXPECT_EQ(resnet50_cycles("detailed"), kResnet50Detailed); }
