#include "sim/engine/unit_adapters.h"

#include "arch/mxu/systolic_timing.h"
#include "arch/vpu/vpu_unit_timing.h"

namespace tpusim::sim {

namespace {

using arch::Instr;
using arch::Interval;

class MxuUnit : public arch::UnitTiming {
 public:
  explicit MxuUnit(const arch::MxuConfig& c) : t_(c) {}
  Interval issue(const Instr& in, std::uint64_t ready) override {
    const auto& w = std::get<arch::MxuWork>(in.work);
    const auto r = t_.issue(arch::MxuOp{w.m, w.k, w.n, w.dtype, w.sparse}, ready);
    return {r.start, r.finish};
  }
  arch::StatList stats() const override { return t_.stats(); }

 private:
  arch::MxuTimer t_;
};

}  // namespace

arch::UnitFactory make_unit_factory(const arch::TpuConfig& cfg) {
  return [&cfg](arch::UnitKind kind, int, int) -> std::unique_ptr<arch::UnitTiming> {
    switch (kind) {
      case arch::UnitKind::mxu: return std::make_unique<MxuUnit>(cfg.mxu);
      case arch::UnitKind::vpu: return std::make_unique<arch::VpuUnitTiming>(cfg.vpu);
      case arch::UnitKind::xlu: return std::make_unique<arch::XluUnitTiming>(cfg.xlu, cfg.vpu);
      case arch::UnitKind::dma:
      case arch::UnitKind::ici: break;
    }
    return nullptr;
  };
}

}  // namespace tpusim::sim
