// Layer types, MXU shapes, padding, intensity, fit and divisibility of a
// model; see model_check.h.
#include "sim/codesign/model_check.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "arch/common/derived.h"
#include "models/analysis.h"
#include "workloads/ir/shape_inference.h"

namespace tpusim::sim::codesign {

namespace {

bool starts(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }
bool ends(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

}  // namespace

std::string layer_type(const std::string& op_name) {
  std::string n = op_name;
  // Backward operators carry their forward operator's name (q_proj.grad_lhs).
  if (auto g = n.find(".grad_"); g != std::string::npos) n = n.substr(0, g);
  if (starts(n, "layers.")) {
    const auto dot = n.find('.', 7);
    n = dot == std::string::npos ? "" : n.substr(dot + 1);
  }
  // ResNet: stages.<s>.blocks.<b>.<i>.conv -> stages.<s>.<i>.conv (one type
  // per stage and position in the bottleneck block).
  if (starts(n, "stages.") && ends(n, ".conv")) {
    const auto b = n.find(".blocks.");
    if (b == std::string::npos) return n;
    const auto after = n.find('.', b + 8);
    return after == std::string::npos ? n : n.substr(0, b) + n.substr(after);
  }
  if (n == "stem.conv" || n == "fc") return n;
  // UNet (models/unet.cpp): one type per role, over the levels and blocks:
  // down_blocks.1.layers.0.attention.blocks.3.attn1.to_q -> attn1.to_q,
  // up_blocks.0.layers.2.resnet.conv1 -> resnet.conv1, *.attn1.core ->
  // attn1 (self-attention; attn2 the cross-attention to the text).
  if (starts(n, "down_blocks.") || starts(n, "up_blocks.") || starts(n, "mid_block.")) {
    for (const char* role : {".attn1.", ".attn2.", ".ff.", ".resnet.", ".resnet_0.", ".resnet_1."}) {
      const auto at = n.find(role);
      if (at == std::string::npos) continue;
      std::string r = n.substr(at + 1);
      if (starts(r, "resnet_")) r = "resnet" + r.substr(8);
      if (r == "attn1.core" || r == "attn2.core") return r.substr(0, 5);
      return r;
    }
    for (const char* tail : {".proj_in", ".proj_out", ".downsample", ".upsample.conv"})
      if (ends(n, tail)) return std::string(tail + 1);
    return "";
  }
  if (n == "conv_in" || n == "conv_out") return n;
  if (n == "embed" || n == "lm_head" || n == "patch_embed" || n == "pooler" || n == "classifier") return n;
  if (has(n, "router")) return "moe.router";
  if (starts(n, "mlp.experts.") || starts(n, "mlp.shared")) {
    for (const char* p : {"gate_proj", "up_proj", "down_proj"})
      if (has(n, std::string(".") + p) && !has(n, ".weight")) return std::string("moe.experts.") + p;
    return "";
  }
  for (const char* p : {"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "mlp.fc1", "mlp.fc2"})
    if (n == p) return p;
  if (n == "attn.core") return "attention";
  if (starts(n, "attn.")) {
    const std::string rest = n.substr(5);
    if (rest.size() > 5 && rest.compare(rest.size() - 5, 5, "_proj") == 0) return rest;
    if (rest == "wk_b" || rest == "wv_b" || rest == "q_absorbed") return rest;
  }
  return "";
}

std::vector<MxuMatmul> mxu_matmuls(const workloads::Workload& wl, const workloads::Op& op) {
  using workloads::OpKind;
  if (op.inputs.size() < 2) return {};
  const auto* a = wl.find_tensor(op.inputs[0]);
  const auto* b = wl.find_tensor(op.inputs[1]);
  if (!a || !b) return {};
  if (op.kind == OpKind::matmul) {
    const auto d = workloads::matmul_dims(op.as<workloads::MatmulAttrs>(), a->shape, b->shape);
    return {MxuMatmul{"", d.batch, d.m, d.k, d.n}};
  }
  if (op.kind == OpKind::conv2d && a->rank() == 4 && b->rank() == 4) {
    // im2col: input [N, H, W, C], filter [KH, KW, C/groups, OC]: per group
    // (N x OH x OW) x (KH x KW x C/groups) x (OC/groups).
    const auto& c = op.as<workloads::Conv2dAttrs>();
    const auto g = workloads::conv2d_geometry(c, a->shape[1], a->shape[2], b->shape[0], b->shape[1]);
    const std::int64_t groups = std::max<std::int64_t>(c.groups, 1);
    return {MxuMatmul{"", groups, a->shape[0] * g.out_h * g.out_w, b->shape[0] * b->shape[1] * b->shape[2],
                      b->shape[3] / groups}};
  }
  if (op.kind == OpKind::attention && op.inputs.size() >= 3 && a->rank() == 4 && b->rank() == 4) {
    // q [B, Lq, H, D], k [B, Lkv, KVH, D], v [B, Lkv, KVH, Dv].
    const auto* v = wl.find_tensor(op.inputs[2]);
    const std::int64_t B = a->shape[0], lq = a->shape[1], h = a->shape[2], d = a->shape[3];
    const std::int64_t lkv = b->shape[1],
                       dv = op.as<workloads::AttentionAttrs>().value_width(v && v->rank() == 4 ? v->shape[3] : d);
    return {MxuMatmul{"scores", B * h, lq, d, lkv}, MxuMatmul{"values", B * h, lq, lkv, dv}};
  }
  return {};
}

std::int64_t round_up(std::int64_t d, std::int64_t tile) { return tile > 0 ? (d + tile - 1) / tile * tile : d; }

double pad_waste(std::int64_t d, std::int64_t tile) {
  const std::int64_t r = round_up(d, tile);
  return r > 0 ? 1.0 - static_cast<double>(d) / static_cast<double>(r) : 0.0;
}

std::vector<LayerTypeCheck> check_layers(const workloads::Workload& wl, const arch::TpuConfig& cfg) {
  const arch::DerivedFigures fig = arch::derive(cfg);
  std::vector<LayerTypeCheck> out;
  std::map<std::string, std::size_t> at;
  std::map<std::string, std::pair<double, double>> macs;  // useful, padded
  for (const auto& op : wl.ops) {
    const std::string t = layer_type(op.name);
    if (t.empty()) continue;
    const auto mm = mxu_matmuls(wl, op);
    if (mm.empty()) continue;
    auto it = at.find(t);
    if (it == at.end()) {
      LayerTypeCheck c;
      c.type = t;
      c.example = op.name;
      c.shape = mm[0];
      c.k_padded = round_up(mm[0].k, cfg.mxu.rows);
      c.n_padded = round_up(mm[0].n, cfg.mxu.cols);
      c.k_waste = pad_waste(mm[0].k, cfg.mxu.rows);
      c.n_waste = pad_waste(mm[0].n, cfg.mxu.cols);
      const auto* a = wl.find_tensor(op.inputs[0]);
      const arch::DType dt = a ? a->dtype : arch::DType::bf16;
      auto r = fig.ridge_point.find(dt);
      if (r == fig.ridge_point.end()) r = fig.ridge_point.find(arch::DType::bf16);
      c.ridge = r == fig.ridge_point.end() ? 0 : r->second;
      it = at.emplace(t, out.size()).first;
      out.push_back(c);
    }
    LayerTypeCheck& c = out[it->second];
    ++c.ops;
    for (const auto& m : mm) {
      const double useful = static_cast<double>(m.batch) * m.m * m.k * m.n;
      const double padded =
          static_cast<double>(m.batch) * m.m * round_up(m.k, cfg.mxu.rows) * round_up(m.n, cfg.mxu.cols);
      macs[t].first += useful;
      macs[t].second += padded;
      c.flops += 2 * useful;
    }
    for (const auto& n : op.inputs)
      if (const auto* x = wl.find_tensor(n)) c.bytes += static_cast<double>(x->bytes());
    for (const auto& n : op.outputs)
      if (const auto* x = wl.find_tensor(n)) c.bytes += static_cast<double>(x->bytes());
  }
  for (auto& c : out) {
    const auto& [u, p] = macs[c.type];
    c.total_waste = p > 0 ? 1 - u / p : 0;
    c.intensity = c.bytes > 0 ? c.flops / c.bytes : 0;
  }
  return out;
}

std::vector<DimFinding> misaligned_dims(const models::ModelSpec& m, int tile) {
  std::vector<DimFinding> out;
  if (m.family == models::Family::unet) {
    // Each level's width is the N of its convolutions and projections, the
    // head_dim the contraction of QK^T and the N of PV.
    const auto& u = m.unet;
    for (std::size_t i = 0; i < u.channels.size(); ++i) {
      const std::int64_t v = u.channels[i];
      if (v % tile != 0)
        out.push_back({"channels[" + std::to_string(i) + "]", v, tile, round_up(v, tile), pad_waste(v, tile)});
    }
    if (!u.attention_channels().empty() && u.head_dim % tile != 0)
      out.push_back({"head_dim", u.head_dim, tile, round_up(u.head_dim, tile), pad_waste(u.head_dim, tile)});
    return out;
  }
  if (!models::is_transformer(m.family)) return out;
  const auto& t = m.transformer;
  auto add = [&](const std::string& key, std::int64_t v) {
    if (v > 0 && v % tile != 0) out.push_back({key, v, tile, round_up(v, tile), pad_waste(v, tile)});
  };
  add("hidden", t.hidden);
  if (t.attention.kind == models::AttentionKind::mha) add("attention.head_dim", t.attention.head_dim);
  if (!t.moe.enabled || t.moe.dense_layers_first > 0) add("ffn.size", t.ffn.size);
  if (t.moe.enabled) add("moe.expert_ffn_size", t.moe.expert_ffn_size);
  add("vocab", t.vocab);
  return out;
}

std::vector<Divisibility> divisibility(const models::ModelSpec& m) {
  std::vector<Divisibility> out;
  if (!models::is_transformer(m.family)) return out;
  const auto& t = m.transformer;
  auto add = [&](const std::string& key, std::int64_t v) {
    if (v <= 0) return;
    Divisibility d{key, v, {}, {}};
    for (int p : {2, 4, 8, 16, 32, 64}) (v % p == 0 ? d.divides : d.fails).push_back(p);
    out.push_back(d);
  };
  add("attention.heads", t.attention.heads);
  if (t.attention.kind == models::AttentionKind::mha) add("attention.kv_heads", t.attention.kv_heads);
  if (t.moe.enabled) add("moe.experts", t.moe.experts);
  add("hidden", t.hidden);
  if (!t.moe.enabled || t.moe.dense_layers_first > 0) add("ffn.size", t.ffn.size);
  if (t.moe.enabled) add("moe.expert_ffn_size", t.moe.expert_ffn_size);
  return out;
}

std::string slice_shape(std::int64_t chips, const arch::TpuConfig& cfg) {
  const int dims = cfg.ici.topology == "torus3d" ? 3 : 2;
  std::vector<std::int64_t> d(dims, 1);
  // Doubles the smallest dimension (the last of equals) until the product is reached.
  for (std::int64_t n = 1; n < chips; n *= 2) {
    std::size_t best = d.size() - 1;
    for (std::size_t i = d.size(); i-- > 0;)
      if (d[i] < d[best]) best = i;
    d[best] *= 2;
  }
  std::sort(d.begin(), d.end());
  std::string s;
  for (auto x : d) s += (s.empty() ? "" : "x") + std::to_string(x);
  return s;
}

std::vector<FitRow> fit_table(const models::ModelSpec& m, const models::PhaseOptions& o, const arch::TpuConfig& cfg) {
  std::vector<FitRow> out;
  for (arch::DType dt : {arch::DType::bf16, arch::DType::fp8_e4m3, arch::DType::int8}) {
    models::PhaseOptions p = o;
    p.weight_dtype = dt;
    p.mesh = {};
    const models::FitReport f = models::check_fit(m, p, cfg.hbm.capacity_bytes, cfg.host_memory_per_chip());
    FitRow r;
    r.dtype = std::string(arch::dtype_name(dt));
    r.weight_bytes = f.footprint.weights;
    r.total_bytes = f.footprint.total();
    r.min_chips = std::max<std::int64_t>(f.min_chips, 1);
    r.slice_chips = 1;
    while (r.slice_chips < r.min_chips) r.slice_chips *= 2;
    r.slice = slice_shape(r.slice_chips, cfg);
    out.push_back(r);
  }
  return out;
}

KvFit kv_fit(const models::ModelSpec& m, const models::PhaseOptions& o, const arch::TpuConfig& cfg) {
  KvFit k;
  k.bytes_per_token = models::kv_cache_bytes_per_token(m, o.kv_dtype);
  k.context = o.phase == models::Phase::decode ? o.context : o.seq_len;
  if (k.bytes_per_token == 0 || m.family != models::Family::decoder) return k;
  models::PhaseOptions one = o;
  one.batch = 1;
  one.mesh = {};
  const models::MemoryFootprint f = models::memory_footprint(m, one);
  const std::uint64_t per_seq = models::kv_cache_bytes(m, o.kv_dtype, 1, k.context);
  if (f.weights >= cfg.hbm.capacity_bytes || per_seq == 0) return k;
  k.max_batch = static_cast<std::int64_t>((cfg.hbm.capacity_bytes - f.weights) / per_seq);
  return k;
}

}  // namespace tpusim::sim::codesign
