// See memory_system.h.
#include "sim/engine/memory_system.h"

#include <systemc>

#include "arch/dma/dma_module.h"
#include "arch/hbm/hbm_module.h"

namespace tpusim::sim {

namespace {

// The HBM model's SystemC shell and the DMA engines over it, under one
// module name per chip ("<name>.hbm", "<name>.dma"). The ICI has two DMA
// engines of its own (assumption: one reading what collectives send, one
// writing what arrives), beside the TensorCore's dma.engines.
constexpr int kIciEngines = 2;

class MemorySystem : public arch::DmaBackend, public sc_core::sc_module {
 public:
  MemorySystem(sc_core::sc_module_name n, const arch::TpuConfig& cfg)
      : sc_core::sc_module(n),
        hbm_("hbm", cfg.hbm),
        dma_("dma", cfg.dma, cfg.hbm, cfg.chip.clock_hz, hbm_,
             arch::OnChipBandwidth{cfg.vmem.bandwidth, cfg.smem.bandwidth,
                                   cfg.cmem.present ? cfg.cmem.bandwidth : 0.0, cfg.vmem.granule_bytes,
                                   cfg.pcie_bandwidth},
             kIciEngines) {}

  void start(const arch::DmaWork& w, int engine, std::function<void()> on_done) override {
    dma_.start(w, engine, std::move(on_done));
  }
  void start_collective(const arch::DmaWork& w, int engine, std::function<void()> on_done) override {
    dma_.start_collective(w, engine, std::move(on_done));
  }
  std::vector<std::pair<std::string, arch::StatList>> block_stats() const override { return dma_.block_stats(); }

 private:
  arch::HbmModule hbm_;
  arch::DmaModule dma_;
};

}  // namespace

std::unique_ptr<arch::DmaBackend> make_memory_system(const arch::TpuConfig& cfg, const std::string& name) {
  return std::make_unique<MemorySystem>(name.c_str(), cfg);
}

}  // namespace tpusim::sim
