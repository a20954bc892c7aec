// The closed-form fit check (models::check_fit) and the simulated memory
// plan (sim/lowering/memory_plan.cpp: buffer assignment by liveness over
// the generated training graph) agree: for Llama 3 8B training under FSDP
// on v6e, every remat policy's estimate is at least the plan's HBM peak
// (the check never admits a step the lowering then refuses) and at most
// 10% above it (docs/remat.md: the closed form keeps every matmul output
// of a layer, the graph frees those only a residual add reads). Both put
// the peak at the loss or the first layer of backward, before the weight
// gradients accumulate. One process per case.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "models/analysis.h"
#include "models/sharding.h"
#include "models/zoo.h"
#include "sim/config/config_loader.h"
#include "sim/lowering/lowering.h"
#include "workloads/ir/mesh.h"

using namespace tpusim;

namespace {

class FitAgreement : public ::testing::TestWithParam<models::RematPolicy> {};

TEST_P(FitAgreement, ClosedFormBoundsTheSimulatedPeakWithin10Percent) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v6e");
  const models::ModelSpec m = models::load_model("llama3-8b");
  models::PhaseOptions o;
  o.phase = models::Phase::train;
  o.batch = 8;  // one sequence per chip
  o.seq_len = 2048;  // `none` keeps every activation: 4096 tokens need more than v6e's HBM
  o.remat = GetParam();
  o.mesh = workloads::parse_mesh("fsdp=8", models::mesh_axis_names());
  const models::FitReport fit = models::check_fit(m, o, cfg.hbm.capacity_bytes);
  sim::LoweringOptions lo;  // as run_workload lowers a sharded program
  lo.multi_chip = true;
  lo.mesh = {{"fsdp", 8}};
  const std::uint64_t plan = sim::lower(models::generate(m, o), cfg, lo).hbm_peak_bytes;
  ::testing::Test::RecordProperty("estimate_over_plan_permille",
                                  static_cast<int>(std::lround(1000.0 * static_cast<double>(fit.needed_bytes) / plan)));
  EXPECT_GE(fit.needed_bytes, plan) << fit.message;
  EXPECT_LE(static_cast<double>(fit.needed_bytes), 1.10 * static_cast<double>(plan)) << fit.message;
}

INSTANTIATE_TEST_SUITE_P(Policies, FitAgreement,
                         ::testing::Values(models::RematPolicy::none, models::RematPolicy::minimal,
                                           models::RematPolicy::selective, models::RematPolicy::full,
                                           models::RematPolicy::qkv_proj_offloaded,
                                           models::RematPolicy::minimal_offloaded),
                         [](const auto& info) { return std::string(models::remat_name(info.param)); });

}  // namespace
