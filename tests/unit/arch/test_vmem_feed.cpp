// VMEM's bandwidth and granule as a floor on each unit's operations
// (arch/memory/vmem_feed.h; issue 17 item 9: vmem.bandwidth and
// vmem.granule had no timing effect).
#include "arch/memory/vmem_feed.h"

#include <gtest/gtest.h>

#include "arch/common/errors.h"
#include "arch/vpu/vpu_unit_timing.h"

namespace tpusim::arch {
namespace {

MemoryConfig vmem(double bytes_per_cycle, std::uint64_t granule) {
  MemoryConfig m;
  m.size_bytes = 128ULL << 20;
  m.ports = 4;
  m.bandwidth = bytes_per_cycle * 1e9;  // at a 1 GHz clock
  m.granule_bytes = granule;
  return m;
}

TEST(VmemFeed, CyclesAreWholeGranulesAtTheBandwidth) {
  const VmemFeed f(vmem(16384, 4096), 1e9);
  EXPECT_DOUBLE_EQ(f.bytes_per_cycle(), 16384);
  EXPECT_EQ(f.cycles(4, 4096), 1u);          // 16 KiB at 16 KiB/cycle
  EXPECT_EQ(f.cycles(5, 4096), 2u);          // 20 KiB: ceil(1.25)
  EXPECT_EQ(f.cycles(4, 100), 1u);           // each 100 B access moves a whole 4 KiB granule
  EXPECT_EQ(f.access_bytes(4097), 8192u);
  EXPECT_EQ(f.cycles(0, 4096), 0u);
  const VmemFeed bytes(vmem(16384, 0), 1e9);  // granule 0 = byte granular
  EXPECT_EQ(bytes.cycles(4, 100), 1u);        // 400 B
  EXPECT_EQ(bytes.cycles(1000, 100), 7u);     // 100000 / 16384 = 6.1
  EXPECT_EQ(VmemFeed().cycles(1000, 4096), 0u);  // unbounded
  EXPECT_THROW(VmemFeed(vmem(0, 0), 1e9), ConfigError);
}

Instr add_f32(std::uint64_t elements) {
  Instr in;
  in.unit = UnitKind::vpu;
  VpuWork w;
  w.elements = elements;
  w.dtype = DType::f32;
  w.alu_ops = 1;
  w.inputs = 2;
  w.outputs = 1;
  in.work = w;
  return in;
}

TEST(VmemFeed, BoundsTheVpuOnlyWhenItIsTheSlowerResource) {
  VpuConfig v5;
  v5.alus_per_lane = 4;
  v5.latency = 2;
  // f32 add of 1M elements: 1024 vregs, 2048 loads and 1024 stores; the one
  // store slot sets the occupancy at 1024 (test_vpu_timing.cpp).
  // 4 x 4 KiB per cycle (the shipped configs): 3072 x 4 KiB / 16 KiB = 768 < 1024.
  VpuUnitTiming shipped(v5, VmemFeed(vmem(16384, 4096), 1e9));
  EXPECT_EQ(shipped.issue(add_f32(1 << 20), 0).finish, 1024u + 2);
  // 4 KiB per cycle: 3072 cycles, then the latency; the next op waits.
  VpuUnitTiming slow(v5, VmemFeed(vmem(4096, 4096), 1e9));
  EXPECT_EQ(slow.issue(add_f32(1 << 20), 0).finish, 3072u + 2);
  EXPECT_EQ(slow.issue(add_f32(1 << 20), 0).start, 3072u);
  // An 8 KiB granule at 16 KiB/cycle: every 4 KiB vreg access moves 8 KiB,
  // 3072 x 8 KiB / 16 KiB = 1536 cycles.
  VpuUnitTiming coarse(v5, VmemFeed(vmem(16384, 8192), 1e9));
  EXPECT_EQ(coarse.issue(add_f32(1 << 20), 0).finish, 1536u + 2);
  bool counted = false;
  for (const auto& s : coarse.stats())
    if (s.name == "vmem_bound_ops") counted = s.value == 1;
  EXPECT_TRUE(counted);
}

}  // namespace
}  // namespace tpusim::arch
