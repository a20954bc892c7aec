// Multi-chip runs: collectives of a lowered program execute on the ICI
// network of the whole slice, overlap with independent compute as XLA's
// asynchronous collectives do, conserve bytes, and report what the
// network did. One SystemC elaboration per TEST (own process).
#include <gtest/gtest.h>

#include "arch/ici/collectives.h"
#include "sim/config/config_loader.h"
#include "sim/engine/slice_setup.h"
#include "sim/results/metrics.h"
#include "sim/run/run.h"
#include "workloads/ir/builder.h"

using namespace tpusim;
using workloads::WorkloadBuilder;

namespace {

sim::RunOptions slice_opts(const std::string& shape, const std::string& mesh) {
  sim::RunOptions o;
  o.sim.slice = shape;
  o.sim.mesh = sim::parse_mesh(mesh);
  return o;
}

}  // namespace

TEST(MultiChip, CollectiveTakesTheNetworkModelsTime) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  WorkloadBuilder b("ar");
  b.mesh_axis("x", 16);
  b.mesh_axis("y", 16);
  auto x = b.input("x", {4096, 4096}, arch::DType::bf16);  // 32 MiB per chip
  b.all_reduce("ar", x, {"x"});
  const auto wl = b.build();
  const sim::RunReport r = sim::run_workload("v5e", cfg, wl, slice_opts("16x16", "x=16,y=16"));
  ASSERT_EQ(r.sim.collectives.size(), 1u);
  // The same collective alone on the pure network model (no SystemC).
  const arch::ici::Slice slice(cfg.ici, "16x16");
  const auto mesh = sim::map_mesh(slice, sim::parse_mesh("x=16,y=16"));
  arch::ici::CollectiveRequest req;
  req.kind = arch::ici::CollectiveKind::all_reduce;
  req.bytes = 4096ull * 4096 * 2;
  req.axes = {"x"};
  const auto alone = arch::ici::run_collective(slice, mesh, req);
  const double cycles = alone.seconds() * cfg.chip.clock_hz;
  const sim::RunMetrics m = sim::compute_metrics(r);
  // Issued in the first cycle; completion is converted to whole cycles.
  EXPECT_NEAR(static_cast<double>(m.ops[0].cycles), cycles, 2.0);
  EXPECT_EQ(r.sim.collectives[0].bytes_sent, r.sim.collectives[0].bytes_received);
  EXPECT_GE(static_cast<double>(m.ops[0].cycles), r.lowered.ops[0].roofline_cycles);
}

TEST(MultiChip, AsynchronousCollectiveOverlapsIndependentCompute) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  WorkloadBuilder b("overlap");
  b.mesh_axis("x", 4);
  b.mesh_axis("y", 4);
  auto g = b.input("grad", {2048, 4096}, arch::DType::bf16);
  auto a = b.input("a", {2048, 2048}, arch::DType::bf16);
  auto w = b.weight("w", {2048, 2048}, arch::DType::bf16);
  b.all_reduce("ar", g, {"x", "y"});
  b.matmul("mm", a, w);
  const auto wl = b.build();
  const sim::RunReport r = sim::run_workload("v5e", cfg, wl, slice_opts("4x4", "x=4,y=4"));
  const sim::RunMetrics m = sim::compute_metrics(r);
  const std::uint64_t ar = m.ops[0].cycles, mm = m.ops[1].cycles;
  // units.csv names the busiest links, busiest first, each used.
  const arch::StatList* hot = nullptr;
  for (const auto& [block, stats] : r.sim.block_stats)
    if (block == "ici.hottest_links") hot = &stats;
  ASSERT_NE(hot, nullptr);
  ASSERT_EQ(hot->size(), 5u);
  for (std::size_t i = 0; i < hot->size(); ++i) {
    EXPECT_GT((*hot)[i].value, 0.0);
    if (i) {
      EXPECT_LE((*hot)[i].value, (*hot)[i - 1].value);
    }
  }
  // Both ran, and at the same time: the run is shorter than one after the
  // other by at least most of the shorter one.
  EXPECT_LT(r.sim.end_cycle, ar + mm - std::min(ar, mm) / 2);
  EXPECT_GE(r.sim.end_cycle, std::max(ar, mm));
}

TEST(MultiChip, EveryCollectiveConservesBytes) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5p");
  WorkloadBuilder b("all");
  b.mesh_axis("data", 4);
  b.mesh_axis("fsdp", 4);
  b.mesh_axis("tensor", 4);
  auto x = b.input("x", {512, 1024}, arch::DType::bf16);
  b.all_gather("ag", x, {"fsdp"}, 0);
  b.reduce_scatter("rs", x, {"tensor"}, 0);
  b.all_reduce("ar", x, {"data", "tensor"});
  b.all_to_all("a2a", x, {"fsdp"}, 0, 1);
  b.collective_permute("cp", x, {"data"}, {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
  b.broadcast("bc", x, {"tensor"});
  const auto wl = b.build();
  const sim::RunReport r =
      sim::run_workload("v5p", cfg, wl, slice_opts("4x4x4", "data=4,fsdp=4,tensor=4"));
  ASSERT_EQ(r.sim.collectives.size(), 6u);
  for (const auto& c : r.sim.collectives) {
    EXPECT_EQ(c.bytes_sent, c.bytes_received) << c.algorithm;
    EXPECT_GT(c.bytes_sent, 0u) << c.algorithm;
    EXPECT_GT(c.seconds, 0) << c.algorithm;
  }
  const sim::RunMetrics m = sim::compute_metrics(r);
  for (std::size_t i = 0; i < wl.ops.size(); ++i) {
    EXPECT_EQ(m.ops[i].bound, "ici") << wl.ops[i].name;
    EXPECT_GE(static_cast<double>(m.ops[i].cycles), r.lowered.ops[i].roofline_cycles) << wl.ops[i].name;
  }
}

TEST(MultiChip, CollectiveNeedsASliceAndItsAxes) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  WorkloadBuilder b("ar");
  b.mesh_axis("tensor", 4);
  b.all_reduce("ar", b.input("x", {64, 64}, arch::DType::bf16), {"tensor"});
  const auto wl = b.build();
  EXPECT_THROW(sim::lower(wl, cfg, {}), sim::LoweringError);  // one chip
  sim::LoweringOptions lo;
  lo.multi_chip = true;
  lo.mesh = {{"data", 4}};  // the run's mesh lacks `tensor`
  EXPECT_THROW(sim::lower(wl, cfg, lo), sim::LoweringError);
  lo.mesh = {{"tensor", 8}};  // size differs from the workload's
  EXPECT_THROW(sim::lower(wl, cfg, lo), sim::LoweringError);
}

TEST(MultiChip, MeshMapsOntoWholeSliceDimensions) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5p");
  const arch::ici::Slice slice(cfg.ici, "4x4x8");
  const auto m = sim::map_mesh(slice, sim::parse_mesh("fsdp=16,tensor=8"));
  ASSERT_EQ(m.axes().size(), 2u);
  EXPECT_EQ(m.axes()[0].second, (std::vector<int>{0, 1}));
  EXPECT_EQ(m.axes()[1].second, (std::vector<int>{2}));
  EXPECT_THROW(sim::map_mesh(slice, sim::parse_mesh("fsdp=8,tensor=16")), std::invalid_argument);
  EXPECT_THROW(sim::parse_mesh("fsdp=0"), std::invalid_argument);
  EXPECT_THROW(sim::parse_mesh("fsdp"), std::invalid_argument);
  EXPECT_THROW(sim::parse_mesh("a=2,a=2"), std::invalid_argument);
}
