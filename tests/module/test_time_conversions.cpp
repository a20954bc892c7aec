// The fast cycle <-> SystemC time conversions of arch/common/time.h give
// exactly what the general path gives (seconds as a double, std::llround,
// sc_time(double, SC_PS)), so that using them changes no simulated number.
// Random values over the ranges runs reach, at the clocks of the shipped
// configs and at 1 THz (picoseconds), plus every half-way point.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <systemc>

#include "arch/common/time.h"

using namespace tpusim::arch;

namespace {

const double kClocks[] = {700e6, 940e6, 1.05e9, 1.5e9, 1.75e9, 1.9e9, 3.3e9, 1e12};

// A random value of a random magnitude up to 2^max_bits.
std::uint64_t random_magnitude(std::mt19937_64& rng, int max_bits) {
  const int bits = static_cast<int>(rng() % static_cast<std::uint64_t>(max_bits)) + 1;
  return rng() >> (64 - bits);
}

TEST(TimeConversions, RoundHalfUpIsLlround) {
  std::mt19937_64 rng(1);
  int mismatches = 0;
  for (int i = 0; i < 1000000; ++i) {
    const double x = static_cast<double>(random_magnitude(rng, 62)) / static_cast<double>(1 + rng() % 4096);
    if (round_half_up(x) != std::llround(x)) ++mismatches;
    const double half = std::floor(x) + 0.5;  // exactly half-way
    if (round_half_up(half) != std::llround(half)) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);
  for (double x :
       {0.0, 0.49999999999999994, 0.5, 1.5, 2.5, 4503599627370495.5, 4503599627370497.0, 9.1e18, -0.5, -2.5, 1e19})
    EXPECT_EQ(round_half_up(x), std::llround(x)) << x;
}

TEST(TimeConversions, CyclesToTimeIsTheRoundedPicoseconds) {
  std::mt19937_64 rng(2);
  int mismatches = 0;
  for (double hz : kClocks)
    for (int i = 0; i < 200000; ++i) {
      const Cycles c = random_magnitude(rng, 44);
      const sc_core::sc_time general(static_cast<double>(std::llround(static_cast<double>(c) * 1e12 / hz)),
                                     sc_core::SC_PS);
      if (cycles_to_time(c, hz) != general) ++mismatches;
    }
  EXPECT_EQ(mismatches, 0);
}

TEST(TimeConversions, TimeToCyclesIsTheRoundedSecondsTimesClock) {
  std::mt19937_64 rng(3);
  int mismatches = 0;
  for (double hz : kClocks)
    for (int i = 0; i < 200000; ++i) {
      const sc_core::sc_time t = sc_core::sc_time::from_value(random_magnitude(rng, 50));
      if (time_to_cycles(t, hz) != static_cast<Cycles>(std::llround(t.to_seconds() * hz))) ++mismatches;
      // A cycle's own time converts back to that cycle.
      const Cycles c = random_magnitude(rng, 40);
      const sc_core::sc_time at = cycles_to_time(c, hz);
      if (time_to_cycles(at, hz) != static_cast<Cycles>(std::llround(at.to_seconds() * hz))) ++mismatches;
    }
  EXPECT_EQ(mismatches, 0);
}

TEST(TimeConversions, PicosecondsRoundTrip) {
  std::mt19937_64 rng(4);
  int mismatches = 0;
  for (int i = 0; i < 500000; ++i) {
    const std::uint64_t ps = random_magnitude(rng, 51);
    if (ps_to_time(ps) != sc_core::sc_time(static_cast<double>(ps), sc_core::SC_PS)) ++mismatches;
    if (ps_to_time(ps).value() != ps) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
