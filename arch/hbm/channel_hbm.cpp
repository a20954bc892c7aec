// See channel_hbm.h.
#include "arch/hbm/channel_hbm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <string>

#include "arch/common/errors.h"
#include "arch/common/rounding.h"
#include "arch/hbm/address_mapping.h"
#include "arch/hbm/detailed_dram.h"
#include "arch/hbm/dram_timing.h"
#include "arch/hbm/hbm_calibration.h"

namespace tpusim::arch {

ChannelHbm::ChannelHbm(const HbmConfig& config)
    : CalibratedHbmBase(config, "ChannelHbm", "time with at least one pseudo-channel serving") {
  pcs_.resize(map_.pseudo_channels_total());
  events_.resize(pcs_.size());
  spread_.assign(pcs_.size(), 0.0);
  last_atom_.assign(pcs_.size(), 0);
  // With column bits lowest and the channel and pseudo-channel fields just
  // above them, an aligned sweep (interleave x PCs bytes) holds one unit of
  // every PC (the hash rotates PCs within a sweep, a bijection), so whole
  // sweeps need no decoding: a 64 GiB copy costs O(PCs).
  const std::string& f = cfg_.address_mapping;
  sweep_covers_pcs_ = f.size() == 12 && f.substr(10) == "Co" && (f.substr(6, 4) == "ChPc" || f.substr(6, 4) == "PcCh");
  const DramTiming& tm = tm_;
  refi_ = tm.REFI;
  ref_block_ = static_cast<double>(tm.RP + tm.RFC);
  // The detailed controller staggers the PCs' refreshes evenly over tREFI.
  const std::size_t n = pcs_.size();
  for (std::size_t i = 0; i < n; ++i)
    pcs_[i].ref_due = refi_ == 0 ? kNever : refi_ * static_cast<Ps>(i + 1) / static_cast<Ps>(n);
}

// T of `t`'s shape at base 0, where the calibration runs measure it.
Ps ChannelHbm::time_at_base0(const HbmTransfer& t) {
  // Refresh off: it is simulated per PC on top.
  if (t.bytes() == 0) return 0;
  return calib_.time_alone_extrapolated(t, false, t.bytes() > kExactBytes ? slope0(class_of(t)) : 0.0);
}

std::uint64_t ChannelHbm::atoms_in(std::uint64_t addr, std::uint64_t n, std::uint64_t atom) const {
  // As the detailed model splits a run: atoms never cross an interleave unit.
  const std::uint64_t head = std::min(n, interleave_ - addr % interleave_);
  const std::uint64_t rest = n - head;
  return (head + atom - 1) / atom + rest / interleave_ * ((interleave_ + atom - 1) / atom) +
         (rest % interleave_ + atom - 1) / atom;
}

double ChannelHbm::spread(const HbmTransfer& t) {
  for (std::uint32_t pc : touched_) spread_[pc] = 0;
  touched_.clear();
  std::uint64_t i = 0;  // atoms so far, in the detailed model's order
  auto add = [&](std::uint32_t pc, double b, std::uint64_t atoms) {
    if (spread_[pc] == 0) touched_.push_back(pc);
    spread_[pc] += b;
    last_atom_[pc] = i + atoms - 1;
  };
  const bool contiguous = t.contiguous();
  const std::uint64_t rows = contiguous ? 1 : std::max<std::uint64_t>(t.rows, 1);
  const std::uint64_t len = contiguous ? t.bytes() : t.row_bytes;
  const std::uint64_t per_unit = (interleave_ + t.atom_bytes - 1) / t.atom_bytes;
  for (std::uint64_t r = 0; r < rows; ++r) {
    std::uint64_t addr = t.base + r * t.stride, left = len;
    while (left > 0) {
      if (sweep_covers_pcs_ && addr % sweep_bytes_ == 0 && left >= 64 * sweep_bytes_) {
        // Whole sweeps of a long run: every PC the same bytes, its atoms
        // spread over the run (to within a sweep at either end).
        const std::uint64_t n = left / sweep_bytes_;
        const std::uint64_t atoms = n * pcs_.size() * per_unit;
        for (std::uint32_t pc = 0; pc < pcs_.size(); ++pc) add(pc, static_cast<double>(n * interleave_), atoms);
        i += atoms;
        addr += n * sweep_bytes_;
        left -= n * sweep_bytes_;
        continue;
      }
      const std::uint64_t b = std::min(left, interleave_ - addr % interleave_);
      const std::uint64_t atoms = (b + t.atom_bytes - 1) / t.atom_bytes;
      add(map_.decode(addr).pc, static_cast<double>(b), atoms);
      i += atoms;
      addr += b;
      left -= b;
    }
  }
  atoms_ = i;
  double most = 0;
  for (std::uint32_t pc : touched_) most = std::max(most, spread_[pc]);
  return most;
}

// PC ps per byte that lands on one PC, for class k: the slope's two
// calibration runs (1 MiB and 3 MiB at base 0) end with their busiest PCs,
// so their time difference is the growth of the busiest PC's bytes at the
// per-PC rate. An even spread gives slope0 x PCs.
double ChannelHbm::pc_scale(const Key& k) {
  auto it = pc_scale_.find(k);
  if (it != pc_scale_.end()) return it->second;
  const std::uint64_t b1 = 1ull << 20, w = 2ull << 20;
  const double s0 = slope0(k);
  const double m1 = spread(shape_of(k, b1));
  const double m2 = spread(shape_of(k, b1 + w));
  const double v = m2 > m1 ? s0 * static_cast<double>(w) / (m2 - m1) : s0 * pcs_total_;
  pc_scale_.emplace(k, v);
  return v;
}

ChannelHbm::Plan ChannelHbm::plan(const HbmTransfer& t) {
  // Alone: ramp, then the busiest PC's demand, then one burst's latency
  // (the rest of an atom's own latency is its data on the bus: service).
  // T at base 0 fixes the ramp; at another base the busiest PC differs.
  const auto key = std::make_pair(exact_key(t), t.contiguous() ? t.bytes() : t.rows);
  auto it = plans_.find(key);
  if (it != plans_.end()) {  // a pure function of the shape: computed once
    spread(t);
    return it->second;
  }
  Plan p;
  const Ps alone = time_at_base0(t);
  HbmTransfer burst;
  burst.write = t.write;
  burst.atom_bytes = burst.row_bytes = map_.burst_bytes();
  p.latency = std::min(time_at_base0(burst), alone);
  p.atom_latency = std::min(atom_latency(t), alone);
  const double at_peak = pcs_total_ / peak_ * 1e12;  // PC ps per byte at the PC's peak
  p.scale = std::max(at_peak, pc_scale(class_of(t)));
  HbmTransfer t0 = t;
  t0.base = 0;
  const double m0 = spread(t0);
  // Service is never faster than the PC's pins. When T at base 0 is
  // shorter than that service plus one burst's latency, the latency
  // overlaps the data: the copy pays less of it.
  p.ramp = static_cast<double>(alone - p.latency) - m0 * p.scale;
  if (p.ramp < 0) {
    p.latency = std::max<Ps>(0, p.latency + static_cast<Ps>(std::floor(p.ramp)));
    p.ramp = 0;
  }
  plans_.emplace(key, p);
  if (t.base != 0) spread(t);
  return p;
}

Ps ChannelHbm::alone_time(const HbmTransfer& t) {
  if (t.bytes() == 0) return 0;
  // This model with nothing else: a fresh instance shares the calibration.
  ChannelHbm alone(cfg_);
  const Ps done = alone.transfer(t, 0);
  extra_runs_ += alone.detailed_runs();
  return done;
}

Ps ChannelHbm::atom_latency(const HbmTransfer& t) {
  HbmTransfer one;
  one.write = t.write;
  one.atom_bytes = t.atom_bytes;
  one.row_bytes = t.atom_bytes;
  return time_at_base0(one);
}

double ChannelHbm::steady_efficiency(const HbmTransfer& t) {
  // A long copy pays one refresh (tRP + tRFC) per PC every tREFI.
  const double ref = refi_ > 0 ? 1.0 - ref_block_ / static_cast<double>(refi_) : 1.0;
  return ref / (slope0(class_of(t)) * 1e-12 * peak_);
}

std::uint64_t ChannelHbm::submit(const HbmTransfer& t, Ps arrival) {
  const std::uint64_t id = accept(t, arrival);
  if (t.bytes() == 0) return id;
  const Plan p = plan(t);  // leaves the transfer's bytes per PC in spread_
  std::uint32_t x;
  if (!free_xfers_.empty()) {
    x = free_xfers_.back();
    free_xfers_.pop_back();
  } else {
    x = static_cast<std::uint32_t>(xfers_.size());
    xfers_.emplace_back();
  }
  Xfer& xf = xfers_[x];
  xf = Xfer{};
  xf.id = id;
  xf.latency = p.latency;
  in_service_.insert(p.latency);
  xf.pieces = static_cast<std::uint32_t>(touched_.size());
  // Atom i arrives at arrival + i x atom_interval.
  const bool contiguous = t.contiguous();
  const std::uint64_t rows = contiguous ? 1 : std::max<std::uint64_t>(t.rows, 1);
  const std::uint64_t len = contiguous ? t.bytes() : t.row_bytes;
  const std::uint64_t ab = t.atom_bytes;
  const std::uint64_t atoms = atoms_;
  auto at = [&](std::uint64_t i) {
    return arrival + static_cast<Ps>(round_half_up(t.atom_interval_ps * static_cast<double>(i)));
  };
  const Ps last = at(atoms - 1);
  // The transfer cannot end before its last atom has arrived and been
  // served, nor before its last interleave units (one bank each, so their
  // bursts are tCCD_L apart) have been served from their first atom's
  // arrival: what limits a copy issued slower than HBM serves it.
  xf.floor = last + p.atom_latency;
  if (t.atom_interval_ps > 0) {
    const std::uint64_t end = t.base + (rows - 1) * t.stride + len;  // last row's end
    const std::uint64_t row_start = end - len;
    std::uint64_t chunk_end = end, before = atoms;
    for (int k = 0; k < 2 && chunk_end > row_start; ++k) {
      const std::uint64_t chunk_start = std::max(row_start, (chunk_end - 1) / interleave_ * interleave_);
      HbmTransfer c;
      c.write = t.write;
      c.atom_bytes = ab;
      c.row_bytes = chunk_end - chunk_start;
      before -= atoms_in(chunk_start, chunk_end - chunk_start, ab);
      xf.floor = std::max(xf.floor, at(before) + time_at_base0(c));
      chunk_end = chunk_start;
    }
  }
  Pending pend;
  pend.arrival = arrival;
  pend.x = x;
  pend.proto = Piece{static_cast<double>(arrival), static_cast<double>(last), id, x, t.write, t.atom_bytes, 0, 0, p.ramp};
  pend.pieces.reserve(touched_.size());
  // Each PC's demand arrives evenly from the copy's arrival to its last
  // atom there. (From its first atom there was no more accurate on whole
  // workloads and 1.5x slower: every piece opened with an event.)
  for (std::uint32_t pc : touched_) pend.pieces.push_back({pc, spread_[pc] * p.scale, arrival, at(last_atom_[pc])});
  pending_.push_back(std::move(pend));
  return id;
}

// Capacity of one PC for what it serves at its frontier: reads and writes
// served at once cost bus turnarounds (tWTR, tRTW), so the measured
// read+write capacity applies.
double ChannelHbm::capacity(const Mix& m) { return m.reads && m.writes ? mixed_capacity(m.atom) : 1.0; }

void ChannelHbm::settle(std::size_t pc) {
  PcState& s = pcs_[pc];
  const double dt = now_ - s.t;
  if (dt > 0) {
    if (s.mode == Mode::mass) {
      for (Piece& x : s.q) {
        if (x.a > s.f) break;
        if (x.e == x.a && x.a <= s.f) x.left -= dt * s.v;
      }
    } else if (s.mode == Mode::paced) {
      // Never past the breakpoint it heads for (rounding would skip a
      // point mass there).
      s.f = std::min({now_, s.f + dt * s.v, s.target});
    } else if (s.mode == Mode::idle) {
      s.f = now_;
    }
  }
  s.t = now_;
}

void ChannelHbm::refresh(PcState& s, double start) {
  s.ref_end = std::max(s.ref_end, start) + ref_block_;
  ++refreshes_;
}

void ChannelHbm::piece_done(const Piece& p) {
  Xfer& xf = xfers_[p.x];
  if (--xf.pieces > 0) return;
  // Its last piece: the last byte is served now, delivered one burst's
  // latency later.
  const Ps fin = static_cast<Ps>(std::ceil(now_ - 1e-6)) + xf.latency;
  done_.push(std::max(fin, xf.floor), xf.id);
  in_service_.erase(in_service_.find(xf.latency));
  free_xfers_.push_back(p.x);
}

// At an event of the PC (settled to now_): refreshes due, the frontier
// snapped, pieces that are done finished, then rescheduled.
void ChannelHbm::process(std::size_t pc) {
  PcState& s = pcs_[pc];
  const double eps = snap_eps();
  if (s.f > now_ - eps) s.f = now_;
  if (s.mode == Mode::mass) {
    // The earliest finisher is done by construction (at large now_ a tiny
    // remainder may not move now_ at all in floating point).
    Piece* first = nullptr;
    for (Piece& x : s.q) {
      if (x.a > s.f) break;
      if (x.e == x.a && x.a <= s.f && (!first || x.left < first->left)) first = &x;
    }
    if (first && s.serve_next <= now_) first->left = 0;
  } else if (s.mode == Mode::paced) {
    const double b = breakpoint(s);  // snap to the breakpoint it was heading for
    if (b - s.f < eps) s.f = b;
  }
  std::size_t keep = 0;
  for (std::size_t i = 0; i < s.q.size(); ++i) {
    Piece& x = s.q[i];
    const bool done = x.e == x.a ? (x.a <= s.f && x.left <= eps) : x.e <= s.f;
    if (done) {
      piece_done(x);
    } else {
      if (keep != i) s.q[keep] = x;
      ++keep;
    }
  }
  s.q.resize(keep);
  // Refreshes due: postponed while work waits (up to refresh_postpone),
  // else paid at their due time. A paced copy that the PC keeps up with
  // leaves nothing waiting (each atom is served as it arrives).
  const bool waiting = !s.q.empty() && !(s.mode == Mode::paced && s.f >= now_);
  while (static_cast<double>(s.ref_due) <= now_) {
    if (waiting && s.owed < cfg_.refresh_postpone)
      ++s.owed;
    else
      refresh(s, static_cast<double>(s.ref_due));
    s.ref_due += refi_;
  }
  // Nothing waits: pay the postponed ones now.
  if (!waiting)
    for (; s.owed > 0; --s.owed) refresh(s, now_);
  schedule(pc);
}

// The next arrival time at which the demand density at the frontier
// changes: a piece's first or last atom.
double ChannelHbm::breakpoint(const PcState& s) {
  double b = 1e300;
  for (const Piece& x : s.q) {
    if (x.a > s.f) return std::min(b, x.a);  // ordered by a
    if (x.e > s.f) b = std::min(b, x.e);
  }
  return b;
}

void ChannelHbm::schedule(std::size_t pc) {
  PcState& s = pcs_[pc];
  s.next = s.serve_next = 1e300;
  const bool was_serving = s.mode == Mode::mass || s.mode == Mode::paced;
  s.v = 0;
  const double blocked = std::max(s.stall_until, s.ref_end);
  if (s.q.empty()) {
    // Idle: refreshes fall due with nothing waiting and are paid in
    // closed form when work next arrives (activate()), so an idle PC
    // schedules no events.
    s.mode = Mode::idle;
    s.f = now_;
  } else if (now_ < blocked) {
    s.mode = Mode::stall;
    s.next = blocked;
  } else {
    for (;;) {
      // Point masses at (or, by rounding, behind) the frontier first: they
      // arrived before any later atom. Served evenly. One pass over the
      // pieces that have arrived by F gathers everything below.
      std::size_t masses = 0;
      double least = 1e300;
      double density = 0;       // paced demand per ps of arrival at F
      double b = 1e300;         // breakpoint()
      Mix mass_mix, paced_mix;  // for capacity()
      for (const Piece& x : s.q) {
        if (x.a > s.f) {
          b = std::min(b, x.a);  // ordered by a
          break;
        }
        if (x.e > s.f) b = std::min(b, x.e);
        if (x.e == x.a) {
          ++masses;
          least = std::min(least, x.left);
          mass_mix.add(x);
        } else if (x.e > s.f) {
          density += x.w / (x.e - x.a);
          if (x.e > x.a) paced_mix.add(x);
        }
      }
      if (masses > 0) {
        s.mode = Mode::mass;
        s.v = capacity(mass_mix) / static_cast<double>(masses);
        s.next = s.serve_next = now_ + least / s.v;
        break;
      }
      if (b >= 1e300) {  // nothing left to arrive or serve
        s.mode = Mode::idle;
        s.f = now_;
        break;
      }
      if (density <= 0 && s.f < now_) {
        // No demand at F (or only empty pieces): jump to the next
        // breakpoint, up to now.
        s.f = std::min(b, now_);
        continue;
      }
      s.mode = Mode::paced;
      s.target = b;
      const double speed = density > 0 ? capacity(paced_mix) / density : 1e300;
      const bool caught_up = s.f >= now_;
      s.v = caught_up ? std::min(1.0, speed) : speed;
      double dt = (b - s.f) / s.v;
      if (!caught_up && s.v > 1) dt = std::min(dt, (now_ - s.f) / (s.v - 1));  // catches up with now
      s.next = now_ + dt;
      if (s.next <= now_ && b <= now_) {  // below time's resolution: at the breakpoint already
        s.f = b;
        continue;
      }
      // Catching up in less than time's resolution (at now_ ~1e9 ps a
      // step of 1e-7 ps does not move now_), but too far behind for
      // process() to snap the frontier to now_ or to the breakpoint, with
      // no refresh due: processed at now_ the PC would come back to this
      // state for ever. The frontier has caught up.
      if (s.next <= now_ && !caught_up && s.f <= now_ - snap_eps() && b - s.f >= snap_eps() &&
          static_cast<double>(s.ref_due) > now_) {
        s.f = now_;
        continue;
      }
      break;
    }
  }
  // A refresh falling due while work waits is an event too.
  if (!s.q.empty()) s.next = std::min(s.next, static_cast<double>(s.ref_due));
  events_.set(pc, s.next < 1e300 ? s.next : MinTree::kNone);
  const bool serving = s.mode == Mode::mass || s.mode == Mode::paced;
  if (serving != was_serving) serving ? ++serving_ : --serving_;
}

void ChannelHbm::activate(const Pending& p) {
  for (const Pending::Part& part : p.pieces) {
    const std::size_t pc = part.pc;
    settle(pc);
    PcState& s = pcs_[pc];
    Piece piece = p.proto;
    piece.a = static_cast<double>(part.a);
    piece.e = static_cast<double>(part.e);
    piece.w = part.demand;
    piece.left = part.demand;
    if (s.q.empty()) {
      // Refreshes that fell due while the PC idled were paid at their due
      // times; the latest may still block it.
      if (static_cast<double>(s.ref_due) <= now_) {
        const Ps k = (static_cast<Ps>(now_) - s.ref_due) / refi_;
        refreshes_ += static_cast<std::uint64_t>(k);
        s.ref_due += k * refi_;
        refresh(s, static_cast<double>(s.ref_due));
        s.ref_due += refi_;
      }
      // An idle PC: the copy opens its rows and fills the pipeline first.
      s.f = now_;
      s.stall_until = now_ + piece.ramp;
    }
    auto pos = s.q.end();  // usually the latest arrival
    while (pos != s.q.begin() && std::make_pair((pos - 1)->a, (pos - 1)->id) > std::make_pair(piece.a, piece.id)) --pos;
    s.q.insert(pos, piece);
    schedule(pc);
  }
}

void ChannelHbm::advance(Ps to) {
  for (;;) {
    Ps next_arr = kNever;
    for (const Pending& p : pending_) next_arr = std::min(next_arr, p.arrival);
    const double next_pc = events_.empty() ? 1e300 : events_.top_key();
    const double step_to = std::min({static_cast<double>(to), static_cast<double>(next_arr), next_pc});
    if (step_to > now_) {
      if (serving_ > 0) busy_ps_ += step_to - now_;
      now_ = step_to;
    }
    bool changed = false;
    while (!events_.empty() && events_.top_key() <= now_) {
      const std::size_t pc = events_.top();
      settle(pc);
      process(pc);
      changed = true;
    }
    for (std::size_t i = 0; i < pending_.size();) {
      if (static_cast<double>(pending_[i].arrival) <= now_) {
        activate(pending_[i]);
        pending_[i] = std::move(pending_.back());
        pending_.pop_back();
        changed = true;
      } else {
        ++i;
      }
    }
    if (!changed && now_ >= static_cast<double>(to)) return;
    if (!changed && events_.empty() && pending_.empty()) {
      now_ = std::max(now_, static_cast<double>(to));
      return;
    }
  }
}

Ps ChannelHbm::next_event_time() const {
  Ps t = done_.next();
  for (const Pending& p : pending_) t = std::min(t, p.arrival);
  // Internal events (a PC's frontier reaching a breakpoint, a refresh)
  // need no wake-up of their own: run_until() processes them in order, and
  // a transfer finishing at one completes a burst's latency later, so the
  // next completion is no earlier than the next internal event plus the
  // least latency among the transfers in service.
  if (!events_.empty())
    t = std::min(t, static_cast<Ps>(std::ceil(events_.top_key())) + (in_service_.empty() ? 0 : *in_service_.begin()));
  return std::max(t, limit_);
}

void ChannelHbm::model_stats(StatList& s) const {
  s.push_back({"refreshes", static_cast<double>(refreshes_), "count", "refreshes paid, over all pseudo-channels"});
}

}  // namespace tpusim::arch
