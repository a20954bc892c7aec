// LoRA adapters: targets, per-chip parameters, checks (see lora.h).
#include "models/lora.h"

#include <sstream>

#include "models/sharding.h"

namespace tpusim::models {

const char* lora_target_name(LoraTarget t) {
  switch (t) {
    case LoraTarget::q: return "q";
    case LoraTarget::k: return "k";
    case LoraTarget::v: return "v";
    case LoraTarget::o: return "o";
    case LoraTarget::gate: return "gate";
    case LoraTarget::up: return "up";
    case LoraTarget::down: return "down";
  }
  return "?";
}

bool parse_lora_targets(const std::string& text, unsigned* targets, std::string* bad) {
  unsigned t = 0;
  std::istringstream in(text);
  std::string item;
  bool any = false;
  while (std::getline(in, item, ',')) {
    any = true;
    if (item == "all") {
      for (LoraTarget x : kAllLoraTargets) t |= 1U << static_cast<unsigned>(x);
      continue;
    }
    bool found = false;
    for (LoraTarget x : kAllLoraTargets)
      if (item == lora_target_name(x)) {
        t |= 1U << static_cast<unsigned>(x);
        found = true;
      }
    if (!found) {
      *bad = item;
      return false;
    }
  }
  if (!any || (!text.empty() && text.back() == ',')) {
    *bad = "";
    return false;
  }
  *targets = t;
  return true;
}

std::string lora_targets_text(unsigned targets) {
  std::string s;
  for (LoraTarget x : kAllLoraTargets)
    if ((targets >> static_cast<unsigned>(x)) & 1U) s += std::string(s.empty() ? "" : ",") + lora_target_name(x);
  return s;
}

std::optional<LoraTarget> lora_target_of(const std::string& n) {
  if (n.rfind("layers.", 0) != 0) return std::nullopt;
  const std::size_t dot = n.find('.', 7);
  if (dot == std::string::npos) return std::nullopt;
  const std::string rest = n.substr(dot + 1);
  if (rest == "attn.q_proj") return LoraTarget::q;
  if (rest == "attn.k_proj") return LoraTarget::k;
  if (rest == "attn.v_proj") return LoraTarget::v;
  if (rest == "attn.o_proj") return LoraTarget::o;
  if (rest == "mlp.gate_proj") return LoraTarget::gate;
  if (rest == "mlp.up_proj" || rest == "mlp.fc1") return LoraTarget::up;
  if (rest == "mlp.down_proj" || rest == "mlp.fc2") return LoraTarget::down;
  return std::nullopt;
}

bool is_lora_weight(const std::string& t) {
  return t.find(".lora_a") != std::string::npos || t.find(".lora_b") != std::string::npos;
}

std::uint64_t lora_params(const ModelSpec& m, const PhaseOptions& o) {
  const LoraOptions& l = o.lora;
  if (!l.enabled() || m.family != Family::decoder) return 0;
  const auto& t = m.transformer;
  const auto& a = t.attention;
  const std::int64_t tp = o.mesh.size("tensor"), fs = weight_mesh(o).size("fsdp"), r = l.rank;
  const std::int64_t H = a.heads / tp, KV = kv_heads_per_rank(a.kv_heads, tp), D = a.head_dim, F = t.ffn.size / tp,
                     h = t.hidden;
  // Local [in, out] of each target's base weight, as the generator shapes it.
  auto pair = [&](std::int64_t in, std::int64_t out) {
    return static_cast<std::uint64_t>((in * r + r * out + fs - 1) / fs);  // A [in, r] and B [r, out], / fsdp x sequence
  };
  std::uint64_t per_layer_attn = 0, per_layer_ffn = 0;
  if (l.has(LoraTarget::q)) per_layer_attn += pair(h, H * D);
  if (l.has(LoraTarget::k)) per_layer_attn += pair(h, KV * D);
  if (l.has(LoraTarget::v)) per_layer_attn += pair(h, KV * D);
  if (l.has(LoraTarget::o)) per_layer_attn += pair(H * D, h);
  if (l.has(LoraTarget::gate)) per_layer_ffn += pair(h, F);
  if (l.has(LoraTarget::up)) per_layer_ffn += pair(h, F);
  if (l.has(LoraTarget::down)) per_layer_ffn += pair(F, h);
  std::uint64_t p = 0;
  for (std::int64_t i = 0; i < t.layers; ++i) p += per_layer_attn + (t.is_moe_layer(i) ? 0 : per_layer_ffn);
  return p * static_cast<std::uint64_t>(l.adapters);
}

void check_lora(const ModelSpec& m, const PhaseOptions& o, std::vector<Diagnostic>& errs) {
  const LoraOptions& l = o.lora;
  if (!l.enabled() && l.targets == 0 && l.adapters == 1) return;
  auto bad = [&](const std::string& key, const std::string& expected, const std::string& found) {
    errs.push_back({m.name, 0, 0, key, expected, found, ""});
  };
  if (l.rank < 1 || l.rank > 65536) bad("lora_rank", "a rank in [1, 65536]", std::to_string(l.rank));
  if (l.targets == 0) bad("lora_targets", "at least one of q,k,v,o,gate,up,down", "none");
  if (m.family != Family::decoder) {
    bad("lora_rank", "a decoder model (LoRA adapters are modelled on decoders)", family_name(m.family));
    return;
  }
  const auto& t = m.transformer;
  if (t.attention.kind != AttentionKind::mha)
    bad("lora_targets", "multi-head (MHA/GQA/MQA) attention for LoRA adapters", "latent attention (MLA)");
  if (l.has(LoraTarget::gate) && !t.ffn.gated())
    bad("lora_targets", "gate only on a gated (SwiGLU) FFN", "gate on a model without one");
  // The token rows of the step, as the generator builds them.
  const std::int64_t tokens = local_batch(o) * local_seq(o) + o.serve_decode * o.decode_tokens;
  if (l.adapters < 1 || l.adapters > tokens)
    bad("lora_adapters", "distinct adapters in [1, " + std::to_string(tokens) + "] (at most one per token of the step)",
        std::to_string(l.adapters));
  if (o.phase == Phase::train && l.adapters != 1)
    bad("lora_adapters", "1 adapter when training (one adapter is fine-tuned)", std::to_string(l.adapters));
}

}  // namespace tpusim::models
