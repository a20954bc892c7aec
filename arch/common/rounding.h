// Rounding to the nearest integer as std::llround does (halves away from
// zero), inline: the timing models round millions of times per run, and
// the library call was a visible share of it. No SystemC.
#pragma once

#include <cmath>

namespace tpusim::arch {

// std::llround(x) for every x; without the call for 0 <= x < 9.2e18, where
// truncation is the floor and x - floor(x) is exact, so the result is
// llround's.
inline long long round_half_up(double x) {
  if (!(x >= 0.0 && x < 9.2e18)) return std::llround(x);
  const long long i = static_cast<long long>(x);
  return i + (x - static_cast<double>(i) >= 0.5 ? 1 : 0);
}

}  // namespace tpusim::arch
