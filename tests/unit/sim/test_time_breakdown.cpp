// time_breakdown(): unions per class of unit and what of ICI and HBM time
// compute does not hide, on hand-made instruction records.
#include <gtest/gtest.h>

#include "sim/results/time_breakdown.h"

namespace {

using namespace tpusim;

arch::Instr unit(arch::UnitKind k) {
  arch::Instr in;
  in.unit = k;
  if (k == arch::UnitKind::mxu) in.work = arch::MxuWork{};
  if (k == arch::UnitKind::ici) in.work = arch::IciWork{};
  return in;
}

arch::Instr dma(arch::MemSpace src, arch::MemSpace dst) {
  arch::Instr in;
  in.unit = arch::UnitKind::dma;
  arch::DmaWork d;
  d.src = src;
  d.dst = dst;
  in.work = d;
  return in;
}

TEST(TimeBreakdown, UnionsAndExposedTime) {
  arch::Program p;
  std::vector<arch::InstrRecord> rec;
  auto add = [&](arch::Instr in, std::uint64_t s, std::uint64_t f) {
    p.instrs.push_back(in);
    rec.push_back({s, s, f, 0});
  };
  // compute: MXU [0,100) and VPU [50,150) overlap -> union [0,150) = 150;
  // XLU [300,320) -> 170 in all.
  add(unit(arch::UnitKind::mxu), 0, 100);
  add(unit(arch::UnitKind::vpu), 50, 150);
  add(unit(arch::UnitKind::xlu), 300, 320);
  // ICI [100,250) and [240,400): union [100,400) = 300; minus compute
  // [100,150) and [300,320): exposed [150,300) + [320,400) = 230.
  add(unit(arch::UnitKind::ici), 100, 250);
  add(unit(arch::UnitKind::ici), 240, 400);
  // HBM DMA [380,500): minus compute and ICI -> [400,500) = 100. A
  // VMEM->SMEM copy [600,700) has no HBM end and counts nowhere.
  add(dma(arch::MemSpace::hbm, arch::MemSpace::vmem), 380, 500);
  add(dma(arch::MemSpace::vmem, arch::MemSpace::smem), 600, 700);
  const sim::TimeBreakdown t = sim::time_breakdown(p, rec);
  EXPECT_EQ(t.compute_cycles, 170u);
  EXPECT_EQ(t.ici_cycles, 300u);
  EXPECT_EQ(t.ici_exposed_cycles, 230u);
  EXPECT_EQ(t.hbm_exposed_cycles, 100u);
}

TEST(TimeBreakdown, FullyHiddenCommunicationIsNotExposed) {
  arch::Program p;
  p.instrs = {unit(arch::UnitKind::mxu), unit(arch::UnitKind::ici), dma(arch::MemSpace::vmem, arch::MemSpace::hbm)};
  const std::vector<arch::InstrRecord> rec = {{0, 0, 1000, 0}, {0, 10, 990, 0}, {0, 999, 1000, 0}};
  const sim::TimeBreakdown t = sim::time_breakdown(p, rec);
  EXPECT_EQ(t.compute_cycles, 1000u);
  EXPECT_EQ(t.ici_cycles, 980u);
  EXPECT_EQ(t.ici_exposed_cycles, 0u);  // blocked at t-1: one cycle more of ICI would show
  EXPECT_EQ(t.hbm_exposed_cycles, 0u);
}

}  // namespace
