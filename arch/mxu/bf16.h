// bfloat16 conversion as the MXU's operand path does it: f32 to bf16 by
// round-to-nearest-even on the upper 16 bits (bf16 = f32 with 7 explicit
// mantissa bits). Values stay in a float whose low 16 bits are zero, because
// every bf16 is exactly a float and a bf16 x bf16 product is exact in f32
// (8 + 8 significant bits fit in 24).
// Leaves out: denormal flushing (kept, as RNE on the bit pattern keeps it)
// and signalling-NaN payloads (any NaN becomes a quiet NaN).
#pragma once

#include <cstdint>
#include <cstring>

namespace tpusim::arch {

inline float round_to_bf16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) {
    u = (u | 0x00400000u) & 0xffff0000u;  // NaN stays NaN after truncation
  } else {
    // Adding 0x7fff plus the lowest kept bit rounds halfway cases to even;
    // a carry into the exponent is the correct round-up (to inf at the top).
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
  }
  float r;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

}  // namespace tpusim::arch
