// Multi-chip runs: collectives of a lowered program execute on the ICI
// network of the whole slice, overlap with independent compute as XLA's
// asynchronous collectives do, conserve bytes, and report what the
// network did. One SystemC elaboration per TEST (own process).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "arch/common/errors.h"
#include "arch/ici/collectives.h"
#include "arch/vpu/vpu_unit_timing.h"
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
  o.sim.mesh = workloads::parse_mesh(mesh);
  return o;
}

}  // namespace

TEST(MultiChip, CollectiveTakesTheNetworkModelsTime) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=detailed"});
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
  const auto mesh = sim::map_mesh(slice, workloads::parse_mesh("x=16,y=16"));
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
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=detailed"});
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
  const arch::TpuConfig cfg = sim::load_tpu_config("v5p", {"hbm.model=detailed"});
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
  const sim::RunReport r = sim::run_workload("v5p", cfg, wl, slice_opts("4x4x4", "data=4,fsdp=4,tensor=4"));
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
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=detailed"});
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

TEST(MultiChip, MeshMapsOntoSliceDimensionsAndTheirParts) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5p", {"hbm.model=detailed"});
  const arch::ici::Slice slice(cfg.ici, "4x4x8");
  const auto m = sim::map_mesh(slice, workloads::parse_mesh("fsdp=16,tensor=8"));
  ASSERT_EQ(m.axes().size(), 2u);
  EXPECT_EQ(m.axes()[0].second, (std::vector<arch::ici::SubAxis>{{0, 1, 4}, {1, 1, 4}}));
  EXPECT_EQ(m.axes()[1].second, (std::vector<arch::ici::SubAxis>{{2, 1, 8}}));
  // An axis that needs part of a dimension takes its top part (every k-th
  // chip), the next axis the neighbours below it.
  const auto split = sim::map_mesh(slice, workloads::parse_mesh("fsdp=8,tensor=16"));
  EXPECT_TRUE(split.splits());
  EXPECT_FALSE(m.splits());
  EXPECT_EQ(split.axes()[0].second, (std::vector<arch::ici::SubAxis>{{0, 1, 4}, {1, 2, 2}}));
  EXPECT_EQ(split.axes()[1].second, (std::vector<arch::ici::SubAxis>{{1, 1, 2}, {2, 1, 8}}));
  EXPECT_THROW(sim::map_mesh(slice, workloads::parse_mesh("fsdp=8,tensor=32")), std::invalid_argument);
  EXPECT_THROW(sim::map_mesh(slice, workloads::parse_mesh("fsdp=3")), std::invalid_argument);
  EXPECT_THROW(workloads::parse_mesh("fsdp=0"), std::invalid_argument);
}

TEST(MultiChip, AxisOfOneChipAfterTheLastDimensionIsAGroupOfOne) {
  // Found by fuzz_mesh (tests/fuzz/regressions/): an axis of size 1 after
  // the dimensions ran out mapped to no slice axis and escaped map_mesh as
  // a ConfigError; it is a group of one chip.
  std::ifstream in(std::string(TPUSIM_SOURCE_DIR) +
                   "/tests/fuzz/regressions/mesh_size_one_axis_after_the_last_dimension.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", {});
  const arch::ici::Slice slice(cfg.ici, "16x4");
  const auto parsed = workloads::parse_mesh(text);
  ASSERT_EQ(parsed.axes.size(), 2u);
  const auto m = sim::map_mesh(slice, parsed);
  EXPECT_TRUE(m.axes()[1].second.empty());
  arch::ici::CollectiveRequest r;
  r.kind = arch::ici::CollectiveKind::all_reduce;
  r.bytes = 4096;
  r.axes = {parsed.axes[1].name};
  const auto plan = arch::ici::plan_collective(slice, m, r);
  EXPECT_EQ(plan.group_size, 1);
  EXPECT_EQ(plan.messages(), 0u);
}

TEST(MultiChip, PlacementOfManyPartsIsRefusedWithoutOverflow) {
  // Found by fuzz_mesh (tests/fuzz/regressions/): a placement of 28 parts
  // multiplied their lengths past 2^63 (UBSan: signed overflow) before
  // comparing the product with the axis's size; it is refused, naming it.
  std::ifstream in(std::string(TPUSIM_SOURCE_DIR) + "/tests/fuzz/regressions/mesh_placement_of_many_parts.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", {});
  const arch::ici::Slice slice(cfg.ici, "16x4");
  try {
    sim::map_mesh(slice, workloads::parse_mesh(text));
    ADD_FAILURE() << "mapped";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("of size 3 is placed on parts of more than 3 chips"), std::string::npos)
        << e.what();
  }
}

TEST(MultiChip, ExplicitPlacementBuildsMaxTextsHybridRing) {
  // MaxText's hybrid_ring_64x4 on a v6e-256: each tensor group a 2x2
  // square of neighbours, fsdp every second chip along x and along y.
  const arch::TpuConfig cfg = sim::load_tpu_config("v6e", {});
  const arch::ici::Slice slice(cfg.ici, "16x16");
  const auto m = sim::map_mesh(slice, workloads::parse_mesh("fsdp=64@x/2*y/2,tensor=4@x%2*y%2"));
  EXPECT_EQ(m.axes()[0].second, (std::vector<arch::ici::SubAxis>{{0, 2, 8}, {1, 2, 8}}));
  EXPECT_EQ(m.axes()[1].second, (std::vector<arch::ici::SubAxis>{{0, 1, 2}, {1, 1, 2}}));
  // Without the placement the rule gives tensor four neighbours along y.
  const auto r = sim::map_mesh(slice, workloads::parse_mesh("fsdp=64,tensor=4"));
  EXPECT_EQ(r.axes()[1].second, (std::vector<arch::ici::SubAxis>{{1, 1, 4}}));
  for (const char* bad : {"fsdp=64@x/2*y/2,tensor=4",                        // one axis without a placement
                          "fsdp=64@x/2*y/2,tensor=4@x%2*z%2",                // no z on a 2D slice
                          "fsdp=64@x/2*y/2,tensor=4@x%2*y/2%2",              // overlaps fsdp's y/2
                          "fsdp=64@x/2*y/2,tensor=4@x%2",                    // 2 chips for a size of 4
                          "fsdp=64@x/3*y/2,tensor=4@x%2*y%2",                // stride 3 does not divide 16
                          "data=2@dcn,fsdp=64@x/2*y/2,tensor=4@x%2*y%2"}) {  // one slice: no dcn
    try {
      sim::map_mesh(slice, workloads::parse_mesh(bad));
      ADD_FAILURE() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("16x16"), std::string::npos) << bad << ": " << e.what();
    }
  }
  // A placement built in code rather than parsed is checked too.
  workloads::MeshSpec coded;
  coded.axes.push_back({"tensor", 4, {{"x", 0, 4}}});  // stride 0
  EXPECT_THROW(sim::map_mesh(slice, coded), std::invalid_argument);
  EXPECT_THROW(workloads::parse_mesh("fsdp"), std::invalid_argument);
  EXPECT_THROW(workloads::parse_mesh("a=2,a=2"), std::invalid_argument);
}

namespace {

// The collective instruction of a lowered program (the first ICI one).
arch::InstrId ici_instr(const sim::RunReport& r) {
  const auto& ins = r.lowered.program.instrs;
  for (arch::InstrId i = 0; i < ins.size(); ++i)
    if (ins[i].unit == arch::UnitKind::ici) return i;
  throw std::runtime_error("no collective in the program");
}

const arch::StatList& block(const sim::RunReport& r, const std::string& name) {
  for (const auto& [b, stats] : r.sim.block_stats)
    if (b == name) return stats;
  throw std::runtime_error("no block " + name);
}

double stat(const arch::StatList& l, const std::string& name) {
  for (const auto& s : l)
    if (s.name == name) return s.value;
  throw std::runtime_error("no stat " + name);
}

}  // namespace

// --all-chips on v5e 4x4 (no wraparound: only length-16 axes wrap), an
// all_gather over x followed by a matmul on its result. Every chip runs
// the program; each chip's collective completes when its own last shard
// lands, which the pure network model gives per chip (end_per_chip), so
// chips drift apart: a line's middle chips have their data before its
// ends. The run's end is the last chip's end.
TEST(MultiChip, AllChipsCompleteEachCollectivePerChip) {
  arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=detailed"});
  WorkloadBuilder b("ag_mm");
  b.mesh_axis("x", 4);
  b.mesh_axis("y", 4);
  auto x = b.input("x", {256, 1024}, arch::DType::bf16);
  auto w = b.weight("w", {1024, 512}, arch::DType::bf16);
  auto g = b.all_gather("ag", x, {"x"}, 0);  // [1024, 1024]
  b.matmul("mm", g, w);
  const auto wl = b.build();
  sim::RunOptions o = slice_opts("4x4", "x=4,y=4");
  o.sim.all_chips = true;
  const sim::RunReport r = sim::run_workload("v5e", cfg, wl, o);
  ASSERT_EQ(r.sim.chip_end_cycles.size(), 16u);
  ASSERT_EQ(r.sim.chip_records.size(), 16u);

  const arch::ici::Slice slice(cfg.ici, "4x4");
  ASSERT_FALSE(slice.wraps(0));
  arch::ici::CollectiveRequest req;
  req.kind = arch::ici::CollectiveKind::all_gather;
  req.bytes = 1024ull * 1024 * 2;
  req.axes = {"x"};
  const auto alone = arch::ici::run_collective(slice, sim::map_mesh(slice, workloads::parse_mesh("x=4,y=4")), req);
  const arch::InstrId id = ici_instr(r);
  for (int c = 0; c < 16; ++c) {
    const auto& rec = r.sim.chip_records[static_cast<std::size_t>(c)][id];
    const double own = static_cast<double>(alone.end_per_chip[static_cast<std::size_t>(c)]) * 1e-12 * cfg.chip.clock_hz;
    // Every chip starts it in cycle 0 (its first instruction); completion
    // is converted to whole cycles.
    EXPECT_EQ(rec.start, 0u) << "chip " << c;
    EXPECT_NEAR(static_cast<double>(rec.finish), own, 2.0) << "chip " << c;
  }
  // Drift: the chips that had their data first also finish first, and
  // the one whose collective ended last (a line end) ends the run.
  const auto [lo, hi] = std::minmax_element(r.sim.chip_end_cycles.begin(), r.sim.chip_end_cycles.end());
  EXPECT_LT(*lo, *hi);
  EXPECT_EQ(r.sim.end_cycle, *hi);
  EXPECT_EQ(r.sim.chip_end_cycles[static_cast<std::size_t>(r.sim.slowest_chip)], *hi);
  const int slowest = r.sim.slowest_chip;
  EXPECT_NEAR(static_cast<double>(r.sim.chip_records[static_cast<std::size_t>(slowest)][id].finish),
              alone.seconds() * cfg.chip.clock_hz, 2.0);
  for (int c = 0; c < 16; ++c) {
    const auto& rec = r.sim.chip_records[static_cast<std::size_t>(c)][id];
    const auto& slow = r.sim.chip_records[static_cast<std::size_t>(slowest)][id];
    if (rec.finish < slow.finish) {
      EXPECT_LT(r.sim.chip_end_cycles[static_cast<std::size_t>(c)], *hi) << c;
    }
  }
  // ops.csv reports the slowest chip; units.csv every chip, prefixed.
  EXPECT_EQ(r.sim.records[id].finish, r.sim.chip_records[static_cast<std::size_t>(slowest)][id].finish);
  EXPECT_EQ(stat(block(r, "chips"), "end_spread_cycles"), static_cast<double>(*hi - *lo));
  EXPECT_GT(stat(block(r, "chip15.tc0.sequencer"), "instructions"), 0.0);
  EXPECT_EQ(r.sim.collectives.size(), 1u);
  EXPECT_EQ(r.sim.collectives[0].bytes_sent, r.sim.collectives[0].bytes_received);
}

// On a ring axis every chip is alike: all chips end together, and each
// chip's collective takes what the network model says for the whole.
TEST(MultiChip, AllChipsOnARingAxisEndTogether) {
  arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=detailed"});
  WorkloadBuilder b("ar_mm");
  b.mesh_axis("x", 16);
  b.mesh_axis("y", 2);
  auto g = b.input("g", {512, 1024}, arch::DType::bf16);
  auto w = b.weight("w", {1024, 512}, arch::DType::bf16);
  b.matmul("mm", b.all_reduce("ar", g, {"x"}), w);
  const auto wl = b.build();
  sim::RunOptions o = slice_opts("16x2", "x=16,y=2");
  o.sim.all_chips = true;
  const sim::RunReport r = sim::run_workload("v5e", cfg, wl, o);
  ASSERT_EQ(r.sim.chip_end_cycles.size(), 32u);
  for (std::uint64_t e : r.sim.chip_end_cycles) EXPECT_EQ(e, r.sim.end_cycle);
  const arch::InstrId id = ici_instr(r);
  for (const auto& recs : r.sim.chip_records) EXPECT_EQ(recs[id].finish, r.sim.records[id].finish);
  EXPECT_EQ(stat(block(r, "chips"), "end_spread_cycles"), 0.0);
}

TEST(MultiChip, AllChipsRefusesLargeSlices) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=detailed"});
  arch::Program p;
  sim::SimOptions o;
  o.slice = "16x16";
  o.all_chips = true;
  try {
    sim::simulate(cfg, p, o);
    FAIL() << "expected a ConfigError";
  } catch (const arch::ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("256 chips"), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(sim::kMaxAllChips)), std::string::npos) << m;
  }
}

// A reducing collective occupies the VPU for the adds of the partial
// results, concurrently with the transfer; with a network made nearly
// free (1 PB/s links, 1 ps hops, no collective start-up) the VPU's time is
// what remains. The
// reduction is that of the busiest chip (the planned reduce bytes of the
// pure model), timed by the VPU model as streams of bf16 adds (two
// operands in, one out), one per partial result as it starts to arrive:
// back to back here, so together they take the time of one stream of all
// the adds, plus the VPU's latency once per stream.
// An all_reduce of bf16[2048,2048] (8 MiB) over x,y of a v5e 4x4 with
// `cfg`, run by the engine, and the same request for the pure network.
sim::RunReport run_all_reduce_4x4(const arch::TpuConfig& cfg) {
  WorkloadBuilder b("ar");
  b.mesh_axis("x", 4);
  b.mesh_axis("y", 4);
  b.all_reduce("ar", b.input("g", {2048, 2048}, arch::DType::bf16), {"x", "y"});
  return sim::run_workload("v5e", cfg, b.build(), slice_opts("4x4", "x=4,y=4"));
}

arch::ici::CollectiveRequest all_reduce_4x4_request() {
  arch::ici::CollectiveRequest req;
  req.kind = arch::ici::CollectiveKind::all_reduce;
  req.bytes = 2048ull * 2048 * 2;
  req.axes = {"x", "y"};
  return req;
}

TEST(MultiChip, ReductionOccupiesTheVpu) {
  arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=detailed"});
  cfg.ici.link_bandwidth = 1e15;
  cfg.ici.hop_latency = 1e-12;
  cfg.ici.collective_latency = 0;
  const sim::RunReport r = run_all_reduce_4x4(cfg);

  const arch::ici::Slice slice(cfg.ici, "4x4");
  arch::ici::IciSimulator pure(slice, sim::map_mesh(slice, workloads::parse_mesh("x=4,y=4")));
  const std::uint64_t cid = pure.start(all_reduce_4x4_request(), 0);
  std::uint64_t reduce = 0;
  for (int c = 0; c < 16; ++c) reduce = std::max(reduce, pure.planned_reduce_bytes(cid, c));
  const double network_cycles = pure.run_all().at(0).seconds() * cfg.chip.clock_hz;
  arch::VpuWork add;
  add.elements = reduce / 2;
  add.dtype = arch::DType::bf16;
  add.alu_ops = 1;
  add.inputs = 2;
  add.outputs = 1;
  arch::VpuTimer vpu(cfg.vpu);
  const std::uint64_t vpu_finish = vpu.issue(arch::to_stream_op(add), 0).finish;
  ASSERT_GT(static_cast<double>(vpu_finish), 10 * network_cycles);  // the VPU dominates

  const arch::InstrId id = ici_instr(r);
  EXPECT_EQ(r.sim.records[id].start, 0u);
  // The collective's own HBM traffic (reads of what it sends, writes of
  // what it arrives) may end later than the VPU: never earlier.
  EXPECT_GE(r.sim.records[id].finish, vpu_finish);
  const auto& seq = block(r, "tc0.sequencer");
  // The busiest chip (middle of both lines) receives 5 partial sums in
  // each reduce-scatter stage, two stages (x, then y), one part: a v5e
  // 4x4's axes do not wrap, so they run one after another (ici.axis_split
  // tori): 10 streams.
  const double streams = stat(seq, "collective_reductions");
  EXPECT_EQ(streams, 10.0);
  EXPECT_GE(stat(seq, "collective_reduction_cycles"), static_cast<double>(vpu_finish));
  EXPECT_LE(stat(seq, "collective_reduction_cycles"), static_cast<double>(vpu_finish) + streams * cfg.vpu.latency);
  EXPECT_GE(stat(block(r, "tc0.vpu0"), "busy_cycles"), static_cast<double>(vpu_finish) - 16);
}

// A collective moves its own bytes through HBM on the chip's DMA engines:
// it reads every byte the chip sends and writes every byte it receives
// (forwarded ring shards included), as the plan says; the simulated chip
// stands for the busiest. The memory system sees exactly those bytes, the
// run's HBM total counts them, and the collective ends no earlier than
// its network part alone.
TEST(MultiChip, CollectiveMovesItsBytesThroughHbm) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  const sim::RunReport r = run_all_reduce_4x4(cfg);

  const arch::ici::Slice slice(cfg.ici, "4x4");
  arch::ici::IciSimulator pure(slice, sim::map_mesh(slice, workloads::parse_mesh("x=4,y=4")));
  const std::uint64_t cid = pure.start(all_reduce_4x4_request(), 0);
  std::uint64_t sent = 0, received = 0;
  for (int c = 0; c < 16; ++c) {
    const auto [s, rcv] = pure.planned_traffic(cid, c);
    sent = std::max(sent, s);
    received = std::max(received, rcv);
  }
  const double network_cycles = pure.run_all().at(0).seconds() * cfg.chip.clock_hz;
  // Lines of 4 without wraparound, so the axes run one after another
  // (ici.axis_split tori): the 8 MiB buffer is reduce-scattered over x
  // (shard 2 MiB) then y (512 KiB) and gathered back in reverse. On a line
  // a chip sends one partial sum toward each other chip in a
  // reduce-scatter stage (3 shards) and, in an all-gather stage, a middle
  // chip sends its own shard both ways and forwards the 3 others once (5
  // shards); it receives the mirror (5 in a reduce-scatter stage, 3 in an
  // all-gather one). Busiest chip (middle of both lines): (3 + 5) x
  // (2 MiB + 512 KiB) = 20 MiB each way.
  EXPECT_EQ(sent, 20ull << 20);
  EXPECT_EQ(received, 20ull << 20);
  EXPECT_EQ(stat(block(r, "dma"), "hbm_bytes"), static_cast<double>(sent + received));
  EXPECT_EQ(stat(block(r, "tc0.sequencer"), "collective_hbm_bytes"), static_cast<double>(sent + received));
  EXPECT_EQ(sim::compute_metrics(r).hbm_bytes, sent + received);
  const arch::InstrId id = ici_instr(r);
  EXPECT_GE(static_cast<double>(r.sim.records[id].finish), network_cycles - 2.0);
}

// End to end: the Ironwood all_gather microbenchmark's workload (f32
// [N,8,128] per chip gathered on dim 0 over x,y of a v7 2x2x1, channel
// HBM) runs in the engine at the bandwidth measured on the chip
// (AI-Hypercomputer/accelerator-microbenchmarks, Ironwood/guides/
// collectives/all_gather.md: 6 x input bytes / time): the collective's
// HBM traffic and the engine add nothing visible to the ICI calibration.
// One simulation per process: one size per test.
class IronwoodAllGather : public ::testing::TestWithParam<std::pair<std::int64_t, double>> {};

TEST_P(IronwoodAllGather, RunsAtTheMeasuredBandwidth) {
  const auto [n, measured_gbps] = GetParam();
  const arch::TpuConfig cfg = sim::load_tpu_config("v7", {"hbm.model=channel"});
  WorkloadBuilder b("ag");
  b.mesh_axis("x", 2);
  b.mesh_axis("y", 2);
  b.all_gather("ag", b.input("a", {n, 8, 128}, arch::DType::f32), {"x", "y"}, 0);
  const sim::RunReport r = sim::run_workload("v7", cfg, b.build(), slice_opts("2x2x1", "x=2,y=2"));
  const double seconds = static_cast<double>(r.sim.end_cycle) / r.sim.clock_hz;
  const double gbps = 6.0 * static_cast<double>(n * 8 * 128 * 4) / seconds / 1e9;
  EXPECT_NEAR(gbps / measured_gbps, 1.0, 0.02) << gbps << " GB/s";
}

INSTANTIATE_TEST_SUITE_P(MultiChip, IronwoodAllGather,
                         ::testing::Values(std::pair<std::int64_t, double>{64, 71.77},
                                           std::pair<std::int64_t, double>{16384, 178.8}),
                         [](const auto& i) { return "N" + std::to_string(i.param.first); });

namespace {

// `wl` on a v5e 2x2 slice over `mesh`, collectives prefetched or in the
// workload's order (the report points at `cfg` and `wl`, which must
// outlive it).
sim::RunReport run_on_2x2(const arch::TpuConfig& cfg, const workloads::Workload& wl, const std::string& mesh,
                          bool prefetch) {
  sim::RunOptions o = slice_opts("2x2", mesh);
  o.lowering.prefetch_collectives = prefetch;
  return sim::run_workload("v5e", cfg, wl, o);
}

// Two FSDP layers: each weight shard is all-gathered before its matmul.
// Returns the run with the weight gathers prefetched or not (the report
// points at `cfg`, which must outlive it).
sim::RunReport two_fsdp_layers(const arch::TpuConfig& cfg, bool prefetch) {
  WorkloadBuilder b("fsdp2");
  b.mesh_axis("fsdp", 4);
  auto x = b.input("x", {2048, 4096}, arch::DType::bf16);
  auto w1 = b.weight("w1", {1024, 4096}, arch::DType::bf16);  // shard of [4096, 4096]
  auto w2 = b.weight("w2", {1024, 4096}, arch::DType::bf16);
  auto g1 = b.all_gather("w1.all_gather", w1, {"fsdp"}, 0);
  auto h = b.matmul("mm1", x, g1);
  auto g2 = b.all_gather("w2.all_gather", w2, {"fsdp"}, 0);
  b.matmul("mm2", h, g2);
  return run_on_2x2(cfg, b.build(), "fsdp=4", prefetch);
}

}  // namespace

// XLA's latency-hiding scheduler starts the next layer's weight all-gather
// while this layer's matmul computes; listed in workload order, the gather
// would wait for the matmul before it to be issued.
TEST(MultiChip, WeightGatherIsPrefetchedDuringThePreviousMatmul) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=channel"});
  const sim::RunReport r = two_fsdp_layers(cfg, true);
  const sim::RunMetrics m = sim::compute_metrics(r);
  // ops: 0 w1.all_gather, 1 mm1, 2 w2.all_gather, 3 mm2
  EXPECT_LT(m.ops[2].start_cycle, m.ops[1].end_cycle);
  EXPECT_GE(m.ops[3].start_cycle, m.ops[2].end_cycle);  // mm2 still waits for its weight
}
// XLA keeps one all-gather in flight and starts each as early as that
// allows (sim/lowering/schedule.h): the next layer's weight gather starts
// when this layer's has completed, just before this layer's first matmul,
// rather than during the kernel before its own consumer.
TEST(MultiChip, WeightGathersRunOneAtATimeAsEarlyAsTheyCan) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=channel"});
  WorkloadBuilder b("chain");
  b.mesh_axis("fsdp", 4);
  auto x = b.input("x", {2048, 4096}, arch::DType::bf16);
  auto w1 = b.weight("w1", {1024, 4096}, arch::DType::bf16);  // shards of [4096, 4096]
  auto w2 = b.weight("w2", {1024, 4096}, arch::DType::bf16);
  auto u = b.weight("u", {4096, 4096}, arch::DType::bf16);  // replicated
  auto v = b.weight("v", {4096, 4096}, arch::DType::bf16);
  auto h1 = b.matmul("h1", x, b.all_gather("w1.all_gather", w1, {"fsdp"}, 0));
  auto c1 = b.matmul("c1", h1, u);
  auto d1 = b.matmul("d1", c1, v);
  b.matmul("h2", d1, b.all_gather("w2.all_gather", w2, {"fsdp"}, 0));
  const auto wl = b.build();
  const sim::RunReport r = sim::run_workload("v5e", cfg, wl, slice_opts("2x2", "fsdp=4"));
  const sim::RunMetrics m = sim::compute_metrics(r);
  // ops: 0 w1 gather, 1 h1, 2 c1, 3 d1, 4 w2 gather, 5 h2
  const auto& g1 = m.ops[0];
  const auto& g2 = m.ops[4];
  EXPECT_GE(g2.start_cycle + 2, g1.end_cycle);          // never two in flight
  EXPECT_LE(g2.start_cycle, m.ops[1].start_cycle + 2);  // issued before h1, which waits for g1 too
  EXPECT_LT(g2.end_cycle, m.ops[2].end_cycle);          // done during c1, two kernels before h2
  EXPECT_GE(m.ops[5].start_cycle, g2.end_cycle);
}

TEST(MultiChip, WeightGatherInWorkloadOrderWaitsForThePreviousMatmul) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=channel"});
  const sim::RunReport r = two_fsdp_layers(cfg, false);
  const sim::RunMetrics m = sim::compute_metrics(r);
  // Issued only once mm1's last instructions are: in its final tenth.
  EXPECT_GT(m.ops[2].start_cycle, m.ops[1].start_cycle + m.ops[1].cycles * 9 / 10);
}

namespace {

// Two weight gradients of a data x fsdp mesh: each is reduce-scattered
// over fsdp and its shard all-reduced over data, as backward emits them;
// the second gradient's matmul is independent of the first's collectives.
sim::RunReport two_gradient_chains(const arch::TpuConfig& cfg, bool prefetch) {
  WorkloadBuilder b("grads");
  b.mesh_axis("data", 2);
  b.mesh_axis("fsdp", 2);
  auto x = b.input("x", {4096, 4096}, arch::DType::bf16);
  auto y = b.input("y", {4096, 4096}, arch::DType::bf16);
  auto g1 = b.matmul("g1", x, y);
  auto s1 = b.reduce_scatter("g1.reduce_scatter", g1, {"fsdp"}, 0);
  b.all_reduce("g1.all_reduce", s1, {"data"});
  auto g2 = b.matmul("g2", y, x);
  auto s2 = b.reduce_scatter("g2.reduce_scatter", g2, {"fsdp"}, 0);
  b.all_reduce("g2.all_reduce", s2, {"data"});
  return run_on_2x2(cfg, b.build(), "data=2,fsdp=2", prefetch);
}

}  // namespace

// A collective reading another's result is issued where its producer has
// completed (sim/lowering/schedule.h), not right after it, where the
// in-order sequencer would wait for the reduce-scatter and hold back the
// next gradient's matmul.
TEST(MultiChip, ChainedCollectiveDoesNotHoldBackIndependentCompute) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=channel"});
  // ops: 0 g1, 1 g1.reduce_scatter, 2 g1.all_reduce, 3 g2, 4 g2.reduce_scatter, 5 g2.all_reduce
  const sim::RunMetrics m = sim::compute_metrics(two_gradient_chains(cfg, true));
  EXPECT_LT(m.ops[3].start_cycle, m.ops[1].end_cycle);      // g2 runs while g1's reduce-scatter does
  EXPECT_GE(m.ops[2].start_cycle + 2, m.ops[1].end_cycle);  // the all-reduce still follows it
  EXPECT_GE(m.ops[5].start_cycle + 2, m.ops[4].end_cycle);
}

// In workload order the all-reduce's issue waits for the reduce-scatter,
// and g2 behind it.
TEST(MultiChip, ChainedCollectiveInWorkloadOrderHoldsBackTheNextMatmul) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e", {"hbm.model=channel"});
  const sim::RunMetrics w = sim::compute_metrics(two_gradient_chains(cfg, false));
  EXPECT_GE(w.ops[3].start_cycle + 2, w.ops[1].end_cycle);
}
