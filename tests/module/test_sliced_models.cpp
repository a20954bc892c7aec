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
      po.mesh = workloads::parse_mesh(mesh_text, models::mesh_axis_names());
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
      ro.sim.mesh = workloads::parse_mesh(mesh_text);
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
  po.mesh = workloads::parse_mesh("fsdp=64", models::mesh_axis_names());
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

namespace {

// Simulates llama3-8b with `po` (mesh and options set) on v5e `slice`;
// returns the workload after checking the run's collectives.
workloads::Workload run_llama_on_v5e(models::PhaseOptions po, const char* slice, const char* mesh_text) {
  const auto spec = models::load_model("llama3-8b");
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=calibrated"});
  po.mesh = workloads::parse_mesh(mesh_text, models::mesh_axis_names());
  const auto fit = models::check_fit(spec, po, cfg.hbm.capacity_bytes);
  EXPECT_TRUE(fit.fits) << fit.message;
  auto wl = models::generate(spec, po);
  sim::RunOptions ro;
  ro.sim.slice = slice;
  ro.sim.mesh = workloads::parse_mesh(mesh_text);
  const sim::RunReport r = sim::run_workload("v5e", cfg, wl, ro);
  EXPECT_GT(r.sim.end_cycle, 0u);
  std::size_t collectives = 0;
  for (const auto& op : wl.ops) collectives += workloads::is_collective(op.kind) ? 1 : 0;
  EXPECT_EQ(r.sim.collectives.size(), collectives);
  for (const auto& c : r.sim.collectives) EXPECT_EQ(c.bytes_sent, c.bytes_received);
  return wl;
}

std::size_t count_kind(const workloads::Workload& wl, workloads::OpKind k, const std::string& axis) {
  std::size_t n = 0;
  for (const auto& op : wl.ops)
    if (op.kind == k && op.as<workloads::CollectiveAttrs>().mesh_axes == std::vector<std::string>{axis}) ++n;
  return n;
}

}  // namespace

// Megatron sequence parallelism: a training step of llama3-8b on v5e 4x4
// with fsdp=4,tensor=4; per layer 2 reduce_scatters and 2 all_gathers over
// tensor forward, 2 + 2 transposed and 2 re-gathers backward.
TEST(SlicedSequenceModes, SequenceParallelTrainingStep) {
  models::PhaseOptions po;
  po.phase = models::Phase::train;
  po.batch = 4;
  po.seq_len = 128;
  po.sequence_parallel = true;
  const auto wl = run_llama_on_v5e(po, "4x4", "fsdp=4,tensor=4");
  // Reduce-scatters over tensor: per layer 2 forward (o_proj, down_proj)
  // + 2 in backward (transposes of the norm outputs' gathers), for 32
  // layers, + the embedding's forward one + the transpose of the final
  // norm's gather before the LM head = 130.
  EXPECT_EQ(count_kind(wl, workloads::OpKind::reduce_scatter, "tensor"), 32u * 4 + 2);
  EXPECT_EQ(count_kind(wl, workloads::OpKind::all_reduce, "tensor"), 32u * 2 + 1 + 3)
      << "norm-scale gradients (2 per layer, final norm) and the loss's 3 statistics";
}

// Context parallelism: a prefill of llama3-8b on v5e 4x4 with
// sequence=4,tensor=4; K and V gathered over sequence once per layer each.
TEST(SlicedSequenceModes, ContextParallelPrefill) {
  models::PhaseOptions po;
  po.phase = models::Phase::prefill;
  po.batch = 1;
  po.seq_len = 512;
  const auto wl = run_llama_on_v5e(po, "4x4", "sequence=4,tensor=4");
  EXPECT_EQ(count_kind(wl, workloads::OpKind::all_gather, "sequence"), 32u * 2);
}
