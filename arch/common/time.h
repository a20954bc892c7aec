// The one place where cycles of a clock become SystemC time and back.
// SystemC's default resolution (1 ps) is kept; cycle counts are integers.
// The conversions run millions of times in a large run, so with a 1 ps
// resolution they work on the kernel's integer picoseconds and round
// inline, computing exactly what the general path (through seconds as a
// double and std::llround) computes: the same cycle for every time.
// Leaves out: clock domains crossing (each block converts its own clock).
#pragma once

#include <cmath>
#include <cstdint>
#include <systemc>

#include "arch/common/rounding.h"

namespace tpusim::arch {

using Cycles = std::uint64_t;

namespace time_detail {
// The kernel counts picoseconds (SystemC's default resolution). Asked once
// per process, during simulation, when the resolution is already fixed.
inline bool ps_resolution() {
  static const bool ps = sc_core::sc_time(1, sc_core::SC_PS).value() == 1;
  return ps;
}
// Below these, the integer paths equal the double ones exactly (the double
// products carry a relative error of a few 2^-53, far below half a unit).
inline constexpr std::uint64_t kExactPs = 1ull << 48;         // ~281 s of simulated time
inline constexpr double kExactPsDouble = 4503599627370496.0;  // 2^52: an integer double + 0.5 stays exact
}  // namespace time_detail

// sc_time(ps, SC_PS) for a whole number of picoseconds.
inline sc_core::sc_time ps_to_time(std::uint64_t ps) {
  if (time_detail::ps_resolution() && static_cast<double>(ps) < time_detail::kExactPsDouble)
    return sc_core::sc_time::from_value(ps);
  return sc_core::sc_time(static_cast<double>(ps), sc_core::SC_PS);
}

inline sc_core::sc_time cycles_to_time(Cycles c, double clock_hz) {
  // Computed in picoseconds and rounded once, so that long runs do not
  // accumulate per-call rounding.
  const double ps = static_cast<double>(c) * 1e12 / clock_hz;
  if (time_detail::ps_resolution() && ps >= 0 && ps < time_detail::kExactPsDouble)
    return sc_core::sc_time::from_value(static_cast<std::uint64_t>(round_half_up(ps)));
  return sc_core::sc_time(std::llround(ps), sc_core::SC_PS);
}

inline double time_to_seconds(const sc_core::sc_time& t) { return t.to_seconds(); }

inline Cycles time_to_cycles(const sc_core::sc_time& t, double clock_hz) {
  // sc_time::to_seconds() is value x resolution (in fs) x 1e-15, in that
  // order; the same product here, without the call.
  if (time_detail::ps_resolution() && t.value() < time_detail::kExactPs)
    return static_cast<Cycles>(round_half_up(static_cast<double>(t.value()) * 1000.0 * 1e-15 * clock_hz));
  return static_cast<Cycles>(std::llround(t.to_seconds() * clock_hz));
}

// The current simulated time in picoseconds (time_to_cycles at 1 THz).
inline std::uint64_t now_ps_value() {
  const sc_core::sc_time& t = sc_core::sc_time_stamp();
  if (time_detail::ps_resolution() && t.value() < time_detail::kExactPs) return t.value();
  return time_to_cycles(t, 1e12);
}

}  // namespace tpusim::arch
