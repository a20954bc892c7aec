// Mesh parsing and the mesh-versus-model checks (see sharding.h).
#include "models/sharding.h"

#include <algorithm>

#include "models/model_file.h"

namespace tpusim::models {

const std::vector<std::string>& mesh_axis_names() {
  static const std::vector<std::string> names = {"data", "fsdp", "tensor", "expert", "sequence"};
  return names;
}

std::int64_t local_seq(const PhaseOptions& o) {
  if (o.phase == Phase::decode) return o.decode_tokens;
  return o.seq_len / o.mesh.size("sequence");
}

std::int64_t weight_sequence_ranks(const PhaseOptions& o) {
  return o.phase == Phase::train ? o.mesh.size("sequence") : 1;
}

MeshSpec weight_mesh(const PhaseOptions& o) {
  const std::int64_t cp = weight_sequence_ranks(o);
  MeshSpec w = o.mesh;
  if (cp == 1) return w;
  bool has_fsdp = false;
  for (auto& ax : w.axes) {
    if (ax.name == "fsdp") {
      ax.size *= cp;
      has_fsdp = true;
    }
    if (ax.name == "sequence") ax.size = 1;
  }
  if (!has_fsdp) w.axes.push_back({"fsdp", cp, {}});
  return w;
}

std::int64_t kv_heads_per_rank(std::int64_t kv_heads, std::int64_t tensor) {
  return kv_heads_replicated(kv_heads, tensor) ? 1 : kv_heads / tensor;
}

bool kv_heads_replicated(std::int64_t kv_heads, std::int64_t tensor) {
  return tensor > kv_heads && kv_heads > 0 && tensor % kv_heads == 0;
}

std::int64_t vocab_per_rank(std::int64_t vocab, std::int64_t tensor) { return (vocab + tensor - 1) / tensor; }

std::int64_t local_batch(const PhaseOptions& o) {
  const std::int64_t d = o.mesh.size("data") * o.mesh.size("fsdp") * o.mesh.size("expert");
  return o.batch / d;
}

void check_mesh(const ModelSpec& m, const PhaseOptions& o) {
  const MeshSpec& mesh = o.mesh;
  if (mesh.empty() && !o.sequence_parallel) return;
  std::vector<Diagnostic> errs;
  auto bad = [&](const std::string& key, const std::string& expected, const std::string& found) {
    errs.push_back({m.name, 0, 0, key, expected, found + " in model '" + m.name + "'", ""});
  };
  auto divides = [&](const std::string& axis, std::int64_t n, const std::string& key, const std::string& what) {
    const std::int64_t s = mesh.size(axis);
    if (s > 1 && n % s != 0)
      bad(key, "a multiple of mesh axis " + axis + "=" + std::to_string(s) + " (it splits " + what + ")",
          std::to_string(n));
  };
  for (const auto& a : mesh.axes) {
    const auto& known = mesh_axis_names();
    if (std::find(known.begin(), known.end(), a.name) == known.end())
      bad("mesh." + a.name, "an axis name among data, fsdp, tensor, expert, sequence", "'" + a.name + "'");
    if (a.size < 1) bad("mesh." + a.name, "a size >= 1", std::to_string(a.size));
  }
  if (!errs.empty()) throw ModelError(std::move(errs));
  const std::int64_t cp = mesh.size("sequence"), tp = mesh.size("tensor");
  if (cp > 1) {
    // Context parallelism: the sequence of a prefill or training step is
    // split; decode has one query token (its cache split over chips would
    // need a cross-chip softmax combine, which is not modelled).
    if (m.family != Family::decoder)
      bad("mesh.sequence", "a decoder model (context parallelism is modelled for causal LLMs)",
          std::string("a ") + family_name(m.family) + " model");
    else if (o.phase == Phase::decode)
      bad("mesh.sequence", "phase prefill or train (decode's one new token per sequence cannot be split)",
          "sequence=" + std::to_string(cp) + " with phase decode");
    else if (o.seq_len % cp != 0)
      bad("seq_len", "a multiple of mesh axis sequence=" + std::to_string(cp) + " (it splits the tokens)",
          std::to_string(o.seq_len));
  }
  if (o.sequence_parallel) {
    if (tp < 2)
      bad("sequence_parallel", "a mesh with tensor > 1 (sequence parallelism splits the tokens over the tensor axis)",
          mesh.empty() ? "an empty mesh" : "mesh " + mesh.str());
    if (m.family != Family::decoder)
      bad("sequence_parallel", "a decoder model", std::string("a ") + family_name(m.family) + " model");
    else if (o.phase == Phase::decode)
      bad("sequence_parallel", "phase prefill or train (decode's one token per sequence cannot be split)",
          "phase decode");
  }
  const bool transformer = is_transformer(m.family);
  if (!transformer) {
    for (const char* ax : {"fsdp", "tensor", "expert"})
      if (mesh.size(ax) > 1)
        bad(std::string("mesh.") + ax, std::string("only the data axis for a ") + family_name(m.family) + " model",
            std::string(ax) + "=" + std::to_string(mesh.size(ax)));
  }
  const std::int64_t split = mesh.size("data") * mesh.size("fsdp") * mesh.size("expert");
  if (o.batch % split != 0)
    bad("batch", "a multiple of data x fsdp x expert = " + std::to_string(split) + " (mesh " + mesh.str() + ")",
        std::to_string(o.batch));
  if (transformer) {
    const auto& t = m.transformer;
    const auto& a = t.attention;
    divides("tensor", a.heads, "attention.heads", "the attention heads");
    if (a.kind == AttentionKind::mha && tp > 1 && a.kv_heads % tp != 0 && !kv_heads_replicated(a.kv_heads, tp))
      bad("attention.kv_heads",
          "a multiple of mesh axis tensor=" + std::to_string(tp) +
              " (it splits the KV heads) or a divisor of it (each KV head replicated on tensor / kv_heads ranks)",
          std::to_string(a.kv_heads));
    const bool dense_ffn = !t.moe.enabled || t.moe.dense_layers_first > 0;
    if (dense_ffn) divides("tensor", t.ffn.size, "ffn.size", "the FFN hidden size");
    if (t.moe.enabled) divides("tensor", t.moe.expert_ffn_size, "moe.expert_ffn_size", "each expert's FFN hidden size");
    divides("fsdp", t.hidden, "hidden", "every norm scale and the input dim of the projections");
    if (mesh.size("expert") > 1) {
      if (!t.moe.enabled) {
        bad("mesh.expert", "a mixture-of-experts model (the expert axis splits routed experts)",
            "expert=" + std::to_string(mesh.size("expert")) + " for a dense model");
      } else {
        divides("expert", t.moe.experts, "moe.experts", "the routed experts");
        if (o.batch % split == 0) {
          const std::int64_t S = o.phase == Phase::decode ? 1 : o.seq_len / cp;
          const std::int64_t slots = o.batch / split * S * t.moe.top_k;
          if (slots % mesh.size("expert") != 0)
            bad("batch",
                "token slots per chip (batch / " + std::to_string(split) +
                    " x tokens x moe.top_k) a multiple "
                    "of expert=" +
                    std::to_string(mesh.size("expert")) + " (they are exchanged all-to-all in equal parts)",
                std::to_string(slots) + " slots");
        }
      }
    }
  }
  if (!errs.empty()) throw ModelError(std::move(errs));
}

}  // namespace tpusim::models
