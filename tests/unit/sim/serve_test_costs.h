// Step costs from a known function for the serving tests (test_serve.cpp,
// test_serve_swap.cpp, test_serve_disagg.cpp): no engine, so every
// expected time follows from the formula.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>

#include "sim/cli/cli.h"
#include "sim/serve/step_cost.h"

namespace tpusim::sim::serve::test {

// A step of P prefill tokens and B decodes over mean context C: a fixed
// launch cost, weights streamed once, per-token compute and KV reads.
// Multilinear in (P, B, C), so grid interpolation reproduces it exactly.
constexpr double cost_fn(double P, double B, double C) { return 4e-3 + 2e-6 * P + 1e-5 * B + 4e-9 * B * C; }

// Every grid point of make_grid(max_tokens, max_batch, max_ctx) at `scale`
// times cost_fn (another slice's steps in the disaggregation tests).
inline StepCostModel filled(std::int64_t max_tokens = 512, std::int64_t max_batch = 32, std::int64_t max_ctx = 2048,
                            double scale = 1) {
  StepCostModel m(make_grid(max_tokens, max_batch, max_ctx), "0123456789abcdef");
  const auto& g = m.grid();
  for (auto p : g.prefill)
    for (auto b : g.decode) {
      if (p + b == 0) continue;
      if (b == 0) {
        m.add({p, 0, 0}, scale * cost_fn(static_cast<double>(p), 0, 0));
        continue;
      }
      for (auto c : g.context)
        m.add({p, b, c}, scale * cost_fn(static_cast<double>(p), static_cast<double>(b), static_cast<double>(c)));
    }
  return m;
}

// Each of `lines`, alone in the cache file `file`, is refused by a model
// of key aaaaaaaaaaaaaaaa on `grid` with a UsageError naming file:1.
inline void expect_cache_lines_refused(const std::string& file, const StepGrid& grid,
                                       std::initializer_list<const char*> lines) {
  for (const std::string line : lines) {
    std::ofstream(file) << line << "\n";
    StepCostModel m(grid, "aaaaaaaaaaaaaaaa");
    try {
      m.load(file);
      ADD_FAILURE() << "accepted '" << line << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(file + ":1:"), std::string::npos) << e.what();
    }
    std::filesystem::remove(file);
  }
}

}  // namespace tpusim::sim::serve::test
