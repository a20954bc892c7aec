// Fuzzes the serving simulation's readers of user input: the token-length
// distributions (`serve --input/--output` text and hist:FILE.csv), the
// request trace (`--trace-csv`) and the step-cost cache (`--step-cache`).
// The first byte picks the reader (its value mod 4: the seeds in
// tests/fuzz/seeds/serve/ begin with '0' to '3'), the rest is its text or
// its file. Each
// may throw only UsageError, and what it accepts must be usable:
// - a distribution: its mean finite, its samples whole token counts >= 1
//   (within max_value() but for the normal's clamped tail);
// - a trace: requests in arrival order, ids 0..n-1, counts in [1, 2^24];
// - a cache: step costs finite and > 0 anywhere on a grid, and the file
//   saved over itself loads again to the same points.
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "sim/cli/cli.h"
#include "sim/serve/request_workload.h"
#include "sim/serve/step_cost.h"

namespace serve = tpusim::sim::serve;
using tpusim::sim::UsageError;

namespace {

const std::string& scratch() {
  static const std::string path = "/tmp/tpusim-fuzz-serve-" + std::to_string(::getpid());
  return path;
}

void write_scratch(const std::string& text) {
  std::ofstream out(scratch(), std::ios::binary | std::ios::trunc);
  out << text;
}

void check_dist(const serve::LengthDist& d) {
  if (!std::isfinite(d.mean()) || d.mean() < 1) __builtin_trap();
  serve::Rng rng(7);
  for (int i = 0; i < 64; ++i) {
    const std::int64_t v = d.sample(rng);
    if (v < 1) __builtin_trap();
    if (d.kind != serve::LengthDist::Kind::normal && v > d.max_value()) __builtin_trap();
  }
}

void check_trace(const std::vector<serve::Request>& rs) {
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const serve::Request& r = rs[i];
    if (r.id != static_cast<std::int64_t>(i) || r.input < 1 || r.output < 1 || r.input > (1 << 24) ||
        r.output > (1 << 24) || !(r.arrival >= 0) || (i > 0 && r.arrival < rs[i - 1].arrival))
      __builtin_trap();
  }
}

// The key the fuzzed cache lines must carry to be this model's points
// (the seeds use it; lines of other keys are validated and kept).
constexpr const char* kKey = "00000000000000ff";

void check_cache() {
  const serve::StepGrid grid = serve::make_grid(4096, 64, 8192, 8192, 16);
  serve::StepCostModel m(grid, kKey);
  m.load(scratch());
  for (std::int64_t p : {0, 16, 100, 4096})
    for (std::int64_t b : {0, 1, 7, 64})
      for (double x : {0.0, 900.0})
        for (double n : {1.0, 3.5}) {
          if (p == 0 && b == 0) continue;
          serve::StepShape s;
          s.prefill = p;
          s.decode = b;
          s.context = b > 0 ? 300 : 0;
          s.prefix = p > 0 ? x : 0;
          s.chunks = p > 1 ? n : 1;
          const double t = m.cost(s);
          if (!std::isfinite(t) || !(t > 0)) __builtin_trap();
        }
  // Loaded, then saved over itself (as `serve` does), the file loads again
  // to the same points.
  m.save(scratch(), "fuzz");
  serve::StepCostModel again(grid, kKey);
  again.load(scratch());
  if (again.size() != m.size()) __builtin_trap();
  for (const auto& [p, v] : m.points())
    if (!again.has(p) || std::abs(again.value(p) - v) > 1e-8 * v) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 4) {
      case 0:  // --input text; its file form is case 1
        if (text.rfind("hist:", 0) == 0 && text.find('=') == std::string::npos) return 0;
        check_dist(serve::parse_length_dist("fuzz", text));
        break;
      case 1:
        write_scratch(text);
        check_dist(serve::parse_length_dist("fuzz", "hist:" + scratch()));
        break;
      case 2:
        write_scratch(text);
        check_trace(serve::read_trace_csv(scratch()));
        break;
      default:
        write_scratch(text);
        check_cache();
        break;
    }
  } catch (const UsageError&) {}
  return 0;
}
