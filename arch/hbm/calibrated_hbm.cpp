// See calibrated_hbm.h.
#include "arch/hbm/calibrated_hbm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "arch/common/errors.h"
#include "arch/common/rounding.h"
#include "arch/hbm/address_mapping.h"
#include "arch/hbm/detailed_dram.h"
#include "arch/hbm/dram_timing.h"
#include "arch/hbm/hbm_calibration.h"

namespace tpusim::arch {

CalibratedHbm::CalibratedHbm(const HbmConfig& config)
    : CalibratedHbmBase(config, "CalibratedHbm", "time with at least one transfer in service") {
  const DramTiming& tm = tm_;
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

// slope0() is refresh-free: refresh is modelled on top (credit of
// postponed refreshes, then its share of time), so the slope carries no
// refresh staircase and a short window is exact.
double CalibratedHbm::slope(const Key& k) { return slope0(k) / (1.0 - refresh_share_); }

Ps CalibratedHbm::alone_time(const HbmTransfer& t) {
  // Beyond kExactBytes the class's steady rate (with refresh's share).
  if (t.bytes() == 0) return 0;
  return calib_.time_alone_extrapolated(t, true, t.bytes() > kExactBytes ? slope(class_of(t)) : 0.0);
}

Ps CalibratedHbm::atom_latency(const HbmTransfer& t) {
  HbmTransfer one;
  one.write = t.write;
  one.atom_bytes = t.atom_bytes;
  one.row_bytes = t.atom_bytes;
  return alone_time(one);
}

double CalibratedHbm::steady_efficiency(const HbmTransfer& t) { return 1.0 / (slope(class_of(t)) * 1e-12 * peak_); }

// mixed_capacity() (the base's): measured with refresh off, the refresh
// credit and share apply on top, as for one direction.

const CalibratedHbm::Shaped& CalibratedHbm::shaped(const HbmTransfer& t) {
  const ShapeKey key{t.row_bytes, t.rows, t.stride, t.atom_bytes, t.write};
  auto it = shapes_.find(key);
  if (it != shapes_.end()) return it->second;
  Shaped s{};
  // Service demand D at the class's refresh-free steady rate on the whole
  // memory, never less than its bytes at peak (the pins' limit: with large
  // atoms T alone less one atom's latency can be shorter than that); the
  // rest of its time alone (latency, row opening, the pseudo-channels it
  // leaves idle, refreshes met) is paid after service, so alone it takes
  // exactly T. The refresh credit and share in advance() stretch the
  // service, so the tail is what T alone has beyond that stretch.
  const Ps alone = alone_time(t);
  s.lat = std::min(atom_latency(t), alone);
  const double need = static_cast<double>(t.bytes()) * slope0(class_of(t));
  const double at_peak = static_cast<double>(t.bytes()) / peak_ * 1e12;
  s.pcs = std::min(pcs_total_, std::ceil(static_cast<double>(t.bytes()) / static_cast<double>(interleave_)));
  s.remaining =
      std::min(static_cast<double>(alone), std::max(at_peak, std::min(need, static_cast<double>(alone - s.lat))));
  const double stretched = fluid_alone(s.remaining);
  const double forced_alone = std::max(0.0, stretched - credit_cap_);
  s.tail = std::max<Ps>(0, alone - static_cast<Ps>(round_half_up(stretched + slowest_channel(s.pcs, forced_alone))));
  const std::uint64_t per_row = (t.row_bytes + t.atom_bytes - 1) / t.atom_bytes;
  s.atoms = per_row * std::max<std::uint64_t>(t.rows, 1);
  if (shapes_.size() >= (1u << 16)) shapes_.clear();  // bounded: runs use a few hundred shapes
  return shapes_.emplace(key, s).first->second;
}

std::uint64_t CalibratedHbm::submit(const HbmTransfer& t, Ps arrival) {
  const std::uint64_t id = accept(t, arrival);
  if (t.bytes() == 0) return id;
  const Shaped& s = shaped(t);
  Active a{};
  a.id = id;
  a.arrival = arrival;
  a.pcs = s.pcs;
  a.remaining = s.remaining;
  a.tail = s.tail;
  a.write = t.write;
  a.atom_bytes = t.atom_bytes;
  // An issue-rate-limited transfer cannot end before its last atom has
  // arrived and been served: last arrival + one atom's unloaded latency.
  a.floor = arrival + static_cast<Ps>(round_half_up(t.atom_interval_ps * static_cast<double>(s.atoms - 1))) + s.lat;
  pending_.push_back({arrival, a});
  next_arrival_ = std::min(next_arrival_, arrival);
  return id;
}

// Shares: earlier arrivals first (each pseudo-channel's controller admits
// requests in arrival order, so the detailed model serves staggered copies
// nearly one after another); transfers that arrived together split what is
// left evenly (their requests are admitted in turn).
void CalibratedHbm::split(double capacity) {
  // Only the earliest arrivals are served (what they leave is nothing),
  // so one pass finds them.
  Ps first = kNever;
  std::size_t together = 0;
  for (const Active& a : active_) {
    if (a.arrival < first) {
      first = a.arrival;
      together = 0;
    }
    if (a.arrival == first) ++together;
  }
  const double each = together > 0 ? capacity / static_cast<double>(together) : 0.0;
  served_.clear();
  for (std::size_t i = 0; i < active_.size(); ++i) {
    Active& a = active_[i];
    a.rate = a.arrival == first ? each : 0.0;
    if (a.rate > 0) served_.push_back(static_cast<std::uint32_t>(i));
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
  for (std::uint32_t i : served_) {
    const Active& a = active_[i];
    (a.write ? writes : reads) = true;
    mixed = std::min(mixed, mixed_capacity(a.atom_bytes));
  }
  if (reads && writes) split(mixed * cap);
}

void CalibratedHbm::advance(Ps to) {
  for (;;) {
    share_out();
    const Ps next_arr = next_arrival_;
    double next_fin = 1e300;
    std::size_t first = 0;
    for (std::uint32_t i : served_) {
      const double f = now_ + active_[i].remaining / active_[i].rate;
      if (f < next_fin) {
        next_fin = f;
        first = i;
      }
    }
    // While busy, the postponement credit runs out at credit_cap_.
    const double credit_end =
        !active_.empty() && credit_used_ < credit_cap_ ? now_ + (credit_cap_ - credit_used_) : 1e300;
    const double step_to = std::min({static_cast<double>(to), static_cast<double>(next_arr), next_fin, credit_end});
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
      const double dt = step_to - now_;
      for (std::uint32_t i : served_) active_[i].remaining -= dt * active_[i].rate;  // the unserved keep theirs
      if (forced)
        for (Active& a : active_) a.forced += dt;
      now_ = step_to;
    }
    // The earliest finisher is done by construction (at large now_ a tiny
    // remainder may not move now_ at all in floating point); others within
    // a rounding residue finish with it.
    if (finishing) active_[first].remaining = 0;
    bool changed = false;
    const double residue = 1e-6 * std::max(1.0, now_ * 1e-9);
    // Only a served transfer's remainder moves (an unserved one keeps its
    // whole service, far above the residue); removed from the highest
    // index down, so that the one moved into a freed slot was seen.
    for (std::size_t k = served_.size(); k-- > 0;) {
      const std::size_t i = served_[k];
      if (active_[i].remaining > residue) continue;
      const Active& a = active_[i];
      const Ps slowest = static_cast<Ps>(round_half_up(slowest_channel(a.pcs, a.forced)));
      const Ps fin = static_cast<Ps>(std::ceil(now_ - 1e-6)) + slowest;
      done_.push(std::max(fin + a.tail, a.floor), a.id);
      active_[i] = active_.back();
      active_.pop_back();
      changed = true;
    }
    if (changed) served_.clear();  // indices moved: the shares are set again
    if (static_cast<double>(next_arrival_) <= now_) {
      next_arrival_ = kNever;
      for (std::size_t i = 0; i < pending_.size();) {
        if (static_cast<double>(pending_[i].arrival) <= now_) {
          active_.push_back(pending_[i].a);
          pending_[i] = pending_.back();
          pending_.pop_back();
          changed = true;
        } else {
          next_arrival_ = std::min(next_arrival_, pending_[i].arrival);
          ++i;
        }
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

Ps CalibratedHbm::next_event_time() const {
  Ps t = std::min(done_.next(), next_arrival_);
  // Shares are current: advance() leaves them valid whenever it returns
  // with transfers active.
  for (std::uint32_t i : served_) {
    const Active& a = active_[i];
    t = std::min(t, static_cast<Ps>(std::ceil(now_ + a.remaining / a.rate)));
  }
  return std::max(t, limit_);
}

}  // namespace tpusim::arch
