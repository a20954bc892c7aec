// See calibrated_hbm.h.
#include "arch/hbm/calibrated_hbm.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "arch/common/errors.h"
#include "arch/hbm/detailed_dram.h"

namespace tpusim::arch {

CalibratedHbm::CalibratedHbm(const HbmConfig& config)
    : cfg_(config), peak_(hbm_peak_bandwidth(config)) {
  cfg_.model = "detailed";
  DetailedDram probe(cfg_);  // validates the config now rather than at first use
}

CalibratedHbm::Key CalibratedHbm::key_of(const HbmTransfer& t) {
  if (t.contiguous()) return {t.write, t.atom_bytes, true, 0, 0};
  return {t.write, t.atom_bytes, false, t.row_bytes, t.stride};
}

std::uint64_t CalibratedHbm::units_of(const HbmTransfer& t) {
  return t.contiguous() ? t.bytes() : t.rows;
}

HbmTransfer CalibratedHbm::shape(const HbmTransfer& t, std::uint64_t units) const {
  HbmTransfer s;
  s.write = t.write;
  s.atom_bytes = t.atom_bytes;
  if (t.contiguous()) {
    s.row_bytes = units;
    s.rows = 1;
  } else {
    s.row_bytes = t.row_bytes;
    s.rows = units;
    s.stride = t.stride;
  }
  return s;
}

Ps CalibratedHbm::measure(const HbmTransfer& t, std::uint64_t units) {
  DetailedDram d(cfg_);
  ++detailed_runs_;
  d.submit(shape(t, units), 0);
  const auto done = d.run_until(kNever / 2);  // nothing else arrives: run to the end at once
  if (done.size() != 1) throw InternalError("CalibratedHbm: calibration run did not complete");
  return done.front().time;
}

Ps CalibratedHbm::sample(const HbmTransfer& t, std::uint64_t units) {
  auto k = std::make_pair(key_of(t), units);
  auto it = samples_.find(k);
  if (it != samples_.end()) return it->second;
  const Ps v = measure(t, units);
  samples_.emplace(k, v);
  return v;
}

static std::uint64_t pow2_floor(std::uint64_t u) {
  std::uint64_t p = 1;
  while (p <= u / 2) p *= 2;
  return p;
}

Ps CalibratedHbm::alone_time(const HbmTransfer& t) {
  const std::uint64_t u = units_of(t);
  if (u == 0) return 0;
  const std::uint64_t unit_bytes = t.contiguous() ? 1 : std::max<std::uint64_t>(t.row_bytes, 1);
  const std::uint64_t lin = pow2_floor(std::max<std::uint64_t>(kExactBytes / unit_bytes, 1));
  if (u <= lin) return sample(t, u);
  const Ps t1 = sample(t, lin);
  const Ps t4 = sample(t, 4 * lin);
  const double slope = static_cast<double>(t4 - t1) / static_cast<double>(3 * lin);
  return t1 + static_cast<Ps>(std::llround(slope * static_cast<double>(u - lin)));
}

Ps CalibratedHbm::atom_latency(const HbmTransfer& t) {
  HbmTransfer one = t;
  one.rows = 1;
  one.stride = 0;
  one.row_bytes = t.atom_bytes;
  return sample(one, t.atom_bytes);
}

double CalibratedHbm::contention(const HbmTransfer& t, int k) {
  k = std::min(k, kMaxStreams);
  if (k <= 1) return 1.0;
  auto key = std::make_pair(key_of(t), k);
  auto it = contention_.find(key);
  if (it != contention_.end()) return it->second;
  const std::uint64_t unit_bytes = t.contiguous() ? 1 : std::max<std::uint64_t>(t.row_bytes, 1);
  const std::uint64_t u = pow2_floor(std::max<std::uint64_t>(kExactBytes / unit_bytes, 1));
  const HbmTransfer s = shape(t, u);
  DetailedDram d(cfg_);
  ++detailed_runs_;
  // Streams 1 GiB + 160 KiB apart: 160 KiB is 5 interleave units per
  // pseudo-channel of a 2-stack memory, so the streams walk different banks
  // (shifts 0, 5, 10, ... mod 16) and share the bus without row conflicts,
  // as tensors at unrelated addresses do. Streams aligned to the same bank
  // conflict and FR-FCFS serves them nearly one after the other: not modelled.
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < k; ++i) {
    HbmTransfer x = s;
    x.base = static_cast<std::uint64_t>(i) * ((1ull << 30) + (160ull << 10));
    ids.push_back(d.submit(x, 0));
  }
  Ps last = 0;
  for (const HbmCompletion& c : d.run_until(kNever / 2)) last = std::max(last, c.time);
  const double tail = static_cast<double>(atom_latency(t));
  const double one = static_cast<double>(sample(t, u)) - tail;
  const double v = (static_cast<double>(last) - tail) / (k * one);
  contention_.emplace(key, v);
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
  const Ps alone = alone_time(t);
  a.tail = std::min(atom_latency(t), alone);
  a.remaining = static_cast<double>(alone - a.tail);
  a.shape = t;
  a.c_scale[1] = 1.0;  // the others are measured when that many run at once
  const std::uint64_t per_row = (t.row_bytes + t.atom_bytes - 1) / t.atom_bytes;
  const std::uint64_t atoms = per_row * std::max<std::uint64_t>(t.rows, 1);
  a.floor = arrival + static_cast<Ps>(std::llround(t.atom_interval_ps * static_cast<double>(atoms - 1))) +
            a.tail;
  pending_.push_back({arrival, a});
  return id;
}

double CalibratedHbm::speed(const Active& a) const {
  const int k = std::min<int>(static_cast<int>(active_.size()), kMaxStreams);
  // Beyond kMaxStreams the share keeps falling as 1/k with c(kMaxStreams).
  const double scale = a.c_scale[k] * static_cast<double>(active_.size()) / k;
  return 1.0 / scale;
}

void CalibratedHbm::ensure_scales() {
  const int k = std::min<int>(static_cast<int>(active_.size()), kMaxStreams);
  for (Active& a : active_)
    if (k > 0 && a.c_scale[k] == 0) a.c_scale[k] = k * contention(a.shape, k);
}

void CalibratedHbm::advance(Ps to) {
  for (;;) {
    ensure_scales();
    // Next arrival.
    Ps next_arr = kNever;
    for (const Pending& p : pending_) next_arr = std::min(next_arr, p.arrival);
    // Next service completion at current shares.
    double next_fin = 1e300;
    std::size_t first = 0;
    for (std::size_t i = 0; i < active_.size(); ++i) {
      const double f = now_ + active_[i].remaining / speed(active_[i]);
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
      std::vector<double> sp;
      for (const Active& a : active_) sp.push_back(speed(a));
      for (std::size_t i = 0; i < active_.size(); ++i) active_[i].remaining -= (step_to - now_) * sp[i];
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
        active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(i));
        changed = true;
      } else {
        ++i;
      }
    }
    for (std::size_t i = 0; i < pending_.size();) {
      if (static_cast<double>(pending_[i].arrival) <= now_) {
        active_.push_back(pending_[i].a);
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
        changed = true;
      } else {
        ++i;
      }
    }
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
  for (const Active& a : active_)
    t = std::min(t, static_cast<Ps>(std::ceil(now_ + a.remaining / speed(a))));
  return std::max(t, limit_);
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
