// The interface every HBM timing model offers (hbm.model: the detailed
// DRAM model, or one of the two calibrated ones, per pseudo-channel
// `channel` or whole-memory `calibrated`): transfers (whole copies, possibly 2-D strided) are
// submitted with their arrival time, run_until(t) advances the model and
// returns the transfers whose last byte was delivered by t, and
// next_event_time() says when something may next happen, so a SystemC shell
// can wait on time instead of ticking a clock. Times are integer picoseconds.
// Leaves out: data values (timing only), ECC, power.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "arch/common/chip_config.h"
#include "arch/common/derived.h"
#include "arch/common/stats.h"

namespace tpusim::arch {

using Ps = std::int64_t;  // picoseconds
inline constexpr Ps kNever = std::numeric_limits<Ps>::max();

inline Ps seconds_to_ps(double s) { return std::llround(s * 1e12); }
inline double ps_to_seconds(Ps p) { return static_cast<double>(p) * 1e-12; }

// A copy to or from HBM: `rows` rows of `row_bytes`, consecutive rows
// `stride` bytes apart (rows = 1 or stride = row_bytes: contiguous).
// It is split into atoms of `atom_bytes` (never crossing the address
// mapping's interleave unit); atom i arrives at arrival + i * atom_interval
// (the issuing engine's rate limit; 0 = all at once).
struct HbmTransfer {
  std::uint64_t base = 0;
  std::uint64_t row_bytes = 0;
  std::uint64_t rows = 1;
  std::uint64_t stride = 0;
  bool write = false;
  std::uint64_t atom_bytes = 64;
  double atom_interval_ps = 0;
  std::uint64_t bytes() const { return row_bytes * rows; }
  bool contiguous() const { return rows <= 1 || stride == row_bytes; }
};

struct HbmCompletion {
  std::uint64_t id = 0;  // as returned by submit()
  Ps time = 0;           // when the last byte was delivered
};

class HbmModel {
 public:
  virtual ~HbmModel() = default;
  // Arrival must not be earlier than the last run_until() limit.
  virtual std::uint64_t submit(const HbmTransfer& t, Ps arrival) = 0;
  // Advances to `limit` and returns transfers completed at or before it, in
  // completion-time order.
  virtual std::vector<HbmCompletion> run_until(Ps limit) = 0;
  // run_until(), appending to `out` (a caller's buffer, reused across calls:
  // a SystemC shell calls this millions of times).
  virtual void collect_until(Ps limit, std::vector<HbmCompletion>& out) {
    for (const HbmCompletion& c : run_until(limit)) out.push_back(c);
  }
  // Earliest time after the last run_until limit at which a command may
  // issue or a transfer complete; kNever when idle.
  virtual Ps next_event_time() const = 0;
  virtual StatList stats() const = 0;
  // Peak bandwidth of the whole memory system, bytes/s.
  virtual double peak_bandwidth() const = 0;

  // Convenience: submit, run event by event until it completes (other
  // transfers' completions on the way are consumed), return its time.
  Ps transfer(const HbmTransfer& t, Ps arrival);
};

// Detailed, channel or calibrated, as config.model says.
std::unique_ptr<HbmModel> make_hbm_model(const HbmConfig& config);

// hbm_peak_bandwidth(const HbmConfig&): bytes per second of all stacks at
// the configured data rate, defined once in arch/common/derived.h.

}  // namespace tpusim::arch
