// DRAM timing constraints of one HBM/DDR configuration, converted from the
// config's seconds to integer picoseconds (rounded to the nearest ps, so a
// constraint is never loosened by more than 0.5 ps), plus the derived burst
// duration. Validates the config (ConfigError on a user's mistake).
// Leaves out: speed-bin tables (the presets carry the values), DLL/ZQ
// calibration, power-down and self-refresh timings.
#pragma once

#include "arch/common/chip_config.h"
#include "arch/hbm/hbm_model.h"

namespace tpusim::arch {

struct DramTiming {
  // One field per JEDEC timing of TPUSIM_HBM_TIMINGS (arch/common/chip_config.h),
  // named by its ps_name column (tCK, CL, CWL, RCD, ...).
#define TPUSIM_DRAM_TIMING_FIELD(name, ps_name, required, positive, description) Ps ps_name = 0;
  TPUSIM_HBM_TIMINGS(TPUSIM_DRAM_TIMING_FIELD)
#undef TPUSIM_DRAM_TIMING_FIELD
  Ps burst;                   // data-bus time of one burst: burst_length / data_rate
  Ps controller;              // fixed front-end + PHY latency added to every access
  std::uint64_t burst_bytes;  // bus_width_bits / 8 * burst_length

  explicit DramTiming(const HbmConfig& c);
};

}  // namespace tpusim::arch
