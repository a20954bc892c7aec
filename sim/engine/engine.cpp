#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/engine/engine.h"

#include <chrono>
#include <cstdio>
#include <memory>

#include <systemc>

#include "arch/chip/chip_module.h"
#include "sim/engine/ici_backend.h"
#include "sim/engine/memory_system.h"
#include "sim/engine/unit_adapters.h"

namespace tpusim::sim {

SimResult simulate(const arch::TpuConfig& cfg, const arch::Program& program, const SimOptions& opt) {
  static bool elaborated = false;
  if (elaborated)
    throw EngineError("simulate() called twice in one process: SystemC elaborates once per process");
  elaborated = true;
  const auto t0 = std::chrono::steady_clock::now();

  auto memory = make_memory_system(cfg);
  std::unique_ptr<IciBackend> ici;
  if (!opt.slice.empty()) ici = std::make_unique<IciBackend>(cfg, opt.slice, opt.mesh, opt.twisted);
  const arch::UnitFactory units = make_unit_factory(cfg);
  auto chip = std::make_unique<arch::ChipModule>("chip", cfg, program, units, *memory, ici.get());
  sc_core::sc_trace_file* vcd = nullptr;
  if (!opt.vcd_path.empty()) {
    std::string base = opt.vcd_path;
    if (base.size() > 4 && base.compare(base.size() - 4, 4, ".vcd") == 0) base.resize(base.size() - 4);
    vcd = sc_core::sc_create_vcd_trace_file(base.c_str());
    vcd->set_time_unit(1, sc_core::SC_PS);
    chip->trace(vcd);
  }
  if (!opt.progress) {
    sc_core::sc_start();
  } else {
    // Run in slices of simulated time so that wall time can be watched;
    // a slice grows while it costs little wall time.
    using clock = std::chrono::steady_clock;
    double slice_us = 1.0;
    auto last_report = t0;
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // initialization: processes become runnable
    while (sc_core::sc_pending_activity()) {
      const auto s0 = clock::now();
      sc_core::sc_start(sc_core::sc_time(slice_us, sc_core::SC_US));
      const auto now = clock::now();
      if (std::chrono::duration<double>(now - s0).count() < 0.05 && slice_us < 1e4) slice_us *= 2;
      if (std::chrono::duration<double>(now - t0).count() > 2.0 &&
          std::chrono::duration<double>(now - last_report).count() > 1.0) {
        last_report = now;
        const std::size_t total = program.instrs.size();
        std::fprintf(stderr, "tpusim: %.1f s: simulated %.3f us, %zu of %zu instructions done (%.0f%%)\n",
                     std::chrono::duration<double>(now - t0).count(),
                     sc_core::sc_time_stamp().to_seconds() * 1e6, chip->completed(), total,
                     total ? 100.0 * static_cast<double>(chip->completed()) / static_cast<double>(total) : 100.0);
      }
    }
  }
  if (vcd) sc_core::sc_close_vcd_trace_file(vcd);
  if (!chip->all_done())
    throw EngineError("the program stopped before every instruction completed (a wait that never "
                      "completes): this is a lowering bug");

  SimResult r;
  r.records = chip->records();
  r.end_cycle = chip->end_cycle();
  r.clock_hz = chip->clock_hz();
  r.block_stats = chip->block_stats();
  if (ici) {
    r.collectives = ici->records();
    r.chips = ici->chips();
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace tpusim::sim
