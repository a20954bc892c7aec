// What the two calibrated HBM models (hbm.model channel: ChannelHbm, and
// calibrated: CalibratedHbm) share as models: the config check, the
// memory's geometry and timing, the process-wide calibration of the
// config (HbmCalibration), the public figures they derive from it, the
// submission bookkeeping (ids, counts, completions) and run_until(). Each
// model supplies how it times transfers: advance(), the time of a transfer
// alone and of one atom, its steady efficiency and next_event_time().
// Leaves out: the timing itself (see channel_hbm.h, calibrated_hbm.h).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "arch/hbm/address_mapping.h"
#include "arch/hbm/dram_timing.h"
#include "arch/hbm/hbm_calibration.h"
#include "arch/hbm/hbm_model.h"

namespace tpusim::arch {

class CalibratedHbmBase : public HbmModel {
 public:
  static constexpr std::uint64_t kExactBytes = HbmCalibration::kExactBytes;
  static constexpr std::uint64_t kMixBytes = 4ull << 20;  // read+write capacity run, each way

  std::vector<HbmCompletion> run_until(Ps limit) final;
  void collect_until(Ps limit, std::vector<HbmCompletion>& out) final;
  StatList stats() const final;
  double peak_bandwidth() const final { return peak_; }

  // Time of `t` alone on idle memory from t = 0, as the model gives it.
  virtual Ps alone_time(const HbmTransfer& t) = 0;
  // Unloaded latency of one atom of `t`'s class.
  virtual Ps atom_latency(const HbmTransfer& t) = 0;
  // Fraction of peak a long transfer of `t`'s class reaches alone.
  virtual double steady_efficiency(const HbmTransfer& t) = 0;
  // Memory capacity (1 = one direction at the classes' steady rates) while
  // reads and writes of this atom size are both active: a read and a write
  // of kMixBytes each, together, refresh off, less the larger atom latency.
  double mixed_capacity(std::uint64_t atom_bytes);
  // Detailed runs this instance made (calibrations shared with an earlier
  // instance of the same config are not repeated).
  std::uint64_t detailed_runs() const { return calib_.detailed_runs() + extra_runs_; }
  // Rounded pattern classes whose steady rate was measured so far.
  std::size_t classes() const { return calib_.classes(); }

 protected:
  // `name` prefixes internal errors; `busy` describes the busy_time stat.
  CalibratedHbmBase(const HbmConfig& config, const char* name, const char* busy);

  using Key = HbmPattern;  // (write, atom_bytes, contiguous, row_bytes, stride); exact or rounded
  Key class_of(const HbmTransfer& t) const { return pattern_class(t, sweep_bytes_); }
  static Key exact_key(const HbmTransfer& t) { return exact_pattern(t); }
  static HbmTransfer shape_of(const Key& k, std::uint64_t bytes) { return pattern_shape(k, bytes); }
  // Refresh-free ps per byte of class k on the whole memory: the slope
  // between detailed runs of 1 MiB and 3 MiB with refresh off.
  double slope0(const Key& k) { return calib_.slope0(k); }

  // Checks and counts a submission and returns its id; a transfer of no
  // bytes completes at its arrival (the caller then has nothing to time).
  std::uint64_t accept(const HbmTransfer& t, Ps arrival);
  // Advances the model's state to `to` (pushing completions into done_).
  virtual void advance(Ps to) = 0;
  // Stats of the model between busy_time and calibration_runs.
  virtual void model_stats(StatList&) const {}

  HbmConfig cfg_;  // model = "detailed": what calibration runs
  double peak_;
  // What the detailed runs measured. A pure function of the HBM config, so
  // instances with the same config share it (a process-wide table keyed by
  // every config field): the chips of an --all-chips run calibrate once.
  HbmCalibration calib_;
  AddressMapping map_;
  DramTiming tm_;
  std::uint64_t interleave_;               // interleave unit
  std::uint64_t sweep_bytes_;              // interleave unit x pseudo-channels
  double pcs_total_;                       // pseudo-channels
  std::uint64_t extra_runs_ = 0;           // detailed runs made outside calib_
  std::map<std::uint64_t, double> mixed_;  // atom bytes -> read+write capacity
  std::uint64_t last_mixed_atom_ = ~0ull;  // the last one asked (~0: none)
  double last_mixed_ = 0;

  Ps limit_ = 0;  // last run_until() limit
  HbmCompletionQueue done_;
  std::uint64_t next_id_ = 1;
  std::uint64_t transfers_ = 0, bytes_read_ = 0, bytes_written_ = 0;
  std::uint64_t activates_ = 0;  // estimated (see accept())
  double busy_ps_ = 0;

 private:
  const char* name_;
  const char* busy_;
};

}  // namespace tpusim::arch
