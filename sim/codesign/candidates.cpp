// Candidate model changes for `tpusim check`; see candidates.h.
#include "sim/codesign/candidates.h"

#include <algorithm>
#include <cstdlib>

#include "models/model_file.h"
#include "sim/codesign/model_check.h"

namespace tpusim::sim::codesign {

namespace {

const char* const kKeys[] = {"hidden",
                             "ffn.size",
                             "moe.expert_ffn_size",
                             "vocab",
                             "attention.head_dim",
                             "attention.heads",
                             "attention.kv_heads",
                             "head_dim",
                             "channels[0]"};

std::int64_t* field(models::ModelSpec& m, const std::string& key) {
  auto& t = m.transformer;
  if (key == "hidden") return &t.hidden;
  if (key == "ffn.size") return &t.ffn.size;
  if (key == "moe.expert_ffn_size") return &t.moe.expert_ffn_size;
  if (key == "vocab") return &t.vocab;
  if (key == "attention.head_dim") return &t.attention.head_dim;
  if (key == "attention.heads") return &t.attention.heads;
  if (key == "attention.kv_heads") return &t.attention.kv_heads;
  return nullptr;
}

// A UNet's head_dim, or one level's width: "channels[i]".
std::int64_t* unet_field(models::UnetSpec& u, const std::string& key) {
  if (key == "head_dim") return &u.head_dim;
  const std::string pre = "channels[";
  if (key.size() <= pre.size() + 1 || key.compare(0, pre.size(), pre) != 0 || key.back() != ']') return nullptr;
  const std::string digits = key.substr(pre.size(), key.size() - pre.size() - 1);
  if (digits.size() > 2 || !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return nullptr;
  const std::size_t i = std::stoul(digits);
  return i < u.channels.size() ? &u.channels[i] : nullptr;
}

models::ModelError change_error(const std::string& key, const std::string& expected, const std::string& found) {
  std::vector<std::string> keys(std::begin(kKeys), std::end(kKeys));
  std::string near = models::nearest_word(key, keys);
  if (near == key) near.clear();  // the key is right, its value is not
  return models::ModelError(models::Diagnostic{"--change", 0, 0, key, expected, found, near});
}

}  // namespace

ModelChange parse_change(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw change_error(text, "key=value", "'" + text + "'");
  ModelChange c{text.substr(0, eq), 0};
  const std::string v = text.substr(eq + 1);
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != 0 || n < 1 || n > (1LL << 40))
    throw change_error(c.key, "an integer in [1, 2^40]", "'" + v + "'");
  c.value = n;
  return c;
}

models::ModelSpec apply_changes(const models::ModelSpec& m, const std::vector<ModelChange>& changes) {
  models::ModelSpec out = m;
  const bool transformer = models::is_transformer(m.family);
  const bool unet = m.family == models::Family::unet;
  const std::string unet_keys = "a UNet key: head_dim or channels[i], i < " + std::to_string(m.unet.channels.size());
  for (const auto& c : changes) {
    std::int64_t* f = transformer ? field(out, c.key) : unet ? unet_field(out.unet, c.key) : nullptr;
    if (!f) throw change_error(c.key, unet ? unet_keys : "a transformer model key", "'" + c.key + "'");
    *f = c.value;
  }
  if (unet) {  // the model file's rules (models/model_file.cpp read_unet)
    const auto& u = out.unet;
    for (std::size_t i = 0; i < u.channels.size(); ++i)
      if (u.channels[i] % u.norm_groups != 0)
        throw change_error("channels[" + std::to_string(i) + "]",
                           "a multiple of norm_groups " + std::to_string(u.norm_groups), std::to_string(u.channels[i]));
    // Heads of head_dim split each attention level: the message names
    // what was changed, head_dim or the level's width.
    const bool head_dim_changed =
        std::any_of(changes.begin(), changes.end(), [](const ModelChange& c) { return c.key == "head_dim"; });
    for (std::size_t i = 0; i < u.channels.size(); ++i) {
      if (!u.has_attention(i) || u.channels[i] % u.head_dim == 0) continue;
      if (head_dim_changed)
        throw change_error("head_dim",
                           "a divisor of every attention level's width (" + std::to_string(u.channels[i]) + ")",
                           std::to_string(u.head_dim));
      throw change_error("channels[" + std::to_string(i) + "]",
                         "a multiple of head_dim " + std::to_string(u.head_dim) + " (the level has attention)",
                         std::to_string(u.channels[i]));
    }
  }
  const auto& a = out.transformer.attention;
  if (transformer && a.kind == models::AttentionKind::mha && (a.kv_heads < 1 || a.heads % a.kv_heads != 0))
    throw change_error("attention.kv_heads", "a divisor of attention.heads (" + std::to_string(a.heads) + ")",
                       std::to_string(a.kv_heads));
  if (!changes.empty()) out.name += "+changed";
  return out;
}

std::vector<Candidate> candidates(const models::ModelSpec& m, int tile, const std::vector<int>& mxus) {
  std::vector<Candidate> out;
  const bool transformer = models::is_transformer(m.family);
  // The MXU widths the heads are sized for, each once.
  std::vector<int> widths = mxus.empty() ? std::vector<int>{tile} : mxus;
  std::sort(widths.begin(), widths.end());
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
  if (m.family == models::Family::unet) {
    // Heads narrower than an MXU: a wider head_dim over fewer heads keeps
    // every width and parameter and fills more of the array (as the
    // transformer candidate below), where every attention level divides.
    const auto levels = m.unet.attention_channels();
    const std::int64_t hd = m.unet.head_dim;
    for (const int w : widths) {
      if (levels.empty() || hd >= w || w % hd != 0) continue;
      if (std::any_of(levels.begin(), levels.end(), [&](std::int64_t c) { return c % w != 0; })) continue;
      out.push_back({"head_dim=" + std::to_string(w),
                     "head_dim " + std::to_string(hd) + " -> " + std::to_string(w) + ", heads / " +
                         std::to_string(w / hd) + " (fills MXU " + std::to_string(w) + ")",
                     {{"head_dim", w}},
                     ""});
    }
  }
  if (m.family == models::Family::unet) {
    // A level whose width no MXU multiple is: rounded up and down to one
    // (each convolution's and projection's N; the skip connections and the
    // next level's inputs follow), per MXU width checked, where the
    // model's rules still hold (norm groups, heads of head_dim).
    const auto& u = m.unet;
    for (const int w : widths)
      for (std::size_t i = 0; i < u.channels.size(); ++i) {
        const std::int64_t v = u.channels[i];
        if (v % w == 0) continue;
        for (const std::int64_t to : {(v + w - 1) / w * w, v / w * w}) {
          if (to == 0 || to % u.norm_groups != 0 || (u.has_attention(i) && to % u.head_dim != 0)) continue;
          const std::string key = "channels[" + std::to_string(i) + "]";
          out.push_back({key + "=" + std::to_string(to),
                         key + " " + std::to_string(v) + " -> " + std::to_string(to) + " (multiple of MXU " +
                             std::to_string(w) + ")",
                         {{key, to}},
                         "",
                         mxus.empty() ? 0 : w});
        }
      }
  }
  if (!transformer) {
    out.push_back({"weights=int8", "8-bit weights", {}, "int8"});
    return out;
  }
  const auto& t = m.transformer;
  const auto& a = t.attention;
  auto name_of = [](const std::string& key) -> std::string {
    if (key == "ffn.size") return "d_ff";
    if (key == "moe.expert_ffn_size") return "expert d_ff";
    if (key == "attention.head_dim") return "head_dim";
    if (key == "attention.kv_heads") return "KV heads";
    return key;
  };
  auto one = [&](const std::string& key, std::int64_t from, std::int64_t to, const std::string& why) {
    out.push_back({key + "=" + std::to_string(to),
                   name_of(key) + " " + std::to_string(from) + " -> " + std::to_string(to) + " (" + why + ")",
                   {{key, to}},
                   ""});
  };
  for (const auto& d : misaligned_dims(m, tile)) {
    if (d.key == "attention.head_dim") continue;  // its own candidate below
    one(d.key, d.value, d.rounded, "multiple of " + std::to_string(tile));
  }
  if (a.kind == models::AttentionKind::mha && a.head_dim % 128 != 0)
    one("attention.head_dim", a.head_dim, 128, "MXU lanes");
  // Heads narrower than the MXU (128 on a 256-wide one, 64 on a 128-wide
  // one): QK^T contracts over head_dim and PV fills head_dim columns, so
  // attention leaves the array partly empty. f times the head_dim over
  // 1/f of the heads (and of the KV heads where they divide, the GQA group
  // kept) keeps every projection's width, the parameters and the MXU's
  // multiply-adds, and fills it.
  for (const int w : widths) {
    if (a.kind != models::AttentionKind::mha || a.head_dim >= w || w % a.head_dim != 0) continue;
    const std::int64_t f = w / a.head_dim, heads = a.heads / f;
    const std::int64_t kv = a.kv_heads % f == 0 && heads % (a.kv_heads / f) == 0 ? a.kv_heads / f : a.kv_heads;
    if (a.heads % f != 0 || heads % kv != 0) continue;
    Candidate c{"attention.head_dim=" + std::to_string(w) + ",heads=" + std::to_string(heads),
                "head_dim " + std::to_string(a.head_dim) + " -> " + std::to_string(w) + ", heads " +
                    std::to_string(a.heads) + " -> " + std::to_string(heads),
                {{"attention.head_dim", w}, {"attention.heads", heads}},
                "",
                mxus.empty() ? 0 : w};
    if (kv != a.kv_heads) {
      if (a.kv_heads != a.heads)  // GQA/MQA; multi-head attention keeps kv_heads = heads unsaid
        c.title += ", KV " + std::to_string(a.kv_heads) + " -> " + std::to_string(kv);
      c.changes.push_back({"attention.kv_heads", kv});
    }
    c.title += " (fills MXU " + std::to_string(w) + ")";
    out.push_back(std::move(c));
  }
  if (a.kind == models::AttentionKind::mha && m.family == models::Family::decoder) {
    // The power of two >= 2 dividing heads nearest the current KV heads
    // (ties: the larger).
    std::int64_t best = 0;
    for (std::int64_t p = 2; p <= a.heads; p *= 2) {
      if (a.heads % p != 0) continue;
      if (!best || std::llabs(p - a.kv_heads) <= std::llabs(best - a.kv_heads)) best = p;
    }
    if (best && best != a.kv_heads && (a.kv_heads & (a.kv_heads - 1)) != 0)
      one("attention.kv_heads", a.kv_heads, best, "power of two: divides tensor-parallel degrees");
    if (a.kv_heads % 2 == 0 && a.heads % (a.kv_heads / 2) == 0 && a.kv_heads / 2 != best)
      one("attention.kv_heads", a.kv_heads, a.kv_heads / 2,
          "GQA group " + std::to_string(a.heads / a.kv_heads) + " -> " + std::to_string(a.heads / (a.kv_heads / 2)));
  }
  out.push_back({"weights=int8", "8-bit weights (int8, or fp8 where the MXU has no int8)", {}, "int8"});
  return out;
}

}  // namespace tpusim::sim::codesign
