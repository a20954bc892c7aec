// Unit tables and the quantity parser/formatter; see units.h.
#include "sim/config/units.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace tpusim::sim {
namespace {

// value_si = number * mul / div. Sub-unit scales divide by an exact power
// of ten (1e9 is exact in binary; 1e-9 is not), so "14 ns" is 14/1e9.
struct Unit {
  const char* name;
  double mul;
  double div;
};

const std::vector<Unit>& units_of(UnitKind kind) {
  static const std::vector<Unit> freq{
      {"Hz", 1, 1}, {"kHz", 1e3, 1}, {"MHz", 1e6, 1}, {"GHz", 1e9, 1}, {"THz", 1e12, 1}};
  // Bit rates: "Gbps" and "Gb/s" are bits per second, 8 bits to a byte.
  static const std::vector<Unit> bw{{"B/s", 1, 1},
                                    {"kB/s", 1e3, 1},
                                    {"KB/s", 1e3, 1},
                                    {"MB/s", 1e6, 1},
                                    {"GB/s", 1e9, 1},
                                    {"TB/s", 1e12, 1},
                                    {"KiB/s", 1024.0, 1},
                                    {"MiB/s", 1048576.0, 1},
                                    {"GiB/s", 1073741824.0, 1},
                                    {"TiB/s", 1099511627776.0, 1},
                                    {"bps", 1, 8},
                                    {"kbps", 1e3, 8},
                                    {"Mbps", 1e6, 8},
                                    {"Gbps", 1e9, 8},
                                    {"Tbps", 1e12, 8},
                                    {"b/s", 1, 8},
                                    {"kb/s", 1e3, 8},
                                    {"Mb/s", 1e6, 8},
                                    {"Gb/s", 1e9, 8},
                                    {"Tb/s", 1e12, 8}};
  static const std::vector<Unit> size{{"B", 1, 1},
                                      {"kB", 1e3, 1},
                                      {"KB", 1e3, 1},
                                      {"MB", 1e6, 1},
                                      {"GB", 1e9, 1},
                                      {"TB", 1e12, 1},
                                      {"KiB", 1024.0, 1},
                                      {"MiB", 1048576.0, 1},
                                      {"GiB", 1073741824.0, 1},
                                      {"TiB", 1099511627776.0, 1}};
  static const std::vector<Unit> time{{"s", 1, 1},    {"ms", 1, 1e3}, {"us", 1, 1e6},
                                      {"µs", 1, 1e6}, {"ns", 1, 1e9}, {"ps", 1, 1e12}};
  // Per-pin signalling rate: one bit per transfer per pin, so "Gbps" here
  // means 1e9 transfers/s (unlike in a bandwidth).
  static const std::vector<Unit> rate{{"T/s", 1, 1},    {"kT/s", 1e3, 1}, {"MT/s", 1e6, 1},
                                      {"GT/s", 1e9, 1}, {"bps", 1, 1},    {"Mbps", 1e6, 1},
                                      {"Gbps", 1e9, 1}, {"Mb/s", 1e6, 1}, {"Gb/s", 1e9, 1}};
  static const std::vector<Unit> power{{"W", 1, 1}, {"mW", 1, 1e3}, {"kW", 1e3, 1}};
  static const std::vector<Unit> energy{{"J", 1, 1},    {"mJ", 1, 1e3},  {"uJ", 1, 1e6}, {"µJ", 1, 1e6},
                                        {"nJ", 1, 1e9}, {"pJ", 1, 1e12}, {"fJ", 1, 1e15}};
  switch (kind) {
    case UnitKind::frequency: return freq;
    case UnitKind::bandwidth: return bw;
    case UnitKind::size: return size;
    case UnitKind::time: return time;
    case UnitKind::transfer_rate: return rate;
    case UnitKind::power: return power;
    case UnitKind::energy: return energy;
  }
  return freq;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// Which kind a unit belongs to, to say "that is a bandwidth" when a size
// was expected.
const char* kind_noun(UnitKind k) {
  switch (k) {
    case UnitKind::frequency: return "a frequency";
    case UnitKind::bandwidth: return "a bandwidth";
    case UnitKind::size: return "a size";
    case UnitKind::time: return "a time";
    case UnitKind::transfer_rate: return "a transfer rate";
    case UnitKind::power: return "a power";
    case UnitKind::energy: return "an energy";
  }
  return "a quantity";
}

}  // namespace

UnitError::UnitError(std::string expected, std::string found)
    : std::invalid_argument("expected " + expected + ", found " + found),
      expected_(std::move(expected)),
      found_(std::move(found)) {}

std::string unit_kind_description(UnitKind kind) {
  static const char* examples[] = {"'1.5 GHz'",  "'819 GB/s'", "'128 MiB'", "'14 ns'",
                                   "'3.2 GT/s'", "'175 W'",    "'0.3 pJ'"};
  std::string units;
  for (const Unit& u : units_of(kind)) {
    if (!units.empty()) units += ", ";
    units += u.name;
  }
  return std::string(kind_noun(kind)) + " such as " + examples[static_cast<int>(kind)] + " (" + units + ")";
}

std::string unit_kind_si_name(UnitKind kind) {
  switch (kind) {
    case UnitKind::frequency: return "Hz";
    case UnitKind::bandwidth: return "bytes/s";
    case UnitKind::size: return "bytes";
    case UnitKind::time: return "s";
    case UnitKind::transfer_rate: return "transfers/s per pin";
    case UnitKind::power: return "W";
    case UnitKind::energy: return "J";
  }
  return "";
}

double parse_quantity(const std::string& text, UnitKind kind) {
  const std::string s = trim(text);
  const std::string found = "'" + text + "'";
  const char* begin = s.c_str();
  char* end = nullptr;
  errno = 0;
  double number = std::strtod(begin, &end);
  if (end == begin || s.empty() || !(s[0] == '-' || s[0] == '+' || s[0] == '.' || (s[0] >= '0' && s[0] <= '9')))
    throw UnitError(unit_kind_description(kind), found + " (no number)");
  if (errno == ERANGE || !std::isfinite(number))
    throw UnitError(unit_kind_description(kind), found + " (number out of range)");
  std::string unit = trim(std::string(end));
  if (unit.empty()) throw UnitError(unit_kind_description(kind), found + " (no unit)");
  const Unit* match = nullptr;
  for (const Unit& u : units_of(kind))
    if (unit == u.name) match = &u;
  if (!match) {
    for (UnitKind other : {UnitKind::frequency, UnitKind::bandwidth, UnitKind::size, UnitKind::time,
                           UnitKind::transfer_rate, UnitKind::power, UnitKind::energy}) {
      if (other == kind) continue;
      for (const Unit& u : units_of(other))
        if (unit == u.name) throw UnitError(unit_kind_description(kind), found + " (that is " + kind_noun(other) + ")");
    }
    throw UnitError(unit_kind_description(kind), found + " (unknown unit '" + unit + "')");
  }
  if (number < 0 || std::signbit(number))
    throw UnitError(std::string("a non-negative ") + (kind_noun(kind) + 2), found);
  return number * match->mul / match->div;
}

std::string format_scaled(double value, double mul, double div) {
  char buf[400];
  const double x = value * div / mul;
  // Plain decimals read best ("60", "14.375"); exponents only for numbers
  // too small or large to print that way.
  if (x == 0 || (std::fabs(x) >= 1e-4 && std::fabs(x) < 1e17)) {
    for (int decimals = 0; decimals <= 17; ++decimals) {
      std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
      if (std::strtod(buf, nullptr) * mul / div == value) return buf;
    }
  }
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, value * div / mul);
    if (std::strtod(buf, nullptr) * mul / div == value) return buf;
  }
  std::snprintf(buf, sizeof buf, "%.17g", value * div / mul);
  return buf;
}

std::string format_quantity(double si, UnitKind kind) {
  const auto& us = units_of(kind);
  // Prefer units in table order whose number lands in [1, 1000); among the
  // exact ones take the shortest text. Bit-based bandwidth units are only a
  // fallback: configs state bytes.
  std::string best;
  for (const Unit& u : us) {
    std::string name = u.name;
    if (kind == UnitKind::bandwidth && u.div == 8) continue;
    if (name == "µs" || name == "µJ" || name == "KB") continue;
    double n = si * u.div / u.mul;
    if (si != 0 && (n < 1 || n >= 1000)) continue;
    std::string num = format_scaled(si, u.mul, u.div);
    if (std::strtod(num.c_str(), nullptr) * u.mul / u.div != si) continue;
    std::string t = num + " " + name;
    if (best.empty() || t.size() < best.size()) best = t;
    if (si == 0) break;
  }
  if (!best.empty()) return best;
  // Base unit with full precision always round-trips.
  return format_scaled(si, us[0].mul, us[0].div) + " " + us[0].name;
}

}  // namespace tpusim::sim
