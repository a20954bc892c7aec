// LoRA (Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models",
// ICLR 2022, arXiv:2106.09685): a frozen projection W [in, out] gains a
// trainable low-rank pair A [in, r], B [r, out], and y = x W + (x A) B.
// The options of a phase: the rank, which projections carry adapters, and
// how many distinct adapters one step's tokens use (multi-adapter serving:
// each adapter's tokens multiply its own A and B, batched per adapter as
// Punica's SGMV / S-LoRA's kernels do).
// Leaves out: the scaling alpha / r (an elementwise factor folded into B),
// dropout on the adapter input, adapters on embeddings, the LM head and
// mixture-of-experts expert FFNs.
#pragma once

#include <cstdint>
#include <string>

namespace tpusim::models {

// Projections that can carry an adapter. For FFNs without a gate (GELU,
// ReLU), up is fc1 and down is fc2.
enum class LoraTarget { q, k, v, o, gate, up, down };
inline constexpr LoraTarget kAllLoraTargets[] = {LoraTarget::q,    LoraTarget::k,  LoraTarget::v,   LoraTarget::o,
                                                 LoraTarget::gate, LoraTarget::up, LoraTarget::down};

struct LoraOptions {
  std::int64_t rank = 0;  // 0: no adapters
  unsigned targets = 0;   // bit (1 << LoraTarget) per projection
  // Distinct adapters among one step's tokens (serving). 1: one adapter,
  // plain matmuls; n > 1: the tokens are split as evenly as possible over
  // n adapters and each adapter's rows multiply its own A and B (grouped
  // matmuls over the adapters, the weights of all n read).
  std::int64_t adapters = 1;
  bool enabled() const { return rank > 0; }
  bool has(LoraTarget t) const { return (targets >> static_cast<unsigned>(t)) & 1U; }
};

const char* lora_target_name(LoraTarget t);
// Parses "q,v", "q,k,v,o,gate,up,down" or "all"; false (and *bad set to
// the first unknown item) on an unknown or empty item.
bool parse_lora_targets(const std::string& text, unsigned* targets, std::string* bad);
// "q,v" for the targets set.
std::string lora_targets_text(unsigned targets);

}  // namespace tpusim::models
