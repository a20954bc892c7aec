// Quantities with units in config files ("1.5 GHz", "819 GB/s", "128 MiB",
// "14 ns", "3.2 GT/s", "175 W", "0.3 pJ") parsed into SI doubles: Hz, bytes/s,
// bytes, seconds, transfers/s per pin, watts, joules. Decimal (kB, MB, GB, TB) and binary
// (KiB, MiB, GiB, TiB) prefixes are distinct; "b" in a rate means bits.
// Also formats SI values back into the shortest text that parses to the
// identical double, so a written config reloads bit-exactly.
// Leaves out: compound units beyond "X/s", temperatures, anything localised.
#pragma once

#include <stdexcept>
#include <string>

namespace tpusim::sim {

enum class UnitKind { frequency, bandwidth, size, time, transfer_rate, power, energy };

// A value that does not parse as the wanted kind of quantity. expected() and
// found() feed a config diagnostic.
class UnitError : public std::invalid_argument {
 public:
  UnitError(std::string expected, std::string found);
  const std::string& expected() const { return expected_; }
  const std::string& found() const { return found_; }

 private:
  std::string expected_;
  std::string found_;
};

// "a frequency such as '1.5 GHz' (Hz, kHz, MHz, GHz)" and the like.
std::string unit_kind_description(UnitKind kind);
// The SI unit a kind is stored in, for documentation: "Hz", "bytes/s", ...
std::string unit_kind_si_name(UnitKind kind);

// Parses "<non-negative number> <unit>"; space between them is optional.
// Throws UnitError for a missing, unknown or wrong-kind unit, a bad number or
// a negative value.
double parse_quantity(const std::string& text, UnitKind kind);

// The shortest "<number> <unit>" whose parse_quantity() is exactly `si`,
// preferring the unit that keeps the number in [1, 1000).
std::string format_quantity(double si, UnitKind kind);

// Shortest decimal text t with strtod(t) * mul / div == value (exactly);
// falls back to 17 significant digits. Shared with the writer for plain
// scaled numbers such as TFLOP/s.
std::string format_scaled(double value, double mul, double div);

}  // namespace tpusim::sim
