// Every named LLM runs a decode step and a training step on a slice where
// it fits: the first of v5e 4x4, v5e 16x16 and v5p 4x4x4 (with the first
// mesh of each that the model divides and whose per-chip footprint fits
// HBM) is simulated - the sharded per-chip program on one chip's model,
// its collectives on the slice's ICI network. A model that fits none of
// them must get the fit message. One process per case.
#include <gtest/gtest.h>

#include "models/analysis.h"
#include "models/sharding.h"
#include "models/zoo.h"
#include "sim/config/config_loader.h"
#include "sim/engine/slice_setup.h"
#include "sim/results/metrics.h"
#include "sim/run/run.h"

using namespace tpusim;

namespace {

struct Placement {
  const char* arch;
  const char* slice;
  std::vector<const char*> meshes;  // tried in order
};

const std::vector<Placement>& placements() {
  static const std::vector<Placement> p = {
      {"v5e", "4x4", {"data=4,tensor=4", "fsdp=4,tensor=4", "fsdp=16"}},
      {"v5e", "16x16", {"fsdp=16,tensor=16", "data=16,fsdp=16", "fsdp=256"}},
      {"v5p", "4x4x4", {"data=4,fsdp=4,tensor=4", "fsdp=16,tensor=4", "fsdp=64"}},
  };
  return p;
}

bool is_llm(const models::ModelSpec& s) { return s.family == models::Family::decoder; }

using Param = std::tuple<std::string, std::string>;  // model, phase

std::vector<Param> cases() {
  std::vector<Param> out;
  for (const std::string& m : models::list_models())
    if (is_llm(models::load_model(m)))
      for (const char* phase : {"decode", "train"}) out.emplace_back(m, phase);
  return out;
}

class SlicedModels : public ::testing::TestWithParam<Param> {};

}  // namespace

TEST_P(SlicedModels, RunsOnTheFirstSliceWhereItFits) {
  const auto& [model, phase] = GetParam();
  const auto spec = models::load_model(model);
  for (const Placement& pl : placements()) {
    const arch::TpuConfig cfg = sim::load_tpu_config(pl.arch, {"hbm.model=calibrated"});
    for (const char* mesh_text : pl.meshes) {
      models::PhaseOptions po;
      ASSERT_TRUE(models::parse_phase(phase, &po.phase));
      po.mesh = models::parse_mesh(mesh_text);
      po.batch = po.mesh.size("data") * po.mesh.size("fsdp") * po.mesh.size("expert");
      po.seq_len = 128;
      po.context = 128;
      try {
        models::check_mesh(spec, po);
      } catch (const models::ModelError&) {
        continue;  // the model's dims do not divide by this mesh
      }
      if (!models::check_fit(spec, po, cfg.hbm.capacity_bytes).fits) continue;
      const auto wl = models::generate(spec, po);
      sim::RunOptions ro;
      ro.sim.slice = pl.slice;
      ro.sim.mesh = sim::parse_mesh(mesh_text);
      const sim::RunReport r = sim::run_workload(pl.arch, cfg, wl, ro);
      RecordProperty("placement", std::string(pl.arch) + " " + pl.slice + " " + mesh_text);
      EXPECT_GT(r.sim.end_cycle, 0u);
      std::size_t collectives = 0;
      for (const auto& op : wl.ops) collectives += workloads::is_collective(op.kind) ? 1 : 0;
      EXPECT_GT(collectives, 0u);
      EXPECT_EQ(r.sim.collectives.size(), collectives);
      for (const auto& c : r.sim.collectives) EXPECT_EQ(c.bytes_sent, c.bytes_received);
      return;
    }
  }
  // Fits none of the slices: the fit check says so, with the figures.
  const arch::TpuConfig cfg = sim::load_tpu_config("v5p");
  models::PhaseOptions po;
  ASSERT_TRUE(models::parse_phase(phase, &po.phase));
  po.mesh = models::parse_mesh("fsdp=64");
  po.batch = 64;
  po.seq_len = 128;
  po.context = 128;
  const auto fit = models::check_fit(spec, po, cfg.hbm.capacity_bytes);
  EXPECT_FALSE(fit.fits);
  EXPECT_NE(fit.message.find("GiB"), std::string::npos) << fit.message;
  RecordProperty("placement", "none: " + fit.message);
}

INSTANTIATE_TEST_SUITE_P(Llms, SlicedModels, ::testing::ValuesIn(cases()), [](const auto& info) {
  std::string n = std::get<0>(info.param) + "_" + std::get<1>(info.param);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});
