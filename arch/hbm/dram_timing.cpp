// See dram_timing.h.
#include "arch/hbm/dram_timing.h"

#include <algorithm>
#include <string>

#include "arch/common/errors.h"

namespace tpusim::arch {

namespace {
Ps need(double s, const char* name, bool allow_zero = false) {
  if (!(s >= 0) || (!allow_zero && s == 0))
    throw ConfigError(std::string("hbm.timings.") + name + " must be " + (allow_zero ? "non-negative" : "positive") +
                      ", got " + std::to_string(s));
  return seconds_to_ps(s);
}
}  // namespace

DramTiming::DramTiming(const HbmConfig& c) {
  const HbmTimings& t = c.t;
#define TPUSIM_DRAM_TIMING_CONVERT(name, ps_name, required, positive, description) \
  ps_name = need(t.name, #name, !(positive));
  TPUSIM_HBM_TIMINGS(TPUSIM_DRAM_TIMING_CONVERT)
#undef TPUSIM_DRAM_TIMING_CONVERT
  if (REFI != 0 && RFC >= REFI) throw ConfigError("hbm.timings.tRFC must be below tREFI");
  if (!(c.data_rate > 0)) throw ConfigError("hbm.data_rate must be positive");
  if (c.burst_length <= 0 || c.bus_width_bits <= 0 || c.bus_width_bits % 8 != 0)
    throw ConfigError("hbm.burst_length and hbm.bus_width_bits (multiple of 8) must be positive");
  burst = seconds_to_ps(c.burst_length / c.data_rate);
  burst_bytes = static_cast<std::uint64_t>(c.bus_width_bits / 8) * c.burst_length;
  // A column command cannot come faster than its burst occupies the bus, so
  // a data_rate override that outruns the preset's tCCD keeps the bus the
  // limit (the chip config should override tCCD with data_rate anyway).
  CCD_S = std::max(CCD_S, burst);
  CCD_L = std::max(CCD_L, burst);
  RC = std::max(RC, RAS + RP);
  if (!(c.controller_latency >= 0)) throw ConfigError("hbm.controller_latency must be >= 0");
  controller = seconds_to_ps(c.controller_latency);
}

}  // namespace tpusim::arch
