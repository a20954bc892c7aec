#include "sim/lowering/pipeline.h"

#include <algorithm>
#include <map>

namespace tpusim::sim {

using arch::Instr;
using arch::InstrId;

InstrId ProgramBuilder::add(Instr in) {
  p_.instrs.push_back(std::move(in));
  return static_cast<InstrId>(p_.instrs.size() - 1);
}

namespace {

struct Emitted {
  std::vector<InstrId> loads;
  std::vector<InstrId> compute;
  std::vector<InstrId> epilogue;
};

void append(std::vector<InstrId>& to, const std::vector<InstrId>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

std::vector<InstrId> ProgramBuilder::emit_op(std::uint32_t op, const std::vector<Step>& steps,
                                             const std::vector<InstrId>& deps) {
  // Steps are emitted per core in their own order; cores interleave freely
  // (each sequencer only sees its own instructions).
  std::map<int, std::vector<const Step*>> per_core;
  for (const Step& s : steps) per_core[s.core].push_back(&s);

  std::vector<InstrId> done;
  for (auto& [core, list] : per_core) {
    const std::size_t n = list.size();
    std::vector<Emitted> em(n);
    bool first = true;
    // The waits the next instruction of this core must carry in addition to
    // its own: producers' completion, for the operator's first instruction.
    auto with_entry = [&](std::vector<InstrId> d) {
      if (first) {
        append(d, deps);
        first = false;
      }
      return d;
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
      std::vector<InstrId> wait;
      const long w = wait_step();
      if (w >= 0) wait = em[static_cast<std::size_t>(w)].compute;
      load_steps.push_back(i);
      for (const Instr& l : s.loads) {
        Instr in = l;
        in.op = op;
        in.core = static_cast<std::uint16_t>(core);
        in.deps = with_entry(wait);
        em[i].loads.push_back(add(std::move(in)));
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
      std::vector<InstrId> operands;
      for (long j = static_cast<long>(i); j >= 0; --j)
        if (!em[static_cast<std::size_t>(j)].loads.empty()) {
          operands = em[static_cast<std::size_t>(j)].loads;
          break;
        }
      // An output buffer is reused two stores later.
      std::vector<InstrId> out_wait;
      if (store_steps.size() >= 2) {
        const Emitted& old = em[static_cast<std::size_t>(store_steps[store_steps.size() - 2])];
        if (!old.epilogue.empty()) out_wait.push_back(old.epilogue.back());
      }
      for (std::size_t k = 0; k < s.compute.size(); ++k) {
        Instr in = s.compute[k].instr;
        in.op = op;
        in.core = static_cast<std::uint16_t>(core);
        std::vector<InstrId> d = operands;
        if (k == 0) append(d, out_wait);
        for (int a : s.compute[k].after) d.push_back(em[i].compute.at(static_cast<std::size_t>(a)));
        in.deps = with_entry(std::move(d));
        em[i].compute.push_back(add(std::move(in)));
      }
      last_compute = static_cast<long>(i);
    };
    auto emit_epilogue = [&](std::size_t i) {
      const Step& s = *list[i];
      if (s.epilogue.empty()) return;
      store_steps.push_back(static_cast<long>(i));
      std::vector<InstrId> wait = em[i].compute;
      for (const Instr& e : s.epilogue) {
        Instr in = e;
        in.op = op;
        in.core = static_cast<std::uint16_t>(core);
        in.deps = with_entry(wait);
        em[i].epilogue.push_back(add(std::move(in)));
        wait = {em[i].epilogue.back()};
      }
    };

    // L0 L1 C0 | C1 S0 L2 | C2 S1 L3 | ...: the loads of step i+2 come after
    // C(i+1), so the sequencer's wait for C(i) never delays C(i+1).
    emit_loads_until(n, -1, false);
    if (n > 0) emit_compute(0);
    for (std::size_t i = 0; i < n; ++i) {
      if (i + 1 < n) emit_compute(i + 1);
      emit_epilogue(i);
      emit_loads_until(n, static_cast<long>(i), false);
    }
    for (std::size_t i = 0; i < n; ++i)
      if (!em[i].epilogue.empty()) done.push_back(em[i].epilogue.back());
    if (n > 0 && list[n - 1]->epilogue.empty()) append(done, em[n - 1].compute);
  }
  std::sort(done.begin(), done.end());
  done.erase(std::unique(done.begin(), done.end()), done.end());
  return done;
}

}  // namespace tpusim::sim
