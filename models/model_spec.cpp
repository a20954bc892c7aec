// Names, errors and option checks of ModelSpec (see model_spec.h).
#include "models/model_spec.h"
#include "models/lora.h"

#include <algorithm>

#include <sstream>

namespace tpusim::models {

const char* family_name(Family f) {
  switch (f) {
    case Family::decoder: return "decoder";
    case Family::encoder: return "encoder";
    case Family::vit: return "vit";
    case Family::resnet: return "resnet";
    case Family::dlrm: return "dlrm";
    case Family::unet: return "unet";
  }
  return "?";
}

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::prefill: return "prefill";
    case Phase::decode: return "decode";
    case Phase::train: return "train";
    case Phase::infer: return "infer";
  }
  return "?";
}

bool parse_phase(const std::string& s, Phase* out) {
  for (Phase p : {Phase::prefill, Phase::decode, Phase::train, Phase::infer})
    if (s == phase_name(p)) {
      *out = p;
      return true;
    }
  return false;
}

const char* remat_name(RematPolicy r) {
  switch (r) {
    case RematPolicy::none: return "none";
    case RematPolicy::minimal: return "minimal";
    case RematPolicy::full: return "full";
    case RematPolicy::selective: return "selective";
    case RematPolicy::qkv_proj_offloaded: return "qkv_proj_offloaded";
    case RematPolicy::minimal_offloaded: return "minimal_offloaded";
    case RematPolicy::custom: return "custom";
  }
  return "?";
}

const char* attention_impl_name(AttentionImpl k) {
  switch (k) {
    case AttentionImpl::flash: return "flash";
    case AttentionImpl::dense: return "dense";
    case AttentionImpl::batched: return "batched";
  }
  return "?";
}

bool parse_attention_impl(const std::string& s, AttentionImpl* out) {
  for (AttentionImpl k : {AttentionImpl::flash, AttentionImpl::dense, AttentionImpl::batched})
    if (s == attention_impl_name(k)) {
      *out = k;
      return true;
    }
  return false;
}

std::string SplashBlocks::str() const {
  return "q=" + std::to_string(fwd.q) + ",kv=" + std::to_string(fwd.kv) + ",q_dq=" + std::to_string(dq.q) +
         ",kv_dq=" + std::to_string(dq.kv) + ",q_dkv=" + std::to_string(dkv.q) + ",kv_dkv=" + std::to_string(dkv.kv);
}

std::string parse_splash_blocks(const std::string& s, SplashBlocks* out) {
  const std::string expected =
      "Q,KV or q=Q,kv=KV[,q_dq=..,kv_dq=..,q_dkv=..,kv_dkv=..] (q keys positive multiples of 8, kv keys of 128)";
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t c = s.find(',', start);
    fields.push_back(s.substr(start, c == std::string::npos ? std::string::npos : c - start));
    if (c == std::string::npos) break;
    start = c + 1;
  }
  auto number = [](const std::string& t, std::int64_t unit, std::int64_t* v) {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos) return false;
    *v = std::stoll(t);
    return *v > 0 && *v % unit == 0;
  };
  SplashBlocks b;
  const bool keyed = s.find('=') != std::string::npos;
  if (!keyed) {
    if (fields.size() != 2 || !number(fields[0], workloads::AttentionBlocks::kQUnit, &b.fwd.q) ||
        !number(fields[1], workloads::AttentionBlocks::kKvUnit, &b.fwd.kv))
      return expected;
    b.dq = b.dkv = b.fwd;
    *out = b;
    return "";
  }
  std::int64_t* slots[] = {&b.fwd.q, &b.fwd.kv, &b.dq.q, &b.dq.kv, &b.dkv.q, &b.dkv.kv};
  const char* names[] = {"q", "kv", "q_dq", "kv_dq", "q_dkv", "kv_dkv"};
  bool seen[6] = {};
  for (const std::string& f : fields) {
    const std::size_t eq = f.find('=');
    if (eq == std::string::npos) return expected;
    const std::string k = f.substr(0, eq);
    int i = 0;
    while (i < 6 && k != names[i]) ++i;
    const std::int64_t unit = i % 2 == 0 ? workloads::AttentionBlocks::kQUnit : workloads::AttentionBlocks::kKvUnit;
    if (i == 6 || seen[i] || !number(f.substr(eq + 1), unit, slots[i])) return expected;
    seen[i] = true;
  }
  if (!seen[0] || !seen[1]) return expected;
  for (int i = 2; i < 6; ++i)
    if (!seen[i]) *slots[i] = *slots[i % 2];
  *out = b;
  return "";
}

bool parse_optimizer_dtype(const std::string& s, DType* out) {
  for (DType d : {DType::f32, DType::bf16})
    if (s == arch::dtype_name(d)) {
      *out = d;
      return true;
    }
  return false;
}

bool parse_remat(const std::string& s, RematPolicy* out) {
  for (RematPolicy r : {RematPolicy::none, RematPolicy::minimal, RematPolicy::selective, RematPolicy::full,
                        RematPolicy::qkv_proj_offloaded, RematPolicy::minimal_offloaded, RematPolicy::custom})
    if (s == remat_name(r)) {
      *out = r;
      return true;
    }
  return false;
}

const char* remat_tensor_name(RematTensor t) {
  switch (t) {
    case RematTensor::decoder_layer_input: return "decoder_layer_input";
    case RematTensor::query_proj: return "query_proj";
    case RematTensor::key_proj: return "key_proj";
    case RematTensor::value_proj: return "value_proj";
    case RematTensor::context: return "context";
    case RematTensor::out_proj: return "out_proj";
    case RematTensor::mlpwi_0: return "mlpwi_0";
    case RematTensor::mlpwi_1: return "mlpwi_1";
    case RematTensor::mlpwo: return "mlpwo";
    case RematTensor::count: break;
  }
  return "?";
}

const char* remat_place_name(RematPlace p) {
  switch (p) {
    case RematPlace::remat: return "remat";
    case RematPlace::device: return "device";
    case RematPlace::offload: return "offload";
  }
  return "?";
}

bool RematCustom::offloads() const { return std::find(place.begin(), place.end(), RematPlace::offload) != place.end(); }

std::string RematCustom::str() const {
  const RematCustom defaults;
  std::string s = "custom";
  char sep = ':';
  for (std::size_t i = 0; i < place.size(); ++i) {
    if (place[i] == defaults.place[i]) continue;
    s += sep;
    s += remat_tensor_name(static_cast<RematTensor>(i));
    s += '=';
    s += remat_place_name(place[i]);
    sep = ',';
  }
  return s;
}

std::string PhaseOptions::remat_str() const {
  return remat == RematPolicy::custom ? remat_custom.str() : remat_name(remat);
}

std::string parse_remat_spec(const std::string& s, RematPolicy* policy, RematCustom* custom) {
  const std::size_t colon = s.find(':');
  RematPolicy r = RematPolicy::none;
  if (!parse_remat(s.substr(0, colon), &r))
    return "a remat policy: none, minimal, selective, full, qkv_proj_offloaded, minimal_offloaded or "
           "custom[:name=place,...]";
  RematCustom c;
  if (colon != std::string::npos) {
    if (r != RematPolicy::custom) return "':name=place' entries only after custom";
    std::string tensors;
    for (std::size_t i = 0; i < c.place.size(); ++i)
      tensors += std::string(i ? ", " : "") + remat_tensor_name(static_cast<RematTensor>(i));
    std::size_t at = colon + 1;
    do {
      const std::size_t end = std::min(s.find(',', at), s.size());
      const std::string item = s.substr(at, end - at);
      const std::size_t eq = item.find('=');
      if (eq == std::string::npos) return "custom's entries as name=place (entry '" + item + "')";
      const std::string name = item.substr(0, eq), value = item.substr(eq + 1);
      std::optional<RematPlace> p;
      for (RematPlace q : {RematPlace::remat, RematPlace::device, RematPlace::offload})
        if (value == remat_place_name(q)) p = q;
      if (!p) return "a place remat, device or offload (entry '" + item + "')";
      std::vector<RematTensor> targets;
      if (name == "qkv_proj") targets = {RematTensor::query_proj, RematTensor::key_proj, RematTensor::value_proj};
      if (name == "mlpwi") targets = {RematTensor::mlpwi_0, RematTensor::mlpwi_1};
      for (std::size_t i = 0; i < c.place.size(); ++i)
        if (name == remat_tensor_name(static_cast<RematTensor>(i))) targets = {static_cast<RematTensor>(i)};
      if (targets.empty()) return "a name among " + tensors + ", qkv_proj, mlpwi (entry '" + item + "')";
      for (RematTensor t : targets) c.set(t, *p);
      at = end + 1;
    } while (at <= s.size());
  }
  *policy = r;
  *custom = c;
  return "";
}

std::vector<std::pair<std::int64_t, std::int64_t>> PhaseOptions::chunk_groups() const {
  const std::int64_t n = std::max<std::int64_t>(1, prefill_chunks), q = seq_len / n, r = seq_len % n;
  std::vector<std::pair<std::int64_t, std::int64_t>> g;
  if (r > 0) g.emplace_back(r, q + 1);
  if (n - r > 0 && q > 0) g.emplace_back(n - r, q);
  return g;
}

std::vector<Phase> supported_phases(Family f) {
  switch (f) {
    case Family::decoder: return {Phase::prefill, Phase::decode, Phase::train};
    case Family::encoder:
    case Family::vit: return {Phase::infer, Phase::train};
    case Family::resnet:
    case Family::dlrm:
    case Family::unet: return {Phase::infer};
  }
  return {};
}

Phase default_phase(Family f, Phase preferred) {
  const std::vector<Phase> ps = supported_phases(f);
  return std::find(ps.begin(), ps.end(), preferred) != ps.end() ? preferred : ps.front();
}

ModelError::ModelError(std::vector<Diagnostic> d) : std::runtime_error(arch::render_all(d)), diags_(std::move(d)) {}

void check_options(const ModelSpec& m, const PhaseOptions& o) {
  std::vector<Diagnostic> errs;
  auto bad = [&](const std::string& key, const std::string& expected, const std::string& found) {
    errs.push_back({m.name, 0, 0, key, expected, found, ""});
  };
  bool ok = false;
  std::string list;
  for (Phase p : supported_phases(m.family)) {
    ok = ok || p == o.phase;
    list += std::string(list.empty() ? "" : ", ") + phase_name(p);
  }
  if (!ok) bad("phase", "one of " + list + " for a " + family_name(m.family) + " model", phase_name(o.phase));
  if (o.remat != RematPolicy::none && o.phase != Phase::train)
    bad("remat", "none for phase " + std::string(phase_name(o.phase)) + " (rematerialization is a training option)",
        o.remat_str());
  if (!(o.moe_capacity_factor >= 0 && o.moe_capacity_factor <= 64))  // NaN fails
    bad("moe_capacity_factor", "a capacity factor in [0, 64] (0: dropless)", std::to_string(o.moe_capacity_factor));
  else if (o.moe_capacity_factor > 0 && (m.family != Family::decoder || m.transformer.moe.experts == 0))
    bad("moe_capacity_factor", "0 for a model without mixture-of-experts layers",
        std::to_string(o.moe_capacity_factor));
  if (o.optimizer_dtype != DType::f32 && o.optimizer_dtype != DType::bf16)
    bad("optimizer_dtype", "f32 or bf16", std::string(arch::dtype_name(o.optimizer_dtype)));
  else if (o.optimizer_dtype != DType::f32 && o.phase != Phase::train)
    bad("optimizer_dtype",
        "f32 for phase " + std::string(phase_name(o.phase)) + " (optimizer state is a training option)",
        std::string(arch::dtype_name(o.optimizer_dtype)));
  if (o.remat == RematPolicy::custom && m.family != Family::decoder)
    bad("remat",
        "a named policy for a " + std::string(family_name(m.family)) +
            " model (custom names a decoder layer's activations)",
        o.remat_str());
  if (o.remat == RematPolicy::custom && m.family == Family::decoder &&
      m.transformer.attention.kind == AttentionKind::mla)
    for (RematTensor t : {RematTensor::query_proj, RematTensor::key_proj, RematTensor::value_proj})
      if (o.remat_custom.at(t) != RematPlace::remat)
        bad("remat",
            std::string(remat_tensor_name(t)) + "=remat: multi-head latent attention has no " + remat_tensor_name(t) +
                " (its projections go through latents)",
            o.remat_str());
  if (o.batch < 1) bad("batch", "a batch >= 1", std::to_string(o.batch));
  const bool seq = m.family == Family::decoder || m.family == Family::encoder;
  if (seq && o.phase != Phase::decode && o.seq_len < 1) bad("seq_len", "a length >= 1", std::to_string(o.seq_len));
  if (m.family == Family::decoder && o.phase == Phase::decode && o.context < 1)
    bad("context", "a context >= 1 token", std::to_string(o.context));
  const auto& t = m.transformer;
  if (seq && t.max_context > 0) {
    if (o.phase == Phase::decode && o.context + 1 > t.max_context)
      bad("context", "context + 1 new token <= max_context " + std::to_string(t.max_context),
          std::to_string(o.context));
    if (o.phase != Phase::decode && o.seq_len > t.max_context)
      bad("seq_len", "<= max_context " + std::to_string(t.max_context), std::to_string(o.seq_len));
  }
  if (o.image_size < 0) bad("image_size", "a size >= 0 (0: the model's own)", std::to_string(o.image_size));
  if (m.family == Family::vit && o.image_size > 0 && o.image_size % t.patch != 0)
    bad("image_size", "a multiple of the patch size " + std::to_string(t.patch), std::to_string(o.image_size));
  if (m.family == Family::unet && o.image_size > 0 && o.image_size % unet_image_multiple(m.unet) != 0)
    bad("image_size",
        "a multiple of " + std::to_string(unet_image_multiple(m.unet)) +
            " (8 pixels a latent position, halved at each level after the first)",
        std::to_string(o.image_size));
  if (o.prefill_chunks < 1 || (o.seq_len > 0 && o.prefill_chunks > o.seq_len))
    bad("prefill_chunks", "chunks in [1, seq_len " + std::to_string(o.seq_len) + "]", std::to_string(o.prefill_chunks));
  if (o.prefill_context < 0 || o.serve_decode < 0)
    bad(o.prefill_context < 0 ? "prefill_context" : "serve_decode", "a count >= 0",
        std::to_string(std::min(o.prefill_context, o.serve_decode)));
  if (o.decode_tokens < 1 || o.decode_tokens > 256)
    bad("decode_tokens", "query tokens per decoding sequence in [1, 256]", std::to_string(o.decode_tokens));
  if (o.serve_step()) {
    if (m.family != Family::decoder || o.phase != Phase::prefill || o.batch != 1)
      bad("serve_decode", "a serving step: a decoder's prefill phase with batch 1",
          std::string(family_name(m.family)) + " " + phase_name(o.phase) + " batch " + std::to_string(o.batch));
    if (t.attention.kind != AttentionKind::mha)
      bad("serve_decode", "multi-head (MHA/GQA/MQA) attention for a serving step", "latent attention (MLA)");
    if (o.sequence_parallel || o.mesh.size("data") * o.mesh.size("fsdp") * o.mesh.size("sequence") > 1)
      bad("mesh", "only tensor and expert axes in a serving step (data replicas are separate servers)", o.mesh.str());
    if (t.max_context > 0 && !o.cost_probe && o.prefill_context + o.seq_len > t.max_context)
      bad("prefill_context", "cached + new tokens <= max_context " + std::to_string(t.max_context),
          std::to_string(o.prefill_context + o.seq_len));
    if (t.max_context > 0 && o.context + 1 > t.max_context)
      bad("context", "a decoding sequence's cached + new token <= max_context " + std::to_string(t.max_context),
          std::to_string(o.context + 1));
  }
  if (o.attention_kernel == AttentionImpl::dense) {
    const char* dense = attention_impl_name(AttentionImpl::dense);
    if (m.family == Family::resnet || m.family == Family::dlrm)
      bad("attention_kernel", "flash for a " + std::string(family_name(m.family)) + " model (it has no attention)",
          dense);
    else if (m.family != Family::unet && t.attention.kind != AttentionKind::mha)
      bad("attention_kernel", "flash for latent attention (MLA); dense needs MHA/GQA/MQA", dense);
    else if (o.serve_step())
      bad("attention_kernel", "flash in a serving step (prefill_context or serve_decode set)", dense);
    if (o.fused_attention_backward)
      bad("fused_attention_backward", "false with attention_kernel dense (a flash kernel's option)", "true");
    if (o.attention_blocks.any())
      bad("attention_blocks", "none with attention_kernel dense (a flash kernel's option)", o.attention_blocks.str());
  }
  if (o.attention_kernel == AttentionImpl::batched) {
    if (m.family == Family::resnet || m.family == Family::dlrm)
      bad("attention_kernel", "flash for a " + std::string(family_name(m.family)) + " model (it has no attention)",
          "batched");
    if (o.attention_blocks.any())
      bad("attention_blocks",
          "none with attention_kernel batched (fixed blocks are splash attention's, one sequence "
          "a step)",
          o.attention_blocks.str());
  }
  if (o.attention_blocks.any() && (o.phase == Phase::decode || o.serve_step()))
    bad("attention_blocks", "prefill, train or infer (decode and serving steps run paged attention's kernel)",
        o.serve_step() ? "a serving step" : phase_name(o.phase));
  check_lora(m, o, errs);
  if (!errs.empty()) throw ModelError(std::move(errs));
}

}  // namespace tpusim::models
