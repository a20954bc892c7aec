// Closed-form tests of on-chip memory port timing (arch/memory/port_timing.h).
#include "arch/memory/port_timing.h"

#include <gtest/gtest.h>

#include <string>

#include "arch/common/errors.h"

namespace tpusim::arch {
namespace {

// 2 ports of 4096 B/cycle at 1 GHz: bandwidth = 2 x 4096 x 1e9 B/s;
// 4 KiB granule, 3-cycle latency.
MemoryConfig two_ports() {
  MemoryConfig c;
  c.size_bytes = 16u << 20;
  c.ports = 2;
  c.bandwidth = 2 * 4096 * 1e9;
  c.latency = 3;
  c.granule_bytes = 4096;
  return c;
}

TEST(MemoryPorts, BytesPerCycleFromBandwidthAndClock) {
  // 8.192e12 B/s / 1e9 Hz / 2 ports = 4096 B/cycle per port.
  MemoryPorts m("VMEM", two_ports(), 1e9);
  EXPECT_DOUBLE_EQ(m.bytes_per_cycle_per_port(), 4096.0);
  // 1 MiB on one port: 1048576 / 4096 = 256 cycles.
  EXPECT_EQ(m.occupancy(1u << 20), 256u);
}

TEST(MemoryPorts, V5eLikeVmemFeed) {
  // VMEM at ~22x HBM (scaling book): 22 x 819 GB/s = 18.018 TB/s, one port,
  // clock 1.5 GHz -> 12012 B/cycle. 1 MiB: ceil(1048576 / 12012) =
  // ceil(87.29) = 88 cycles; + latency 1 = 89.
  MemoryConfig c;
  c.size_bytes = 128u << 20;
  c.ports = 1;
  c.bandwidth = 22 * 819e9;
  c.latency = 1;
  MemoryPorts m("VMEM", c, 1.5e9);
  EXPECT_NEAR(m.bytes_per_cycle_per_port(), 12012.0, 1e-6);
  const PortAccess a = m.access(1u << 20, 0, AccessKind::read);
  EXPECT_EQ(a.occupancy, 88u);
  EXPECT_EQ(a.finish, 89u);
}

TEST(MemoryPorts, AccessesRoundUpToTheGranule) {
  // 4096 B/cycle, 4 KiB granule: 100 B -> one granule -> 1 cycle; 4097 B ->
  // 2 granules -> 2 cycles; exactly 8192 B -> 2 cycles.
  MemoryPorts m("VMEM", two_ports(), 1e9);
  EXPECT_EQ(m.occupancy(100), 1u);
  EXPECT_EQ(m.occupancy(4097), 2u);
  EXPECT_EQ(m.occupancy(8192), 2u);
  EXPECT_EQ(m.occupancy(0), 0u);
}

TEST(MemoryPorts, SinglePortContention) {
  // One port: two 1 MiB reads ready at 0 serialise: the second starts at
  // 256 and finishes 256 + 256 + 3 = 515.
  MemoryConfig c = two_ports();
  c.ports = 1;
  c.bandwidth = 4096 * 1e9;
  MemoryPorts m("VMEM", c, 1e9);
  const PortAccess a = m.access(1u << 20, 0, AccessKind::read);
  const PortAccess b = m.access(1u << 20, 0, AccessKind::read);
  EXPECT_EQ(a.start, 0u);
  EXPECT_EQ(a.finish, 259u);
  EXPECT_EQ(b.start, 256u);
  EXPECT_EQ(b.finish, 515u);
}

TEST(MemoryPorts, TwoPortsOverlapAThirdWaits) {
  // Ports 0 and 1 each take a 256-cycle access at 0; a 128-cycle third one
  // (512 KiB) waits for port 0 at 256 and finishes 256 + 128 + 3 = 387.
  MemoryPorts m("VMEM", two_ports(), 1e9);
  const PortAccess a = m.access(1u << 20, 0, AccessKind::read);
  const PortAccess b = m.access(1u << 20, 0, AccessKind::write);
  EXPECT_EQ(a.port, 0);
  EXPECT_EQ(b.port, 1);
  EXPECT_EQ(b.start, 0u);
  const PortAccess c = m.access(512u << 10, 0, AccessKind::read);
  EXPECT_EQ(c.port, 0);
  EXPECT_EQ(c.start, 256u);
  EXPECT_EQ(c.finish, 387u);
}

TEST(MemoryPorts, BusyUntilIsTight) {
  // Port 0 busy until 256: ready 255 waits to 256; ready 256 starts at once.
  MemoryPorts m("VMEM", two_ports(), 1e9);
  m.access(1u << 20, 0, AccessKind::read, 0);
  EXPECT_EQ(m.busy_until(0), 256u);
  MemoryPorts m1 = m;
  EXPECT_EQ(m1.access(4096, 255, AccessKind::read, 0).start, 256u);
  MemoryPorts m2 = m;
  EXPECT_EQ(m2.access(4096, 256, AccessKind::read, 0).start, 256u);
}

TEST(MemoryPorts, StatsCountBytesAndBusyCycles) {
  // read 1 MiB (256 cycles) + write 8 KiB (2 cycles) + write 100 B (1 cycle,
  // one granule; bytes counted as requested).
  MemoryPorts m("VMEM", two_ports(), 1e9);
  m.access(1u << 20, 0, AccessKind::read);
  m.access(8192, 0, AccessKind::write);
  m.access(100, 0, AccessKind::write);
  m.access(0, 0, AccessKind::write);  // nothing moves, nothing counted
  double rd = -1, wr = -1, busy = -1, writes = -1;
  for (const Stat& s : m.stats()) {
    if (s.name == "bytes_read") rd = s.value;
    if (s.name == "bytes_written") wr = s.value;
    if (s.name == "busy_cycles") busy = s.value;
    if (s.name == "writes") writes = s.value;
  }
  EXPECT_EQ(rd, 1048576);
  EXPECT_EQ(wr, 8192 + 100);
  EXPECT_EQ(busy, 256 + 2 + 1);
  EXPECT_EQ(writes, 2);
  m.reset();
  EXPECT_EQ(m.busy_until(0), 0u);
}

TEST(MemoryPorts, BadConfigAndMisuse) {
  MemoryConfig c = two_ports();
  c.bandwidth = 0;
  try {
    MemoryPorts m("SMEM", c, 1e9);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("SMEM.bandwidth"), std::string::npos) << e.what();
  }
  EXPECT_THROW(MemoryPorts("VMEM", two_ports(), 0.0), ConfigError);
  c = two_ports();
  c.present = false;
  EXPECT_THROW(MemoryPorts("CMEM", c, 1e9), ConfigError);
  MemoryPorts m("VMEM", two_ports(), 1e9);
  EXPECT_THROW(m.access(10, 0, AccessKind::read, 2), InternalError);
}

}  // namespace
}  // namespace tpusim::arch
