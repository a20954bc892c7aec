// Element data types that tensors and MXU/VPU operations use.
// Models: storage width in bits and a stable name for files and CSVs.
// Leaves out: numeric behaviour (rounding, saturation); functional models
// that need values convert explicitly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tpusim::arch {

enum class DType : std::uint8_t { f32, bf16, fp8_e4m3, fp8_e5m2, int8, int4 };

inline constexpr DType kAllDTypes[] = {DType::f32,      DType::bf16, DType::fp8_e4m3,
                                       DType::fp8_e5m2, DType::int8, DType::int4};

// Storage width in bits (int4 packs two per byte).
constexpr int dtype_bits(DType t) {
  switch (t) {
    case DType::f32: return 32;
    case DType::bf16: return 16;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2:
    case DType::int8: return 8;
    case DType::int4: return 4;
  }
  return 0;
}

// Bytes for n elements, rounded up to whole bytes.
constexpr std::uint64_t dtype_bytes(DType t, std::uint64_t n) {
  return (n * static_cast<std::uint64_t>(dtype_bits(t)) + 7) / 8;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::fp8_e4m3: return "fp8_e4m3";
    case DType::fp8_e5m2: return "fp8_e5m2";
    case DType::int8: return "int8";
    case DType::int4: return "int4";
  }
  return "?";
}

// Parses the names dtype_name() produces; "fp8" is accepted as fp8_e4m3.
inline std::optional<DType> parse_dtype(std::string_view s) {
  for (DType t : kAllDTypes)
    if (dtype_name(t) == s) return t;
  if (s == "fp8") return DType::fp8_e4m3;
  return std::nullopt;
}

}  // namespace tpusim::arch
