// Text encodings of the result writers: CSV quoting, JSON escaping, number
// formats and the FNV-1a config digest.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sim/results/format.h"

namespace tpusim::sim {
namespace {

TEST(ResultsFormat, CsvFieldQuotesOnlyWhenNeeded) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("a b"), "a b");
  EXPECT_EQ(csv_field("[8,128]"), "\"[8,128]\"");
  // RFC 4180: embedded quotes are doubled inside a quoted field.
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field("cr\r"), "\"cr\r\"");
}

TEST(ResultsFormat, JsonStringEscapes) {
  EXPECT_EQ(json_string("mm0"), "\"mm0\"");
  EXPECT_EQ(json_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_string("t\tn\n"), "\"t\\tn\\n\"");
  EXPECT_EQ(json_string(std::string("\x01", 1)), "\"\\u0001\"");
  EXPECT_EQ(json_string("\xc3\xa9"), "\"\xc3\xa9\"");  // UTF-8 passes through
}

TEST(ResultsFormat, RealNumbersAreFixedPrecisionAndNeverNan) {
  EXPECT_EQ(format_real(0.25), "0.25");
  EXPECT_EQ(format_real(1.0 / 3.0), "0.333333");
  EXPECT_EQ(format_real(1.0 / 3.0, 9), "0.333333333");
  EXPECT_EQ(format_real(1.5e-5), "1.5e-05");
  EXPECT_EQ(format_real(-0.0), "0");
  EXPECT_EQ(format_real(std::nan("")), "");
  EXPECT_EQ(format_real(std::numeric_limits<double>::infinity()), "");
  EXPECT_EQ(format_real(std::optional<double>{}), "");
  EXPECT_EQ(format_real(std::optional<double>{2.0}), "2");
}

TEST(ResultsFormat, StatsPrintCountsAsIntegers) {
  EXPECT_EQ(format_stat(12345678901.0), "12345678901");
  EXPECT_EQ(format_stat(0.0), "0");
  EXPECT_EQ(format_stat(-3.0), "-3");
  EXPECT_EQ(format_stat(0.123456789012), "0.123456789");
  EXPECT_EQ(format_stat(1e300), "1e+300");  // integral but beyond 2^53
}

TEST(ResultsFormat, FixedPointForTimestamps) {
  EXPECT_EQ(format_fixed(8.202, 6), "8.202000");
  EXPECT_EQ(format_fixed(0.00066666666, 6), "0.000667");
  EXPECT_EQ(format_fixed(-0.0000001, 6), "0.000000");
}

TEST(ResultsFormat, ConfigHashIsFnv1a64) {
  // Test vectors of the FNV reference (http://www.isthe.com/chongo/tech/comp/fnv/):
  // the empty string gives the offset basis itself.
  EXPECT_EQ(config_hash(""), "cbf29ce484222325");
  EXPECT_EQ(config_hash("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(config_hash("foobar"), "85944171f73967e8");
  EXPECT_NE(config_hash("mxu:\n  rows: 128\n"), config_hash("mxu:\n  rows: 256\n"));
  EXPECT_EQ(config_hash("x").size(), 16u);
}

}  // namespace
}  // namespace tpusim::sim
