#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/engine/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include <systemc>

#include "arch/chip/chip_module.h"
#include "arch/common/errors.h"
#include "arch/ici/topology.h"
#include "sim/engine/asan_stack.h"
#include "sim/engine/ici_backend.h"
#include "sim/engine/memory_system.h"
#include "sim/engine/slice_setup.h"
#include "sim/engine/unit_adapters.h"
#include "sim/engine/vcd_sink.h"

namespace tpusim::sim {

namespace {

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// The simulated-time limit as the user gave it (--max-sim-time 1e-9 reads
// back as 1e-09, 3600 as 3600).
std::string limit_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// The up-front ceiling on simulated work (SimOptions::max_events,
// max_sim_seconds): refused before anything is elaborated.
void check_work(const arch::TpuConfig& cfg, const arch::Program& program, const SimOptions& opt, int chips) {
  if (!(opt.max_sim_seconds >= 0 && opt.max_sim_seconds <= 1e6))
    throw SimLimitError("the simulated-time limit must be in [0, 1e6] s, found " + limit_text(opt.max_sim_seconds));
  const WorkEstimate w = estimate_work(cfg, program, chips);
  if (opt.max_events > 0 && w.events() > opt.max_events) {
    // The calibrated HBM model times a DMA transfer as one event: say so
    // when that would bring the program within the limit.
    WorkEstimate calibrated = w;
    calibrated.per_request = false;
    const std::string alternative =
        w.per_request && calibrated.events() <= opt.max_events
            ? ", use the calibrated HBM model (--set hbm.model=calibrated: " + std::to_string(calibrated.events()) +
                  " events, one per DMA transfer; docs/hbm.md)"
            : std::string();
    throw SimLimitError("the lowered program is " + std::to_string(w.events()) + " events (" +
                        std::to_string(w.instructions) + " instructions and " + std::to_string(w.dma_events()) +
                        (w.per_request ? " DMA requests" : " DMA transfers (calibrated HBM: one event each)") +
                        (chips > 1 ? " on " + std::to_string(chips) + " chips" : std::string()) +
                        "), above the limit of " + std::to_string(opt.max_events) +
                        " events; raise --max-events (0 = no limit)" + alternative + " or shrink the workload");
  }
  if (opt.max_sim_seconds > 0 && w.min_seconds() > opt.max_sim_seconds)
    throw SimLimitError("the lowered program needs at least " + sci(w.min_seconds()) +
                        " s of simulated time (MXU work at peak " + sci(w.mxu_seconds) + " s, HBM traffic at peak " +
                        sci(w.hbm_seconds) + " s), beyond the simulated-time limit of " +
                        limit_text(opt.max_sim_seconds) + " s; raise --max-sim-time (seconds) or shrink the workload");
}

}  // namespace

SimResult simulate(const arch::TpuConfig& cfg, const arch::Program& program, const SimOptions& opt) {
  static bool elaborated = false;
  if (elaborated) throw EngineError("simulate() called twice in one process: SystemC elaborates once per process");
  elaborated = true;
  const auto t0 = std::chrono::steady_clock::now();

  if (opt.all_chips && opt.slice.empty()) throw arch::ConfigError("--all-chips needs a multi-chip slice (--slice)");
  if (opt.all_chips) check_all_chips(opt.slice, arch::ici::Slice(cfg.ici, opt.slice, opt.twisted).num_chips());
  std::unique_ptr<IciBackend> ici;
  if (!opt.slice.empty()) ici = std::make_unique<IciBackend>(cfg, opt.slice, opt.mesh, opt.twisted);
  check_work(cfg, program, opt, opt.all_chips ? ici->chips() : 1);
  const arch::UnitFactory units = make_unit_factory(cfg);
  // Shared mode: one chip ("chip", "memory") stands for every chip of the
  // slice. --all-chips: chip c is "chip<c>" with "memory<c>", each with
  // its own view of the network.
  std::vector<std::unique_ptr<arch::DmaBackend>> memories;
  std::vector<std::unique_ptr<arch::ChipModule>> chips;
  if (opt.all_chips) {
    for (int c = 0; c < ici->chips(); ++c) {
      const std::string n = std::to_string(c);
      memories.push_back(make_memory_system(cfg, "memory" + n));
      chips.push_back(std::make_unique<arch::ChipModule>(("chip" + n).c_str(), cfg, program, units, *memories.back(),
                                                         &ici->chip_port(c)));
    }
  } else {
    memories.push_back(make_memory_system(cfg));
    chips.push_back(std::make_unique<arch::ChipModule>("chip", cfg, program, units, *memories.back(), ici.get()));
  }
  auto completed = [&] {
    std::size_t n = 0;
    for (const auto& c : chips) n += c->completed();
    return n;
  };
  std::unique_ptr<VcdSink> vcd;
  if (!opt.vcd_path.empty()) {
    vcd = std::make_unique<VcdSink>(opt.vcd_path);
    chips.front()->trace_activity(vcd->trace_file());  // --all-chips: chip 0's signals
  }
  const bool limited = opt.max_sim_seconds > 0;
  const sc_core::sc_time limit(limited ? opt.max_sim_seconds : 0, sc_core::SC_SEC);
  auto limit_error = [&] {
    const std::size_t total = program.instrs.size() * chips.size();
    return SimLimitError("the run passed the simulated-time limit of " + limit_text(opt.max_sim_seconds) + " s with " +
                         std::to_string(completed()) + " of " + std::to_string(total) +
                         " instructions done; raise --max-sim-time (seconds) or shrink the workload");
  };
  auto check_limit = [&] {
    // Stopped short of the limit with nothing left, or the next event is
    // still within it: not (yet) over.
    if (!limited || !sc_core::sc_pending_activity()) return;
    if (sc_core::sc_time_stamp() + sc_core::sc_time_to_pending_activity() <= limit) return;
    throw limit_error();
  };
  if (!opt.progress) {
    if (limited) {
      sc_core::sc_start(limit, sc_core::SC_EXIT_ON_STARVATION);
      restore_main_stack_bounds();
      check_limit();
    } else {
      sc_core::sc_start();
      restore_main_stack_bounds();
    }
  } else {
    // Run in slices of simulated time so that wall time can be watched;
    // a slice grows while it costs little wall time.
    using clock = std::chrono::steady_clock;
    double slice_us = 1.0;
    auto last_report = t0;
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // initialization: processes become runnable
    restore_main_stack_bounds();
    while (sc_core::sc_pending_activity()) {
      check_limit();
      const auto s0 = clock::now();
      sc_core::sc_start(sc_core::sc_time(slice_us, sc_core::SC_US));
      restore_main_stack_bounds();
      const auto now = clock::now();
      if (std::chrono::duration<double>(now - s0).count() < 0.05 && slice_us < 1e4) slice_us *= 2;
      if (std::chrono::duration<double>(now - t0).count() > 2.0 &&
          std::chrono::duration<double>(now - last_report).count() > 1.0) {
        last_report = now;
        const std::size_t total = program.instrs.size() * chips.size();
        const std::size_t done = completed();
        std::fprintf(stderr, "tpusim: %.1f s: simulated %.3f us, %zu of %zu instructions done (%.0f%%)\n",
                     std::chrono::duration<double>(now - t0).count(), sc_core::sc_time_stamp().to_seconds() * 1e6, done,
                     total, total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0);
      }
    }
  }
  if (vcd) vcd->close();  // a write error of the VCD file ends the run
  // Stopped at the limit with work left (an event due exactly at the limit
  // is not run by sc_start(limit)): the limit, not a lowering bug.
  if (limited && sc_core::sc_time_stamp() >= limit)
    for (const auto& c : chips)
      if (!c->all_done()) throw limit_error();
  for (const auto& c : chips)
    if (!c->all_done())
      throw EngineError(
          "the program stopped before every instruction completed (a wait that never "
          "completes): this is a lowering bug");

  SimResult r;
  std::size_t slowest = 0;
  for (std::size_t c = 1; c < chips.size(); ++c)
    if (chips[c]->end_cycle() > chips[slowest]->end_cycle()) slowest = c;
  r.records = opt.all_chips ? chips[slowest]->records() : chips[slowest]->take_records();
  r.end_cycle = chips[slowest]->end_cycle();
  r.clock_hz = chips[slowest]->clock_hz();
  if (opt.all_chips) {
    r.slowest_chip = static_cast<int>(slowest);
    for (std::size_t c = 0; c < chips.size(); ++c) {
      r.chip_end_cycles.push_back(chips[c]->end_cycle());
      r.chip_records.push_back(chips[c]->records());
      for (auto& [block, stats] : chips[c]->block_stats())
        r.block_stats.emplace_back("chip" + std::to_string(c) + "." + block, std::move(stats));
    }
    // Where the chips drifted apart: each one's end and the spread.
    arch::StatList per_chip;
    std::uint64_t first_end = r.end_cycle;
    for (std::size_t c = 0; c < chips.size(); ++c) {
      first_end = std::min(first_end, chips[c]->end_cycle());
      per_chip.push_back({"chip" + std::to_string(c) + ".end_cycles", static_cast<double>(chips[c]->end_cycle()),
                          "cycles", "cycle at which this chip's last instruction finished"});
    }
    per_chip.insert(per_chip.begin(), {{"slowest_chip", static_cast<double>(slowest), "index",
                                        "chip that finished last (summary.csv and ops.csv report it)"},
                                       {"end_spread_cycles", static_cast<double>(r.end_cycle - first_end), "cycles",
                                        "last chip's end minus the first chip's end"}});
    r.block_stats.emplace_back("chips", std::move(per_chip));
    for (auto& b : ici->block_stats()) r.block_stats.push_back(std::move(b));
  } else {
    r.block_stats = chips.front()->block_stats();
  }
  if (ici) {
    r.collectives = ici->records();
    r.chips = ici->chips();
    r.num_slices = ici->num_slices();
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace tpusim::sim
