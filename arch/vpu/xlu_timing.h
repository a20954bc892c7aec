// Timing of the cross-lane units (XLUs) of a TensorCore: reductions across
// lanes or sublanes, transposes of (8,128)-tiled arrays, permutes and rolls.
// Models: an op on a [rows, cols] array (times `batch`) sends a number of
// vregs through one XLU at vregs_per_cycle, and its result is ready
// `latency` cycles after the last vreg enters; `count` units work in
// parallel on different ops, each with its own busy-until state.
// Reductions: the VPU first folds the vregs of each row group (lane reduce)
// or column group (sublane reduce) into one with elementwise ops (counted in
// XluCost::vpu_combine_ops for the caller to charge to the VPU), then one
// vreg per group passes through the XLU.
// Leaves out: the internal structure of the transpose unit (128x128 blocks),
// packed sub-32-bit transposes (costed per stored vreg like f32), arbitrary
// gathers (a permute is one pass per vreg), splitting one op over both units.
#pragma once

#include <cstdint>
#include <vector>

#include "arch/common/chip_config.h"
#include "arch/common/dtype.h"
#include "arch/common/stats.h"

namespace tpusim::arch {

enum class XluOpKind : std::uint8_t {
  lane_reduce,     // [rows, cols] -> [rows]: across lanes (the last dim)
  sublane_reduce,  // [rows, cols] -> [cols]: across sublanes (second to last)
  transpose,       // [rows, cols] -> [cols, rows]
  permute,         // lane permutation of every vreg
  roll,            // rotate along lanes or sublanes, every vreg
};

const char* xlu_op_name(XluOpKind k);

struct XluArrayOp {
  XluOpKind kind = XluOpKind::transpose;
  std::uint64_t rows = 0;  // second-to-last dimension
  std::uint64_t cols = 0;  // last dimension
  DType dtype = DType::f32;
  std::uint64_t batch = 1;  // product of the leading dimensions
};

struct XluCost {
  std::uint64_t cycles = 0;           // occupancy + latency (0 for an empty op)
  std::uint64_t occupancy = 0;        // cycles one unit is busy
  std::uint64_t xlu_vregs = 0;        // vregs passed through the unit
  std::uint64_t array_vregs = 0;      // vregs the (8,128)-tiled input occupies
  std::uint64_t vpu_combine_ops = 0;  // vreg-wide VPU ops folding groups before a reduce
};

// Throws ConfigError when an XluConfig value is out of range.
void validate_xlu_config(const XluConfig& cfg);

// Stateless cost of one op on one unit; O(1). The tiling follows the VPU's
// vreg shape: (sublanes x 32/bits, lanes) per vreg.
XluCost xlu_cost(const XluConfig& xlu, const VpuConfig& vpu, const XluArrayOp& op);

struct XluIssue {
  std::uint64_t start = 0;
  std::uint64_t finish = 0;
  int unit = 0;  // which XLU ran it
  XluCost cost;
};

// The `count` XLUs of one TensorCore.
class XluTimer {
 public:
  XluTimer(const XluConfig& xlu, const VpuConfig& vpu);  // validates both

  // unit = -1 picks the unit that frees first (lowest index on a tie); a
  // unit >= 0 must be < count (InternalError otherwise). Starts at
  // max(ready, that unit's busy-until).
  XluIssue issue(const XluArrayOp& op, std::uint64_t ready, int unit = -1);

  std::uint64_t busy_until(int unit) const;
  int count() const { return static_cast<int>(busy_until_.size()); }
  void reset();

  // ops, busy_cycles (summed over units), xlu_vregs, vpu_combine_ops.
  StatList stats() const;

 private:
  XluConfig xlu_;
  VpuConfig vpu_;
  std::vector<std::uint64_t> busy_until_;
  std::uint64_t ops_ = 0;
  std::uint64_t busy_cycles_ = 0;
  std::uint64_t xlu_vregs_ = 0;
  std::uint64_t combine_ops_ = 0;
};

}  // namespace tpusim::arch
