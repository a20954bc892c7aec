// Every named model runs in every phase it supports on v5e and v5p, at a
// small batch and sequence: either it fits one chip's HBM and the whole
// generated workload is simulated (every operator timed, the run's FLOPs
// are the workload's), or the fit check refuses it with the needed and
// available GiB and a chip count above one. One process per case.
#include <gtest/gtest.h>

#include "models/analysis.h"
#include "models/zoo.h"
#include "sim/config/config_loader.h"
#include "sim/results/metrics.h"
#include "sim/run/run.h"
#include "workloads/ir/cost.h"

using namespace tpusim;

namespace {

using Param = std::tuple<std::string, std::string, std::string>;  // model, phase, arch

std::vector<Param> all_cases() {
  std::vector<Param> out;
  for (const std::string& m : models::list_models()) {
    const auto spec = models::load_model(m);
    for (models::Phase p : models::supported_phases(spec.family))
      for (const char* a : {"v5e", "v5p"}) out.emplace_back(m, models::phase_name(p), a);
  }
  return out;
}

class ModelRuns : public ::testing::TestWithParam<Param> {};

}  // namespace

TEST_P(ModelRuns, RunsOrGetsTheFitMessage) {
  const auto& [model, phase, arch_name] = GetParam();
  const auto spec = models::load_model(model);
  models::PhaseOptions po;
  ASSERT_TRUE(models::parse_phase(phase, &po.phase));
  po.batch = 1;
  po.seq_len = 128;
  po.context = 128;
  // Calibrated HBM: whole models in seconds (the detailed model is for
  // memory studies).
  const arch::TpuConfig cfg = sim::load_tpu_config(arch_name, {"hbm.model=calibrated"});
  const models::FitReport fit = models::check_fit(spec, po, cfg.hbm.capacity_bytes);
  if (!fit.fits) {
    EXPECT_GT(fit.min_chips, 1);
    EXPECT_GT(fit.needed_bytes, fit.available_bytes);
    EXPECT_NE(fit.message.find("GiB"), std::string::npos) << fit.message;
    return;
  }
  const workloads::Workload wl = models::generate(spec, po);
  const sim::RunReport r = sim::run_workload(arch_name, cfg, wl, {});
  const sim::RunMetrics m = sim::compute_metrics(r);
  EXPECT_GT(r.sim.end_cycle, 0u);
  EXPECT_EQ(m.total_flops, workloads::workload_cost(wl).flops);
  for (std::size_t i = 0; i < m.ops.size(); ++i) {
    if (r.lowered.ops[i].fused_into >= 0 || r.lowered.ops[i].blocking == "bitcast") continue;
    EXPECT_TRUE(m.ops[i].has_instrs) << wl.ops[i].name;
    EXPECT_GE(static_cast<double>(m.ops[i].cycles), r.lowered.ops[i].roofline_cycles) << wl.ops[i].name;
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, ModelRuns, ::testing::ValuesIn(all_cases()), [](const auto& info) {
  std::string n = std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_" + std::get<2>(info.param);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});
