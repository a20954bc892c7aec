#include "sim/lowering/pipeline.h"

#include <algorithm>
#include <map>

namespace tpusim::sim::lowering {

using arch::Instr;
using arch::InstrId;

InstrId ProgramBuilder::add(Instr in, const std::vector<InstrId>& deps) { return p_.add(in, deps); }

void ProgramBuilder::split(const Instr& in, std::vector<Instr>& out) const {
  const auto& w = std::get<arch::DmaWork>(in.work);
  if (engines_ <= 1 || w.bytes() < split_bytes_) {
    out.push_back(in);
    return;
  }
  if (w.rows >= 2) {
    const std::uint64_t n = std::min<std::uint64_t>(static_cast<std::uint64_t>(engines_), w.rows);
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t r0 = w.rows * i / n, r1 = w.rows * (i + 1) / n;
      Instr piece = in;
      auto& pw = std::get<arch::DmaWork>(piece.work);
      pw.rows = r1 - r0;
      pw.src_addr = w.src_addr + r0 * w.src_stride;
      pw.dst_addr = w.dst_addr + r0 * w.dst_stride;
      piece.index = -1;
      out.push_back(piece);
    }
  } else {
    const std::uint64_t n = static_cast<std::uint64_t>(engines_);
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t b0 = w.row_bytes * i / n, b1 = w.row_bytes * (i + 1) / n;
      if (b1 == b0) continue;
      Instr piece = in;
      auto& pw = std::get<arch::DmaWork>(piece.work);
      pw.row_bytes = b1 - b0;
      pw.src_stride = pw.dst_stride = pw.row_bytes;
      pw.src_addr = w.src_addr + b0;
      pw.dst_addr = w.dst_addr + b0;
      piece.index = -1;
      out.push_back(piece);
    }
  }
}

namespace {

// A copy between VMEM and VMEM: the operand is resident and the kernel
// uses it in place.
bool in_place(const Instr& in) {
  if (in.unit != arch::UnitKind::dma) return false;
  const auto& w = std::get<arch::DmaWork>(in.work);
  return w.src == arch::MemSpace::vmem && w.dst == arch::MemSpace::vmem;
}

struct Emitted {
  std::vector<InstrId> loads;
  std::vector<InstrId> compute;
  std::vector<InstrId> epilogue;
  // The last instruction (with the pieces of its store) of each epilogue
  // chain: what the step's stores are done with.
  std::vector<InstrId> epilogue_done;
};

void append(std::vector<InstrId>& to, const std::vector<InstrId>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

// Appends the last epilogue instruction and the pieces split from the same
// store (they share its waits), looking no further back than `begin` (the
// start of its chain).
void append_last_group(std::vector<InstrId>& out, const std::vector<InstrId>& epi, const arch::Program& p,
                       std::size_t begin) {
  out.push_back(epi.back());
  const arch::DepRange b = p.deps(epi.back());
  for (std::size_t k = epi.size() - 1; k-- > begin;) {
    const arch::DepRange a = p.deps(epi[k]);
    if (!std::equal(a.begin(), a.end(), b.begin(), b.end())) break;
    out.push_back(epi[k]);
  }
}

}  // namespace

std::vector<InstrId> ProgramBuilder::emit_op(std::uint32_t op, const std::vector<Step>& steps,
                                             const std::vector<InstrId>& deps) {
  // Steps are emitted per core in their own order; cores interleave freely
  // (each sequencer only sees its own instructions).
  std::map<int, std::vector<const Step*>> per_core;
  for (const Step& s : steps) per_core[s.core].push_back(&s);

  std::vector<InstrId> done;
  for (auto& entry : per_core) {
    const int core = entry.first;  // named, not a structured binding: lambdas capture it (C++17)
    std::vector<const Step*>& list = entry.second;
    const std::size_t n = list.size();
    std::vector<Emitted> em(n);
    bool first = true;
    constexpr InstrId kNone = ~InstrId{0};
    InstrId first_id = kNone;
    // Kernels run one after another on a core: the first instruction of
    // this one waits for the previous kernel's end and pays the launch.
    // Collectives are asynchronous: they neither wait nor are waited for.
    bool async = false;
    for (const Step* s : list)
      for (const StepInstr& c : s->compute) async = async || c.instr.unit == arch::UnitKind::ici;
    std::vector<InstrId> entry_wait = deps;
    if (!async) {
      auto prev = last_kernel_.find(core);
      if (prev != last_kernel_.end()) append(entry_wait, prev->second);
    }
    // Adds `in` waiting for `d`; the operator's first instruction on this
    // core also waits for `entry_wait` (its producers' completion and the
    // previous kernel's end).
    std::vector<InstrId> scratch, deps_scratch, out_wait, wait, ids;
    std::vector<Instr> pieces;
    auto add_waiting = [&](Instr in, const std::vector<InstrId>& d) {
      if (!first) return add(in, d);
      first = false;
      first_id = static_cast<InstrId>(p_.instrs.size());  // the instruction these waits go to
      scratch.assign(d.begin(), d.end());
      append(scratch, entry_wait);
      return add(in, scratch);
    };
    // Steps that load, in order. Load-step k writes the buffer set that
    // load-step k-2 filled; the last reader of that set is the step just
    // before load-step k-1, so load-step k waits for that step's compute.
    std::vector<std::size_t> load_steps;
    std::vector<long> store_steps;
    std::size_t next_load = 0;
    long last_compute = -1;

    auto wait_step = [&]() -> long {  // for the next load-step to emit
      if (load_steps.size() < 2) return -1;
      return static_cast<long>(load_steps[load_steps.size() - 1]) - 1;
    };
    auto emit_loads = [&](std::size_t i) {
      const Step& s = *list[i];
      wait.clear();
      const long w = wait_step();
      if (w >= 0) wait = em[static_cast<std::size_t>(w)].compute;
      load_steps.push_back(i);
      em[i].loads.reserve(s.loads.size() * static_cast<std::size_t>(std::max(1, engines_)));
      for (const Instr& l : s.loads) {
        if (in_place(l)) continue;
        pieces.clear();
        split(l, pieces);
        for (Instr& in : pieces) {
          in.op = op;
          in.core = static_cast<std::uint16_t>(core);
          em[i].loads.push_back(add_waiting(in, wait));
        }
      }
    };
    // Emits the loads of steps before `upto` whose buffer is free once the
    // compute of step `free_after` has been issued (force: regardless).
    auto emit_loads_until = [&](std::size_t upto, long free_after, bool force) {
      while (next_load < n && next_load < upto) {
        if (list[next_load]->loads.empty()) {
          ++next_load;
          continue;
        }
        if (!force && wait_step() > free_after) break;
        emit_loads(next_load++);
      }
    };
    auto emit_compute = [&](std::size_t i) {
      emit_loads_until(i + 1, last_compute, true);
      const Step& s = *list[i];
      // The loads this step computes on: its own, or the last loading
      // step's (resident blocks).
      static const std::vector<InstrId> kNoLoads;
      const std::vector<InstrId>* operands_of = &kNoLoads;
      for (long j = static_cast<long>(i); j >= 0; --j)
        if (!em[static_cast<std::size_t>(j)].loads.empty()) {
          operands_of = &em[static_cast<std::size_t>(j)].loads;
          break;
        }
      const std::vector<InstrId>& operands = *operands_of;
      // An output buffer is reused two stores later.
      out_wait.clear();
      if (store_steps.size() >= 2) {
        const Emitted& old = em[static_cast<std::size_t>(store_steps[store_steps.size() - 2])];
        append(out_wait, old.epilogue_done);
      }
      em[i].compute.reserve(s.compute.size());
      for (std::size_t k = 0; k < s.compute.size(); ++k) {
        Instr in = s.compute[k].instr;
        in.op = op;
        in.core = static_cast<std::uint16_t>(core);
        if (in.unit == arch::UnitKind::ici) std::get<arch::IciWork>(in.work).group = p_.add_group(s.collective);
        std::vector<InstrId>& d = deps_scratch;
        d.assign(operands.begin(), operands.end());
        if (k == 0) {
          append(d, out_wait);
          if (step_overhead_ > 0 && in.unit != arch::UnitKind::ici) {  // collectives: see the ICI model
            in.scalar_cycles = step_overhead_;
            if (i > 0) append(d, em[i - 1].compute);
          }
        }
        for (int a : s.compute[k].after) d.push_back(em[i].compute.at(static_cast<std::size_t>(a)));
        em[i].compute.push_back(add_waiting(in, d));
      }
      last_compute = static_cast<long>(i);
    };
    auto emit_epilogue = [&](std::size_t i) {
      const Step& s = *list[i];
      if (s.epilogue.empty()) return;
      store_steps.push_back(static_cast<long>(i));
      wait = em[i].compute;
      std::size_t chain = 0;        // the next chain start in s.epilogue_chains
      std::size_t chain_begin = 0;  // em[i].epilogue's size when the chain began
      // The chain's last instruction and its store's pieces.
      auto chain_done = [&]() {
        if (em[i].epilogue.size() > chain_begin)
          append_last_group(em[i].epilogue_done, em[i].epilogue, p_, chain_begin);
        chain_begin = em[i].epilogue.size();
      };
      for (std::size_t k = 0; k < s.epilogue.size(); ++k) {
        const Instr& e = s.epilogue[k];
        if (chain < s.epilogue_chains.size() && s.epilogue_chains[chain] == k) {
          // A new chain: the previous one is done, this one starts from
          // the step's compute.
          chain_done();
          wait = em[i].compute;
          ++chain;
        }
        if (in_place(e)) continue;
        // A store split over engines: its pieces run together, and what
        // follows waits for all of them.
        ids.clear();
        pieces.clear();
        if (e.unit == arch::UnitKind::dma)
          split(e, pieces);
        else
          pieces.push_back(e);
        for (Instr& in : pieces) {
          in.op = op;
          in.core = static_cast<std::uint16_t>(core);
          ids.push_back(add_waiting(in, wait));
          em[i].epilogue.push_back(ids.back());
        }
        wait.swap(ids);
      }
      chain_done();
    };

    // L0 L1 C0 | C1 S0 L2 | C2 S1 L3 | ...: the loads of step i+2 come after
    // C(i+1), so the sequencer's wait for C(i) never delays C(i+1). With a
    // serial step overhead C(i+1) waits for C(i) anyway, and the loads go
    // first, as a Pallas pipeline starts the next block's copy before the
    // step's compute: L0 L1 C0 | L2 C1 S0 | L3 C2 S1 | ...
    const bool serial = step_overhead_ > 0;
    emit_loads_until(n, -1, false);
    if (n > 0) emit_compute(0);
    for (std::size_t i = 0; i < n; ++i) {
      if (serial) emit_loads_until(n, static_cast<long>(i), false);
      if (i + 1 < n) emit_compute(i + 1);
      emit_epilogue(i);
      if (!serial) emit_loads_until(n, static_cast<long>(i), false);
    }
    std::vector<InstrId> core_done;
    for (std::size_t i = 0; i < n; ++i) append(core_done, em[i].epilogue_done);
    if (n > 0 && list[n - 1]->epilogue.empty()) append(core_done, em[n - 1].compute);
    if (!async && first_id != kNone) {
      p_.instrs[first_id].scalar_cycles += launch_overhead_;
      last_kernel_[core] = core_done;
    }
    append(done, core_done);
  }
  std::sort(done.begin(), done.end());
  done.erase(std::unique(done.begin(), done.end()), done.end());
  return done;
}

}  // namespace tpusim::sim::lowering
