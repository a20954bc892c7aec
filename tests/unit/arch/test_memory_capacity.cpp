// Tests of on-chip memory capacity accounting and (8,128) tiled footprints
// (arch/memory/capacity_allocator.h, arch/memory/tile_layout.h).
#include "arch/memory/capacity_allocator.h"

#include <gtest/gtest.h>

#include <string>

#include "arch/memory/onchip_memory.h"
#include "arch/memory/tile_layout.h"

namespace tpusim::arch {
namespace {

constexpr std::uint64_t MiB = 1024 * 1024;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(TileLayout, TilesAreFourKiB) {
  // One tile = 8 sublanes x 128 lanes x 4 bytes = 4096 bytes for every dtype.
  EXPECT_EQ(kTileBytes, 4096u);
  EXPECT_EQ(tile_rows(DType::f32), 8u);
  EXPECT_EQ(tile_rows(DType::bf16), 16u);
  EXPECT_EQ(tile_rows(DType::int8), 32u);
  EXPECT_EQ(tile_rows(DType::int4), 64u);
  EXPECT_EQ(tiled_bytes(8, 128, DType::f32), 4096u);
  EXPECT_EQ(tiled_bytes(16, 128, DType::bf16), 4096u);
  // f32 [1,1] pads to one whole tile.
  EXPECT_EQ(tiled_bytes(1, 1, DType::f32), 4096u);
  // bf16 [17,129]: ceil(17/16) x ceil(129/128) = 2 x 2 tiles = 16 KiB.
  EXPECT_EQ(tiled_bytes(17, 129, DType::bf16), 16384u);
  // bf16 [3, 512, 1024]: 3 x 32 x 8 tiles = 768 tiles = 3 MiB, exactly the
  // unpadded 3 x 512 x 1024 x 2 bytes.
  EXPECT_EQ(tiled_bytes(512, 1024, DType::bf16, 3), 3 * MiB);
}

TEST(CapacityAllocator, RoundsToTheGranule) {
  // VMEM granule 4 KiB: 5 bytes take 4096, 4097 bytes take 8192.
  CapacityAllocator vmem("VMEM", 16 * MiB, 4096);
  const auto a = vmem.allocate("a", 5);
  EXPECT_EQ(vmem.buffer_bytes(a), 4096u);
  vmem.allocate("b", 4097);
  EXPECT_EQ(vmem.used(), 4096u + 8192);
  EXPECT_EQ(vmem.buffer_name(a), "a");
}

TEST(CapacityAllocator, TracksPeakUsage) {
  // a 8 MiB + b 4 MiB -> 12 MiB (peak 12); free a -> 4; c 2 MiB -> 6; peak stays 12.
  CapacityAllocator vmem("VMEM", 16 * MiB, 4096);
  const auto a = vmem.allocate("a", 8 * MiB);
  vmem.allocate("b", 4 * MiB);
  EXPECT_EQ(vmem.used(), 12 * MiB);
  EXPECT_EQ(vmem.peak(), 12 * MiB);
  vmem.free(a);
  EXPECT_EQ(vmem.used(), 4 * MiB);
  vmem.allocate("c", 2 * MiB);
  EXPECT_EQ(vmem.used(), 6 * MiB);
  EXPECT_EQ(vmem.peak(), 12 * MiB);
  EXPECT_EQ(vmem.live_buffers(), 2u);
  EXPECT_EQ(vmem.available(), 10 * MiB);
  double peak = -1, allocs = -1, frees = -1;
  for (const Stat& s : vmem.stats()) {
    if (s.name == "peak_used") peak = s.value;
    if (s.name == "allocations") allocs = s.value;
    if (s.name == "frees") frees = s.value;
    EXPECT_FALSE(s.unit.empty());
    EXPECT_FALSE(s.desc.empty());
  }
  EXPECT_EQ(peak, 12.0 * MiB);
  EXPECT_EQ(allocs, 3);
  EXPECT_EQ(frees, 1);
}

TEST(CapacityAllocator, FitIsTight) {
  // Byte granular, 1000 bytes: 600 live; 400 more fit exactly, 401 do not.
  CapacityAllocator smem("SMEM", 1000);
  smem.allocate("x", 600);
  EXPECT_TRUE(smem.fits(400));
  EXPECT_FALSE(smem.fits(401));
  EXPECT_THROW(smem.allocate("y", 401), CapacityError);
  smem.allocate("y", 400);
  EXPECT_EQ(smem.used(), 1000u);
  EXPECT_EQ(smem.available(), 0u);
}

TEST(CapacityAllocator, OverAllocationMessageSaysEverything) {
  // 16 MiB VMEM holding 'kv_cache' 8 MiB and 'weights' 4 MiB (12 MiB used);
  // 'q_tile' of 5 MiB does not fit in the 4 MiB left.
  CapacityAllocator vmem("VMEM[tc0]", 16 * MiB, 4096);
  vmem.allocate("kv_cache", 8 * MiB);
  vmem.allocate("weights", 4 * MiB);
  try {
    vmem.allocate("q_tile", 5 * MiB);
    FAIL() << "expected CapacityError";
  } catch (const CapacityError& e) {
    const std::string m = e.what();
    EXPECT_TRUE(contains(m, "VMEM[tc0]")) << m;  // the memory
    EXPECT_TRUE(contains(m, "'q_tile'")) << m;   // the buffer
    EXPECT_TRUE(contains(m, "5242880")) << m;    // its size
    EXPECT_TRUE(contains(m, "16777216")) << m;   // the capacity
    EXPECT_TRUE(contains(m, "12582912")) << m;   // the bytes in use
    EXPECT_TRUE(contains(m, "2 live buffers")) << m;
    EXPECT_TRUE(contains(m, "'kv_cache' 8.00 MiB")) << m;  // where the space went
    EXPECT_EQ(e.memory, "VMEM[tc0]");
    EXPECT_EQ(e.buffer, "q_tile");
    EXPECT_EQ(e.requested, 5 * MiB);
    EXPECT_EQ(e.capacity, 16 * MiB);
    EXPECT_EQ(e.used, 12 * MiB);
  }
  // A failed allocation leaves the state unchanged.
  EXPECT_EQ(vmem.used(), 12 * MiB);
  EXPECT_EQ(vmem.live_buffers(), 2u);
}

TEST(CapacityAllocator, MessageShowsGranuleRounding) {
  // 4097 bytes need 8192 after 4 KiB rounding; 4096 bytes capacity.
  CapacityAllocator vmem("VMEM", 4096, 4096);
  try {
    vmem.allocate("t", 4097);
    FAIL() << "expected CapacityError";
  } catch (const CapacityError& e) {
    EXPECT_TRUE(contains(e.what(), "4097 bytes")) << e.what();
    EXPECT_TRUE(contains(e.what(), "8192 after rounding")) << e.what();
    EXPECT_EQ(e.requested, 8192u);
  }
}

TEST(CapacityAllocator, CapacityErrorIsAConfigError) {
  CapacityAllocator smem("SMEM", 16);
  EXPECT_THROW(smem.allocate("big", 17), ConfigError);
}

TEST(CapacityAllocator, MisuseIsAnInternalError) {
  CapacityAllocator vmem("VMEM", 1 * MiB);
  const auto a = vmem.allocate("a", 10);
  vmem.free(a);
  EXPECT_THROW(vmem.free(a), InternalError);      // double free
  EXPECT_THROW(vmem.free(12345), InternalError);  // never allocated
  EXPECT_THROW(vmem.buffer_name(a), InternalError);
  // The freed id is reused by the next buffer.
  EXPECT_EQ(vmem.allocate("b", 10), a);
}

TEST(CapacityAllocator, FromConfig) {
  MemoryConfig cmem;
  cmem.present = false;
  cmem.size_bytes = 128 * MiB;
  try {
    CapacityAllocator c("CMEM", cmem);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(contains(e.what(), "CMEM is not present")) << e.what();
  }
  MemoryConfig vmem;
  vmem.size_bytes = 16 * MiB;
  vmem.granule_bytes = 4096;
  CapacityAllocator v("VMEM", vmem);
  EXPECT_EQ(v.capacity(), 16 * MiB);
  v.allocate("x", 1);
  EXPECT_EQ(v.used(), 4096u);
  MemoryConfig zero;
  EXPECT_THROW(CapacityAllocator("SMEM", zero), ConfigError);
}

TEST(OnChipMemory, BundlesCapacityAndPortsStats) {
  MemoryConfig vmem;
  vmem.size_bytes = 16 * MiB;
  vmem.granule_bytes = 4096;
  vmem.bandwidth = 4096e9;  // 4096 B/cycle at 1 GHz
  OnChipMemory m("VMEM", vmem, 1e9);
  m.capacity.allocate("x", 8192);
  m.ports.access(8192, 0, AccessKind::write);
  double used = -1, written = -1;
  for (const Stat& s : m.stats()) {
    if (s.name == "used") used = s.value;
    if (s.name == "bytes_written") written = s.value;
  }
  EXPECT_EQ(used, 8192);
  EXPECT_EQ(written, 8192);
}

TEST(FormatBytes, HumanUnits) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(16 * MiB), "16.00 MiB");
}

}  // namespace
}  // namespace tpusim::arch
