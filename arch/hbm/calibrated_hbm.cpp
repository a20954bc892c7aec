// See calibrated_hbm.h.
#include "arch/hbm/calibrated_hbm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

// Every field of the config that the detailed model reads, as text: two
// configs share a calibration only when all of them are equal. `model` is
// left out (calibration always runs the detailed model). Doubles are
// written exactly (hex float).
std::string calibration_key(const HbmConfig& c) {
  // A field added to HbmConfig or HbmTimings changes their size: add it
  // to the key below, then update these sizes (x86-64, libstdc++).
  static_assert(sizeof(HbmTimings) == 19 * sizeof(double), "HbmTimings changed: update calibration_key");
  static_assert(sizeof(HbmConfig) == 4 * sizeof(std::string) + sizeof(HbmTimings) + 80,
                "HbmConfig changed: update calibration_key");
  std::string k;
  char buf[64];
  auto num = [&](double v) {
    std::snprintf(buf, sizeof buf, "%a|", v);
    k += buf;
  };
  auto i = [&](std::uint64_t v) { k += std::to_string(v) + "|"; };
  k += c.preset + "|" + c.address_mapping + "|" + c.page_policy + "|";
  i(static_cast<std::uint64_t>(c.stacks));
  i(static_cast<std::uint64_t>(c.channels));
  i(static_cast<std::uint64_t>(c.pseudo_channels));
  i(static_cast<std::uint64_t>(c.bank_groups));
  i(static_cast<std::uint64_t>(c.banks_per_group));
  i(c.row_bytes);
  num(c.data_rate);
  i(static_cast<std::uint64_t>(c.bus_width_bits));
  i(static_cast<std::uint64_t>(c.burst_length));
  i(c.capacity_bytes);
  i(c.address_hash ? 1 : 0);
  i(static_cast<std::uint64_t>(c.queue_depth));
  num(c.controller_latency);
  i(static_cast<std::uint64_t>(c.refresh_postpone));
  const HbmTimings& t = c.t;
  for (double v : {t.tCK, t.tCL, t.tCWL, t.tRCD, t.tRP, t.tRAS, t.tRC, t.tCCD_S, t.tCCD_L, t.tRRD_S, t.tRRD_L,
                   t.tFAW, t.tWR, t.tWTR_S, t.tWTR_L, t.tRTP, t.tRTW, t.tRFC, t.tREFI})
    num(v);
  return k;
}

}  // namespace

std::shared_ptr<CalibratedHbm::Calibration> CalibratedHbm::shared_calibration(const HbmConfig& config) {
  // Simulation is single-threaded (one SystemC kernel per process).
  static std::map<std::string, std::shared_ptr<Calibration>> table;
  std::shared_ptr<Calibration>& c = table[calibration_key(config)];
  if (!c) c = std::make_shared<Calibration>();
  return c;
}

CalibratedHbm::CalibratedHbm(const HbmConfig& config)
    : cfg_(config), peak_(hbm_peak_bandwidth(config)), cal_(shared_calibration(config)) {
  cfg_.model = "detailed";
  DetailedDram probe(cfg_);  // validates the config now rather than at first use
  sweep_bytes_ = probe.mapping().interleave_bytes() * probe.mapping().pseudo_channels_total();
  const DramTiming& tm = probe.timing();
  interleave_ = probe.mapping().interleave_bytes();
  pcs_total_ = probe.mapping().pseudo_channels_total();
  if (tm.REFI > 0) {
    refi_ = static_cast<double>(tm.REFI);
    rfc_ = static_cast<double>(tm.RFC);
    refresh_share_ = std::min(0.9, static_cast<double>(tm.RFC) / static_cast<double>(tm.REFI));
    credit_cap_ = static_cast<double>(cfg_.refresh_postpone) * static_cast<double>(tm.REFI);
    payback_ = static_cast<double>(tm.REFI) / static_cast<double>(tm.RFC);
  }
}

double CalibratedHbm::slowest_channel(double pcs, double forced) const {
  // A transfer ends with its slowest pseudo-channel: while refreshes were
  // being paid (`forced` ps of its service), one of its `pcs` channels
  // refreshed during its service with probability pcs x forced / tREFI and
  // held it for a whole tRFC, where the shared capacity charged it only
  // forced x share.
  const double odds = std::min(1.0, pcs * forced / std::max(1.0, refi_));
  return std::max(0.0, odds * rfc_ - forced * refresh_share_);
}

double CalibratedHbm::fluid_alone(double service) const {
  // Alone on idle memory (all postponements available): full rate until
  // the credit is used, then refresh takes its share.
  if (service <= credit_cap_) return service;
  return credit_cap_ + (service - credit_cap_) / (1.0 - refresh_share_);
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

Ps CalibratedHbm::run_alone(const HbmTransfer& t, bool refresh) {
  HbmConfig c = cfg_;
  if (!refresh) c.t.tREFI = 0;
  DetailedDram d(c);
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
  auto it = cal_->exact.find(key);
  if (it != cal_->exact.end()) return it->second;
  const Ps v = run_alone(t);
  cal_->exact.emplace(key, v);
  return v;
}

// Refresh-free ps per byte of class k: the slope between detailed runs of
// 1 MiB and 3 MiB with refresh off. Refresh is modelled on top (credit of
// postponed refreshes, then its share of time), so the slope carries no
// refresh staircase and a short window is exact.
double CalibratedHbm::slope0(const Key& k) {
  auto it = cal_->slopes.find(k);
  if (it != cal_->slopes.end()) return it->second;
  const std::uint64_t b1 = 1ull << 20, w = 2ull << 20;
  const Ps t1 = run_alone(shape_of(k, b1), false);
  const Ps t2 = run_alone(shape_of(k, b1 + w), false);
  const double v = static_cast<double>(t2 - t1) / static_cast<double>(w);
  cal_->slopes.emplace(k, v);
  return v;
}

double CalibratedHbm::slope(const Key& k) { return slope0(k) / (1.0 - refresh_share_); }

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
  auto it = cal_->mixed.find(atom_bytes);
  if (it != cal_->mixed.end()) return it->second;
  // A read and a write of kMixBytes each at unrelated addresses (1 GiB +
  // 160 KiB apart: different banks), started together.
  HbmTransfer r;
  r.atom_bytes = atom_bytes;
  r.row_bytes = kMixBytes;
  HbmTransfer w = r;
  w.write = true;
  w.base = (1ull << 30) + (160ull << 10);
  // Refresh off: the refresh credit and share apply on top, as for one
  // direction.
  HbmConfig c = cfg_;
  c.t.tREFI = 0;
  DetailedDram d(c);
  ++detailed_runs_;
  d.submit(r, 0);
  d.submit(w, 0);
  Ps last = 0;
  for (const HbmCompletion& x : d.run_until(kNever / 2)) last = std::max(last, x.time);
  const double need = static_cast<double>(kMixBytes) *
                      (slope0(class_of(r)) + slope0(class_of(w)));
  const double lat = static_cast<double>(std::max(atom_latency(r), atom_latency(w)));
  const double v = std::clamp(need / (static_cast<double>(last) - lat), 0.05, 1.0);
  cal_->mixed.emplace(atom_bytes, v);
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
  // Service demand D at the class's refresh-free steady rate on the whole
  // memory, never less than its bytes at peak (the pins' limit: with large
  // atoms T alone less one atom's latency can be shorter than that); the
  // rest of its time alone (latency, row opening, the pseudo-channels it
  // leaves idle, refreshes met) is paid after service, so alone it takes
  // exactly T. The refresh credit and share in advance() stretch the
  // service, so the tail is what T alone has beyond that stretch.
  const Ps alone = alone_time(t);
  const Ps lat = std::min(atom_latency(t), alone);
  const double need = static_cast<double>(t.bytes()) * slope0(class_of(t));
  const double at_peak = static_cast<double>(t.bytes()) / peak_ * 1e12;
  a.pcs = std::min(pcs_total_, std::ceil(static_cast<double>(t.bytes()) / static_cast<double>(interleave_)));
  a.remaining = std::min(static_cast<double>(alone), std::max(at_peak, std::min(need, static_cast<double>(alone - lat))));
  const double stretched = fluid_alone(a.remaining);
  const double forced_alone = std::max(0.0, stretched - credit_cap_);
  a.tail = std::max<Ps>(0, alone - static_cast<Ps>(std::llround(stretched + slowest_channel(a.pcs, forced_alone))));
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
  // Refresh takes its share once the postponement credit is used up.
  const double cap = credit_used_ >= credit_cap_ ? 1.0 - refresh_share_ : 1.0;
  split(cap);
  // Reads and writes served at once cost bus turnarounds: the measured
  // mixed capacity then applies.
  bool reads = false, writes = false;
  double mixed = 1.0;
  for (const Active& a : active_)
    if (a.rate > 0) {
      (a.write ? writes : reads) = true;
      mixed = std::min(mixed, mixed_capacity(a.atom_bytes));
    }
  if (reads && writes) split(mixed * cap);
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
    // While busy, the postponement credit runs out at credit_cap_.
    const double credit_end = !active_.empty() && credit_used_ < credit_cap_
                                  ? now_ + (credit_cap_ - credit_used_)
                                  : 1e300;
    const double step_to =
        std::min({static_cast<double>(to), static_cast<double>(next_arr), next_fin, credit_end});
    const bool finishing = !active_.empty() && step_to >= next_fin;
    if (step_to >= credit_end) shares_valid_ = false;
    if (step_to > now_) {
      const bool forced = credit_used_ >= credit_cap_ && refresh_share_ > 0;
      if (!active_.empty()) {
        busy_ps_ += step_to - now_;
        credit_used_ = std::min(credit_cap_, credit_used_ + (step_to - now_));
        if (step_to >= credit_end) credit_used_ = credit_cap_;
      } else {
        // Idle: the pseudo-channels pay postponed refreshes, one tRFC each
        // restoring one tREFI of credit.
        credit_used_ = std::max(0.0, credit_used_ - (step_to - now_) * payback_);
      }
      for (Active& a : active_) {
        a.remaining -= (step_to - now_) * a.rate;
        if (forced) a.forced += step_to - now_;
      }
      now_ = step_to;
    }
    // The earliest finisher is done by construction (at large now_ a tiny
    // remainder may not move now_ at all in floating point); others within
    // a rounding residue finish with it.
    if (finishing) active_[first].remaining = 0;
    bool changed = false;
    for (std::size_t i = 0; i < active_.size();) {
      if (active_[i].remaining <= 1e-6 * std::max(1.0, now_ * 1e-9)) {
        const Active& a = active_[i];
        const Ps slowest = static_cast<Ps>(std::llround(slowest_channel(a.pcs, a.forced)));
        const Ps fin = static_cast<Ps>(std::ceil(now_ - 1e-6)) + slowest;
        done_.push_back({std::max(fin + a.tail, a.floor), a.id});
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
    if (!shares_valid_ && !changed && !active_.empty()) continue;  // credit ran out: new shares
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
  return cal_->slopes.size();
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
