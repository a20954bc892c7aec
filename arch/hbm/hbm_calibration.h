// The calibration the two calibrated HBM models (CalibratedHbm,
// ChannelHbm, through CalibratedHbmBase) draw on: the key under which a
// config's calibration is kept process-wide, and pattern classes (read/write, atom size, contiguous or strided with row
// size and stride rounded to powers of two) that figures are measured for.
// Leaves out: the measurements themselves (each model measures what it
// needs with DetailedDram).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "arch/common/chip_config.h"
#include "arch/hbm/hbm_model.h"

namespace tpusim::arch {

// Every field of the config that the detailed model reads (the fields of
// TPUSIM_HBM_FIELDS marked `calibrated`), as text: two configs share a
// calibration only when all of them are equal.
std::string hbm_calibration_key(const HbmConfig& c);

// (write, atom_bytes, contiguous, row_bytes, stride); exact or rounded.
using HbmPattern = std::tuple<bool, std::uint64_t, bool, std::uint64_t, std::uint64_t>;

// The exact shape of `t` (contiguous transfers by atom size only).
HbmPattern exact_pattern(const HbmTransfer& t);
// The rounded class: rows of a whole sweep of pseudo-channels or more
// (`sweep_bytes`) count as contiguous, rows and strides are rounded to
// powers of two on a log scale.
HbmPattern pattern_class(const HbmTransfer& t, std::uint64_t sweep_bytes);
// A transfer of about `bytes` in pattern k, at base 0.
HbmTransfer pattern_shape(const HbmPattern& k, std::uint64_t bytes);

// Detailed-model measurements (each a fresh DetailedDram from t = 0):
// `t` alone at base 0, unpaced, refresh on or off (one run).
Ps detailed_time_alone(const HbmConfig& c, const HbmTransfer& t, bool refresh);
// Ps per byte of pattern k on the whole memory, refresh off: the slope
// between 1 MiB and 3 MiB (two runs).
double detailed_class_slope(const HbmConfig& c, const HbmPattern& k);
// A read and a write of `bytes` each, `atom_bytes` atoms, at unrelated
// addresses (1 GiB + 160 KiB apart: different banks), started together,
// refresh off: when the later one ends (one run).
Ps detailed_read_write_time(const HbmConfig& c, std::uint64_t atom_bytes, std::uint64_t bytes);

// The figures measured for one HBM config. `counted`: an HbmCalibration
// of this process has counted the detailed runs behind the figure (a
// figure read from the on-disk cache is counted by the first instance
// that uses it, so the calibration_runs statistic is the same with and
// without the cache).
struct HbmCalibrationTables {
  template <class V>
  struct Entry {
    V v;
    bool counted;
  };
  std::map<std::tuple<HbmPattern, std::uint64_t, bool>, Entry<Ps>> exact;  // shape, bytes or rows, refresh
  std::map<HbmPattern, Entry<double>> slopes;
  std::map<std::pair<std::uint64_t, std::uint64_t>, Entry<Ps>> read_write;  // atom, bytes
  bool measured = false;  // figures measured by this process (not yet saved)
};

// Detailed-model figures of one HBM config: measured once per process and
// shared by every model of that config (the chips of an --all-chips run
// calibrate once), keyed by every config field. Across processes they are
// kept in the on-disk cache (hbm_calibration_cache.h): loaded when a
// process first needs the config, saved when it exits.
class HbmCalibration {
 public:
  explicit HbmCalibration(const HbmConfig& c);
  static constexpr std::uint64_t kExactBytes = 8ull << 20;  // exact-shape runs up to here

  // detailed_time_alone(), cached per exact shape.
  Ps time_alone(const HbmTransfer& t, bool refresh);
  // The same up to kExactBytes; beyond, the exact time of the first
  // kExactBytes' worth of the same shape plus `slope` ps per byte for the
  // rest (a detailed run of every large size would cost seconds).
  Ps time_alone_extrapolated(const HbmTransfer& t, bool refresh, double slope);
  // detailed_class_slope(), cached per pattern class.
  double slope0(const HbmPattern& k);
  // detailed_read_write_time(), cached.
  Ps read_write_time(std::uint64_t atom_bytes, std::uint64_t bytes);
  // Detailed runs behind the figures this instance used first in this
  // process (figures an earlier instance of the same config used are not
  // counted again; a figure from the on-disk cache counts as measured).
  std::uint64_t detailed_runs() const { return runs_; }
  std::size_t classes() const { return tables_->slopes.size(); }

 private:
  template <class Map, class Measure>
  auto lookup(Map& m, const typename Map::key_type& key, std::uint64_t runs, Measure measure);
  HbmConfig cfg_;
  std::shared_ptr<HbmCalibrationTables> tables_;
  std::uint64_t runs_ = 0;
};

// Completions not yet returned, earliest first (ties by id).
class HbmCompletionQueue {
 public:
  void push(Ps t, std::uint64_t id);
  void take_until(Ps limit, std::vector<HbmCompletion>& out);  // appended, in time order
  Ps next() const { return heap_.empty() ? kNever : heap_.front().first; }

 private:
  std::vector<std::pair<Ps, std::uint64_t>> heap_;  // min-heap
};

}  // namespace tpusim::arch
