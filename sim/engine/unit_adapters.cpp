#include "sim/engine/unit_adapters.h"

#include <algorithm>

#include "arch/memory/tile_layout.h"
#include "arch/memory/vmem_feed.h"
#include "arch/mxu/systolic_timing.h"
#include "arch/sparsecore/sparsecore_timing.h"
#include "arch/vpu/vpu_unit_timing.h"

namespace tpusim::sim {

namespace {

using arch::Instr;
using arch::Interval;

// One MXU. Its operands come from VMEM in (8,128) tiles of 4 KiB: the LHS
// block once per column of weight tiles (every weight tile streams all of
// its rows) and the weights once; the block cannot take fewer cycles than
// VMEM's bandwidth and granule need for them (arch/memory/vmem_feed.h).
// Results go to the MXU's result buffer, read out by the VPU's epilogue
// (charged there).
class MxuUnit : public arch::UnitTiming {
 public:
  MxuUnit(const arch::MxuConfig& c, arch::VmemFeed vmem) : t_(c), cols_(c.cols), vmem_(vmem) {}
  Interval issue(const Instr& in, std::uint64_t ready) override {
    const auto& w = std::get<arch::MxuWork>(in.work);
    const auto r = t_.issue(arch::MxuOp{w.m, w.k, w.n, w.dtype, w.sparse}, std::max(ready, held_until_));
    const auto m = static_cast<std::uint64_t>(w.m), k = static_cast<std::uint64_t>(w.k),
               n = static_cast<std::uint64_t>(w.n);
    const std::uint64_t col_tiles = (n + static_cast<std::uint64_t>(cols_) - 1) / static_cast<std::uint64_t>(cols_);
    const std::uint64_t tiles = arch::tile_count(m, k, w.dtype) * col_tiles + arch::tile_count(k, n, w.dtype);
    const std::uint64_t vmem = vmem_.cycles(tiles, arch::kTileBytes);
    if (r.start + vmem <= r.finish) return {r.start, r.finish};
    ++vmem_bound_ops_;
    held_until_ = r.start + vmem;
    return {r.start, held_until_};
  }
  arch::StatList stats() const override {
    arch::StatList s = t_.stats();
    s.push_back({"vmem_bound_ops", static_cast<double>(vmem_bound_ops_), "count",
                 "blocks whose time was set by VMEM bandwidth and granule (vmem.bandwidth, vmem.granule)"});
    return s;
  }

 private:
  arch::MxuTimer t_;
  int cols_;
  arch::VmemFeed vmem_;
  std::uint64_t held_until_ = 0;
  std::uint64_t vmem_bound_ops_ = 0;
};

}  // namespace

arch::UnitFactory make_unit_factory(const arch::TpuConfig& cfg) {
  const arch::VmemFeed vmem(cfg.vmem, cfg.chip.clock_hz);
  return [&cfg, vmem](arch::UnitKind kind, int core, int) -> std::unique_ptr<arch::UnitTiming> {
    switch (kind) {
      case arch::UnitKind::mxu: return std::make_unique<MxuUnit>(cfg.mxu, vmem);
      case arch::UnitKind::vpu:
        // Cores after the TensorCores are SparseCores: their vector tiles.
        if (core >= cfg.chip.tensorcores) return std::make_unique<arch::SparseCoreUnitTiming>(cfg.sparsecore);
        return std::make_unique<arch::VpuUnitTiming>(cfg.vpu, vmem);
      case arch::UnitKind::xlu: return std::make_unique<arch::XluUnitTiming>(cfg.xlu, cfg.vpu);
      case arch::UnitKind::dma:
      case arch::UnitKind::ici: break;
    }
    return nullptr;
  };
}

}  // namespace tpusim::sim
