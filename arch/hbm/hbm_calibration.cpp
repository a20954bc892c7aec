// See hbm_calibration.h.
#include "arch/hbm/hbm_calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "arch/common/errors.h"
#include "arch/common/rounding.h"
#include "arch/hbm/detailed_dram.h"
#include "arch/hbm/hbm_calibration_cache.h"

namespace tpusim::arch {

namespace {

std::uint64_t pow2_floor(std::uint64_t u) {
  std::uint64_t p = 1;
  while (p <= u / 2) p *= 2;
  return p;
}

// Nearest power of two on a log scale (1536 -> 2048, 1400 -> 1024).
std::uint64_t pow2_round(std::uint64_t u) {
  const std::uint64_t lo = pow2_floor(std::max<std::uint64_t>(u, 1));
  return static_cast<double>(u) >= 1.41421356 * static_cast<double>(lo) ? 2 * lo : lo;
}

}  // namespace

namespace {

// Parts of the calibration key, one overload per field type of
// TPUSIM_HBM_FIELDS. Doubles are written exactly (hex float).
void key_part(std::string& k, const std::string& v) { k += v + "|"; }
void key_part(std::string& k, bool v) { k += v ? "1|" : "0|"; }
void key_part(std::string& k, int v) { k += std::to_string(v) + "|"; }
void key_part(std::string& k, std::uint64_t v) { k += std::to_string(v) + "|"; }
void key_part(std::string& k, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a|", v);
  k += buf;
}
void key_part(std::string& k, const HbmTimings& t) {
#define TPUSIM_HBM_TIMING_KEY(name, ps_name, required, positive, description) key_part(k, t.name);
  TPUSIM_HBM_TIMINGS(TPUSIM_HBM_TIMING_KEY)
#undef TPUSIM_HBM_TIMING_KEY
}

}  // namespace

// Every field of TPUSIM_HBM_FIELDS marked `calibrated` (all but `model`:
// calibration always runs the detailed model), from the same list that
// declares HbmConfig, so a new field cannot be left out.
std::string hbm_calibration_key(const HbmConfig& c) {
  std::string k;
#define TPUSIM_HBM_FIELD_KEY(type, name, init, calibrated) \
  if (calibrated) key_part(k, static_cast<const type&>(c.name));
  TPUSIM_HBM_FIELDS(TPUSIM_HBM_FIELD_KEY)
#undef TPUSIM_HBM_FIELD_KEY
  return k;
}

HbmPattern exact_pattern(const HbmTransfer& t) {
  if (t.contiguous()) return {t.write, t.atom_bytes, true, 0, 0};
  return {t.write, t.atom_bytes, false, t.row_bytes, t.stride};
}

HbmPattern pattern_class(const HbmTransfer& t, std::uint64_t sweep_bytes) {
  // Rows of a whole sweep or more keep every pseudo-channel busy like a
  // contiguous stream does.
  if (t.contiguous() || t.row_bytes >= sweep_bytes) return {t.write, t.atom_bytes, true, 0, 0};
  const std::uint64_t row = pow2_round(t.row_bytes);
  const std::uint64_t stride = std::max(row, pow2_round(t.stride));
  if (stride == row) return {t.write, t.atom_bytes, true, 0, 0};
  return {t.write, t.atom_bytes, false, row, stride};
}

HbmTransfer pattern_shape(const HbmPattern& k, std::uint64_t bytes) {
  HbmTransfer s;
  s.write = std::get<0>(k);
  s.atom_bytes = std::get<1>(k);
  if (std::get<2>(k)) {
    s.row_bytes = bytes;
    s.rows = 1;
  } else {
    s.row_bytes = std::get<3>(k);
    s.stride = std::get<4>(k);
    s.rows = std::max<std::uint64_t>(1, bytes / s.row_bytes);
  }
  return s;
}

Ps detailed_time_alone(const HbmConfig& c, const HbmTransfer& t, bool refresh) {
  HbmConfig cfg = c;
  cfg.model = "detailed";
  if (!refresh) cfg.t.tREFI = 0;
  DetailedDram d(cfg);
  HbmTransfer x = t;
  x.base = 0;
  x.atom_interval_ps = 0;
  d.submit(x, 0);
  const auto done = d.run_until(kNever / 2);  // nothing else arrives: run to the end at once
  if (done.size() != 1) throw InternalError("HBM calibration: a detailed run did not complete");
  return done.front().time;
}

double detailed_class_slope(const HbmConfig& c, const HbmPattern& k) {
  const std::uint64_t b1 = 1ull << 20, w = 2ull << 20;
  const Ps t1 = detailed_time_alone(c, pattern_shape(k, b1), false);
  const Ps t2 = detailed_time_alone(c, pattern_shape(k, b1 + w), false);
  return static_cast<double>(t2 - t1) / static_cast<double>(w);
}

Ps detailed_read_write_time(const HbmConfig& c, std::uint64_t atom_bytes, std::uint64_t bytes) {
  HbmTransfer r;
  r.atom_bytes = atom_bytes;
  r.row_bytes = bytes;
  HbmTransfer w = r;
  w.write = true;
  w.base = (1ull << 30) + (160ull << 10);
  HbmConfig cfg = c;
  cfg.model = "detailed";
  cfg.t.tREFI = 0;
  DetailedDram d(cfg);
  d.submit(r, 0);
  d.submit(w, 0);
  Ps last = 0;
  for (const HbmCompletion& x : d.run_until(kNever / 2)) last = std::max(last, x.time);
  return last;
}

namespace {

// Every config's tables of this process; those with figures measured here
// are merged into the on-disk cache when the process exits.
class Registry {
 public:
  std::shared_ptr<HbmCalibrationTables> get(const HbmConfig& c) {
    const std::string key = hbm_calibration_key(c);
    Slot& s = all_[key];
    if (!s.tables) {
      s.tables = std::make_shared<HbmCalibrationTables>();
      s.path = hbm_calibration_cache_path(key);
      if (!s.path.empty()) load_hbm_calibration(s.path, key, *s.tables);
    }
    return s.tables;
  }
  ~Registry() {
    for (const auto& [key, s] : all_)
      if (s.tables->measured && !s.path.empty()) save_hbm_calibration(s.path, key, *s.tables);
  }

 private:
  struct Slot {
    std::shared_ptr<HbmCalibrationTables> tables;
    std::string path;  // "" with the cache off
  };
  std::map<std::string, Slot> all_;
};

}  // namespace

HbmCalibration::HbmCalibration(const HbmConfig& c) : cfg_(c) {
  // Simulation is single-threaded (one SystemC kernel per process).
  static Registry registry;
  tables_ = registry.get(c);
}

// The figure under `key` in m; measured (`runs` detailed runs) when this
// process has none yet. The runs behind it are counted by the first
// instance that uses it, wherever it came from.
template <class Map, class Measure>
auto HbmCalibration::lookup(Map& m, const typename Map::key_type& key, std::uint64_t runs, Measure measure) {
  auto it = m.find(key);
  if (it == m.end()) {
    it = m.emplace(key, typename Map::mapped_type{measure(), false}).first;
    tables_->measured = true;
  }
  if (!it->second.counted) {
    it->second.counted = true;
    runs_ += runs;
  }
  return it->second.v;
}

Ps HbmCalibration::time_alone(const HbmTransfer& t, bool refresh) {
  const auto key = std::make_tuple(exact_pattern(t), t.contiguous() ? t.bytes() : t.rows, refresh);
  return lookup(tables_->exact, key, 1, [&] { return detailed_time_alone(cfg_, t, refresh); });
}

Ps HbmCalibration::time_alone_extrapolated(const HbmTransfer& t, bool refresh, double slope) {
  const std::uint64_t b = t.bytes();
  if (b == 0) return 0;
  if (b <= kExactBytes) return time_alone(t, refresh);
  HbmTransfer head = t;
  if (t.contiguous()) {
    head.row_bytes = kExactBytes;
    head.rows = 1;
  } else {
    head.rows = std::max<std::uint64_t>(1, kExactBytes / t.row_bytes);
  }
  return time_alone(head, refresh) + static_cast<Ps>(round_half_up(slope * static_cast<double>(b - head.bytes())));
}

double HbmCalibration::slope0(const HbmPattern& k) {
  return lookup(tables_->slopes, k, 2, [&] { return detailed_class_slope(cfg_, k); });
}

Ps HbmCalibration::read_write_time(std::uint64_t atom_bytes, std::uint64_t bytes) {
  return lookup(tables_->read_write, std::make_pair(atom_bytes, bytes), 1,
                [&] { return detailed_read_write_time(cfg_, atom_bytes, bytes); });
}

void HbmCompletionQueue::push(Ps t, std::uint64_t id) {
  heap_.push_back({t, id});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
}

void HbmCompletionQueue::take_until(Ps limit, std::vector<HbmCompletion>& out) {
  while (!heap_.empty() && heap_.front().first <= limit) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    out.push_back({heap_.back().second, heap_.back().first});
    heap_.pop_back();
  }
}

}  // namespace tpusim::arch
