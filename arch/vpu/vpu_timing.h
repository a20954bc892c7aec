// Timing of the TensorCore vector unit (VPU) for streaming elementwise work.
// Models: a stream of E elements through sublanes x lanes x alus_per_lane
// ALU slots per cycle, a transcendental unit (transcendental_rate vregs of
// work per cycle), vreg loads from VMEM (vmem_loads_per_cycle per cycle) and
// stores to VMEM (vmem_stores_per_cycle); the op occupies the VPU for the
// slowest of the four and its result is ready `latency` cycles later. One
// op issues at a time (busy-until), ops pipeline back to back.
// Leaves out: vreg pressure and spills (32/64 vregs), VLIW slot packing with
// scalar/MXU work, masking of partial vregs (a partial vreg costs a whole
// one), unpack/pack of narrow dtypes when the ALUs are not packed (callers
// that want to charge it add convert ops), VMEM bank conflicts.
#pragma once

#include <cstdint>
#include <optional>

#include "arch/common/chip_config.h"
#include "arch/common/dtype.h"
#include "arch/common/stats.h"

namespace tpusim::arch {

// Which resource set the op's occupancy. Ties go to the first in this order.
enum class VpuLimit : std::uint8_t { none, alu, transcendental, load, store };

const char* vpu_limit_name(VpuLimit l);

// A stream over `elements` elements. Field names match the ISA's VpuWork so
// that a sequencer adapts one to the other field by field.
struct VpuStreamOp {
  std::uint64_t elements = 0;
  DType dtype = DType::f32;        // dtype of the operands read from VMEM
  double alu_ops = 1;              // ALU ops per element
  double transcendental_ops = 0;   // transcendental ops per element
  int inputs = 2;                  // operands read from VMEM (vregs per output vreg)
  int outputs = 1;                 // operands written to VMEM
  std::optional<DType> out_dtype;  // dtype written; unset = dtype
};

struct VpuCost {
  std::uint64_t cycles = 0;     // occupancy + latency (0 for an empty op)
  std::uint64_t occupancy = 0;  // cycles the VPU is busy: max of the four bounds
  VpuLimit limit = VpuLimit::none;
  std::uint64_t alu_cycles = 0;
  std::uint64_t transcendental_cycles = 0;
  std::uint64_t load_cycles = 0;
  std::uint64_t store_cycles = 0;
  double alu_element_ops = 0;             // elements x alu_ops
  double transcendental_element_ops = 0;  // elements x transcendental_ops
  std::uint64_t compute_vregs = 0;        // vregs of work per op the ALUs see
  std::uint64_t vreg_loads = 0;
  std::uint64_t vreg_stores = 0;
};

// Elements of `t` one vreg holds: sublanes x lanes 32-bit slots, sub-32-bit
// types packed 32/bits per slot (bf16 vreg = (16,128) values; Pallas TPU
// docs / Mosaic layouts).
std::uint64_t vreg_elements(const VpuConfig& cfg, DType t);

// Throws ConfigError when a VpuConfig value is out of range.
void validate_vpu_config(const VpuConfig& cfg);

// Stateless cost of one stream op; O(1). Throws ConfigError on negative op
// counts or operand counts. `cfg` must have passed validate_vpu_config().
VpuCost vpu_cost(const VpuConfig& cfg, const VpuStreamOp& op);

// Elementwise operations with a documented cost per element. Composite
// activations are counted as the ALU ops and transcendentals of their usual
// formulas (see vpu_op_profile and docs/blocks-vpu-memory.md).
enum class VpuOpKind : std::uint8_t {
  add,
  sub,
  mul,
  fma,
  max,
  min,
  compare,
  select,
  convert,
  abs,
  neg,
  relu,
  exp,
  log,
  rsqrt,
  tanh,
  reciprocal,
  sigmoid,
  gelu,
  silu,
};

const char* vpu_op_name(VpuOpKind k);

struct VpuOpProfile {
  double alu_ops = 0;
  double transcendental_ops = 0;
  int inputs = 1;
  int outputs = 1;
};

VpuOpProfile vpu_op_profile(VpuOpKind k);

// The stream op for `elements` elements of one elementwise kind.
VpuStreamOp vpu_elementwise(VpuOpKind k, std::uint64_t elements, DType dtype);

struct VpuIssue {
  std::uint64_t start = 0;   // cycle the op starts occupying the VPU
  std::uint64_t finish = 0;  // cycle its last result is written
  VpuCost cost;
};

// The VPU of one TensorCore with its busy-until state.
class VpuTimer {
 public:
  explicit VpuTimer(const VpuConfig& cfg);  // validates cfg

  // Starts at max(ready, busy_until); the VPU is then busy for the op's
  // occupancy, and the op finishes occupancy + latency after its start.
  VpuIssue issue(const VpuStreamOp& op, std::uint64_t ready);

  std::uint64_t busy_until() const { return busy_until_; }
  const VpuConfig& config() const { return cfg_; }
  void reset();

  // ops, busy_cycles, alu/transcendental element ops, vreg loads/stores,
  // and the count of ops bound by each limit.
  StatList stats() const;

 private:
  VpuConfig cfg_;
  std::uint64_t busy_until_ = 0;
  std::uint64_t ops_ = 0;
  std::uint64_t busy_cycles_ = 0;
  double alu_element_ops_ = 0;
  double transcendental_element_ops_ = 0;
  std::uint64_t vreg_loads_ = 0;
  std::uint64_t vreg_stores_ = 0;
  std::uint64_t bound_[5] = {0, 0, 0, 0, 0};  // indexed by VpuLimit
};

}  // namespace tpusim::arch
