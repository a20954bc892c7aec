// Adapters from the ISA's instructions to the compute units' pure timing
// models (MxuTimer, VpuTimer, XluTimer): one UnitTiming per MXU, VPU and
// XLU of every TensorCore.
// Leaves out: nothing of the timers; it only translates fields.
#pragma once

#include <memory>

#include "arch/chip/chip_module.h"
#include "arch/common/chip_config.h"

namespace tpusim::sim {

// Factory for ChipModule: MXU `index` of core `core` gets its own MxuTimer,
// and so on. The config must outlive the units.
arch::UnitFactory make_unit_factory(const arch::TpuConfig& cfg);

}  // namespace tpusim::sim
