// Detailed DRAM timing model of HBM (or DDR) stacks: every pseudo-channel
// (PC) has its own controller with a request queue, an FR-FCFS scheduler and
// per-bank state (open row, earliest next command times); commands obey the
// timing rules of dram_rules.h (tRCD, tRP, tRAS, tRC, tCCD_S/L, tRRD_S/L,
// tFAW, tWR, tWTR_S/L, tRTP, the read-to-write bus gap tRTW, tCL/tCWL, the
// burst's data-bus occupancy, one row and one column command per tCK) and
// all-bank refresh per PC (tRFC every tREFI, PCs staggered evenly over
// tREFI). Event-driven: each PC jumps from command to command; idle time
// costs nothing.
// Flexible refresh (JEDEC lets a controller postpone up to 8 REF commands):
// a refresh that falls due while requests wait is postponed, up to
// hbm.refresh_postpone at a time, and postponed ones are paid as soon as
// the PC has nothing queued. A PC that finishes its share of a copy early
// refreshes while the slowest PC finishes, instead of a refresh landing
// inside the copy; a long stream still pays one refresh per tREFI.
// Scheduler (per PC): requests wait in a queue of queue_depth (later ones
// wait in arrival order outside it). Among the banks' next commands the one
// that can issue earliest wins; ties go to column commands (row hits) and
// then to the oldest request. A bank serves the oldest row hit before
// closing its row, but after kHitStreakCap column commands that bypass an
// older request to another row it closes the row anyway (starvation cap).
// Page policy "open" keeps rows open; "closed" auto-precharges after a
// request when no queued request hits the same row.
// Leaves out: per-bank refresh (REFpb) and pulling refreshes in, power-down,
// rank/stack-ID switching, data-bus inversion, ECC, write data buffering
// (writes complete when their data is on the bus), mode registers.
#pragma once

#include <cstdint>
#include <memory>
#include <queue>
#include <unordered_map>
#include <vector>

#include "arch/hbm/address_mapping.h"
#include "arch/hbm/dram_rules.h"
#include "arch/hbm/dram_timing.h"
#include "arch/hbm/hbm_model.h"

namespace tpusim::arch {

// What a request needed when its first command issued: its row open (hit),
// an ACT to a closed bank (miss), or a PRE of another row first (conflict).
enum class RowOutcome : std::uint8_t { Hit, Miss, Conflict };

class DetailedDram : public HbmModel {
 public:
  static constexpr int kHitStreakCap = 32;

  explicit DetailedDram(const HbmConfig& config);

  std::uint64_t submit(const HbmTransfer& t, Ps arrival) override;
  std::vector<HbmCompletion> run_until(Ps limit) override;
  Ps next_event_time() const override;
  StatList stats() const override;
  double peak_bandwidth() const override { return peak_; }

  // Single request (atom) API: one request of `bytes` (at most one interleave
  // unit, not crossing it) at `addr`; its completion carries the returned id.
  std::uint64_t submit_request(std::uint64_t addr, std::uint32_t bytes, bool write, Ps arrival);

  const DramTiming& timing() const { return tm_; }

  // Tests: re-plan every bank at every scheduling decision and scan all
  // banks (no cached next commands, no non-empty mask). Slow; must give
  // exactly the same schedule.
  void set_reference_scan(bool on) { reference_scan_ = on; }
  const AddressMapping& mapping() const { return map_; }

  struct Counters {
    std::uint64_t reads = 0, writes = 0, bytes_read = 0, bytes_written = 0;
    std::uint64_t row_hits = 0, row_misses = 0, row_conflicts = 0;
    std::uint64_t activates = 0, precharges = 0, refreshes = 0, column_cmds = 0;
    Ps refresh_ps = 0;          // PC time blocked by refresh, summed over PCs
    Ps data_busy_ps = 0;        // data-bus busy time summed over PCs
    double latency_ps_sum = 0;  // arrival to last byte (+ controller latency)
  };
  const Counters& counters() const { return c_; }
  Ps pc_busy_ps(std::uint32_t pc) const { return pcs_[pc].busy_ps; }

 private:
  struct Atom {
    Ps arrival;
    std::uint64_t row;
    std::uint32_t transfer;  // index into transfers_
    std::uint16_t bank;
    std::uint16_t bursts;  // bursts left to issue
    std::uint32_t bytes;   // bytes requested (for stats)
    bool write;
    RowOutcome outcome;
    std::uint64_t seq;  // admission order, for FCFS ties
    std::uint64_t id;   // completion id when transfer == kSingle
  };
  static constexpr std::uint32_t kSingle = 0xffffffffu;  // a request outside any transfer
  // An atom waiting for admission, packed into 32 bytes: a million requests
  // submitted at once take 32 MB, and each fresh 4 KiB page costs a page
  // fault. Admission unpacks it into an Atom.
  struct Pending {
    Ps arrival;
    std::uint64_t row;
    // kWriteBit if a write, plus kSingleBit and the id for a single request,
    // else the transfer index.
    std::uint64_t tag;
    std::uint16_t bank, bursts;
    std::uint32_t bytes;
  };
  static constexpr std::uint64_t kWriteBit = 1ull << 63, kSingleBit = 1ull << 62;
  static Atom unpack(const Pending& p);
  // Pending atoms, first in first out, in chunks of kChunk:
  // admission reads them front to back through contiguous memory (a
  // deque's 512-byte nodes, interleaved over the PCs by the submissions,
  // cost a cache miss per atom), appending never copies queued atoms (a
  // vector's regrowth did, with fresh pages each time), and a consumed
  // chunk is freed as soon as admission leaves it.
  class AtomFifo {
   public:
    static constexpr std::size_t kChunk = 256;
    bool empty() const { return head_ == tail_; }
    std::size_t size() const { return tail_ - head_; }
    const Pending& front() const { return at(head_); }
    const Pending& back() const { return at(tail_ - 1); }
    const Pending& pop();  // valid until the next pop()
    void push(const Pending* first, std::size_t n);
    void clear();  // when empty: keeps one chunk for the next push

   private:
    Pending& at(std::size_t i) const { return chunks_[i / kChunk][i % kChunk]; }
    std::vector<std::unique_ptr<Pending[]>> chunks_;  // null before head_'s chunk
    std::size_t head_ = 0, tail_ = 0;                 // positions from chunks_[0]
  };
  struct Stream {  // atoms of one submission for one PC, arrival-ordered
    AtomFifo atoms;
    bool singles = false;  // holds one-atom submissions, in submission order
  };
  static constexpr std::int64_t kNoRow = -1;  // Bank::open of a precharged bank
  struct Bank {
    std::int64_t open = kNoRow;
    EarliestNext next;  // the bank-scope rules' part
    int streak = 0;
    std::vector<Atom> q;  // short (<= queue_depth): erasing inside is cheap
    // The bank's next command, cached until its queue or state changes
    // (best() would otherwise rescan every queue for row hits per command).
    DramCmd next_cmd = DramCmd::ACT;
    std::size_t next_qi = 0;
    std::uint64_t next_seq = 0;
  };
  struct Group {
    EarliestNext next;  // the bank-group-scope rules' part
  };
  struct Pc {
    Ps now = 0;
    EarliestNext next;  // the pseudo-channel-scope rules' part
    ActWindow acts;     // tFAW
    Ps ref_due = 0;
    Ps next_time = kNever;
    Ps busy_ps = 0;
    int queued = 0;
    std::uint64_t nonempty = 0;  // banks with queued requests (banks <= 64)
    // Banks whose queue or state changed since plan_bank() (banks <= 64).
    std::uint64_t dirty = ~0ull;
    int owed = 0;        // refreshes postponed, paid when the PC idles
    std::size_t rr = 0;  // stream admitted last (round-robin between equals)
    std::vector<Bank> banks;
    // What best() reads of each bank, kept apart from Bank (three short
    // arrays) so that its scan stays in a few cache lines: the bank's own
    // earliest time for its next command as a key 2t + not-a-column (all
    // ones while the bank has no request, so it never wins), the request's
    // age, and the index of the command (index(DramCmd)) and bank group in
    // best()'s table (command * groups + group).
    std::vector<std::uint64_t> ready_key;
    std::vector<std::uint64_t> age;
    std::vector<std::uint32_t> part;
    std::vector<Group> groups;
    std::vector<Stream> streams;
  };
  struct Cand {
    Ps t = kNever;
    int bank = -1;
    DramCmd cmd = DramCmd::RD;
    std::size_t qi = 0;
    std::uint64_t seq = 0;
  };
  struct TransferState {
    std::uint64_t id;
    std::uint64_t atoms_left;
    Ps done = 0;
  };

  void run_pc(Pc& pc, Ps limit);
  bool admit(Pc& pc);
  Ps next_arrival(const Pc& pc) const;
  Cand best(Pc& pc) const;
  Cand reference_best(Pc& pc, const Ps* part) const;
  void plan_bank(Pc& pc, std::size_t b) const;
  void add_done(Ps t, std::uint64_t id);
  void issue(Pc& pc, const Cand& c);
  void refresh(Pc& pc, Ps start);
  void refresh_due(Pc& pc);  // the scheduled one; advances ref_due
  void skip_idle_refreshes(Pc& pc, Ps until);
  void atom_done(Atom& a, Ps time);
  void add_atom(std::vector<AtomFifo>& per_pc, std::uint64_t addr, std::uint64_t bytes, bool write, std::uint32_t tidx,
                Ps arrival);
  void push_streams(std::vector<AtomFifo>& per_pc);
  Pending make_atom(std::uint64_t addr, std::uint64_t bytes, bool write, std::uint32_t tidx, Ps arrival,
                    std::uint32_t& pc) const;
  Stream& target_stream(Pc& pc, Ps first_arrival, bool single);
  void append(Pc& pc, AtomFifo& atoms);  // leaves `atoms` empty
  std::uint32_t new_transfer(std::uint64_t id, Ps arrival);

  HbmConfig cfg_;
  DramTiming tm_;
  DramRules rules_;
  AddressMapping map_;
  double peak_;
  bool closed_page_;
  bool reference_scan_ = false;
  std::vector<Pc> pcs_;
  std::vector<std::uint32_t> group_of_;  // bank -> bank group (no division per command)
  std::vector<AtomFifo> scratch_;        // per-PC atoms of the submission being split
  std::vector<TransferState> transfers_;
  std::vector<std::uint32_t> free_transfers_;
  // Completions not yet returned (unordered); in the returned type, so that
  // a batch that is wholly due is handed over without a copy.
  std::vector<HbmCompletion> done_;
  Ps done_min_ = kNever;
  mutable std::vector<Ps> group_scratch_;           // best(): PC and group parts by command
  mutable std::vector<std::uint64_t> key_scratch_;  // best(): the parts as keys
  std::uint64_t next_id_ = 1, next_seq_ = 0;
  std::uint64_t completed_ = 0;  // ids that have completed (next_id_ - 1 - completed_ outstanding)
  Ps limit_ = 0;
  Counters c_;
};

}  // namespace tpusim::arch
