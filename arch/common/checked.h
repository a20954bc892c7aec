// Overflow-checked integer arithmetic for sizes, counts and times derived
// from user input (tensor dims, byte counts, FLOPs, picoseconds).
// Models: a result that does not fit its type as std::nullopt, so callers
// can report the tensor or key that caused it instead of wrapping silently.
// Leaves out: saturation (a wrapped or clamped number is never simulated).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>

namespace tpusim::arch {

template <class T>
std::optional<T> checked_mul(T a, T b) {
  T r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

template <class T>
std::optional<T> checked_add(T a, T b) {
  T r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Product of all factors, nullopt if any step overflows.
template <class T>
std::optional<T> checked_product(std::initializer_list<T> xs) {
  T r = 1;
  for (T x : xs) {
    auto p = checked_mul(r, x);
    if (!p) return std::nullopt;
    r = *p;
  }
  return r;
}

// A double (e.g. seconds * 1e12) as an int64, nullopt when it is NaN or
// outside the int64 range.
inline std::optional<std::int64_t> checked_llround(double v) {
  if (!(v > -9.2e18 && v < 9.2e18)) return std::nullopt;
  return static_cast<std::int64_t>(v < 0 ? v - 0.5 : v + 0.5);
}

}  // namespace tpusim::arch
