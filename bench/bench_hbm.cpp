// HBM model speed and headline figures, printed as "name value unit" lines:
// detailed-model requests per wall second (sequential and random 64-byte
// reads; the random ones all submitted at once, and fed over time),
// calibrated-model simulated bytes per wall second, the wall time to
// simulate a 64 GiB sequential read on TPU v5e's HBM (2 stacks HBM2e) in
// calibrated mode (with and without its one-time calibration), and the
// measured sequential/random efficiencies and unloaded latency; the same
// for the per-pseudo-channel model (channel).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <systemc>

#include "arch/hbm/calibrated_hbm.h"
#include "arch/hbm/channel_hbm.h"
#include "arch/hbm/detailed_dram.h"
#include "tests/unit/arch/hbm_test_util.h"

using namespace tpusim;
using namespace tpusim::arch;

namespace {
double wall(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
void out(const char* name, double v, const char* unit) {
  std::printf("%-40s %14.4g %s\n", name, v, unit);
  std::fflush(stdout);
}
}  // namespace

int sc_main(int, char*[]) {
  const HbmConfig v5e = test::load_hbm_preset("hbm2e", 2);
  std::printf("# HBM bench: TPU v5e memory, 2 stacks HBM2e, peak %.1f GB/s\n", hbm_peak_bandwidth(v5e) / 1e9);

  {  // detailed, sequential
    DetailedDram d(v5e);
    HbmTransfer t;
    t.row_bytes = 64ull << 20;
    t.atom_bytes = 64;
    const auto t0 = std::chrono::steady_clock::now();
    d.submit(t, 0);
    Ps end = 0;
    for (const auto& c : d.run_until(kNever / 4)) end = c.time;
    const double w = wall(t0);
    out("detailed_seq_requests_per_wall_s", static_cast<double>(t.bytes()) / 64 / w, "req/s");
    out("detailed_seq_efficiency", static_cast<double>(t.bytes()) / ps_to_seconds(end) / d.peak_bandwidth(), "ratio");
  }
  {  // detailed, random 64 B reads
    DetailedDram d(v5e);
    std::mt19937_64 rng(7);
    const std::uint64_t n = 1000000;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < n; ++i) d.submit_request((rng() % (16ull << 30)) & ~63ull, 64, false, 0);
    Ps end = 0;
    for (const auto& c : d.run_until(kNever / 4)) end = std::max(end, c.time);
    const double w = wall(t0);
    out("detailed_random_requests_per_wall_s", static_cast<double>(n) / w, "req/s");
    out("detailed_random_efficiency", n * 64.0 / ps_to_seconds(end) / d.peak_bandwidth(), "ratio");
  }
  {  // detailed, the same random reads fed over time as a DMA engine would:
     // one every 200 ps (a little below what random reads sustain), submitted
     // and run 1 us of simulated time at a time
    DetailedDram d(v5e);
    std::mt19937_64 rng(7);
    const std::uint64_t n = 1000000;
    const Ps gap = 200, step = 1000000;
    std::uint64_t i = 0, done = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (Ps t = step; i < n; t += step) {
      for (; i < n && static_cast<Ps>(i) * gap < t; ++i)
        d.submit_request((rng() % (16ull << 30)) & ~63ull, 64, false, static_cast<Ps>(i) * gap);
      done += d.run_until(t).size();
    }
    done += d.run_until(kNever / 4).size();
    const double w = wall(t0);
    if (done != n) std::printf("# paced run completed %llu of %llu\n", (unsigned long long)done, (unsigned long long)n);
    out("detailed_paced_random_requests_per_wall_s", static_cast<double>(n) / w, "req/s");
  }
  {  // unloaded latency
    DetailedDram d(v5e);
    HbmTransfer t;
    t.row_bytes = 64;
    out("unloaded_read_latency_64B", ps_to_seconds(d.transfer(t, 0)) * 1e9, "ns");
  }
  {  // calibrated: 64 GiB sequential read, first with calibration, then cached
    CalibratedHbm c(v5e);
    HbmTransfer t;
    t.row_bytes = 64ull << 30;
    t.atom_bytes = 64;
    auto t0 = std::chrono::steady_clock::now();
    const Ps first = c.transfer(t, 0);
    out("calibrated_64GiB_wall_incl_calibration", wall(t0), "s");
    out("calibrated_64GiB_simulated_time", ps_to_seconds(first), "s");
    out("calibrated_64GiB_efficiency", static_cast<double>(t.bytes()) / ps_to_seconds(first) / c.peak_bandwidth(),
        "ratio");
    t0 = std::chrono::steady_clock::now();
    const Ps second = c.transfer(t, first);
    out("calibrated_64GiB_wall_cached", wall(t0), "s");
    // Many transfers of mixed sizes, some overlapping: simulated bytes per wall second.
    const std::uint64_t sizes[] = {1ull << 20, 4ull << 20, 16ull << 20, 64ull << 20};
    for (auto s : sizes) {  // warm the cache once per size
      HbmTransfer x;
      x.row_bytes = s;
      x.atom_bytes = 64;
      c.alone_time(x);
    }
    std::uint64_t bytes = 0;
    // After the second copy (back to back with the first, so it met
    // refreshes the first had postponed: a little longer than `first`).
    Ps at = second;
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 200000; ++i) {
      HbmTransfer x;
      x.row_bytes = sizes[i % 4];
      x.base = static_cast<std::uint64_t>(i % 7) << 30;
      x.atom_bytes = 64;
      c.submit(x, at);
      bytes += x.row_bytes;
      at += 40000000;  // 40 us apart: ~75% load, a few overlap
      c.run_until(at);
    }
    c.run_until(kNever / 4);
    const double w = wall(t0);
    out("calibrated_simulated_bytes_per_wall_s", static_cast<double>(bytes) / w, "B/s");
    out("calibrated_transfers_per_wall_s", 200000 / w, "transfers/s");
  }
  {  // per-pseudo-channel model: the same 64 GiB read, then the same mix
    ChannelHbm c(v5e);
    HbmTransfer t;
    t.row_bytes = 64ull << 30;
    t.atom_bytes = 64;
    auto t0 = std::chrono::steady_clock::now();
    const Ps first = c.transfer(t, 0);
    out("channel_64GiB_wall_incl_calibration", wall(t0), "s");
    out("channel_64GiB_efficiency", static_cast<double>(t.bytes()) / ps_to_seconds(first) / c.peak_bandwidth(),
        "ratio");
    const std::uint64_t sizes[] = {1ull << 20, 4ull << 20, 16ull << 20, 64ull << 20};
    std::uint64_t bytes = 0;
    Ps at = first;
    t0 = std::chrono::steady_clock::now();
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
      HbmTransfer x;
      x.row_bytes = sizes[i % 4];
      x.base = static_cast<std::uint64_t>(i % 7) << 30;
      x.atom_bytes = 64;
      c.submit(x, at);
      bytes += x.row_bytes;
      at += 40000000;
      c.run_until(at);
    }
    c.run_until(kNever / 4);
    const double w = wall(t0);
    out("channel_simulated_bytes_per_wall_s", static_cast<double>(bytes) / w, "B/s");
    out("channel_transfers_per_wall_s", n / w, "transfers/s");
  }
  return 0;
}

#include "bench/quiet_main.h"
