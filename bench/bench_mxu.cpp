// Speed of the MXU models: the fast timer in weight tiles and block issues
// per wall second (blocks of A[512,4096] @ B[4096,512] on a 128x128 MXU, the
// shape a lowering pass issues by the thousand), and the PE-level reference
// in PE-cycles per wall second. Prints `name: value` lines on stdout.
#include <chrono>
#include <cstdio>
#include <random>
#include <systemc>

#include "arch/mxu/pe_array_reference.h"
#include "arch/mxu/systolic_timing.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

int sc_main(int, char*[]) {
  using namespace tpusim::arch;
  MxuConfig cfg;  // 128x128, double-buffered
  cfg.throughput[DType::int8] = 2.0;

  // Fast timer: back-to-back blocks with varying M so that both the
  // stream-bound and load-bound branches run; the checksum keeps the calls live.
  {
    MxuTimer timer(cfg);
    const std::int64_t ms[] = {512, 8, 512, 100, 2048, 512, 1, 512};
    const int blocks = 4'000'000;
    std::uint64_t tiles = 0, check = 0;
    MxuCycles ready = 0;
    const auto t0 = Clock::now();
    for (int i = 0; i < blocks; ++i) {
      const MxuOp op{ms[i & 7], 4096, 512, (i & 3) == 3 ? DType::int8 : DType::bf16};
      const MxuOpTiming r = timer.issue(op, ready);
      tiles += r.weight_tiles;
      check += r.finish;
      ready = r.stream_start;
    }
    const double s = seconds_since(t0);
    std::printf("mxu_fast_blocks_per_s: %.3g\n", blocks / s);
    std::printf("mxu_fast_tiles_per_s: %.3g\n", static_cast<double>(tiles) / s);
    std::printf("mxu_fast_ns_per_block: %.3g\n", s * 1e9 / blocks);
    std::printf("mxu_fast_checksum: %llu\n", static_cast<unsigned long long>(check % 1000003));
  }

  // PE reference: a 32x32 array, three back-to-back bf16 and int8 blocks.
  {
    MxuConfig small = cfg;
    small.rows = 32;
    small.cols = 32;
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::uniform_int_distribution<int> i8(-128, 127);
    std::vector<RefMatmul> ops;
    for (int i = 0; i < 3; ++i) {
      RefMatmul op;
      op.m = 96;
      op.k = 96;
      op.n = 64;
      op.dtype = i == 1 ? DType::int8 : DType::bf16;
      for (std::int64_t e = 0; e < op.m * op.k; ++e)
        op.a.push_back(op.dtype == DType::int8 ? static_cast<float>(i8(rng)) : nd(rng));
      for (std::int64_t e = 0; e < op.k * op.n; ++e)
        op.b.push_back(op.dtype == DType::int8 ? static_cast<float>(i8(rng)) : nd(rng));
      ops.push_back(std::move(op));
    }
    PeArrayReference ref(small);
    const auto t0 = Clock::now();
    int runs = 0;
    do {
      ref.run(ops);
      ++runs;
    } while (seconds_since(t0) < 1.0);
    const double s = seconds_since(t0);
    std::printf("mxu_reference_pe_cycles_per_s: %.3g\n", static_cast<double>(ref.pe_cycles_simulated()) / s);
    std::printf("mxu_reference_cycles_per_s: %.3g\n", static_cast<double>(ref.cycles_simulated()) / s);
  }
  return 0;
}

#include "bench/quiet_main.h"
