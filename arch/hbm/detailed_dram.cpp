// See detailed_dram.h.
#include "arch/hbm/detailed_dram.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "arch/common/errors.h"

namespace tpusim::arch {

DetailedDram::DetailedDram(const HbmConfig& config)
    : cfg_(config), tm_(config), rules_(tm_), map_(config), peak_(hbm_peak_bandwidth(config)) {
  if (cfg_.page_policy != "open" && cfg_.page_policy != "closed")
    throw ConfigError("hbm.page_policy must be 'open' or 'closed', got '" + cfg_.page_policy + "'");
  if (cfg_.queue_depth <= 0) throw ConfigError("hbm.queue_depth must be positive");
  if (cfg_.refresh_postpone < 0 || cfg_.refresh_postpone > 8)
    throw ConfigError("hbm.refresh_postpone must be 0..8 (JEDEC allows at most 8 postponed refreshes), got " +
                      std::to_string(cfg_.refresh_postpone));
  closed_page_ = cfg_.page_policy == "closed";
  group_scratch_.resize(4 * static_cast<std::size_t>(cfg_.bank_groups));
  key_scratch_.resize(4 * static_cast<std::size_t>(cfg_.bank_groups));
  for (std::uint32_t b = 0; b < map_.banks_per_pc(); ++b) group_of_.push_back(map_.bank_group_of(b));
  const std::uint32_t n = map_.pseudo_channels_total();
  pcs_.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    Pc& pc = pcs_[i];
    pc.banks.resize(map_.banks_per_pc());
    pc.ready_key.assign(map_.banks_per_pc(), ~0ull);
    pc.age.resize(map_.banks_per_pc());
    pc.part.resize(map_.banks_per_pc());
    pc.groups.resize(static_cast<std::size_t>(cfg_.bank_groups));
    // Refreshes are staggered evenly so that the PCs of a stack never all
    // stall at once (what controllers do to smooth bandwidth).
    pc.ref_due = tm_.REFI == 0 ? kNever : tm_.REFI * (i + 1) / n;
  }
}

void DetailedDram::add_atom(std::vector<AtomFifo>& per_pc, std::uint64_t addr, std::uint64_t bytes, bool write,
                            std::uint32_t tidx, Ps arrival) {
  std::uint32_t pc;
  const Pending a = make_atom(addr, bytes, write, tidx, arrival, pc);
  per_pc[pc].push(&a, 1);
}

DetailedDram::Pending DetailedDram::make_atom(std::uint64_t addr, std::uint64_t bytes, bool write, std::uint32_t tidx,
                                              Ps arrival, std::uint32_t& pc) const {
  const DramCoord d = map_.decode(addr);
  pc = d.pc;
  const std::uint64_t bb = map_.burst_bytes();
  Pending a;
  a.arrival = arrival;
  a.row = d.row;
  a.tag = (write ? kWriteBit : 0) | tidx;
  a.bank = static_cast<std::uint16_t>(d.bank);
  a.bursts = static_cast<std::uint16_t>((addr + bytes - 1) / bb - addr / bb + 1);
  a.bytes = static_cast<std::uint32_t>(bytes);
  return a;
}

DetailedDram::Atom DetailedDram::unpack(const Pending& p) {
  Atom a;
  a.arrival = p.arrival;
  a.row = p.row;
  const bool single = (p.tag & kSingleBit) != 0;
  a.transfer = single ? kSingle : static_cast<std::uint32_t>(p.tag);
  a.bank = p.bank;
  a.bursts = p.bursts;
  a.bytes = p.bytes;
  a.write = (p.tag & kWriteBit) != 0;
  a.outcome = RowOutcome::Hit;
  a.seq = 0;
  a.id = single ? p.tag & ~(kWriteBit | kSingleBit) : 0;
  return a;
}

DetailedDram::Stream& DetailedDram::target_stream(Pc& pc, Ps first_arrival, bool single) {
  pc.next_time = std::min(pc.next_time, std::max(pc.now, first_arrival));
  // Appending keeps one stream per PC in the common case (submissions in
  // arrival order). A transfer that arrives together with another gets its
  // own stream so admission alternates between them; one-atom submissions
  // (the request API) share a stream in submission order.
  Stream* tgt = nullptr;
  for (Stream& s : pc.streams) {
    const bool empty = s.atoms.empty();
    const Ps last = empty ? kNever : s.atoms.back().arrival;
    if ((empty && s.singles == single) ||
        (!empty && (single ? s.singles && last <= first_arrival : !s.singles && last < first_arrival))) {
      tgt = &s;
      break;
    }
  }
  if (!tgt) {
    pc.streams.emplace_back();
    tgt = &pc.streams.back();
    tgt->singles = single;
  }
  if (tgt->atoms.empty()) tgt->atoms.clear();
  return *tgt;
}

void DetailedDram::append(Pc& pc, AtomFifo& atoms) {
  Stream& tgt = target_stream(pc, atoms.front().arrival, atoms.size() == 1);
  if (tgt.atoms.empty()) {
    std::swap(tgt.atoms, atoms);  // the usual case: no copy
  } else {
    while (!atoms.empty()) tgt.atoms.push(&atoms.pop(), 1);
    atoms.clear();
  }
}

const DetailedDram::Pending& DetailedDram::AtomFifo::pop() {
  // Entering a new chunk: the one before it is consumed.
  if (head_ % kChunk == 0 && head_ != 0) chunks_[head_ / kChunk - 1].reset();
  return at(head_++);
}

void DetailedDram::AtomFifo::push(const Pending* first, std::size_t n) {
  // Drop the freed chunks' slots once they are half of the table, so that a
  // stream fed while it drains keeps a table the size of its backlog.
  const std::size_t dead = head_ / kChunk;
  if (dead >= 16 && dead * 2 >= chunks_.size()) {
    if (head_ % kChunk == 0) chunks_[dead - 1].reset();  // pop() frees it only on the next pop
    chunks_.erase(chunks_.begin(), chunks_.begin() + static_cast<std::ptrdiff_t>(dead));
    head_ -= dead * kChunk;
    tail_ -= dead * kChunk;
  }
  while (n > 0) {
    const std::size_t c = tail_ / kChunk, off = tail_ % kChunk;
    if (c == chunks_.size()) chunks_.push_back(std::unique_ptr<Pending[]>(new Pending[kChunk]));
    const std::size_t k = std::min(n, kChunk - off);
    Pending* to = chunks_[c].get() + off;
    if (k == 1)
      *to = *first;  // the request API's case: no call to memmove
    else
      std::copy(first, first + k, to);
    first += k;
    n -= k;
    tail_ += k;
  }
}

void DetailedDram::AtomFifo::clear() {
  if (tail_ == 0) return;
  std::unique_ptr<Pending[]> keep = std::move(chunks_[(tail_ - 1) / kChunk]);
  chunks_.clear();
  chunks_.push_back(std::move(keep));
  head_ = tail_ = 0;
}

void DetailedDram::push_streams(std::vector<AtomFifo>& per_pc) {
  for (std::size_t i = 0; i < per_pc.size(); ++i)
    if (!per_pc[i].empty()) append(pcs_[i], per_pc[i]);
}

std::uint64_t DetailedDram::submit(const HbmTransfer& t, Ps arrival) {
  if (arrival < limit_)
    throw InternalError("DetailedDram::submit: arrival " + std::to_string(arrival) +
                        " ps is before the time already simulated (" + std::to_string(limit_) + " ps)");
  if (t.atom_bytes == 0) throw ConfigError("hbm transfer: atom_bytes must be positive");
  if (t.rows > 1 && t.stride < t.row_bytes && t.stride != 0)
    throw ConfigError("hbm transfer: stride smaller than row_bytes (rows overlap)");
  const std::uint64_t id = next_id_++;
  const std::uint32_t tidx = new_transfer(id, arrival);
  // Scratch reused across submissions: the request API submits one atom at
  // a time, and 32+ fresh vectors per request dominated its cost.
  std::vector<AtomFifo>& per_pc = scratch_;
  if (per_pc.size() != pcs_.size()) per_pc.resize(pcs_.size());
  const std::uint64_t unit = map_.interleave_bytes();
  const std::uint64_t rows = t.row_bytes == 0 ? 0 : std::max<std::uint64_t>(t.rows, 1);
  const std::uint64_t stride = t.contiguous() ? t.row_bytes : t.stride;
  std::uint64_t n = 0;
  for (std::uint64_t r = 0; r < rows; ++r) {
    std::uint64_t addr = t.base + r * stride;
    std::uint64_t left = t.row_bytes;
    while (left > 0) {
      std::uint64_t b = std::min({left, t.atom_bytes, unit - addr % unit});
      const Ps at = t.atom_interval_ps == 0
                        ? arrival
                        : arrival + static_cast<Ps>(std::llround(static_cast<double>(n) * t.atom_interval_ps));
      add_atom(per_pc, addr, b, t.write, tidx, at);
      ++n;
      addr += b;
      left -= b;
    }
  }
  transfers_[tidx].atoms_left = n;
  if (n == 0) {
    add_done(arrival, id);
    free_transfers_.push_back(tidx);
    return id;
  }
  push_streams(per_pc);
  return id;
}

std::uint32_t DetailedDram::new_transfer(std::uint64_t id, Ps arrival) {
  std::uint32_t tidx;
  if (!free_transfers_.empty()) {
    tidx = free_transfers_.back();
    free_transfers_.pop_back();
  } else {
    tidx = static_cast<std::uint32_t>(transfers_.size());
    transfers_.push_back({});
  }
  transfers_[tidx] = {id, 0, arrival};
  return tidx;
}

// The same as submit() of a one-atom transfer, without splitting it.
std::uint64_t DetailedDram::submit_request(std::uint64_t addr, std::uint32_t bytes, bool write, Ps arrival) {
  const std::uint64_t unit = map_.interleave_bytes();
  if (bytes == 0 || addr / unit != (addr + bytes - 1) / unit)
    throw InternalError("DetailedDram::submit_request: a request of " + std::to_string(bytes) + " bytes at " +
                        std::to_string(addr) + " crosses an interleave unit of " + std::to_string(unit) + " bytes");
  if (arrival < limit_)
    throw InternalError("DetailedDram::submit: arrival " + std::to_string(arrival) +
                        " ps is before the time already simulated (" + std::to_string(limit_) + " ps)");
  // One request needs no transfer bookkeeping: its atom carries the id.
  const std::uint64_t id = next_id_++;
  if (id >= kSingleBit) throw InternalError("DetailedDram::submit_request: request ids exhausted");
  std::uint32_t pc;
  Pending a = make_atom(addr, bytes, write, 0, arrival, pc);
  a.tag |= kSingleBit | id;
  target_stream(pcs_[pc], a.arrival, true).atoms.push(&a, 1);
  return id;
}

Ps DetailedDram::next_arrival(const Pc& pc) const {
  Ps best = kNever;
  for (const Stream& s : pc.streams)
    if (!s.atoms.empty()) best = std::min(best, s.atoms.front().arrival);
  return best;
}

bool DetailedDram::admit(Pc& pc) {
  bool any = false;
  const std::size_t ns = pc.streams.size();
  while (pc.queued < cfg_.queue_depth) {
    // Earliest arrival first; streams that arrived together (concurrent
    // transfers) take turns, as interleaved requests from several engines.
    Stream* src = nullptr;
    std::size_t src_i = 0;
    std::size_t i = ns <= 1 ? 0 : (pc.rr + 1) % ns;  // starting after the last one admitted
    for (std::size_t k = 0; k < ns; ++k, i = i + 1 == ns ? 0 : i + 1) {
      Stream& s = pc.streams[i];
      if (!s.atoms.empty() && s.atoms.front().arrival <= pc.now &&
          (!src || s.atoms.front().arrival < src->atoms.front().arrival)) {
        src = &s;
        src_i = i;
      }
    }
    if (!src) break;
    pc.rr = src_i;
    Atom a = unpack(src->atoms.pop());
    a.seq = next_seq_++;  // age = admission order, for FCFS ties
    Bank& bk = pc.banks[a.bank];
    // A request joining the back of a queue changes the bank's next command
    // only if the queue was empty or the bank is to close its row (PRE) and
    // the request hits that row (plan_bank() takes the oldest hit).
    const bool replan = bk.q.empty() || (bk.next_cmd == DramCmd::PRE && a.row == static_cast<std::uint64_t>(bk.open));
    bk.q.push_back(a);
    if (a.bank < 64) {
      pc.nonempty |= 1ull << a.bank;
      if (replan) pc.dirty |= 1ull << a.bank;
    }
    ++pc.queued;
    any = true;
  }
  // Drop exhausted streams so that the scans above stay short.
  if (pc.streams.size() > 1) {
    auto end = std::remove_if(pc.streams.begin(), pc.streams.end(), [](const Stream& s) { return s.atoms.empty(); });
    if (end != pc.streams.end()) {
      pc.streams.erase(end, pc.streams.end());
      pc.rr = pc.streams.empty() ? 0 : pc.rr % pc.streams.size();
    }
  }
  return any;
}

void DetailedDram::plan_bank(Pc& pc, std::size_t b) const {
  Bank& bk = pc.banks[b];
  // Column for the oldest row hit, else PRE (row open) or ACT for the
  // oldest request; a bank that bypassed older requests kHitStreakCap times
  // closes its row.
  bk.next_qi = 0;
  bool column = false;
  if (bk.open == kNoRow) {
    bk.next_cmd = DramCmd::ACT;
  } else if (bk.q.front().row == static_cast<std::uint64_t>(bk.open)) {
    column = true;
  } else {
    bk.next_cmd = DramCmd::PRE;
    if (bk.streak < kHitStreakCap)
      for (std::size_t i = 1; i < bk.q.size(); ++i)
        if (bk.q[i].row == static_cast<std::uint64_t>(bk.open)) {
          column = true;
          bk.next_qi = i;
          break;
        }
  }
  const Atom& a = bk.q[bk.next_qi];
  if (column) bk.next_cmd = a.write ? DramCmd::WR : DramCmd::RD;
  bk.next_seq = a.seq;
  pc.part[b] = static_cast<std::uint32_t>(index(bk.next_cmd) * pc.groups.size() + group_of_[b]);
  pc.age[b] = a.seq;
  pc.ready_key[b] = (static_cast<std::uint64_t>(bk.next[bk.next_cmd]) << 1) | (column ? 0u : 1u);
}

DetailedDram::Cand DetailedDram::best(Pc& pc) const {
  // The earliest issue time of each command (DramRules::earliest(), and
  // not before now) splits into a PC part, a bank-group part and a bank
  // part; the PC parts are the same for every bank, so they are computed
  // once.
  const Ps rd = std::max(pc.now, pc.next[DramCmd::RD]);
  const Ps wr = std::max(pc.now, pc.next[DramCmd::WR]);
  const Ps act = std::max({pc.now, pc.next[DramCmd::ACT], pc.acts.oldest() + rules_.window_latency()});
  const Ps pre = std::max(pc.now, pc.next[DramCmd::PRE]);
  // Per command (RD, WR, ACT, PRE; see Pc::part) and bank group: the
  // larger of the PC and the group part.
  const std::size_t ng = pc.groups.size();
  // Also as keys 2t + not-a-column (see below).
  Ps* part = group_scratch_.data();  // [index(command) * ng + group]
  std::uint64_t* part_key = key_scratch_.data();
  for (std::size_t g = 0; g < ng; ++g) {
    const EarliestNext& gr = pc.groups[g].next;
    part[g] = gr.later<DramScope::BankGroup, DramCmd::RD>(rd);
    part[ng + g] = gr.later<DramScope::BankGroup, DramCmd::WR>(wr);
    part[2 * ng + g] = gr.later<DramScope::BankGroup, DramCmd::ACT>(act);
    part[3 * ng + g] = gr.later<DramScope::BankGroup, DramCmd::PRE>(pre);
    part_key[g] = static_cast<std::uint64_t>(part[g]) << 1;
    part_key[ng + g] = static_cast<std::uint64_t>(part[ng + g]) << 1;
    part_key[2 * ng + g] = (static_cast<std::uint64_t>(part[2 * ng + g]) << 1) | 1u;
    part_key[3 * ng + g] = (static_cast<std::uint64_t>(part[3 * ng + g]) << 1) | 1u;
  }
  if (reference_scan_ || pc.banks.size() > 64) return reference_best(pc, part);
  // Earliest time wins; at equal times column commands (row hits) first,
  // then the oldest request. A bank's time is the later of its own part and
  // its class and group's part; as keys 2t + not-a-column (the same bit in
  // both, as it depends on the class only), the bank's key is the larger of
  // the two keys. Banks without requests have an all-ones key and lose.
  for (std::uint64_t m = pc.dirty & pc.nonempty; m != 0; m &= m - 1)
    plan_bank(pc, static_cast<std::size_t>(__builtin_ctzll(m)));
  pc.dirty = 0;
  const std::size_t nb = pc.banks.size();
  const std::uint64_t* ready_key = pc.ready_key.data();
  const std::uint64_t* age = pc.age.data();
  const std::uint32_t* bpart = pc.part.data();
  // The least (key, age) as one 128-bit number, in two independent running
  // minima (even and odd banks) merged at the end: the loop is bound by the
  // latency of each comparison chain.
  __extension__ typedef unsigned __int128 u128;
  u128 even = ~u128(0), odd = ~u128(0);
  std::size_t even_bank = 0, odd_bank = 0;
  auto val = [&](std::size_t b) { return (u128(std::max(ready_key[b], part_key[bpart[b]])) << 64) | age[b]; };
  std::size_t b = 0;
  for (; b + 1 < nb; b += 2) {
    const u128 v0 = val(b), v1 = val(b + 1);
    const bool t0 = v0 < even, t1 = v1 < odd;
    even = t0 ? v0 : even;
    even_bank = t0 ? b : even_bank;
    odd = t1 ? v1 : odd;
    odd_bank = t1 ? b + 1 : odd_bank;
  }
  if (b < nb) {
    const u128 v0 = val(b);
    const bool t0 = v0 < even;
    even = t0 ? v0 : even;
    even_bank = t0 ? b : even_bank;
  }
  const bool t = odd < even;
  even = t ? odd : even;
  even_bank = t ? odd_bank : even_bank;
  const std::uint64_t min_key = static_cast<std::uint64_t>(even >> 64), min_age = static_cast<std::uint64_t>(even),
                      win = even_bank;
  if (min_key == ~0ull) return Cand{};  // no bank has a request
  const Bank& bk = pc.banks[win];
  Cand best;
  best.t = static_cast<Ps>(min_key >> 1);
  best.bank = static_cast<int>(win);
  best.cmd = bk.next_cmd;
  best.qi = bk.next_qi;
  best.seq = min_age;
  return best;
}

// The obvious form of best()'s choice: re-plan every bank with requests
// and keep the earliest (time, column first, oldest) in one pass.
DetailedDram::Cand DetailedDram::reference_best(Pc& pc, const Ps* part) const {
  Cand best;
  bool best_col = false;
  for (std::size_t b = 0; b < pc.banks.size(); ++b) {
    const Bank& bk = pc.banks[b];
    if (bk.q.empty()) continue;
    plan_bank(pc, b);
    const Ps t = std::max(bk.next[bk.next_cmd], part[pc.part[b]]);
    const bool col = is_column(bk.next_cmd);
    const std::uint64_t seq = bk.q[bk.next_qi].seq;
    if (best.bank < 0 || t < best.t || (t == best.t && col && !best_col) ||
        (t == best.t && col == best_col && seq < best.seq)) {
      best.t = t;
      best.bank = static_cast<int>(b);
      best.cmd = bk.next_cmd;
      best.qi = bk.next_qi;
      best.seq = seq;
      best_col = col;
    }
  }
  pc.dirty = ~0ull;  // planned here: re-plan all if the reference scan is switched off
  return best;
}

void DetailedDram::add_done(Ps t, std::uint64_t id) {
  // Room for every submission still outstanding at once: a million requests
  // submitted together would otherwise regrow (copy) the vector 20 times.
  const std::uint64_t outstanding = next_id_ - 1 - completed_;
  if (done_.size() == done_.capacity())
    done_.reserve(std::max<std::size_t>(2 * done_.capacity(), done_.size() + outstanding));
  ++completed_;
  done_.push_back({id, t});
  done_min_ = std::min(done_min_, t);
}

void DetailedDram::atom_done(Atom& a, Ps time) {
  if (a.write) {
    ++c_.writes;
    c_.bytes_written += a.bytes;
  } else {
    ++c_.reads;
    c_.bytes_read += a.bytes;
  }
  switch (a.outcome) {
    case RowOutcome::Hit: ++c_.row_hits; break;
    case RowOutcome::Miss: ++c_.row_misses; break;
    case RowOutcome::Conflict: ++c_.row_conflicts; break;
  }
  c_.latency_ps_sum += static_cast<double>(time - a.arrival);
  if (a.transfer == kSingle) {
    add_done(time, a.id);
    return;
  }
  TransferState& ts = transfers_[a.transfer];
  ts.done = std::max(ts.done, time);
  if (--ts.atoms_left == 0) {
    add_done(ts.done, ts.id);
    free_transfers_.push_back(a.transfer);
  }
}

void DetailedDram::issue(Pc& pc, const Cand& c) {
  Bank& bk = pc.banks[static_cast<std::size_t>(c.bank)];
  Group& g = pc.groups[group_of_[static_cast<std::size_t>(c.bank)]];
  const Ps t = c.t;
  pc.now = t;
  if (c.bank < 64) pc.dirty |= 1ull << c.bank;
  Atom& a = bk.q[c.qi];
  switch (c.cmd) {
    case DramCmd::ACT:
      rules_.issue<DramCmd::ACT>(t, pc.next, g.next, bk.next, pc.acts);
      if (a.outcome == RowOutcome::Hit) a.outcome = RowOutcome::Miss;
      bk.open = static_cast<std::int64_t>(a.row);
      bk.streak = 0;
      ++c_.activates;
      return;
    case DramCmd::PRE:
      rules_.issue<DramCmd::PRE>(t, pc.next, g.next, bk.next, pc.acts);
      a.outcome = RowOutcome::Conflict;
      bk.open = kNoRow;
      bk.streak = 0;
      ++c_.precharges;
      return;
    case DramCmd::RD: rules_.issue<DramCmd::RD>(t, pc.next, g.next, bk.next, pc.acts); break;
    case DramCmd::WR: rules_.issue<DramCmd::WR>(t, pc.next, g.next, bk.next, pc.acts); break;
    case DramCmd::REF: throw InternalError("DetailedDram::issue: REF is placed by refresh(), not scheduled");
  }
  // Column command: one burst of the chosen request.
  const Ps end = t + (c.cmd == DramCmd::WR ? tm_.CWL : tm_.CL) + tm_.burst;
  pc.busy_ps += tm_.burst;
  c_.data_busy_ps += tm_.burst;
  ++c_.column_cmds;
  bk.streak = c.qi == 0 ? 0 : bk.streak + 1;
  if (--a.bursts > 0) return;
  atom_done(a, end + tm_.controller);
  const std::uint64_t row = a.row;
  bk.q.erase(bk.q.begin() + static_cast<std::ptrdiff_t>(c.qi));
  --pc.queued;
  if (bk.q.empty()) {
    pc.ready_key[static_cast<std::size_t>(c.bank)] = ~0ull;
    if (c.bank < 64) pc.nonempty &= ~(1ull << c.bank);
  }
  if (closed_page_) {
    bool more = false;
    for (const Atom& x : bk.q) more = more || x.row == row;
    if (!more) {  // auto-precharge once tRAS/tRTP/tWR allow (not on the row command bus)
      bk.open = kNoRow;
      rules_.raise<DramScope::Bank, DramCmd::PRE>(bk.next, std::max(bk.next[DramCmd::PRE], t));
      ++c_.precharges;
    }
  }
}

void DetailedDram::refresh(Pc& pc, Ps start) {
  // Open banks are precharged together (PREA) once the row command bus
  // and each bank's own rules allow.
  Ps pre_t = std::max(start, pc.next[DramCmd::PRE]);
  bool any_open = false;
  for (const Bank& b : pc.banks)
    if (b.open != kNoRow) {
      any_open = true;
      pre_t = std::max(pre_t, b.next[DramCmd::PRE]);
    }
  // REF needs every bank precharged for tRP and tRC past its last ACT.
  Ps ref_t = any_open ? pre_t + tm_.RP : start;
  for (const Bank& b : pc.banks) ref_t = std::max(ref_t, b.next[DramCmd::ACT]);
  const Ps end = ref_t + tm_.RFC;
  for (Bank& b : pc.banks) {
    if (b.open != kNoRow) ++c_.precharges;
    b.open = kNoRow;
    rules_.raise<DramScope::Bank, DramCmd::REF>(b.next, ref_t);
    b.streak = 0;
  }
  pc.dirty = ~0ull;
  rules_.raise<DramScope::PseudoChannel, DramCmd::REF>(pc.next, ref_t);
  pc.now = std::max(pc.now, start);
  ++c_.refreshes;
  c_.refresh_ps += end - start;
}

void DetailedDram::refresh_due(Pc& pc) {
  refresh(pc, pc.ref_due);
  pc.ref_due += tm_.REFI;
}

void DetailedDram::skip_idle_refreshes(Pc& pc, Ps until) {
  if (pc.ref_due > until) return;
  refresh_due(pc);
  if (pc.ref_due > until) return;
  // Refreshes of an idle PC only leave the banks closed; count them without
  // visiting each one (an idle second would otherwise cost 256k events).
  const Ps k = (until - pc.ref_due) / tm_.REFI;
  if (k > 0) {
    c_.refreshes += static_cast<std::uint64_t>(k);
    c_.refresh_ps += k * tm_.RFC;
    pc.ref_due += k * tm_.REFI;
    for (Bank& b : pc.banks) rules_.raise<DramScope::Bank, DramCmd::REF>(b.next, pc.ref_due - tm_.REFI);
  }
  refresh_due(pc);
}

void DetailedDram::run_pc(Pc& pc, Ps limit) {
  for (;;) {
    admit(pc);
    if (pc.queued == 0 && pc.owed > 0) {
      // Nothing to serve: pay a postponed refresh now, while it costs no
      // request anything (unless one arrives during its tRFC).
      --pc.owed;
      refresh(pc, pc.now);
      continue;
    }
    const Cand c = pc.queued ? best(pc) : Cand{};
    const Ps na = pc.queued < cfg_.queue_depth ? next_arrival(pc) : kNever;
    if (na != kNever && na <= c.t) {
      if (na > limit) {
        pc.next_time = na;
        return;
      }
      if (pc.queued == 0) skip_idle_refreshes(pc, na);
      pc.now = std::max(pc.now, na);
      continue;
    }
    if (c.t == kNever) {
      pc.next_time = kNever;
      return;
    }
    if (pc.ref_due <= c.t) {
      if (pc.owed < cfg_.refresh_postpone) {  // requests waiting: postpone
        ++pc.owed;
        pc.ref_due += tm_.REFI;
        continue;
      }
      if (pc.ref_due > limit) {
        pc.next_time = pc.ref_due;
        return;
      }
      refresh_due(pc);
      continue;
    }
    if (c.t > limit) {
      pc.next_time = c.t;
      return;
    }
    issue(pc, c);
  }
}

std::vector<HbmCompletion> DetailedDram::run_until(Ps limit) {
  if (limit < limit_) limit = limit_;
  for (Pc& pc : pcs_)
    if (pc.next_time <= limit) run_pc(pc, limit);
  limit_ = limit;
  // Completions by limit, in (time, id) order; later ones stay pending.
  std::vector<HbmCompletion> out;
  if (done_min_ <= limit) {
    auto mid = std::partition(done_.begin(), done_.end(), [limit](const HbmCompletion& d) { return d.time <= limit; });
    std::sort(done_.begin(), mid, [](const HbmCompletion& a, const HbmCompletion& b) {
      return a.time < b.time || (a.time == b.time && a.id < b.id);
    });
    if (mid == done_.end() && done_.size() >= 4096) {
      out.swap(done_);  // a large batch: no copy (done_ regrows when needed)
    } else {
      out.assign(done_.begin(), mid);
      done_.erase(done_.begin(), mid);
    }
    done_min_ = kNever;
    for (const HbmCompletion& d : done_) done_min_ = std::min(done_min_, d.time);
  }
  return out;
}

Ps DetailedDram::next_event_time() const {
  Ps t = done_min_;
  for (const Pc& pc : pcs_) t = std::min(t, pc.next_time);
  return t;
}

StatList DetailedDram::stats() const {
  const double n = static_cast<double>(c_.reads + c_.writes);
  const double span = ps_to_seconds(limit_);
  StatList s{
      {"reads", static_cast<double>(c_.reads), "count", "read requests served"},
      {"writes", static_cast<double>(c_.writes), "count", "write requests served"},
      {"bytes_read", static_cast<double>(c_.bytes_read), "bytes", "bytes read"},
      {"bytes_written", static_cast<double>(c_.bytes_written), "bytes", "bytes written"},
      {"row_hits", static_cast<double>(c_.row_hits), "count", "requests served from an open row"},
      {"row_misses", static_cast<double>(c_.row_misses), "count", "requests that needed an ACT to a closed bank"},
      {"row_conflicts", static_cast<double>(c_.row_conflicts), "count", "requests that needed PRE + ACT"},
      {"activates", static_cast<double>(c_.activates), "count", "ACT commands"},
      {"precharges", static_cast<double>(c_.precharges), "count", "PRE commands (incl. auto and before refresh)"},
      {"refreshes", static_cast<double>(c_.refreshes), "count", "all-bank refreshes over all pseudo-channels"},
      {"refresh_time", ps_to_seconds(c_.refresh_ps), "s", "pseudo-channel time blocked by refresh, summed"},
      {"data_bus_busy", ps_to_seconds(c_.data_busy_ps), "s", "data-bus busy time summed over pseudo-channels"},
      {"avg_latency", n > 0 ? c_.latency_ps_sum / n * 1e-12 : 0, "s", "arrival to last byte, mean per request"},
      {"bus_utilization", span > 0 ? ps_to_seconds(c_.data_busy_ps) / (span * static_cast<double>(pcs_.size())) : 0,
       "ratio", "data-bus busy time / (simulated time x pseudo-channels)"},
  };
  for (std::size_t i = 0; i < pcs_.size(); ++i)
    s.push_back({"pc" + std::to_string(i) + ".busy_time", ps_to_seconds(pcs_[i].busy_ps), "s",
                 "data-bus busy time of pseudo-channel " + std::to_string(i)});
  return s;
}

}  // namespace tpusim::arch
