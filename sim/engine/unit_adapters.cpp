#include "sim/engine/unit_adapters.h"

#include "arch/mxu/systolic_timing.h"
#include "arch/vpu/vpu_timing.h"
#include "arch/vpu/xlu_timing.h"

namespace tpusim::sim {

namespace {

using arch::Instr;
using arch::Interval;

class MxuUnit : public arch::UnitTiming {
 public:
  explicit MxuUnit(const arch::MxuConfig& c) : t_(c) {}
  Interval issue(const Instr& in, std::uint64_t ready) override {
    const auto& w = std::get<arch::MxuWork>(in.work);
    const auto r = t_.issue(arch::MxuOp{w.m, w.k, w.n, w.dtype}, ready);
    return {r.start, r.finish};
  }
  arch::StatList stats() const override { return t_.stats(); }

 private:
  arch::MxuTimer t_;
};

class VpuUnit : public arch::UnitTiming {
 public:
  explicit VpuUnit(const arch::VpuConfig& c) : t_(c) {}
  Interval issue(const Instr& in, std::uint64_t ready) override {
    const auto& w = std::get<arch::VpuWork>(in.work);
    arch::VpuStreamOp op;
    op.elements = w.elements;
    op.dtype = w.dtype;
    op.alu_ops = w.alu_ops;
    op.transcendental_ops = w.transcendental_ops;
    op.inputs = w.inputs;
    op.outputs = w.outputs;
    const auto r = t_.issue(op, ready);
    return {r.start, r.finish};
  }
  arch::StatList stats() const override { return t_.stats(); }

 private:
  arch::VpuTimer t_;
};

// One XLU: an XluTimer of a single unit.
class XluUnit : public arch::UnitTiming {
 public:
  XluUnit(arch::XluConfig c, const arch::VpuConfig& v) : t_((c.count = 1, c), v), lanes_(v.lanes) {}
  Interval issue(const Instr& in, std::uint64_t ready) override {
    const auto& w = std::get<arch::XluWork>(in.work);
    // The stream is viewed as rows of one vreg's lane width.
    arch::XluArrayOp op;
    op.kind = w.op == arch::XluOp::reduce      ? arch::XluOpKind::lane_reduce
              : w.op == arch::XluOp::transpose ? arch::XluOpKind::transpose
                                               : arch::XluOpKind::permute;
    op.cols = static_cast<std::uint64_t>(lanes_);
    op.rows = (w.elements + op.cols - 1) / op.cols;
    op.dtype = w.dtype;
    const auto r = t_.issue(op, ready, 0);
    return {r.start, r.finish};
  }
  arch::StatList stats() const override { return t_.stats(); }

 private:
  arch::XluTimer t_;
  int lanes_;
};

}  // namespace

arch::UnitFactory make_unit_factory(const arch::TpuConfig& cfg) {
  return [&cfg](arch::UnitKind kind, int, int) -> std::unique_ptr<arch::UnitTiming> {
    switch (kind) {
      case arch::UnitKind::mxu: return std::make_unique<MxuUnit>(cfg.mxu);
      case arch::UnitKind::vpu: return std::make_unique<VpuUnit>(cfg.vpu);
      case arch::UnitKind::xlu: return std::make_unique<XluUnit>(cfg.xlu, cfg.vpu);
      case arch::UnitKind::dma:
      case arch::UnitKind::ici: break;
    }
    return nullptr;
  };
}

}  // namespace tpusim::sim
