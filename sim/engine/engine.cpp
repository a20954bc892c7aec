#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/engine/engine.h"

#include <chrono>
#include <memory>

#include <systemc>

#include "arch/chip/chip_module.h"
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
  const arch::UnitFactory units = make_unit_factory(cfg);
  auto chip = std::make_unique<arch::ChipModule>("chip", cfg, program, units, *memory);
  sc_core::sc_trace_file* vcd = nullptr;
  if (!opt.vcd_path.empty()) {
    std::string base = opt.vcd_path;
    if (base.size() > 4 && base.compare(base.size() - 4, 4, ".vcd") == 0) base.resize(base.size() - 4);
    vcd = sc_core::sc_create_vcd_trace_file(base.c_str());
    vcd->set_time_unit(1, sc_core::SC_PS);
    chip->trace(vcd);
  }
  sc_core::sc_start();
  if (vcd) sc_core::sc_close_vcd_trace_file(vcd);
  if (!chip->all_done())
    throw EngineError("the program stopped before every instruction completed (a wait that never "
                      "completes): this is a lowering bug");

  SimResult r;
  r.records = chip->records();
  r.end_cycle = chip->end_cycle();
  r.clock_hz = chip->clock_hz();
  r.block_stats = chip->block_stats();
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace tpusim::sim
