// Calibrated fast HBM model: a transfer costs O(1) to set up and each event
// O(active transfers). Its figures come from the detailed model
// (DetailedDram), measured once per pattern class and reused:
//  - pattern class = read/write, atom size, and contiguous or strided with
//    row size and stride rounded to powers of two (rows of a whole sweep of
//    pseudo-channels or more count as contiguous), so a model's few dozen
//    tile shapes fall into a handful of classes;
//  - time alone T on idle memory: up to kExactBytes a detailed run of
//    exactly that shape (a small transfer's time depends on which
//    pseudo-channels and refreshes it meets); above, T(first kExactBytes)
//    plus the class's steady slope for the rest;
//  - steady slope (ps per byte) per rounded class: detailed runs of 1 MiB
//    and 1 MiB + two tREFI worth (T alone is a staircase of refreshes);
//  - unloaded latency L: one atom alone.
// Sharing: a transfer needs D = bytes x slope of whole-memory service; the
// rest of T (latency, row opening, idle pseudo-channels, refreshes) is paid
// once after its service, so alone it takes exactly T. Service goes to
// earlier arrivals first and is split evenly among transfers that arrived
// together: the detailed model's per-pseudo-channel controllers admit
// requests in arrival order, so staggered copies are served nearly one after
// another with only their latencies overlapping. While reads and writes
// are both served, capacity is the measured read+write figure (bus
// turnarounds, tWTR). An issue-rate limit (atom_interval) bounds completion
// below by the last atom's arrival + L.
// Calibration runs start at t = 0 on idle memory (refresh phase 0) at
// base 0.
// Leaves out: the transfer's own address (with the hash its pseudo-channel
// spread, so its time alone, depends on it: up to ~10% for 256 KiB blocks),
// streams aligned to hit the same banks at the same time, the refresh phase
// of a particular transfer, row sizes between powers of two in the slope.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "arch/hbm/calibrated_hbm_base.h"

namespace tpusim::arch {

class CalibratedHbm final : public CalibratedHbmBase {
 public:
  explicit CalibratedHbm(const HbmConfig& config);

  std::uint64_t submit(const HbmTransfer& t, Ps arrival) override;
  Ps next_event_time() const override;

  // Time of `t` alone on idle memory (no issue-rate limit), from calibration.
  Ps alone_time(const HbmTransfer& t) override;
  Ps atom_latency(const HbmTransfer& t) override;
  double steady_efficiency(const HbmTransfer& t) override;

 private:
  struct Active {
    std::uint64_t id;
    Ps arrival;
    double remaining;  // full-memory ps of service left
    bool write;
    std::uint64_t atom_bytes;
    Ps tail;            // latency paid after service
    Ps floor;           // issue-rate bound on completion
    double rate = 0;    // current share, set by share_out()
    double pcs = 1;     // pseudo-channels it spans
    double forced = 0;  // ps in service while refreshes were being paid
  };
  struct Pending {
    Ps arrival;
    Active a;
  };
  // What submit() derives from a transfer's shape alone (not its base,
  // arrival or pacing): a run submits millions of transfers of a few
  // hundred shapes, and the calibration lookups behind these were much of
  // its time.
  struct ShapeKey {
    std::uint64_t row_bytes, rows, stride, atom_bytes;
    bool write;
    bool operator==(const ShapeKey& o) const {
      return row_bytes == o.row_bytes && rows == o.rows && stride == o.stride && atom_bytes == o.atom_bytes &&
             write == o.write;
    }
  };
  struct ShapeHash {
    std::size_t operator()(const ShapeKey& k) const {
      std::uint64_t h = k.row_bytes * 0x9E3779B97F4A7C15ull;
      h = (h ^ k.rows) * 0xBF58476D1CE4E5B9ull;
      h = (h ^ k.stride) * 0x94D049BB133111EBull;
      h = (h ^ (k.atom_bytes << 1 | static_cast<std::uint64_t>(k.write))) * 0x9E3779B97F4A7C15ull;
      return static_cast<std::size_t>(h ^ (h >> 31));
    }
  };
  struct Shaped {
    Ps lat;            // one atom's unloaded latency (at most the time alone)
    double remaining;  // service demand
    double pcs;        // pseudo-channels spanned
    Ps tail;           // paid after service
    std::uint64_t atoms;
  };
  const Shaped& shaped(const HbmTransfer& t);

  double slope(const Key& k);  // steady, with refresh's share (slope0 is refresh-free)
  double fluid_alone(double service) const;
  double slowest_channel(double pcs, double forced) const;
  void advance(Ps to) override;
  void share_out();
  void split(double capacity);

  double now_ = 0;  // ps, service clock
  std::vector<Active> active_;
  // Indices into active_ of the transfers with a share (rate > 0), set
  // with the shares (split): only the earliest arrivals are served, so the
  // per-event work touches these, not every transfer waiting behind them.
  std::vector<std::uint32_t> served_;
  std::vector<Pending> pending_;
  Ps next_arrival_ = kNever;  // earliest arrival in pending_
  bool shares_valid_ = false;
  std::unordered_map<ShapeKey, Shaped, ShapeHash> shapes_;
  // busy_ps_: time with at least one transfer in service
  // Refresh: share of each pseudo-channel's time (tRFC / tREFI), the busy
  // time the postponed refreshes cover (refresh_postpone x tREFI), the busy
  // time of it used so far, and credit restored per idle ps (tREFI / tRFC).
  double refresh_share_ = 0, credit_cap_ = 0, credit_used_ = 0, payback_ = 0;
  double refi_ = 0, rfc_ = 0;
};

}  // namespace tpusim::arch
