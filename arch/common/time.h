// The one place where cycles of a clock become SystemC time and back.
// SystemC's default resolution (1 ps) is kept; cycle counts are integers.
// Leaves out: clock domains crossing (each block converts its own clock).
#pragma once

#include <cmath>
#include <cstdint>
#include <systemc>

namespace tpusim::arch {

using Cycles = std::uint64_t;

inline sc_core::sc_time cycles_to_time(Cycles c, double clock_hz) {
  // Computed in picoseconds and rounded once, so that long runs do not
  // accumulate per-call rounding.
  return sc_core::sc_time(std::llround(static_cast<double>(c) * 1e12 / clock_hz), sc_core::SC_PS);
}

inline double time_to_seconds(const sc_core::sc_time& t) { return t.to_seconds(); }

inline Cycles time_to_cycles(const sc_core::sc_time& t, double clock_hz) {
  return static_cast<Cycles>(std::llround(t.to_seconds() * clock_hz));
}

}  // namespace tpusim::arch
