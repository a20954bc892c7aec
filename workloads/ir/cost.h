// Per-op analytics that the engine and reports need: FLOPs, MACs,
// transcendental ops and the minimum HBM traffic.
// Models (conventions, documented in docs/workload-format.md):
//  - matmul/conv/attention: 2 FLOPs per multiply-accumulate.
//  - elementwise: ew_cost(kind) FLOPs/transcendentals per output element.
//  - reduce: sum/max/min (in - out) FLOPs; mean adds one divide per output.
//  - softmax: 4 FLOPs/element - 2 per row (max, subtract, sum, divide) and
//    one exp per element.
//  - layer_norm: 5 FLOPs/element (+1 scale, +1 bias), one rsqrt per row;
//    rms_norm: 3 FLOPs/element (+1 scale), one rsqrt per row.
//  - attention: QK^T and PV matmuls over unmasked (query, key) pairs, plus
//    5 FLOPs (scale, max, subtract, sum, divide) and 1 exp per unmasked score.
//  - gather, layout ops, collectives: 0 FLOPs (a collective's reduction
//    arithmetic depends on the algorithm, so the ICI model counts it).
//  - min HBM bytes = every input read once + every output written once; for
//    gather only the looked-up rows (at most the whole table) are read.
// Leaves out: re-reads caused by tiling (the lowering/engine count those).
#pragma once

#include <cstdint>

#include "workloads/ir/op.h"

namespace tpusim::workloads {

class Workload;
class TensorIndex;

struct OpCost {
  std::uint64_t flops = 0;
  std::uint64_t macs = 0;             // matmul, conv2d and attention only
  std::uint64_t recompute_macs = 0;   // of macs, forward work a backward kernel redoes (attention)
  std::uint64_t masked_macs = 0;      // of macs, (query, key) pairs a causal mask discards (MatmulAttrs::causal)
  std::uint64_t transcendentals = 0;  // exp, log, tanh, rsqrt, ... (EUP work)
  std::uint64_t bytes_read = 0;       // minimum, from HBM
  std::uint64_t bytes_written = 0;    // minimum, to HBM
  std::uint64_t min_hbm_bytes() const { return bytes_read + bytes_written; }
  OpCost& operator+=(const OpCost& o);
};

// Unmasked (query, key) pairs of one (batch, head) of attention; see
// AttentionAttrs for the causal alignment. Closed form (no loop over
// queries); saturates at UINT64_MAX when the count does not fit.
// With `window` > 0 (causal only), query i sees at most that many keys,
// the ones ending at its diagonal (AttentionAttrs::window).
std::uint64_t attention_score_pairs(std::int64_t q_len, std::int64_t kv_len, bool causal, std::int64_t window = 0);

// Cost of one op; its tensors must exist in wl (throws WorkloadError otherwise).
OpCost op_cost(const Workload& wl, const Op& op);
// Same with an index, for loops over many ops.
OpCost op_cost(const TensorIndex& tensors, const Op& op);
// Sum over all ops.
OpCost workload_cost(const Workload& wl);

}  // namespace tpusim::workloads
