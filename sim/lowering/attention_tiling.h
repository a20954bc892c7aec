// The block-size search for attention (flash attention with online
// softmax): pure, no steps emitted. A step holds `hb` KV heads, `bp` query
// positions (all query heads of each KV head's group, folded into the
// MXU's M: bp x group rows) and `bkv` key positions. K and V are read in a
// head-major layout ([batch, KV head, position, dim]: paged KV caches keep
// each head's pages contiguous, and XLA's layout assignment gives a flash
// kernel's producers that layout), so a step's K block is `hb` contiguous
// pieces of bkv x D. Candidates are kept when their double-buffered Q, K,
// V and output blocks, the f32 scores and the f32 accumulator fit the
// kernel's VMEM budget (an op that fixes its blocks, as splash
// attention's BlockSizes do, runs as splash does, one query head per step:
// no search; an op whose max_step_seqs > 1 is a batched kernel, its steps
// holding up to that many sequences' blocks, how many searched too), and
// scored like the GEMM search: max(compute,
// traffic) + exposed first load + per-step costs, for the busiest core
// ((batch, head group, query block) units are dealt to the cores round
// robin, so causal query blocks, which see more key blocks the later
// they come, spread evenly). Compute per step is the
// larger of the MXU work (QK^T and PV of every head, spread over the MXUs;
// a tile streams max(rows, weight load) cycles) and the VPU's softmax, the
// two overlapping as the kernel interleaves sub-blocks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "arch/common/dtype.h"
#include "sim/lowering/chip_figures.h"
#include "workloads/ir/op.h"

namespace tpusim::sim::lowering {

struct AttentionShape {
  std::int64_t batch = 1, q_len = 1, heads = 1, kv_heads = 1, head_dim = 128, v_dim = 128, kv_len = 1;
  bool causal = false;
  std::int64_t window = 0;  // workloads::AttentionAttrs::window (causal only; 0 = none)
  // workloads::AttentionAttrs::blocks: a block size the op fixes (query
  // positions, key positions; 0 = searched), clamped to the sequence.
  workloads::AttentionBlocks blocks;
  // workloads::AttentionAttrs::max_step_seqs: > 1 lets a step hold up to
  // this many sequences (a batched kernel; the search picks how many).
  std::int64_t max_step_seqs = 0;
  workloads::AttentionPass pass = workloads::AttentionPass::forward;
  arch::DType q_dtype = arch::DType::bf16, kv_dtype = arch::DType::bf16, out_dtype = arch::DType::bf16;
  // The op's value is its key tensor (a forward pass given the same array
  // twice: MLA's latent cache, whose first v_dim columns are the values),
  // so a step reads one block for both, as FlashMLA-style kernels do.
  bool shared_kv = false;
  // Columns a separate value tensor stores per position, when PV uses only
  // the first v_dim of them (AttentionAttrs::value_dim; 0: v_dim): its
  // blocks load whole rows.
  std::int64_t v_stored = 0;

  std::int64_t group() const { return heads / kv_heads; }
  // Elements a key position's K and V blocks hold per head.
  std::int64_t kv_width() const { return shared_kv ? head_dim : head_dim + (v_stored > 0 ? v_stored : v_dim); }
  bool backward() const { return pass != workloads::AttentionPass::forward; }
  // What the pass's kernel computes (its matmuls and VPU work).
  const workloads::AttentionKernel& kernel() const { return workloads::attention_kernel(pass); }
  // The kernel computes dV and dK (grad_kv, grad_qkv): keys in M.
  bool dkv() const {
    for (const auto& mm : kernel().matmuls)
      if (mm.form == workloads::AttentionMatmulForm::transposed) return true;
    return false;
  }
  // Key positions the last query of a block ending at position q_last sees
  // (queries align with the last keys).
  std::int64_t visible(std::int64_t q_last) const {
    return causal ? std::min(kv_len, q_last + (kv_len - q_len) + 1) : kv_len;
  }
  // The first key position the first query of a block starting at q_first
  // sees: 0, or with a window the start of that query's window. A local
  // mask's kernel (splash attention's LocalMask) skips the key blocks
  // wholly before it, as a causal one skips those past the diagonal.
  std::int64_t first_visible(std::int64_t q_first) const {
    return causal && window > 0 ? std::max<std::int64_t>(0, q_first + (kv_len - q_len) - window + 1) : 0;
  }
  // The key blocks [first, end) of bkv positions that the query block
  // [q_first, q_last] visits, at least one: the ones the tiling search
  // counts and lower_attention emits.
  std::pair<std::int64_t, std::int64_t> key_blocks(std::int64_t q_first, std::int64_t q_last, std::int64_t bkv) const;
};

struct AttentionTiling {
  std::int64_t hb = 1, bp = 1, bkv = 128;
  std::int64_t sb = 1;  // sequences per step (AttentionShape::max_step_seqs)
  std::uint64_t vmem = 0;
  double est_cycles = 0;
  std::int64_t steps = 0;
};

// Key positions of one sub-block (one MXU tile wide): the kernel
// interleaves QK^T, softmax and PV over sub-blocks so that the MXU, the
// VPU and the XLUs overlap; only a sub-block's scores are held in VMEM.
std::int64_t attention_sub_block(const ChipFigures& f, std::int64_t bkv);

// How many sub-blocks ahead of the softmax the kernel issues QK^T: the
// scores of attention_lookahead + 1 sub-blocks are live in VMEM at once.
// Two hide the softmax behind the MXU when a sub-block's matmuls stream
// many rows (prefill). With fewer rows per head than an MXU tile (decode:
// a KV group's query heads), a sub-block's matmuls are short, so the
// latency of its QK^T -> softmax -> PV chain would leave the MXUs idle:
// the kernel runs QK^T eight sub-blocks ahead, its scores a few KiB.
constexpr std::int64_t kAttentionLookahead = 2;
constexpr std::int64_t kAttentionLookaheadFewRows = 8;
inline std::int64_t attention_lookahead(const ChipFigures& f, std::int64_t rows) {
  return rows < f.rows ? kAttentionLookaheadFewRows : kAttentionLookahead;
}

// Keys the dK/dV kernel's dV = P^T dO and dK = dS^T Q matmuls cover at
// once (their M): MaxText's splash attention default
// sa_block_kv_dkv_compute = 512 (MaxText src/MaxText/configs/base.yml,
// https://github.com/AI-Hypercomputer/maxtext).
constexpr std::int64_t kDkvComputeKeys = 512;
// Sub-blocks of `sub` keys one such matmul spans within a key block.
inline std::int64_t dkv_group(std::int64_t sub) { return std::max<std::int64_t>(1, kDkvComputeKeys / sub); }

// MXU cycles of one head's matmuls over one sub-block of `sub` keys with
// `rows` query rows, on one MXU: the forward's QK^T and PV, or a backward
// kernel's three (grad_q), four (grad_kv) or five (fused grad_qkv)
// matmuls (AttentionAttrs).
double attention_mxu_cycles(const AttentionShape& a, const ChipFigures& f, double rows, std::int64_t sub, double tp);

std::optional<AttentionTiling> choose_attention_tiling(const AttentionShape& a, const ChipFigures& f, int cores);

// The search's results for one lowering (one chip's figures): the layers
// of a model repeat the same attention shapes, searched once each.
class AttentionTilingCache {
 public:
  const std::optional<AttentionTiling>& get(const AttentionShape& a, const ChipFigures& f, int cores);

 private:
  using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                         std::int64_t, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                         workloads::AttentionPass, arch::DType, arch::DType, arch::DType, bool, std::int64_t, int>;
  std::map<Key, std::optional<AttentionTiling>> memo_;
};

}  // namespace tpusim::sim::lowering
