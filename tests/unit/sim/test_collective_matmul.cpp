// Collective matmul (sim/lowering/collective_matmul.h): the structure of
// the lowered program. A tensor-parallel all_gather that feeds matmuls
// becomes n - 1 ring permutes of one shard each, split between the two
// directions, and each consumer n row slices whose MXU work adds up to the
// matmul's exactly; a matmul whose result is reduce-scattered becomes n
// slices and n - 1 permutes of one destination chunk of partial sums.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>

#include "arch/ici/collectives.h"
#include "sim/config/config_loader.h"
#include "sim/lowering/collective_matmul.h"
#include "sim/lowering/lowering.h"
#include "workloads/ir/builder.h"

using namespace tpusim;
using sim::lowering::gather_chunk_order;
using sim::lowering::ring_split;

namespace {

constexpr std::int64_t kN = 8, kB = 2, kS = 1024, kH = 1024;
// Shards of [kB, kS / kN, kH] bf16.
constexpr std::uint64_t kShardBytes = static_cast<std::uint64_t>(kB * (kS / kN) * kH * 2);

// One sequence-parallel block: x gathered over `tensor` along the
// sequence, q and k projections of it, their sum (a non-matmul reader of
// neither the gathered tensor), an output projection reduce-scattered
// back along the sequence; plus a rms_norm reading the gathered tensor
// (it needs the whole of it). Ops: 0 ag, 1 q, 2 k, 3 sum, 4 o, 5 rs, 6 norm.
workloads::Workload block(bool with_norm) {
  workloads::WorkloadBuilder b("tp_sp_block");
  b.mesh_axis("tensor", kN);
  auto x = b.input("x", {kB, kS / kN, kH}, arch::DType::bf16);
  auto g = b.all_gather("ag", x, {"tensor"}, 1);
  auto q = b.matmul("q", g, b.weight("wq", {kH, 512}, arch::DType::bf16));
  auto k = b.matmul("k", g, b.weight("wk", {kH, 512}, arch::DType::bf16));
  auto h = b.add("sum", q, k);
  auto o = b.matmul("o", h, b.weight("wo", {512, kH}, arch::DType::bf16));
  b.mark_output(b.reduce_scatter("rs", o, {"tensor"}, 1));
  if (with_norm) b.mark_output(b.rms_norm("norm", g, b.weight("scale", {kH}, arch::DType::bf16)));
  return b.build();
}

sim::LoweringOptions tp_opts(bool cm, bool bidirectional = true) {
  sim::LoweringOptions o;
  o.multi_chip = true;
  o.mesh = {{"tensor", kN}};
  o.collective_matmul = cm;
  o.collective_matmul_bidirectional = bidirectional;
  o.collective_matmul_min_bytes = 0;
  return o;
}

struct Counts {
  std::map<std::uint32_t, std::uint64_t> macs;  // op -> sum of m*k*n over its MXU instructions
  std::map<std::uint32_t, std::vector<const arch::Instr*>> ici;
};

Counts count(const sim::LoweredWorkload& lw) {
  Counts c;
  for (const arch::Instr& in : lw.program.instrs) {
    if (in.unit == arch::UnitKind::mxu) {
      const auto& w = std::get<arch::MxuWork>(in.work);
      c.macs[in.op] += static_cast<std::uint64_t>(w.m * w.k * w.n);
    }
    if (in.unit == arch::UnitKind::ici) c.ici[in.op].push_back(&in);
  }
  return c;
}

// Permutes of an op by direction (+1: rank r sends to r + 1).
std::map<int, int> directions(const sim::LoweredWorkload& lw, const std::vector<const arch::Instr*>& ici) {
  std::map<int, int> dirs;
  for (const arch::Instr* in : ici) {
    const auto& w = std::get<arch::IciWork>(in->work);
    const arch::CollectiveGroup& g = lw.program.group(w);
    EXPECT_EQ(g.pairs.size(), static_cast<std::size_t>(kN));
    const int d = (g.pairs.at(0).second - g.pairs.at(0).first + kN) % kN == 1 ? +1 : -1;
    for (const auto& [s, t] : g.pairs) EXPECT_EQ((t - s + kN) % kN, d > 0 ? 1 : kN - 1);
    ++dirs[d];
  }
  return dirs;
}

}  // namespace

TEST(CollectiveMatmul, RingSplitsTheStepsBetweenTheDirections) {
  EXPECT_EQ(ring_split(8, true).fwd, 4);
  EXPECT_EQ(ring_split(8, true).bwd, 3);
  EXPECT_EQ(ring_split(8, false).fwd, 7);
  EXPECT_EQ(ring_split(8, false).bwd, 0);
  EXPECT_EQ(ring_split(2, true).fwd, 1);
  EXPECT_EQ(ring_split(2, true).bwd, 0);
  // Rank 0's chunks: its own, then rank -t (+ direction) and +t (-).
  EXPECT_EQ(gather_chunk_order(ring_split(8, true)), (std::vector<std::int64_t>{0, 7, 1, 6, 2, 5, 3, 4}));
  EXPECT_EQ(gather_chunk_order(ring_split(8, false)), (std::vector<std::int64_t>{0, 7, 6, 5, 4, 3, 2, 1}));
}

namespace {

// Coordinates of a rank over `dims`, the first fastest.
std::vector<int> coords_of(int r, const std::vector<int>& dims) {
  std::vector<int> c;
  for (int d : dims) {
    c.push_back(r % d);
    r /= d;
  }
  return c;
}

// Whether two ranks are torus neighbours without wraparound: one
// coordinate differs, by one.
bool neighbours(int a, int b, const std::vector<int>& dims) {
  const auto x = coords_of(a, dims), y = coords_of(b, dims);
  int diff = 0;
  for (std::size_t k = 0; k < dims.size(); ++k) diff += std::abs(x[k] - y[k]);
  return diff == 1;
}

}  // namespace

// Ring orders visit every rank once, each step to a neighbour; on a grid
// with an even side the closing step too (a cycle without wraparound).
TEST(CollectiveMatmul, RingOrderStepsBetweenNeighbours) {
  EXPECT_EQ(sim::lowering::ring_order({8}), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  for (const std::vector<int>& dims :
       std::vector<std::vector<int>>{{2, 4}, {4, 2}, {3, 4}, {4, 4}, {2, 2, 2}, {3, 3}}) {
    const auto ring = sim::lowering::ring_order(dims);
    int n = 1;
    for (int d : dims) n *= d;
    ASSERT_EQ(ring.size(), static_cast<std::size_t>(n));
    EXPECT_EQ(std::set<int>(ring.begin(), ring.end()).size(), static_cast<std::size_t>(n));
    for (int k = 0; k + 1 < n; ++k) EXPECT_TRUE(neighbours(ring[k], ring[k + 1], dims)) << k;
    const bool cycle = dims.size() == 2 ? (dims[0] % 2 == 0 || dims[1] % 2 == 0) : dims == std::vector<int>{2, 2, 2};
    if (cycle) {
      EXPECT_TRUE(neighbours(ring.back(), ring.front(), dims));
    }
  }
}

TEST(CollectiveMatmul, ChunkRowsCutTheGatheredDimOfEveryOuterGroup) {
  // [2, 1024, 1024] gathered along dim 1 over 8: chunk 3 is rows
  // 384..511 of each of the 2 sequences, 1024 rows apart.
  const auto w = sim::lowering::chunk_rows({2, 1024, 1024}, 1, 8, 3);
  EXPECT_EQ(w.outer, 2);
  EXPECT_EQ(w.rows, 128);
  EXPECT_EQ(w.stride, 1024);
  EXPECT_EQ(w.row0, 384);
  // Along dim 0 of [16, 64, 512]: each chunk is 2 whole groups of 64 rows.
  const auto v = sim::lowering::chunk_rows({16, 64, 512}, 0, 8, 5);
  EXPECT_EQ(v.outer, 1);
  EXPECT_EQ(v.rows, 128);
  EXPECT_EQ(v.row0, 640);
}

TEST(CollectiveMatmul, GatherBecomesRingPermutesAndSlicesConserveMacs) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5p");
  const auto wl = block(false);
  const auto on = sim::lower(wl, cfg, tp_opts(true));
  const auto off = sim::lower(wl, cfg, tp_opts(false));
  Counts c_on = count(on), c_off = count(off);
  // all_gather: 7 permutes of one shard each, 4 one way and 3 the other.
  ASSERT_EQ(c_on.ici[0].size(), static_cast<std::size_t>(kN - 1));
  for (const arch::Instr* in : c_on.ici[0]) {
    const auto& w = std::get<arch::IciWork>(in->work);
    EXPECT_EQ(w.kind, static_cast<std::uint8_t>(arch::ici::CollectiveKind::collective_permute));
    EXPECT_EQ(w.bytes, kShardBytes);
  }
  EXPECT_EQ(directions(on, c_on.ici[0]), (std::map<int, int>{{-1, 3}, {+1, 4}}));
  ASSERT_EQ(c_off.ici[0].size(), 1u);  // off: one all_gather
  // reduce_scatter: 7 permutes of one destination chunk of partial sums.
  ASSERT_EQ(c_on.ici[5].size(), static_cast<std::size_t>(kN - 1));
  for (const arch::Instr* in : c_on.ici[5]) EXPECT_EQ(std::get<arch::IciWork>(in->work).bytes, kShardBytes);
  EXPECT_EQ(directions(on, c_on.ici[5]), (std::map<int, int>{{-1, 3}, {+1, 4}}));
  // Every matmul's MXU work, exactly: the slices partition its rows.
  for (std::uint32_t op : {1u, 2u, 4u}) {
    const std::uint64_t macs = on.ops[op].macs;
    EXPECT_EQ(c_on.macs[op], macs) << on.ops[op].name;
    EXPECT_EQ(c_off.macs[op], macs) << on.ops[op].name;
    EXPECT_EQ(on.ops[op].flops, off.ops[op].flops);
    // The group's minimum HBM traffic is the same tensors read and written.
    EXPECT_EQ(on.ops[op].hbm_bytes, off.ops[op].hbm_bytes) << on.ops[op].name;
    EXPECT_NE(on.ops[op].blocking.find("collective matmul: 8 slices"), std::string::npos);
  }
  // The elementwise sum is fused into k's epilogue or lowered alone either way.
  EXPECT_EQ(on.ops[3].fused_into, off.ops[3].fused_into);
}

// A tensor axis over two slice dimensions (2 x 4): every ring step goes
// to a neighbour, not rank r + 1 (which is two hops from rank 1 to 2).
TEST(CollectiveMatmul, RingFollowsTheSliceDimensionsOfTheAxis) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  sim::LoweringOptions o = tp_opts(true);
  o.mesh_dims = {{"tensor", {2, 4}}};
  const auto lw = sim::lower(block(false), cfg, o);
  int permutes = 0;
  for (const arch::Instr& in : lw.program.instrs) {
    if (in.unit != arch::UnitKind::ici) continue;
    ++permutes;
    for (const auto& [src, dst] : lw.program.group(std::get<arch::IciWork>(in.work)).pairs)
      EXPECT_TRUE(neighbours(src, dst, {2, 4})) << src << " -> " << dst;
  }
  EXPECT_EQ(permutes, 14);
}

TEST(CollectiveMatmul, UnidirectionalRingSendsEveryStepOneWay) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5p");
  const auto on = sim::lower(block(false), cfg, tp_opts(true, false));
  Counts c = count(on);
  EXPECT_EQ(directions(on, c.ici[0]), (std::map<int, int>{{+1, 7}}));
  EXPECT_EQ(directions(on, c.ici[5]), (std::map<int, int>{{+1, 7}}));
}

// A slice waits for the permute that brings its chunk, not for the whole
// ring: q's first instruction of the slice of chunk 7 (the first permute
// of the + direction) waits for that permute only among the gather's.
TEST(CollectiveMatmul, EachSliceWaitsOnlyForItsChunk) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5p");
  const auto lw = sim::lower(block(false), cfg, tp_opts(true));
  const Counts c = count(lw);
  std::set<arch::InstrId> permutes;
  for (arch::InstrId id = 0; id < lw.program.instrs.size(); ++id)
    if (lw.program.instrs[id].op == 0 && lw.program.instrs[id].unit == arch::UnitKind::ici) permutes.insert(id);
  ASSERT_EQ(permutes.size(), 7u);
  // Over q's and k's instructions, count how many distinct permutes each
  // waits for directly: every slice but the own chunk's waits for exactly
  // one, and together they wait for all seven.
  std::set<arch::InstrId> waited;
  int waiting_instrs = 0;
  for (arch::InstrId id = 0; id < lw.program.instrs.size(); ++id) {
    const std::uint32_t op = lw.program.instrs[id].op;
    if (op != 1 && op != 2) continue;
    int here = 0;
    for (arch::InstrId d : lw.program.deps(id))
      if (permutes.count(d)) {
        waited.insert(d);
        ++here;
      }
    EXPECT_LE(here, 1);
    waiting_instrs += here > 0;
  }
  EXPECT_EQ(waited.size(), 7u);
  EXPECT_GE(waiting_instrs, 14);  // 7 slices of q and 7 of k, on each core
  (void)c;
}

// A consumer that needs the whole gathered tensor (a norm) waits for every
// ring step; the matmul consumers are still sliced.
TEST(CollectiveMatmul, WholeTensorReaderWaitsForEveryStep) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5p");
  const auto lw = sim::lower(block(true), cfg, tp_opts(true));
  std::set<arch::InstrId> permutes, waited;
  for (arch::InstrId id = 0; id < lw.program.instrs.size(); ++id)
    if (lw.program.instrs[id].op == 0 && lw.program.instrs[id].unit == arch::UnitKind::ici) permutes.insert(id);
  ASSERT_EQ(permutes.size(), 7u);
  for (arch::InstrId id = 0; id < lw.program.instrs.size(); ++id)
    if (lw.program.instrs[id].op == 6)
      for (arch::InstrId d : lw.program.deps(id))
        if (permutes.count(d)) waited.insert(d);
  EXPECT_EQ(waited, permutes);
}

TEST(CollectiveMatmul, SmallCollectivesStayWhole) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5p");
  sim::LoweringOptions o = tp_opts(true);
  // The gathered tensor is 4 MiB: above a 4 MiB threshold it stays one
  // all_gather (and the reduce_scatter one reduce_scatter).
  o.collective_matmul_min_bytes = kShardBytes * kN + 1;
  const Counts c = count(sim::lower(block(false), cfg, o));
  EXPECT_EQ(c.ici.at(0).size(), 1u);
  EXPECT_EQ(c.ici.at(5).size(), 1u);
  o.collective_matmul_min_bytes = kShardBytes * kN;
  const Counts d = count(sim::lower(block(false), cfg, o));
  EXPECT_EQ(d.ici.at(0).size(), 7u);
  EXPECT_EQ(d.ici.at(5).size(), 7u);
}

// A slice's output block whose rows fall into several runs of the output
// (q and k: 2 sequences of 128 gathered rows each, one block of 256 rows)
// stores each run as a copy of its own: no cast or store of a run waits for
// another run's store (Step::epilogue_chains); stored one after another,
// the second run's cast waited for the first run's store. (Without VMEM
// residency, which would keep these small outputs on chip.)
TEST(CollectiveMatmul, RunsOfAnOutputBlockAreStoredApart) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5p");
  sim::LoweringOptions o = tp_opts(true);
  o.vmem_residency = false;
  const auto lw = sim::lower(block(false), cfg, o);
  auto is_store = [&](arch::InstrId id) {
    const arch::Instr& in = lw.program.instrs[id];
    if (in.unit != arch::UnitKind::dma) return false;
    const auto& w = std::get<arch::DmaWork>(in.work);
    return w.src == arch::MemSpace::vmem && w.dst == arch::MemSpace::hbm;
  };
  std::map<std::uint32_t, int> stores, casts;
  for (arch::InstrId id = 0; id < lw.program.instrs.size(); ++id) {
    const arch::Instr& in = lw.program.instrs[id];
    if (in.op != 1 && in.op != 2) continue;
    if (is_store(id)) ++stores[in.op];
    if (in.unit != arch::UnitKind::vpu && !is_store(id)) continue;
    if (in.unit == arch::UnitKind::vpu) ++casts[in.op];
    for (arch::InstrId d : lw.program.deps(id))
      EXPECT_FALSE(is_store(d) && lw.program.instrs[d].op == in.op) << "op " << in.op << " instruction " << id;
  }
  for (std::uint32_t op : {1u, 2u}) {
    // More casts than slices: some block holds several runs.
    EXPECT_GT(casts[op], static_cast<int>(kN)) << op;
    EXPECT_GE(stores[op], casts[op]) << op;
  }
}
