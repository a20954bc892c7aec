// One on-chip memory (VMEM or SMEM of a TensorCore, CMEM of a chip) as the
// lowering and the chip model hold it: its capacity allocator and its port
// timing under one name, with one statistics list.
// Leaves out: see capacity_allocator.h and port_timing.h.
#pragma once

#include <string>

#include "arch/common/chip_config.h"
#include "arch/common/stats.h"
#include "arch/memory/capacity_allocator.h"
#include "arch/memory/port_timing.h"

namespace tpusim::arch {

struct OnChipMemory {
  // name e.g. "VMEM[tc0]"; clock_hz converts cfg.bandwidth to bytes/cycle.
  OnChipMemory(const std::string& name, const MemoryConfig& cfg, double clock_hz)
      : capacity(name, cfg), ports(name, cfg, clock_hz) {}

  CapacityAllocator capacity;
  MemoryPorts ports;

  // The allocator's stats followed by the ports' (names do not overlap).
  StatList stats() const {
    StatList s = capacity.stats();
    StatList p = ports.stats();
    s.insert(s.end(), p.begin(), p.end());
    return s;
  }
};

}  // namespace tpusim::arch
