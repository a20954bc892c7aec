// Unit parser: every unit kind, decimal vs binary prefixes, bits vs bytes,
// and the errors for bad, missing, wrong-kind units and negative values.
// Also that format_quantity() text parses back to the identical double.
#include <gtest/gtest.h>

#include "sim/config/units.h"

namespace tpusim::sim {
namespace {

TEST(Units, Frequency) {
  EXPECT_DOUBLE_EQ(parse_quantity("1.5 GHz", UnitKind::frequency), 1.5e9);
  EXPECT_DOUBLE_EQ(parse_quantity("940 MHz", UnitKind::frequency), 940e6);
  EXPECT_DOUBLE_EQ(parse_quantity("700MHz", UnitKind::frequency), 700e6);
  EXPECT_DOUBLE_EQ(parse_quantity("  32 kHz ", UnitKind::frequency), 32e3);
  EXPECT_DOUBLE_EQ(parse_quantity("5 Hz", UnitKind::frequency), 5);
}

TEST(Units, BandwidthBytesAndBits) {
  EXPECT_DOUBLE_EQ(parse_quantity("819 GB/s", UnitKind::bandwidth), 819e9);
  EXPECT_DOUBLE_EQ(parse_quantity("1.2 TB/s", UnitKind::bandwidth), 1.2e12);
  EXPECT_DOUBLE_EQ(parse_quantity("45 GB/s", UnitKind::bandwidth), 45e9);
  // Bits: 1600 Gbps / 8 = 200 GB/s.
  EXPECT_DOUBLE_EQ(parse_quantity("1600 Gbps", UnitKind::bandwidth), 200e9);
  EXPECT_DOUBLE_EQ(parse_quantity("500 Gb/s", UnitKind::bandwidth), 62.5e9);
  EXPECT_DOUBLE_EQ(parse_quantity("1 GiB/s", UnitKind::bandwidth), 1073741824.0);
}

TEST(Units, SizesDecimalAndBinaryAreDistinct) {
  EXPECT_DOUBLE_EQ(parse_quantity("128 MiB", UnitKind::size), 128.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_quantity("16 GB", UnitKind::size), 16e9);
  EXPECT_DOUBLE_EQ(parse_quantity("16 GiB", UnitKind::size), 16.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_quantity("1 KiB", UnitKind::size), 1024);
  EXPECT_DOUBLE_EQ(parse_quantity("1 kB", UnitKind::size), 1000);
  EXPECT_DOUBLE_EQ(parse_quantity("64 B", UnitKind::size), 64);
  EXPECT_NE(parse_quantity("16 GB", UnitKind::size), parse_quantity("16 GiB", UnitKind::size));
}

TEST(Units, Time) {
  EXPECT_DOUBLE_EQ(parse_quantity("1 us", UnitKind::time), 1e-6);
  EXPECT_DOUBLE_EQ(parse_quantity("14 ns", UnitKind::time), 14e-9);
  EXPECT_DOUBLE_EQ(parse_quantity("0.625 ns", UnitKind::time), 0.625e-9);
  EXPECT_DOUBLE_EQ(parse_quantity("3.9 us", UnitKind::time), 3.9e-6);
  EXPECT_DOUBLE_EQ(parse_quantity("1 ms", UnitKind::time), 1e-3);
  EXPECT_DOUBLE_EQ(parse_quantity("1 s", UnitKind::time), 1);
  EXPECT_DOUBLE_EQ(parse_quantity("500 ps", UnitKind::time), 500e-12);
}

TEST(Units, TransferRatePerPin) {
  EXPECT_DOUBLE_EQ(parse_quantity("3.2 GT/s", UnitKind::transfer_rate), 3.2e9);
  EXPECT_DOUBLE_EQ(parse_quantity("6400 MT/s", UnitKind::transfer_rate), 6.4e9);
  // Per pin, one bit per transfer: "Gbps" is not divided by 8 here.
  EXPECT_DOUBLE_EQ(parse_quantity("3.2 Gbps", UnitKind::transfer_rate), 3.2e9);
}

TEST(Units, Power) {
  EXPECT_DOUBLE_EQ(parse_quantity("175 W", UnitKind::power), 175);
  EXPECT_DOUBLE_EQ(parse_quantity("500 mW", UnitKind::power), 0.5);
  EXPECT_DOUBLE_EQ(parse_quantity("0.4 pJ", UnitKind::energy), 0.4e-12);
  EXPECT_DOUBLE_EQ(parse_quantity("1 nJ", UnitKind::energy), 1e-9);
  EXPECT_THROW(parse_quantity("4 W", UnitKind::energy), UnitError);  // a power, not an energy
}

// The error says what was expected (the kind, with an example) and what
// was found, and why.
void expect_error(const std::string& text, UnitKind kind, const std::string& expected_part,
                  const std::string& found_part) {
  try {
    parse_quantity(text, kind);
    ADD_FAILURE() << "no error for '" << text << "'";
  } catch (const UnitError& e) {
    EXPECT_NE(e.expected().find(expected_part), std::string::npos) << e.expected();
    EXPECT_NE(e.found().find(found_part), std::string::npos) << e.found();
    EXPECT_NE(std::string(e.what()).find("expected"), std::string::npos);
  }
}

TEST(Units, Errors) {
  expect_error("1500", UnitKind::frequency, "frequency such as '1.5 GHz'", "no unit");
  expect_error("1.5 GB/s", UnitKind::frequency, "frequency", "that is a bandwidth");
  expect_error("128 MeB", UnitKind::size, "size", "unknown unit 'MeB'");
  expect_error("-45 GB/s", UnitKind::bandwidth, "non-negative bandwidth", "'-45 GB/s'");
  expect_error("GHz", UnitKind::frequency, "frequency", "no number");
  expect_error("", UnitKind::time, "time", "no number");
  expect_error("14 ns", UnitKind::size, "size", "that is a time");
  expect_error("3.2 GT/s", UnitKind::bandwidth, "bandwidth", "that is a transfer rate");
  expect_error("1e999 GHz", UnitKind::frequency, "frequency", "out of range");
}

TEST(Units, FormatRoundTripsExactly) {
  struct Case {
    const char* text;
    UnitKind kind;
  } cases[] = {{"1.5 GHz", UnitKind::frequency},
               {"940 MHz", UnitKind::frequency},
               {"819 GB/s", UnitKind::bandwidth},
               {"1600 Gbps", UnitKind::bandwidth},
               {"16 GiB", UnitKind::size},
               {"16 GB", UnitKind::size},
               {"0.625 ns", UnitKind::time},
               {"3.9 us", UnitKind::time},
               {"0.5556 ns", UnitKind::time},
               {"1.4286 ns", UnitKind::time},
               {"3.2 GT/s", UnitKind::transfer_rate},
               {"175 W", UnitKind::power},
               {"0.4 pJ", UnitKind::energy},
               {"3.9 pJ", UnitKind::energy},
               {"0 B", UnitKind::size},
               {"1 ms", UnitKind::time}};
  for (const auto& c : cases) {
    double v = parse_quantity(c.text, c.kind);
    std::string t = format_quantity(v, c.kind);
    EXPECT_EQ(parse_quantity(t, c.kind), v) << c.text << " -> " << t;
  }
  // Readable choice of unit: the number lands in [1, 1000).
  EXPECT_EQ(format_quantity(16.0 * 1024 * 1024 * 1024, UnitKind::size), "16 GiB");
  EXPECT_EQ(format_quantity(819.2e9, UnitKind::bandwidth), "819.2 GB/s");
  EXPECT_EQ(format_quantity(60e-9, UnitKind::time), "60 ns");
}

}  // namespace
}  // namespace tpusim::sim
