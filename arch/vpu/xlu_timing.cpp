// Timing of the cross-lane units; see xlu_timing.h for the model.
#include "arch/vpu/xlu_timing.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "arch/common/errors.h"
#include "arch/vpu/vpu_timing.h"

namespace tpusim::arch {

namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace

const char* xlu_op_name(XluOpKind k) {
  switch (k) {
    case XluOpKind::lane_reduce: return "lane_reduce";
    case XluOpKind::sublane_reduce: return "sublane_reduce";
    case XluOpKind::transpose: return "transpose";
    case XluOpKind::permute: return "permute";
    case XluOpKind::roll: return "roll";
  }
  return "?";
}

void validate_xlu_config(const XluConfig& cfg) {
  if (cfg.count <= 0) throw ConfigError("xlu.count: expected a positive value, found " + std::to_string(cfg.count));
  if (cfg.latency < 0) throw ConfigError("xlu.latency: expected a value >= 0, found " + std::to_string(cfg.latency));
  if (!(cfg.vregs_per_cycle > 0))
    throw ConfigError("xlu.vregs_per_cycle: expected a positive value, found " + std::to_string(cfg.vregs_per_cycle));
}

XluCost xlu_cost(const XluConfig& xlu, const VpuConfig& vpu, const XluArrayOp& op) {
  XluCost c;
  if (op.rows == 0 || op.cols == 0 || op.batch == 0) return c;
  // A vreg holds (sublanes x pack) rows of `lanes` columns.
  const std::uint64_t tile_rows =
      static_cast<std::uint64_t>(vpu.sublanes) * (32 / static_cast<std::uint64_t>(dtype_bits(op.dtype)));
  const std::uint64_t row_groups = ceil_div(op.rows, tile_rows);
  const std::uint64_t col_groups = ceil_div(op.cols, static_cast<std::uint64_t>(vpu.lanes));
  c.array_vregs = op.batch * row_groups * col_groups;
  switch (op.kind) {
    case XluOpKind::lane_reduce:
      c.xlu_vregs = op.batch * row_groups;
      c.vpu_combine_ops = op.batch * row_groups * (col_groups - 1);
      break;
    case XluOpKind::sublane_reduce:
      c.xlu_vregs = op.batch * col_groups;
      c.vpu_combine_ops = op.batch * col_groups * (row_groups - 1);
      break;
    case XluOpKind::transpose:
    case XluOpKind::permute:
    case XluOpKind::roll: c.xlu_vregs = c.array_vregs; break;
  }
  c.occupancy =
      static_cast<std::uint64_t>(std::ceil(static_cast<double>(c.xlu_vregs) / xlu.vregs_per_cycle * (1.0 - 1e-12)));
  if (c.occupancy == 0) c.occupancy = 1;
  c.cycles = c.occupancy + static_cast<std::uint64_t>(xlu.latency);
  return c;
}

XluTimer::XluTimer(const XluConfig& xlu, const VpuConfig& vpu) : xlu_(xlu), vpu_(vpu) {
  validate_xlu_config(xlu_);
  validate_vpu_config(vpu_);
  busy_until_.assign(static_cast<std::size_t>(xlu_.count), 0);
}

std::uint64_t XluTimer::busy_until(int unit) const {
  if (unit < 0 || unit >= count())
    throw InternalError("XluTimer::busy_until: unit " + std::to_string(unit) + " out of range [0, " +
                        std::to_string(count()) + ")");
  return busy_until_[static_cast<std::size_t>(unit)];
}

XluIssue XluTimer::issue(const XluArrayOp& op, std::uint64_t ready, int unit) {
  if (unit >= count() || unit < -1)
    throw InternalError("XluTimer::issue: unit " + std::to_string(unit) + " out of range [-1, " +
                        std::to_string(count()) + ")");
  if (unit < 0) {
    unit = 0;
    for (int u = 1; u < count(); ++u)
      if (busy_until_[static_cast<std::size_t>(u)] < busy_until_[static_cast<std::size_t>(unit)]) unit = u;
  }
  auto& busy = busy_until_[static_cast<std::size_t>(unit)];
  XluIssue r;
  r.unit = unit;
  r.cost = xlu_cost(xlu_, vpu_, op);
  r.start = std::max(ready, busy);
  if (r.cost.cycles == 0) {
    r.finish = r.start;
    return r;
  }
  busy = r.start + r.cost.occupancy;
  r.finish = r.start + r.cost.cycles;
  ++ops_;
  busy_cycles_ += r.cost.occupancy;
  xlu_vregs_ += r.cost.xlu_vregs;
  combine_ops_ += r.cost.vpu_combine_ops;
  return r;
}

void XluTimer::reset() {
  std::fill(busy_until_.begin(), busy_until_.end(), 0);
  ops_ = busy_cycles_ = xlu_vregs_ = combine_ops_ = 0;
}

StatList XluTimer::stats() const {
  auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  return {
      {"ops", d(ops_), "count", "ops issued to the XLUs"},
      {"busy_cycles", d(busy_cycles_), "cycles", "unit-cycles the XLUs were occupied, summed over units"},
      {"xlu_vregs", d(xlu_vregs_), "vregs", "vregs passed through the XLUs"},
      {"vpu_combine_ops", d(combine_ops_), "vreg-ops",
       "vreg-wide VPU ops that reductions need before the XLU pass (charged to the VPU by the caller)"},
  };
}

}  // namespace tpusim::arch
