// The chip's DMA engines and the HBM behind them, as one SystemC module
// that the sequencers start copies on (arch::DmaBackend). Each engine works
// through its descriptors in order, one at a time; copies on different
// engines run concurrently and contend in the HBM model (detailed DRAM or
// calibrated, as hbm.model says). Copies that do not touch HBM (VMEM to
// CMEM) take bytes / on-chip bandwidth; CMEM bandwidth is one server shared
// by all engines.
// Leaves out: ICI destinations (the multi-chip work adds them).
#pragma once

#include <memory>
#include <string>

#include "arch/chip/dma_backend.h"
#include "arch/common/chip_config.h"

namespace tpusim::sim {

// `name`: the SystemC module name (unique per chip when a run elaborates
// several chips).
std::unique_ptr<arch::DmaBackend> make_memory_system(const arch::TpuConfig& cfg,
                                                     const std::string& name = "memory");

}  // namespace tpusim::sim
