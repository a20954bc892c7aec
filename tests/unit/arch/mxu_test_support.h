// Helpers shared by the MXU tests: configs, random operands and the plain
// matmuls the PE reference must equal.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "arch/common/chip_config.h"
#include "arch/mxu/bf16.h"
#include "arch/mxu/pe_array_reference.h"

namespace tpusim::arch::mxu_test {

inline MxuConfig small_config(int rows, int cols, bool double_buffer = true) {
  MxuConfig c;
  c.rows = rows;
  c.cols = cols;
  c.weight_double_buffer = double_buffer;
  // v5e-style rates (JAX tpu_info / Cloud docs: int8 2x bf16).
  c.throughput = {{DType::bf16, 1.0}, {DType::f32, 1.0}, {DType::int8, 2.0}};
  return c;
}

inline RefMatmul random_matmul(std::mt19937& rng, std::int64_t m, std::int64_t k, std::int64_t n, DType dt,
                               MxuCycles ready = 0) {
  RefMatmul op;
  op.m = m;
  op.k = k;
  op.n = n;
  op.dtype = dt;
  op.ready = ready;
  std::uniform_int_distribution<int> i8(-128, 127);
  std::normal_distribution<float> nd(0.f, 1.f);
  const auto fill = [&](std::vector<float>& v, std::size_t count) {
    v.resize(count);
    for (float& x : v) x = dt == DType::int8 ? static_cast<float>(i8(rng)) : nd(rng);
  };
  fill(op.a, static_cast<std::size_t>(m * k));
  fill(op.b, static_cast<std::size_t>(k * n));
  return op;
}

// Exact integer matmul (int64 sums; the tests stay inside int32).
inline std::vector<std::int32_t> plain_matmul_i8(const RefMatmul& op) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(op.m * op.n));
  for (std::int64_t m = 0; m < op.m; ++m)
    for (std::int64_t n = 0; n < op.n; ++n) {
      std::int64_t s = 0;
      for (std::int64_t k = 0; k < op.k; ++k)
        s += static_cast<std::int64_t>(op.a[static_cast<std::size_t>(m * op.k + k)]) *
             static_cast<std::int64_t>(op.b[static_cast<std::size_t>(k * op.n + n)]);
      out[static_cast<std::size_t>(m * op.n + n)] = static_cast<std::int32_t>(s);
    }
  return out;
}

// bf16 inputs, f32 sums in the array's order: for each K tile of `rows`,
// a partial sum from 0 in k order, then added to the running output.
inline std::vector<float> plain_matmul_bf16_blocked(const RefMatmul& op, std::int64_t rows) {
  std::vector<float> out(static_cast<std::size_t>(op.m * op.n), 0.f);
  for (std::int64_t m = 0; m < op.m; ++m)
    for (std::int64_t n = 0; n < op.n; ++n) {
      float acc = 0.f;
      for (std::int64_t k0 = 0; k0 < op.k; k0 += rows) {
        float part = 0.f;
        for (std::int64_t k = k0; k < std::min(op.k, k0 + rows); ++k)
          part += round_to_bf16(op.a[static_cast<std::size_t>(m * op.k + k)]) *
                  round_to_bf16(op.b[static_cast<std::size_t>(k * op.n + n)]);
        acc += part;
      }
      out[static_cast<std::size_t>(m * op.n + n)] = acc;
    }
  return out;
}

}  // namespace tpusim::arch::mxu_test
