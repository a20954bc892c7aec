// The chip's memory system as the sequencers see it (arch::DmaBackend):
// the DMA engines of arch/dma (DmaModule: descriptor setup, request pacing
// by issue rate and outstanding window, on-chip copies at the slower
// memory's bandwidth, CMEM shared by all engines) over the HBM model's
// SystemC shell (channel, detailed or calibrated, as hbm.model says). Copies
// on different engines contend in the HBM model.
// Leaves out: ICI destinations (collectives go through the ICI backend,
// sim/engine/ici_backend.h, not through the DMA engines).
#pragma once

#include <memory>
#include <string>

#include "arch/chip/dma_backend.h"
#include "arch/common/chip_config.h"

namespace tpusim::sim {

// `name`: the SystemC module name (unique per chip when a run elaborates
// several chips).
std::unique_ptr<arch::DmaBackend> make_memory_system(const arch::TpuConfig& cfg, const std::string& name = "memory");

}  // namespace tpusim::sim
