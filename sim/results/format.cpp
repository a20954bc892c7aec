// Text encodings for the result writers; see format.h.
#include "sim/results/format.h"

#include <fmt/format.h>

#include <cmath>

namespace tpusim::sim {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string json_string(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (u < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(u));
        else
          out += c;
    }
  }
  out += '"';
  return out;
}

std::string format_real(double v, int significant) {
  if (!std::isfinite(v)) return "";
  if (v == 0) return "0";  // no "-0"
  return fmt::format("{:.{}g}", v, significant);
}

std::string format_real(const std::optional<double>& v, int significant) {
  return v ? format_real(*v, significant) : std::string();
}

std::string format_stat(double v) {
  if (!std::isfinite(v)) return "";
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    if (v == 0) return "0";
    return fmt::format("{:.0f}", v);
  }
  return format_real(v, 9);
}

std::string format_fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "";
  std::string s = fmt::format("{:.{}f}", v, decimals);
  // -0.000 would differ from 0.000 between otherwise equal runs.
  if (s.find_first_not_of("-0.") == std::string::npos && !s.empty() && s[0] == '-') s.erase(0, 1);
  return s;
}

std::string config_hash(const std::string& text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", h);
}

}  // namespace tpusim::sim
