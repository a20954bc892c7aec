// Per-pseudo-channel calibrated HBM model (hbm.model: channel): between the
// detailed DRAM model (DetailedDram, every command) and the whole-memory
// calibrated model (CalibratedHbm, O(1) per transfer). Figures come from
// the detailed model, measured once per pattern, and a fluid model per
// pseudo-channel (PC) reuses them. Setting up a transfer costs O(PCs)
// (O(interleave units) for rows shorter than 2 MiB); every PC a transfer
// touches adds a few events, each O(pieces on that PC + log PCs).
// Calibration, all with refresh off (refresh is simulated per PC below):
//  - pattern class = read/write, atom size, and contiguous or strided with
//    row size and stride rounded to powers of two (rows of a whole sweep of
//    PCs or more count as contiguous);
//  - time alone T on idle memory at base 0: up to kExactBytes a detailed
//    run of exactly that shape; above, T(first kExactBytes) plus the
//    class's slope for the rest;
//  - per-PC rate of a class: detailed runs of 1 MiB and 3 MiB; their time
//    difference over the growth of the busiest PC's bytes;
//  - latencies: one burst, one atom, one interleave unit alone;
//  - read+write capacity per atom size: a read and a write together.
// A transfer's bytes are split over the PCs by the address mapping (its own
// base, hash included). Alone it takes ramp + its busiest PC's demand + one
// burst's latency; the ramp (row opening, pipeline fill) is what T at base
// 0 has beyond the rest there.
// Each PC serves demand first come first served by atom arrival: an
// issue-paced transfer's demand on a PC arrives evenly from its arrival to
// its last atom there, an unpaced one's at once; demand that arrived
// together is served together (round robin), so concurrent paced copies
// progress side by side and
// staggered unpaced copies one after another. A PC found idle by a
// transfer waits its ramp first. A PC serving reads and writes at once has
// the measured read+write capacity (bus turnarounds). Refresh per PC as the
// detailed controller does it: due every tREFI (PCs staggered over tREFI),
// postponed while work waits (up to hbm.refresh_postpone), paid when
// nothing waits, blocking the PC for tRP + tRFC.
// Completion: its last byte served + one burst's latency, and never before
// its last atom's arrival + one atom's latency, nor before its last
// interleave units (one bank each: their bursts are tCCD_L apart) are
// served from their first atom's arrival.
// Leaves out: bank and bank-group conflicts between concurrent copies
// (measured only as the classes' steady rates and the read+write
// capacity), row sizes between powers of two in the slope, queue depth.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <vector>

#include "arch/common/min_tree.h"
#include "arch/hbm/calibrated_hbm_base.h"

namespace tpusim::arch {

class ChannelHbm final : public CalibratedHbmBase {
 public:
  explicit ChannelHbm(const HbmConfig& config);

  std::uint64_t submit(const HbmTransfer& t, Ps arrival) override;
  Ps next_event_time() const override;

  // Time of `t` alone on idle memory from t = 0, as this model gives it
  // (its pacing and the per-PC refresh schedule included).
  Ps alone_time(const HbmTransfer& t) override;
  Ps atom_latency(const HbmTransfer& t) override;
  double steady_efficiency(const HbmTransfer& t) override;

 private:
  struct Xfer {  // a submitted transfer
    std::uint64_t id = 0;
    Ps latency = 0;            // one burst's, paid after its last byte is served
    Ps floor = 0;              // issue-rate bound on completion
    std::uint32_t pieces = 0;  // PCs still serving it
  };
  // One transfer's demand on one PC. Its atoms arrive evenly over [a, e]
  // (e = a: all at once, a point mass of demand).
  struct Piece {
    // Times in ps held as doubles (exact: whole numbers below 2^53), as
    // every use compares them with the frontier.
    double a, e;
    std::uint64_t id;  // submission order: ties at equal a
    std::uint32_t x;   // index into xfers_
    bool write;
    std::uint64_t atom_bytes;
    double w;     // demand, PC ps at full rate
    double left;  // point masses: demand still to serve
    double ramp;  // start-up delay if it finds the PC idle
  };
  // All demand that arrived before the frontier F has been served. Point
  // masses at F are served together, evenly; otherwise F advances at
  // capacity / (demand density at F), never past real time.
  enum class Mode : std::uint8_t { idle, stall, mass, paced };
  struct PcState {
    std::vector<Piece> q;    // unfinished pieces, ordered by (a, id)
    double t = 0;            // state as of this time
    double f = 0;            // frontier (arrival time), <= t
    double stall_until = 0;  // ramp
    double ref_end = 0;      // a refresh blocks the PC until then
    Ps ref_due = kNever;     // next scheduled refresh
    int owed = 0;            // refreshes postponed
    Mode mode = Mode::idle;
    double v = 0;               // paced: dF/dt; mass: rate of each mass at F
    double target = 0;          // paced: the breakpoint F heads for
    double next = 1e300;        // next event (in events_ when < 1e300)
    double serve_next = 1e300;  // mass mode: when the least mass is served
  };
  struct Pending {
    Ps arrival;
    std::uint32_t x;
    Piece proto;  // all but its PC's demand and atom window
    struct Part {
      std::uint32_t pc;
      double demand;
      Ps a, e;  // the copy's arrival, its last atom's arrival on this PC
    };
    std::vector<Part> pieces;
  };

  double pc_scale(const Key& k);  // PC ps per byte on one PC
  // Bytes of `t` (at t.base) on each PC into spread_, the first and last
  // atom index on each into last_atom_, all atoms into atoms_;
  // returns the largest.
  double spread(const HbmTransfer& t);
  std::uint64_t atoms_in(std::uint64_t addr, std::uint64_t n, std::uint64_t atom) const;
  struct Plan {
    double scale = 0;     // PC ps per byte on a PC
    double ramp = 0;      // before service starts on an idle PC
    Ps latency = 0;       // one burst's, unloaded: paid after service
    Ps atom_latency = 0;  // one atom's, unloaded
  };
  Plan plan(const HbmTransfer& t);         // leaves t's bytes per PC in spread_
  Ps time_at_base0(const HbmTransfer& t);  // T from calibration
  // What a PC serves at once: reads, writes, the largest atom.
  struct Mix {
    bool reads = false, writes = false;
    std::uint64_t atom = 0;
    void add(const Piece& x) {
      (x.write ? writes : reads) = true;
      atom = std::max(atom, x.atom_bytes);
    }
  };
  double capacity(const Mix& m);  // of one PC, with read+write mixing
  void advance(Ps to) override;
  void model_stats(StatList& s) const override;
  void settle(std::size_t pc);    // state up to now_ (no event in between)
  void process(std::size_t pc);   // refreshes, finished pieces, then schedule()
  void schedule(std::size_t pc);  // mode, speed and next event of one PC
  void refresh(PcState& s, double start);
  static double breakpoint(const PcState& s);
  // Below this a frontier counts as at now_ or at its breakpoint (relative
  // to now_: a double holds ps to ~1e-7 at 1e9).
  double snap_eps() const { return 1e-6 * std::max(1.0, now_ * 1e-9); }
  void piece_done(const Piece& x);
  void activate(const Pending& p);

  // extra_runs_: detailed runs made for alone_time()
  std::map<Key, double> pc_scale_;                       // class -> PC ps per byte on a PC
  std::map<std::pair<Key, std::uint64_t>, Plan> plans_;  // exact shape, bytes or rows -> plan at base 0

  double now_ = 0;  // ps
  std::vector<PcState> pcs_;
  MinTree events_;           // pc -> next event (in (time, pc) order)
  std::size_t serving_ = 0;  // PCs serving (mass or paced mode)
  std::vector<Xfer> xfers_;
  std::vector<std::uint32_t> free_xfers_;
  std::vector<Pending> pending_;
  std::multiset<Ps> in_service_;          // latencies of the submitted, unfinished transfers
  std::vector<double> spread_;            // scratch: bytes per PC
  std::vector<std::uint64_t> last_atom_;  // scratch: last atom index per PC
  std::uint64_t atoms_ = 0;
  std::vector<std::uint32_t> touched_;  // scratch: PCs with bytes in spread_
  std::uint64_t refreshes_ = 0;
  // busy_ps_: time with at least one PC serving
  Ps refi_ = 0;                    // 0: no refresh
  double ref_block_ = 0;           // tRP + tRFC
  bool sweep_covers_pcs_ = false;  // an aligned interleave x PCs block hits every PC once
};

}  // namespace tpusim::arch
