// Text encodings the result writers share: CSV fields (RFC 4180 quoting),
// JSON strings, locale-independent number formats, and the config digest.
// Every function is a pure function of its arguments, so the same run
// writes byte-identical files.
// Leaves out: parsing (nothing in tpusim reads these files back).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tpusim::sim {

// A CSV field: quoted when it holds a comma, a double quote, CR or LF,
// with embedded quotes doubled (RFC 4180); otherwise unchanged.
std::string csv_field(const std::string& s);

// A JSON string literal including the surrounding quotes: `"` and `\`
// escaped, control characters as \n, \t, ... or \u00XX. Bytes >= 0x80
// pass through (the input is assumed to be UTF-8).
std::string json_string(const std::string& s);

// A real number with `significant` significant digits, printf %g style
// ("0.25", "1.5e-05"), independent of the C locale. Non-finite values
// become "" so that no CSV cell holds "nan" or "inf".
std::string format_real(double v, int significant = 6);
// Empty when absent (a ratio whose denominator is zero).
std::string format_real(const std::optional<double>& v, int significant = 6);

// An integer when `v` is integral and exactly representable (|v| < 2^53),
// otherwise format_real(v, 9). For statistics, whose doubles usually hold
// counts.
std::string format_stat(double v);

// Fixed-point with `decimals` digits after the point (trace timestamps).
std::string format_fixed(double v, int decimals);

// 64-bit FNV-1a over the bytes of `text` (offset basis 0xcbf29ce484222325,
// prime 0x100000001b3; http://www.isthe.com/chongo/tech/comp/fnv/), as 16
// lowercase hex digits. Stable across platforms and runs; not
// cryptographic: it tells configs apart, it does not authenticate them.
std::string config_hash(const std::string& text);

}  // namespace tpusim::sim
