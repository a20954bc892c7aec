// Timing of the TensorCore vector unit; see vpu_timing.h for the model.
#include "arch/vpu/vpu_timing.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "arch/common/errors.h"

namespace tpusim::arch {

namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// ceil of a work/rate ratio computed in doubles. Both are exact for the
// integer and power-of-two values configs use; the relative slack keeps a
// product like 3 x (1/3) from rounding up to the next cycle.
std::uint64_t ceil_ratio(double work, double rate) {
  if (work <= 0) return 0;
  const double x = work / rate;
  return static_cast<std::uint64_t>(std::ceil(x * (1.0 - 1e-12)));
}

// Values per 32-bit slot: 1 for f32, 2 for bf16, 4 for 8-bit, 8 for int4.
std::uint64_t pack_factor(DType t) { return 32 / static_cast<std::uint64_t>(dtype_bits(t)); }

}  // namespace

const char* vpu_limit_name(VpuLimit l) {
  switch (l) {
    case VpuLimit::none: return "none";
    case VpuLimit::alu: return "alu";
    case VpuLimit::transcendental: return "transcendental";
    case VpuLimit::load: return "load";
    case VpuLimit::store: return "store";
  }
  return "?";
}

std::uint64_t vreg_elements(const VpuConfig& cfg, DType t) {
  return static_cast<std::uint64_t>(cfg.sublanes) * static_cast<std::uint64_t>(cfg.lanes) * pack_factor(t);
}

void validate_vpu_config(const VpuConfig& cfg) {
  auto positive = [](const char* key, double v) {
    if (!(v > 0))
      throw ConfigError(std::string("vpu.") + key + ": expected a positive value, found " + std::to_string(v));
  };
  positive("sublanes", cfg.sublanes);
  positive("lanes", cfg.lanes);
  positive("alus_per_lane", cfg.alus_per_lane);
  positive("transcendental_rate", cfg.transcendental_rate);
  positive("vregs", cfg.vregs);
  positive("vmem_loads_per_cycle", cfg.vmem_loads_per_cycle);
  positive("vmem_stores_per_cycle", cfg.vmem_stores_per_cycle);
  if (cfg.latency < 0) throw ConfigError("vpu.latency: expected a value >= 0, found " + std::to_string(cfg.latency));
}

VpuCost vpu_cost(const VpuConfig& cfg, const VpuStreamOp& op) {
  if (op.alu_ops < 0 || op.transcendental_ops < 0 || op.inputs < 0 || op.outputs < 0)
    throw ConfigError("vpu op: alu_ops, transcendental_ops, inputs and outputs must be >= 0");
  VpuCost c;
  if (op.elements == 0) return c;
  const DType out = op.out_dtype.value_or(op.dtype);
  const std::uint64_t slots = static_cast<std::uint64_t>(cfg.sublanes) * static_cast<std::uint64_t>(cfg.lanes);

  // The ALUs work on the wider of the two dtypes (a convert computes in the
  // wider one); packed only if the hardware has packed narrow ALUs.
  const std::uint64_t compute_pack = cfg.packed_narrow_alu ? std::min(pack_factor(op.dtype), pack_factor(out)) : 1;
  c.compute_vregs = ceil_div(op.elements, slots * compute_pack);
  const auto in_vregs = ceil_div(op.elements, slots * pack_factor(op.dtype));
  const auto out_vregs = ceil_div(op.elements, slots * pack_factor(out));

  c.alu_element_ops = static_cast<double>(op.elements) * op.alu_ops;
  c.transcendental_element_ops = static_cast<double>(op.elements) * op.transcendental_ops;
  c.vreg_loads = static_cast<std::uint64_t>(op.inputs) * in_vregs;
  c.vreg_stores = static_cast<std::uint64_t>(op.outputs) * out_vregs;

  // alus_per_lane ALU ops per slot per cycle = alus_per_lane vreg-ops per cycle.
  c.alu_cycles = ceil_ratio(static_cast<double>(c.compute_vregs) * op.alu_ops, cfg.alus_per_lane);
  c.transcendental_cycles =
      ceil_ratio(static_cast<double>(c.compute_vregs) * op.transcendental_ops, cfg.transcendental_rate);
  c.load_cycles = ceil_div(c.vreg_loads, static_cast<std::uint64_t>(cfg.vmem_loads_per_cycle));
  c.store_cycles = ceil_div(c.vreg_stores, static_cast<std::uint64_t>(cfg.vmem_stores_per_cycle));

  c.occupancy = c.alu_cycles;
  c.limit = c.alu_cycles > 0 ? VpuLimit::alu : VpuLimit::none;
  auto take = [&c](std::uint64_t v, VpuLimit l) {
    if (v > c.occupancy) {
      c.occupancy = v;
      c.limit = l;
    }
  };
  take(c.transcendental_cycles, VpuLimit::transcendental);
  take(c.load_cycles, VpuLimit::load);
  take(c.store_cycles, VpuLimit::store);
  // An op that reads, writes and computes nothing (all counts zero) still
  // passes one vreg through the pipeline.
  if (c.occupancy == 0) c.occupancy = 1;
  c.cycles = c.occupancy + static_cast<std::uint64_t>(cfg.latency);
  return c;
}

const char* vpu_op_name(VpuOpKind k) {
  switch (k) {
    case VpuOpKind::add: return "add";
    case VpuOpKind::sub: return "sub";
    case VpuOpKind::mul: return "mul";
    case VpuOpKind::fma: return "fma";
    case VpuOpKind::max: return "max";
    case VpuOpKind::min: return "min";
    case VpuOpKind::compare: return "compare";
    case VpuOpKind::select: return "select";
    case VpuOpKind::convert: return "convert";
    case VpuOpKind::abs: return "abs";
    case VpuOpKind::neg: return "neg";
    case VpuOpKind::relu: return "relu";
    case VpuOpKind::exp: return "exp";
    case VpuOpKind::log: return "log";
    case VpuOpKind::rsqrt: return "rsqrt";
    case VpuOpKind::tanh: return "tanh";
    case VpuOpKind::reciprocal: return "reciprocal";
    case VpuOpKind::sigmoid: return "sigmoid";
    case VpuOpKind::gelu: return "gelu";
    case VpuOpKind::silu: return "silu";
  }
  return "?";
}

VpuOpProfile vpu_op_profile(VpuOpKind k) {
  switch (k) {
    case VpuOpKind::add:
    case VpuOpKind::sub:
    case VpuOpKind::mul:
    case VpuOpKind::max:
    case VpuOpKind::min:
    case VpuOpKind::compare: return {1, 0, 2, 1};
    // Assumes a fused multiply-add slot (not published); a VPU without one
    // would count 2.
    case VpuOpKind::fma: return {1, 0, 3, 1};
    case VpuOpKind::select: return {1, 0, 3, 1};  // mask, on_true, on_false
    case VpuOpKind::convert:
    case VpuOpKind::abs:
    case VpuOpKind::neg:
    case VpuOpKind::relu:
      return {1, 0, 1, 1};  // relu = max(x, 0)
    // The transcendental unit evaluates the whole function (its range
    // reduction included); not published, so no extra ALU ops are counted.
    case VpuOpKind::exp:
    case VpuOpKind::log:
    case VpuOpKind::rsqrt:
    case VpuOpKind::tanh:
    case VpuOpKind::reciprocal:
    case VpuOpKind::sigmoid: return {0, 1, 1, 1};
    // gelu, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))):
    // x2 = x*x; p = fma(x2, c1, c0); z = x*p; t = tanh(z); h = fma(t, .5, .5);
    // y = x*h -> 5 ALU ops + 1 transcendental.
    case VpuOpKind::gelu: return {5, 1, 1, 1};
    // silu = x * sigmoid(x) -> 1 ALU op + 1 transcendental.
    case VpuOpKind::silu: return {1, 1, 1, 1};
  }
  return {};
}

VpuStreamOp vpu_elementwise(VpuOpKind k, std::uint64_t elements, DType dtype) {
  const VpuOpProfile p = vpu_op_profile(k);
  VpuStreamOp op;
  op.elements = elements;
  op.dtype = dtype;
  op.alu_ops = p.alu_ops;
  op.transcendental_ops = p.transcendental_ops;
  op.inputs = p.inputs;
  op.outputs = p.outputs;
  return op;
}

VpuTimer::VpuTimer(const VpuConfig& cfg) : cfg_(cfg) { validate_vpu_config(cfg_); }

VpuIssue VpuTimer::issue(const VpuStreamOp& op, std::uint64_t ready) {
  VpuIssue r;
  r.cost = vpu_cost(cfg_, op);
  r.start = std::max(ready, busy_until_);
  if (op.elements == 0) {
    r.finish = r.start;
    return r;
  }
  busy_until_ = r.start + r.cost.occupancy;
  r.finish = r.start + r.cost.cycles;
  ++ops_;
  busy_cycles_ += r.cost.occupancy;
  alu_element_ops_ += r.cost.alu_element_ops;
  transcendental_element_ops_ += r.cost.transcendental_element_ops;
  vreg_loads_ += r.cost.vreg_loads;
  vreg_stores_ += r.cost.vreg_stores;
  ++bound_[static_cast<int>(r.cost.limit)];
  return r;
}

void VpuTimer::reset() {
  const VpuConfig cfg = cfg_;
  *this = VpuTimer(cfg);
}

StatList VpuTimer::stats() const {
  auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  return {
      {"ops", d(ops_), "count", "stream ops issued to the VPU"},
      {"busy_cycles", d(busy_cycles_), "cycles", "cycles the VPU was occupied (sum of op occupancies)"},
      {"alu_element_ops", alu_element_ops_, "ops", "elementwise ALU operations executed"},
      {"transcendental_element_ops", transcendental_element_ops_, "ops",
       "elementwise transcendental operations executed"},
      {"vreg_loads", d(vreg_loads_), "vregs", "vector registers loaded from VMEM"},
      {"vreg_stores", d(vreg_stores_), "vregs", "vector registers stored to VMEM"},
      {"alu_bound_ops", d(bound_[static_cast<int>(VpuLimit::alu)]), "count",
       "ops whose occupancy was set by ALU throughput"},
      {"transcendental_bound_ops", d(bound_[static_cast<int>(VpuLimit::transcendental)]), "count",
       "ops whose occupancy was set by the transcendental unit"},
      {"load_bound_ops", d(bound_[static_cast<int>(VpuLimit::load)]), "count",
       "ops whose occupancy was set by vreg loads from VMEM"},
      {"store_bound_ops", d(bound_[static_cast<int>(VpuLimit::store)]), "count",
       "ops whose occupancy was set by vreg stores to VMEM"},
  };
}

}  // namespace tpusim::arch
