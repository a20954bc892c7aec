// See calibrated_hbm.h.
#include "arch/hbm/calibrated_hbm.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>

#include "arch/common/errors.h"
#include "arch/hbm/address_mapping.h"
#include "arch/hbm/detailed_dram.h"
#include "arch/hbm/dram_timing.h"

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

CalibratedHbm::CalibratedHbm(const HbmConfig& config)
    : cfg_(config), peak_(hbm_peak_bandwidth(config)) {
  cfg_.model = "detailed";
  DetailedDram probe(cfg_);  // validates the config now rather than at first use
  sweep_bytes_ = probe.mapping().interleave_bytes() * probe.mapping().pseudo_channels_total();
}

CalibratedHbm::Key CalibratedHbm::exact_key(const HbmTransfer& t) {
  if (t.contiguous()) return {t.write, t.atom_bytes, true, 0, 0};
  return {t.write, t.atom_bytes, false, t.row_bytes, t.stride};
}

CalibratedHbm::Key CalibratedHbm::class_of(const HbmTransfer& t) const {
  // Rows of a whole sweep or more keep every pseudo-channel busy like a
  // contiguous stream does.
  if (t.contiguous() || t.row_bytes >= sweep_bytes_) return {t.write, t.atom_bytes, true, 0, 0};
  const std::uint64_t row = pow2_round(t.row_bytes);
  const std::uint64_t stride = std::max(row, pow2_round(t.stride));
  if (stride == row) return {t.write, t.atom_bytes, true, 0, 0};
  return {t.write, t.atom_bytes, false, row, stride};
}

HbmTransfer CalibratedHbm::shape_of(const Key& k, std::uint64_t bytes) {
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

Ps CalibratedHbm::run_alone(const HbmTransfer& t) {
  DetailedDram d(cfg_);
  ++detailed_runs_;
  HbmTransfer x = t;
  x.base = 0;
  x.atom_interval_ps = 0;
  d.submit(x, 0);
  const auto done = d.run_until(kNever / 2);  // nothing else arrives: run to the end at once
  if (done.size() != 1) throw InternalError("CalibratedHbm: calibration run did not complete");
  return done.front().time;
}

Ps CalibratedHbm::exact(const HbmTransfer& t) {
  auto key = std::make_pair(exact_key(t), t.contiguous() ? t.bytes() : t.rows);
  auto it = exact_.find(key);
  if (it != exact_.end()) return it->second;
  const Ps v = run_alone(t);
  exact_.emplace(key, v);
  return v;
}

// Steady-state ps per byte of class k: the slope between detailed runs of
// 1 MiB and 1 MiB + W, W about two refresh intervals' worth of data. A
// transfer alone ends with its slowest pseudo-channel, which has met
// ceil(t / tREFI) refreshes, so T(bytes) is a staircase; a window of a few
// MiB (under one tREFI) was measured up to 4% off the long-run slope, two
// tREFI within 0.5% for every class tried.
double CalibratedHbm::slope(const Key& k) {
  auto it = slopes_.find(k);
  if (it != slopes_.end()) return it->second;
  const std::uint64_t b1 = 1ull << 20;
  const DramTiming tm(cfg_);
  std::uint64_t w = 2ull << 20;
  if (tm.REFI > 0)
    w = std::max<std::uint64_t>(w, static_cast<std::uint64_t>(2 * ps_to_seconds(tm.REFI) * peak_ * 0.9));
  w -= w % (64ull << 10);
  const Ps t1 = run_alone(shape_of(k, b1));
  const Ps t2 = run_alone(shape_of(k, b1 + w));
  const double v = static_cast<double>(t2 - t1) / static_cast<double>(w);
  slopes_.emplace(k, v);
  return v;
}

Ps CalibratedHbm::alone_time(const HbmTransfer& t) {
  const std::uint64_t b = t.bytes();
  if (b == 0) return 0;
  if (b <= kExactBytes) return exact(t);
  // Beyond kExactBytes: the exact time of the first kExactBytes' worth of
  // the same shape plus the class's steady rate for the rest.
  HbmTransfer head = t;
  if (t.contiguous()) {
    head.row_bytes = kExactBytes;
    head.rows = 1;
  } else {
    head.rows = std::max<std::uint64_t>(1, kExactBytes / t.row_bytes);
  }
  const Ps t1 = exact(head);
  return t1 + static_cast<Ps>(std::llround(slope(class_of(t)) * static_cast<double>(b - head.bytes())));
}

Ps CalibratedHbm::atom_latency(const HbmTransfer& t) {
  HbmTransfer one;
  one.write = t.write;
  one.atom_bytes = t.atom_bytes;
  one.row_bytes = t.atom_bytes;
  return alone_time(one);
}

double CalibratedHbm::steady_efficiency(const HbmTransfer& t) {
  return 1.0 / (slope(class_of(t)) * 1e-12 * peak_);
}

double CalibratedHbm::mixed_capacity(std::uint64_t atom_bytes) {
  auto it = mixed_.find(atom_bytes);
  if (it != mixed_.end()) return it->second;
  // A read and a write of kMixBytes each at unrelated addresses (1 GiB +
  // 160 KiB apart: different banks), started together.
  HbmTransfer r;
  r.atom_bytes = atom_bytes;
  r.row_bytes = kMixBytes;
  HbmTransfer w = r;
  w.write = true;
  w.base = (1ull << 30) + (160ull << 10);
  DetailedDram d(cfg_);
  ++detailed_runs_;
  d.submit(r, 0);
  d.submit(w, 0);
  Ps last = 0;
  for (const HbmCompletion& c : d.run_until(kNever / 2)) last = std::max(last, c.time);
  const double need = static_cast<double>(kMixBytes) / peak_ * 1e12 *
                      (1.0 / steady_efficiency(r) + 1.0 / steady_efficiency(w));
  const double lat = static_cast<double>(std::max(atom_latency(r), atom_latency(w)));
  const double v = std::clamp(need / (static_cast<double>(last) - lat), 0.05, 1.0);
  mixed_.emplace(atom_bytes, v);
  return v;
}

std::uint64_t CalibratedHbm::submit(const HbmTransfer& t, Ps arrival) {
  if (arrival < limit_)
    throw InternalError("CalibratedHbm::submit: arrival before the time already simulated");
  if (t.atom_bytes == 0) throw ConfigError("hbm transfer: atom_bytes must be positive");
  const std::uint64_t id = next_id_++;
  ++transfers_;
  (t.write ? bytes_written_ : bytes_read_) += t.bytes();
  if (t.bytes() == 0) {
    done_.push_back({arrival, id});
    std::push_heap(done_.begin(), done_.end(), std::greater<Done>());
    return id;
  }
  Active a{};
  a.id = id;
  a.arrival = arrival;
  // Service demand D at the class's steady rate on the whole memory; the
  // rest of its time alone (latency, row opening, the pseudo-channels it
  // leaves idle, refreshes met) is paid after service, so alone it takes
  // exactly T.
  const Ps alone = alone_time(t);
  const Ps lat = std::min(atom_latency(t), alone);
  const double need = static_cast<double>(t.bytes()) * slope(class_of(t));
  a.remaining = std::min(need, static_cast<double>(alone - lat));
  a.tail = alone - static_cast<Ps>(std::llround(a.remaining));
  a.write = t.write;
  a.atom_bytes = t.atom_bytes;
  const std::uint64_t per_row = (t.row_bytes + t.atom_bytes - 1) / t.atom_bytes;
  const std::uint64_t atoms = per_row * std::max<std::uint64_t>(t.rows, 1);
  // An issue-rate-limited transfer cannot end before its last atom has
  // arrived and been served: last arrival + one atom's unloaded latency.
  a.floor = arrival + static_cast<Ps>(std::llround(t.atom_interval_ps * static_cast<double>(atoms - 1))) +
            lat;
  pending_.push_back({arrival, a});
  return id;
}

// Shares: earlier arrivals first (each pseudo-channel's controller admits
// requests in arrival order, so the detailed model serves staggered copies
// nearly one after another); transfers that arrived together split what is
// left evenly (their requests are admitted in turn).
void CalibratedHbm::split(double capacity) {
  std::vector<std::size_t>& order = order_;
  order.resize(active_.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return active_[x].arrival != active_[y].arrival ? active_[x].arrival < active_[y].arrival
                                                    : active_[x].id < active_[y].id;
  });
  double left = capacity;
  for (std::size_t g = 0; g < order.size();) {
    std::size_t end = g;
    while (end < order.size() && active_[order[end]].arrival == active_[order[g]].arrival) ++end;
    const double each = left / static_cast<double>(end - g);
    for (std::size_t i = g; i < end; ++i) active_[order[i]].rate = each;
    left = 0;
    g = end;
  }
}

void CalibratedHbm::share_out() {
  if (shares_valid_) return;
  shares_valid_ = true;
  split(1.0);
  // Reads and writes served at once cost bus turnarounds: the measured
  // mixed capacity then applies.
  bool reads = false, writes = false;
  double mixed = 1.0;
  for (const Active& a : active_)
    if (a.rate > 0) {
      (a.write ? writes : reads) = true;
      mixed = std::min(mixed, mixed_capacity(a.atom_bytes));
    }
  if (reads && writes) split(mixed);
}

void CalibratedHbm::advance(Ps to) {
  for (;;) {
    share_out();
    Ps next_arr = kNever;
    for (const Pending& p : pending_) next_arr = std::min(next_arr, p.arrival);
    double next_fin = 1e300;
    std::size_t first = 0;
    for (std::size_t i = 0; i < active_.size(); ++i) {
      if (active_[i].rate <= 0) continue;
      const double f = now_ + active_[i].remaining / active_[i].rate;
      if (f < next_fin) {
        next_fin = f;
        first = i;
      }
    }
    const double step_to =
        std::min({static_cast<double>(to), static_cast<double>(next_arr), next_fin});
    const bool finishing = !active_.empty() && step_to >= next_fin;
    if (step_to > now_) {
      if (!active_.empty()) busy_ps_ += step_to - now_;
      for (Active& a : active_) a.remaining -= (step_to - now_) * a.rate;
      now_ = step_to;
    }
    // The earliest finisher is done by construction (at large now_ a tiny
    // remainder may not move now_ at all in floating point); others within
    // a rounding residue finish with it.
    if (finishing) active_[first].remaining = 0;
    bool changed = false;
    for (std::size_t i = 0; i < active_.size();) {
      if (active_[i].remaining <= 1e-6 * std::max(1.0, now_ * 1e-9)) {
        const Ps fin = static_cast<Ps>(std::ceil(now_ - 1e-6));
        done_.push_back({std::max(fin + active_[i].tail, active_[i].floor), active_[i].id});
        std::push_heap(done_.begin(), done_.end(), std::greater<Done>());
        active_[i] = active_.back();
        active_.pop_back();
        changed = true;
      } else {
        ++i;
      }
    }
    for (std::size_t i = 0; i < pending_.size();) {
      if (static_cast<double>(pending_[i].arrival) <= now_) {
        active_.push_back(pending_[i].a);
        pending_[i] = pending_.back();
        pending_.pop_back();
        changed = true;
      } else {
        ++i;
      }
    }
    if (changed) shares_valid_ = false;
    if (!changed && now_ >= static_cast<double>(to)) return;
    if (!changed && active_.empty() && pending_.empty()) {
      now_ = std::max(now_, static_cast<double>(to));
      return;
    }
  }
}

std::vector<HbmCompletion> CalibratedHbm::run_until(Ps limit) {
  if (limit < limit_) limit = limit_;
  advance(limit);
  limit_ = limit;
  std::vector<HbmCompletion> out;
  while (!done_.empty() && done_.front().first <= limit) {
    std::pop_heap(done_.begin(), done_.end(), std::greater<Done>());
    out.push_back({done_.back().second, done_.back().first});
    done_.pop_back();
  }
  return out;
}

Ps CalibratedHbm::next_event_time() const {
  Ps t = done_.empty() ? kNever : done_.front().first;
  for (const Pending& p : pending_) t = std::min(t, p.arrival);
  // Shares are current: advance() leaves them valid whenever it returns
  // with transfers active.
  for (const Active& a : active_)
    if (a.rate > 0) t = std::min(t, static_cast<Ps>(std::ceil(now_ + a.remaining / a.rate)));
  return std::max(t, limit_);
}

std::size_t CalibratedHbm::classes() const {
  return slopes_.size();
}

StatList CalibratedHbm::stats() const {
  return {
      {"transfers", static_cast<double>(transfers_), "count", "transfers submitted"},
      {"bytes_read", static_cast<double>(bytes_read_), "bytes", "bytes read"},
      {"bytes_written", static_cast<double>(bytes_written_), "bytes", "bytes written"},
      {"busy_time", busy_ps_ * 1e-12, "s", "time with at least one transfer in service"},
      {"calibration_runs", static_cast<double>(detailed_runs_), "count",
       "detailed-model runs made to calibrate pattern classes"},
  };
}

}  // namespace tpusim::arch
