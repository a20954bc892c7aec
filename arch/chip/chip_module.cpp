#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "arch/chip/chip_module.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "arch/common/time.h"

namespace tpusim::arch {

ChipModule::ChipModule(sc_core::sc_module_name name, const TpuConfig& cfg, const Program& program,
                       const UnitFactory& make_unit, DmaBackend& dma, CollectiveBackend* ici)
    : sc_core::sc_module(name), cfg_(cfg), program_(program), dma_(dma), ici_(ici), clock_hz_(cfg.chip.clock_hz) {
  if (clock_hz_ <= 0) throw std::invalid_argument("ChipModule: chip.clock_hz must be positive");
  // Cores tensorcores .. tensorcores + sparsecores - 1 are the SparseCores'
  // sequencers, present when the program uses them: vector tiles only (the
  // factory's VPU unit for such a core), no MXU or XLU.
  const int tcs = cfg.chip.tensorcores;
  const int ncores = std::max(tcs, program.cores);
  if (program.cores > tcs + cfg.sparsecores)
    throw std::invalid_argument("program uses " + std::to_string(program.cores) + " cores but the chip has " +
                                std::to_string(tcs) + " TensorCores and " + std::to_string(cfg.sparsecores) +
                                " SparseCores");
  cores_.resize(static_cast<std::size_t>(ncores));
  for (int c = 0; c < ncores; ++c) wake_.push_back(std::make_unique<sc_core::sc_event>());
  for (int c = 0; c < ncores; ++c) {
    Core& core = cores_[static_cast<std::size_t>(c)];
    core.sparse = c >= tcs;
    core.vpu.push_back(make_unit(UnitKind::vpu, c, 0));
    if (core.sparse) continue;
    for (int i = 0; i < cfg.mxu.count; ++i) core.mxu.push_back(make_unit(UnitKind::mxu, c, i));
    for (int i = 0; i < cfg.xlu.count; ++i) core.xlu.push_back(make_unit(UnitKind::xlu, c, i));
  }
  records_.resize(program.instrs.size());
  done_.assign(program.instrs.size(), 0);
  {  // each core's list sized once (millions of instructions in a large run)
    std::vector<std::size_t> per_core(static_cast<std::size_t>(ncores), 0);
    for (const Instr& in : program.instrs)
      if (in.core < ncores) ++per_core[in.core];
    for (int c = 0; c < ncores; ++c)
      cores_[static_cast<std::size_t>(c)].instrs.reserve(per_core[static_cast<std::size_t>(c)]);
  }
  for (InstrId id = 0; id < program.instrs.size(); ++id) {
    const Instr& in = program.instrs[id];
    if (in.core >= ncores)
      throw std::invalid_argument("instruction " + std::to_string(id) + " names core " + std::to_string(in.core) +
                                  " of " + std::to_string(ncores));
    const bool sparse = cores_[in.core].sparse;
    if (sparse && (in.unit == UnitKind::mxu || in.unit == UnitKind::xlu || in.unit == UnitKind::ici))
      throw std::invalid_argument("instruction " + std::to_string(id) + " needs " + unit_kind_name(in.unit) +
                                  " on SparseCore " + std::to_string(in.core - tcs) + ", which has vector tiles only");
    for (InstrId d : program.deps(in))
      if (d >= id)
        throw std::invalid_argument("instruction " + std::to_string(id) + " waits for a later instruction " +
                                    std::to_string(d));
    const int have = in.unit == UnitKind::mxu   ? cfg.mxu.count
                     : in.unit == UnitKind::xlu ? cfg.xlu.count
                     : in.unit == UnitKind::dma ? cfg.dma.engines
                     : in.unit == UnitKind::ici ? (ici ? 1 : 0)
                                                : 1;
    if (have <= 0 || in.index >= have)
      throw std::invalid_argument("instruction " + std::to_string(id) + " needs " + unit_kind_name(in.unit) + " " +
                                  std::to_string(std::max<int>(0, in.index)) + " but the chip has " +
                                  std::to_string(std::max(0, have)));
    cores_[in.core].instrs.push_back(id);
  }
  for (int c = 0; c < ncores; ++c) sc_core::sc_spawn([this, c] { sequencer(c); }, ("seq" + std::to_string(c)).c_str());
  sc_core::sc_spawn_options opt;
  opt.spawn_method();
  opt.dont_initialize();
  opt.set_sensitivity(&wake_completer_);
  sc_core::sc_spawn([this] { completer(); }, "completer", &opt);
}

std::uint64_t ChipModule::now_cycles() const {
  // Asked several times per instruction at the same simulated time.
  const sc_core::sc_time& t = sc_core::sc_time_stamp();
  if (t.value() != now_value_) {
    now_value_ = t.value();
    now_cycles_ = time_to_cycles(t, clock_hz_);
  }
  return now_cycles_;
}

sc_core::sc_time ChipModule::at_cycle(std::uint64_t c) const {
  const std::uint64_t now = now_cycles();
  return c > now ? cycles_to_time(c, clock_hz_) - sc_core::sc_time_stamp() : sc_core::SC_ZERO_TIME;
}

void ChipModule::complete(InstrId id, std::uint64_t cycle) {
  done_[id] = 1;
  ++completed_;
  records_[id].finish = cycle;
  end_cycle_ = std::max(end_cycle_, cycle);
  // Wake only the sequencer blocked on this instruction (a delta cycle
  // later, as before): waking every sequencer on every completion cost
  // tens of millions of context switches on a training step.
  for (std::size_t c = 0; c < cores_.size(); ++c)
    if (cores_[c].waiting_for == id) wake_[c]->notify(sc_core::SC_ZERO_TIME);
}

void ChipModule::completer() {
  completer_armed_ = false;  // the notification that ran it is spent
  const std::uint64_t now = now_cycles();
  while (!pending_.empty() && pending_.top().first <= now) {
    complete(pending_.top().second, pending_.top().first);
    pending_.pop();
  }
  if (!pending_.empty()) arm_completer();
}

void ChipModule::arm_completer() {
  // An event keeps only its earliest pending notification, so a later one
  // would be dropped by the kernel anyway: skip the call (half a million
  // per large run). Cycles order as their times do.
  const std::uint64_t at = std::max(pending_.top().first, now_cycles());
  if (completer_armed_ && completer_at_ <= at) return;
  completer_armed_ = true;
  completer_at_ = at;
  wake_completer_.notify(at_cycle(pending_.top().first));
}

void ChipModule::collective_part_done(InstrId id) {
  const std::uint64_t t = now_cycles();
  auto it = collectives_.find(id);
  CollectiveJoin& j = it->second;
  j.last_done = std::max(j.last_done, t);
  if (--j.left > 0) return;
  const std::uint64_t end = std::max(j.last_done, j.until);
  const int c = j.core;
  collectives_.erase(it);
  if (tracing_) note(end, signal_of(c, UnitKind::ici), -1);
  if (end <= t) {
    complete(id, t);
  } else {
    pending_.emplace(end, id);
    arm_completer();
  }
}

// One step of a collective on this chip (CollectiveProgress), at the time
// it happens: the DMA read of what it sends (on the ICI's first engine),
// the DMA write of what it receives (on its second; engines 0 and 1 of the
// sequencer's where the backend has none) and the element-wise adds of the
// partial results that arrived, as one VPU stream (two operands in, the
// sum out, one ALU op per element), queued behind the VPU work already
// issued. The collective completes only when the writes and adds have.
void ChipModule::collective_step(InstrId id, int c, DType dtype, std::uint32_t op, const CollectiveProgress& p) {
  Core& core = cores_[static_cast<std::size_t>(c)];
  auto it = collectives_.find(id);
  for (const auto& [bytes, read] : {std::pair{p.sent, true}, std::pair{p.received, false}}) {
    if (bytes == 0) continue;
    DmaWork w;
    w.src = read ? MemSpace::hbm : MemSpace::ici;
    w.dst = read ? MemSpace::ici : MemSpace::hbm;
    w.row_bytes = bytes;
    core.collective_hbm_bytes += bytes;
    if (read || it == collectives_.end()) {
      // A read feeds a message already under way (HBM outpaces a link), so
      // the sender's part ends with its messages, as the network says;
      // traffic after the chip's part ended does not extend it either.
      dma_.start_collective(w, read ? 0 : 1, [] {});
      continue;
    }
    it->second.left += 1;
    dma_.start_collective(w, read ? 0 : 1, [this, id] { collective_part_done(id); });
  }
  if (p.reduce == 0) return;
  Instr red;
  red.unit = UnitKind::vpu;
  red.core = static_cast<std::uint16_t>(c);
  red.op = op;
  VpuWork vw;
  vw.dtype = dtype;
  vw.elements = p.reduce * 8 / static_cast<std::uint64_t>(std::max(1, dtype_bits(dtype)));
  vw.alu_ops = 1;
  vw.inputs = 2;
  vw.outputs = 1;
  red.work = vw;
  const Interval iv = core.vpu[0]->issue(red, now_cycles());
  if (it != collectives_.end()) it->second.until = std::max(it->second.until, iv.finish);
  ++core.reductions;
  core.reduction_cycles += iv.finish - iv.start;
  if (tracing_) {
    note(iv.start, signal_of(c, UnitKind::vpu), +1);
    note(iv.finish, signal_of(c, UnitKind::vpu), -1);
  }
}

void ChipModule::sequencer(int c) {
  Core& core = cores_[static_cast<std::size_t>(c)];
  std::uint64_t next_slot = 0;  // the scalar core issues one instruction per cycle
  for (InstrId id : core.instrs) {
    const Instr& in = program_.instrs[id];
    const std::uint64_t blocked_at = now_cycles();
    for (InstrId d : program_.deps(in))
      while (!done_[d]) {
        core.waiting_for = d;
        sc_core::wait(*wake_[static_cast<std::size_t>(c)]);
      }
    core.waiting_for = kNotWaiting;
    const std::uint64_t now = now_cycles();
    if (now > blocked_at) core.dep_stall_cycles += now - std::max(blocked_at, next_slot);
    const std::uint64_t issue = std::max(next_slot, now) + in.scalar_cycles;
    core.scalar_cycles += in.scalar_cycles;
    next_slot = issue + 1;
    ++core.issued;
    InstrRecord& rec = records_[id];
    rec.issue = issue;
    if (in.unit == UnitKind::dma) {
      if (issue > now) sc_core::wait(at_cycle(issue));
      const int engine =
          in.index >= 0 ? in.index : static_cast<int>(next_dma_engine_++ % static_cast<std::size_t>(cfg_.dma.engines));
      rec.unit_index = static_cast<std::int16_t>(engine);
      rec.start = issue;
      if (tracing_) note(issue, signal_of(c, UnitKind::dma), +1);
      dma_.start(std::get<DmaWork>(in.work), engine, [this, id, c] {
        complete(id, now_cycles());
        if (tracing_) note(now_cycles(), signal_of(c, UnitKind::dma), -1);
      });
      continue;
    }
    if (in.unit == UnitKind::ici) {
      if (issue > now) sc_core::wait(at_cycle(issue));
      rec.start = issue;
      if (tracing_) note(issue, signal_of(c, UnitKind::ici), +1);
      const IciWork& work = std::get<IciWork>(in.work);
      // Parts: the network, each DMA of its steps, and this issue itself
      // (so that no part completing early can close the join before all
      // are known).
      CollectiveJoin& join = collectives_[id];
      join.core = c;
      join.left = 2;
      ici_->start(
          work, program_.group(work), id, [this, id] { collective_part_done(id); },
          [this, id, c, dtype = work.dtype, op = in.op](const CollectiveProgress& p) {
            collective_step(id, c, dtype, op, p);
          });
      collective_part_done(id);
      continue;
    }
    std::vector<std::unique_ptr<UnitTiming>>* units = nullptr;
    std::size_t* rr = nullptr;
    std::size_t fixed = 0;
    switch (in.unit) {
      case UnitKind::mxu:
        units = &core.mxu;
        rr = &core.next_mxu;
        break;
      case UnitKind::xlu:
        units = &core.xlu;
        rr = &core.next_xlu;
        break;
      case UnitKind::vpu:
        units = &core.vpu;
        rr = &fixed;
        break;
      case UnitKind::dma:
      case UnitKind::ici: break;
    }
    std::size_t u = in.index >= 0 ? static_cast<std::size_t>(in.index) : (*rr)++ % units->size();
    if (u >= units->size())
      throw std::invalid_argument(std::string("instruction names ") + unit_kind_name(in.unit) + " " +
                                  std::to_string(u) + " of " + std::to_string(units->size()));
    const Interval iv = (*units)[u]->issue(in, issue);
    rec.unit_index = static_cast<std::int16_t>(u);
    rec.start = iv.start;
    pending_.emplace(iv.finish, id);
    if (tracing_) {
      note(iv.start, signal_of(c, in.unit), +1);
      note(iv.finish, signal_of(c, in.unit), -1);
    }
    arm_completer();
  }
}

void ChipModule::trace_activity(sc_core::sc_trace_file* tf) {
  tracing_ = true;
  auto add = [&](const std::string& n) {
    signals_.push_back(std::make_unique<sc_core::sc_signal<int>>(n.c_str()));
    sc_core::sc_trace(tf, *signals_.back(), n);
  };
  add("dma_in_flight");
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    const std::string tc = "tc" + std::to_string(c);
    add(tc + "_mxu_in_flight");
    add(tc + "_vpu_in_flight");
    add(tc + "_xlu_in_flight");
  }
  levels_.assign(signals_.size(), 0);
  sc_core::sc_spawn_options opt;
  opt.spawn_method();
  opt.dont_initialize();
  opt.set_sensitivity(&wake_tracer_);
  sc_core::sc_spawn([this] { tracer(); }, "tracer", &opt);
}

void ChipModule::note(std::uint64_t cycle, int signal, int delta) {
  activity_.push({cycle, signal, delta});
  wake_tracer_.notify(at_cycle(activity_.top().cycle));
}

void ChipModule::tracer() {
  const std::uint64_t now = now_cycles();
  while (!activity_.empty() && activity_.top().cycle <= now) {
    const Activity a = activity_.top();
    activity_.pop();
    levels_[static_cast<std::size_t>(a.signal)] += a.delta;
    signals_[static_cast<std::size_t>(a.signal)]->write(levels_[static_cast<std::size_t>(a.signal)]);
  }
  if (!activity_.empty()) wake_tracer_.notify(at_cycle(activity_.top().cycle));
}

std::vector<std::pair<std::string, StatList>> ChipModule::block_stats() const {
  std::vector<std::pair<std::string, StatList>> out;
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    const Core& core = cores_[c];
    const int tcs = cfg_.chip.tensorcores;
    const std::string tc = core.sparse ? "sc" + std::to_string(static_cast<int>(c) - tcs) : "tc" + std::to_string(c);
    out.push_back({tc + ".sequencer",
                   {{"instructions", static_cast<double>(core.issued), "count", "instructions issued"},
                    {"dependency_stall_cycles", static_cast<double>(core.dep_stall_cycles), "cycles",
                     "cycles the sequencer waited for earlier instructions"},
                    {"scalar_overhead_cycles", static_cast<double>(core.scalar_cycles), "cycles",
                     "cycles the scalar core spent on pipeline-step bookkeeping"}}});
    if (ici_) {
      StatList& seq = out.back().second;
      seq.push_back({"collective_reductions", static_cast<double>(core.reductions), "count",
                     "collectives whose partial results this core's VPU added"});
      seq.push_back({"collective_reduction_cycles", static_cast<double>(core.reduction_cycles), "cycles",
                     "VPU cycles spent adding collectives' partial results (overlaps the transfer)"});
      seq.push_back({"collective_hbm_bytes", static_cast<double>(core.collective_hbm_bytes), "bytes",
                     "HBM bytes collectives read (to send) and wrote (as received) on the DMA engines"});
    }
    auto add = [&](const char* kind, const std::vector<std::unique_ptr<UnitTiming>>& units) {
      for (std::size_t i = 0; i < units.size(); ++i)
        out.push_back({tc + "." + kind + std::to_string(i), units[i]->stats()});
    };
    add("mxu", core.mxu);
    add(core.sparse ? "tiles" : "vpu", core.vpu);
    add("xlu", core.xlu);
  }
  for (auto& b : dma_.block_stats()) out.push_back(b);
  if (ici_)
    for (auto& b : ici_->block_stats()) out.push_back(b);
  return out;
}

}  // namespace tpusim::arch
