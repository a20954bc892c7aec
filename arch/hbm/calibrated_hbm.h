// Calibrated fast HBM model: a transfer costs O(1). Its time alone on idle
// memory comes from the detailed model (DetailedDram), measured once per
// pattern class and reused:
//  - pattern class = read/write, atom size, and contiguous or strided
//    (row_bytes, stride); size is counted in units (bytes if contiguous,
//    rows if strided);
//  - up to kExactBytes: a detailed run of exactly that size (cached per
//    size; a small transfer's time depends on which refreshes it meets, which
//    no interpolation captures within 2%). Workloads repeat a few tile sizes,
//    so this stays a handful of short runs;
//  - above: the time at kExactBytes plus the steady-state time per unit,
//    the slope between two long runs (kExactBytes and 4x that), which
//    averages refresh.
// Concurrent transfers share bandwidth by processor sharing: a transfer
// needs S = T_alone - L of service (L = unloaded one-atom latency, paid
// once at the end); with k transfers in service each progresses at rate
// 1/(k * c(k)), where c(k) >= ~1 is the measured interference of k
// concurrent streams of its class (row conflicts between streams), from
// one detailed run of k streams. An issue-rate limit (atom_interval) bounds
// the completion below by the last atom's arrival + L.
// Every calibration run starts at t = 0 on an idle, refresh-phase-0 memory,
// so a small transfer's time is the one it has at that refresh phase.
// Leaves out: streams aligned to hit the same banks at the same time (row
// conflicts make FR-FCFS serve them almost one after another), channel locality of small concurrent transfers (two 4 KiB
// transfers on disjoint channels still share), read/write mixes between
// concurrent transfers (each uses its own class), address alignment.
#pragma once

#include <map>
#include <tuple>
#include <vector>

#include "arch/hbm/hbm_model.h"

namespace tpusim::arch {

class CalibratedHbm : public HbmModel {
 public:
  static constexpr std::uint64_t kExactBytes = 8ull << 20;  // measured exactly below, extrapolated above
  static constexpr int kMaxStreams = 8;

  explicit CalibratedHbm(const HbmConfig& config);

  std::uint64_t submit(const HbmTransfer& t, Ps arrival) override;
  std::vector<HbmCompletion> run_until(Ps limit) override;
  Ps next_event_time() const override;
  StatList stats() const override;
  double peak_bandwidth() const override { return peak_; }

  // Time of `t` alone on idle memory (no issue-rate limit), from calibration.
  Ps alone_time(const HbmTransfer& t);
  // Interference factor c(k) of k concurrent transfers like `t`.
  double contention(const HbmTransfer& t, int k);
  // Unloaded latency of one atom of `t`'s class.
  Ps atom_latency(const HbmTransfer& t);
  std::uint64_t detailed_runs() const { return detailed_runs_; }

 private:
  using Key = std::tuple<bool, std::uint64_t, bool, std::uint64_t, std::uint64_t>;
  struct Active {
    std::uint64_t id;
    double remaining;  // service ps left
    HbmTransfer shape;  // for its class's contention factors
    double c_scale[kMaxStreams + 1];  // k * c(k); 0 = not yet measured
    Ps tail;           // latency paid after service
    Ps floor;          // issue-rate bound on completion
  };
  struct Pending {
    Ps arrival;
    Active a;
  };

  static Key key_of(const HbmTransfer& t);
  static std::uint64_t units_of(const HbmTransfer& t);
  HbmTransfer shape(const HbmTransfer& t, std::uint64_t units) const;
  Ps measure(const HbmTransfer& t, std::uint64_t units);
  Ps sample(const HbmTransfer& t, std::uint64_t units);
  void advance(Ps to);
  void ensure_scales();
  double speed(const Active& a) const;

  HbmConfig cfg_;
  double peak_;
  std::map<std::pair<Key, std::uint64_t>, Ps> samples_;
  std::map<std::pair<Key, int>, double> contention_;
  std::uint64_t detailed_runs_ = 0;

  double now_ = 0;  // ps, service clock
  Ps limit_ = 0;
  std::vector<Active> active_;
  std::vector<Pending> pending_;
  using Done = std::pair<Ps, std::uint64_t>;
  std::vector<Done> done_;  // min-heap by time
  std::uint64_t next_id_ = 1;
  std::uint64_t transfers_ = 0, bytes_read_ = 0, bytes_written_ = 0;
  double busy_ps_ = 0;  // time with at least one transfer in service
};

}  // namespace tpusim::arch
