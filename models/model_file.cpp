// Model file reader (see model_file.h). A small schema walker: every
// accessor both reads a key and registers it as known, so whatever is left
// unread in a map is an unknown key.
#include "models/model_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "workloads/io/input_file.h"
#include "workloads/io/yaml_strict.h"

namespace tpusim::models {

namespace {

struct Ctx {
  std::string file;
  std::vector<Diagnostic> errs;
  void error(const YAML::Mark& m, const std::string& key, const std::string& expected, const std::string& found,
             const std::string& suggestion = "") {
    int line = m.line >= 0 ? m.line + 1 : 0, col = m.column >= 0 ? m.column + 1 : 0;
    errs.push_back({file, line, col, key, expected, found, suggestion});
  }
};

std::string text_of(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  return "nothing";
}

class Map {
 public:
  Map(Ctx& c, const YAML::Node& n, std::string path) : c_(c), n_(n), path_(std::move(path)) {
    if (n_ && !n_.IsMap()) {
      c_.error(n_.Mark(), path_.empty() ? "(top level)" : path_, "a map of keys", text_of(n_));
      ok_ = false;
    }
  }
  std::string key(const std::string& k) const { return path_.empty() ? k : path_ + "." + k; }
  bool has(const std::string& k) {
    known_.insert(k);
    const YAML::Node& cn = n_;
    return ok_ && n_ && cn[k] && !cn[k].IsNull();
  }
  YAML::Node get(const std::string& k) { return has(k) ? n_[k] : YAML::Node(); }
  void missing(const std::string& k, const std::string& what) {
    c_.error(n_ ? n_.Mark() : YAML::Mark(), key(k), what, "no such key");
  }

  std::int64_t integer(const std::string& k, bool required, std::int64_t def, std::int64_t min = 1) {
    if (!has(k)) {
      if (required && ok_) missing(k, "an integer >= " + std::to_string(min));
      return def;
    }
    return as_int(n_[k], key(k), min, def);
  }
  std::int64_t as_int(const YAML::Node& v, const std::string& k, std::int64_t min, std::int64_t def) {
    std::int64_t x = 0;
    bool good = v.IsScalar();
    if (good) {
      const std::string& s = v.Scalar();
      std::size_t pos = 0;
      try {
        x = std::stoll(s, &pos, 10);
      } catch (...) {
        good = false;
      }
      good = good && pos == s.size();
    }
    if (!good) {
      c_.error(v.Mark(), k, "an integer >= " + std::to_string(min), text_of(v));
      return def;
    }
    if (x < min) {
      c_.error(v.Mark(), k, "an integer >= " + std::to_string(min), std::to_string(x));
      return def;
    }
    return x;
  }
  bool boolean(const std::string& k, bool def) {
    if (!has(k)) return def;
    const YAML::Node& v = n_[k];
    if (v.IsScalar() && (v.Scalar() == "true" || v.Scalar() == "false")) return v.Scalar() == "true";
    c_.error(v.Mark(), key(k), "true or false", text_of(v));
    return def;
  }
  // Returns the index of the chosen value in choices.
  int choice(const std::string& k, const std::vector<std::string>& choices, int def, bool required) {
    std::string list;
    for (const auto& ch : choices) list += (list.empty() ? "" : "|") + ch;
    if (!has(k)) {
      if (required && ok_) missing(k, "one of " + list);
      return def;
    }
    const YAML::Node& v = n_[k];
    if (v.IsScalar())
      for (std::size_t i = 0; i < choices.size(); ++i)
        if (v.Scalar() == choices[i]) return static_cast<int>(i);
    c_.error(v.Mark(), key(k), "one of " + list, text_of(v), v.IsScalar() ? nearest_word(v.Scalar(), choices) : "");
    return def;
  }
  std::string string(const std::string& k, bool required) {
    if (!has(k)) {
      if (required && ok_) missing(k, "a string");
      return "";
    }
    const YAML::Node& v = n_[k];
    if (v.IsScalar()) return v.Scalar();
    c_.error(v.Mark(), key(k), "a string", text_of(v));
    return "";
  }
  std::vector<std::int64_t> int_list(const std::string& k, bool required, std::int64_t min = 1) {
    std::vector<std::int64_t> out;
    if (!has(k)) {
      if (required && ok_) missing(k, "a list of integers");
      return out;
    }
    const YAML::Node& v = n_[k];
    if (!v.IsSequence() || v.size() == 0) {
      c_.error(v.Mark(), key(k), "a non-empty list of integers", text_of(v));
      return out;
    }
    for (std::size_t i = 0; i < v.size(); ++i)
      out.push_back(as_int(v[i], key(k) + "[" + std::to_string(i) + "]", min, min));
    return out;
  }
  void finish() {
    if (!ok_ || !n_) return;
    std::vector<std::string> known(known_.begin(), known_.end());
    for (auto it = n_.begin(); it != n_.end(); ++it) {
      std::string k = it->first.Scalar();
      if (!known_.count(k))
        c_.error(it->first.Mark(), key(k), "a known key", "unknown key '" + k + "'", nearest_word(k, known));
    }
  }
  const YAML::Node& node() const { return n_; }
  Ctx& ctx() { return c_; }

 private:
  Ctx& c_;
  YAML::Node n_;
  std::string path_;
  std::set<std::string> known_;
  bool ok_ = true;
};

void read_attention(Map& top, TransformerSpec& t, Ctx& c, bool decoder) {
  if (!top.has("attention")) {
    top.missing("attention", "a map with heads, kv_heads, head_dim, ...");
    top.get("attention");
    return;
  }
  Map m(c, top.get("attention"), "attention");
  auto& a = t.attention;
  a.kind = decoder ? static_cast<AttentionKind>(m.choice("kind", {"mha", "mla"}, 0, false)) : AttentionKind::mha;
  a.heads = m.integer("heads", true, 1);
  if (a.kind == AttentionKind::mla) {
    a.kv_heads = a.heads;
    a.q_lora_rank = m.integer("q_lora_rank", false, 0, 0);
    a.kv_lora_rank = m.integer("kv_lora_rank", true, 1);
    a.qk_nope_head_dim = m.integer("qk_nope_head_dim", true, 1);
    a.qk_rope_head_dim = m.integer("qk_rope_head_dim", true, 1);
    a.v_head_dim = m.integer("v_head_dim", true, 1);
  } else {
    a.kv_heads = decoder ? m.integer("kv_heads", false, a.heads) : a.heads;
    a.head_dim = m.integer("head_dim", false, a.heads > 0 ? t.hidden / a.heads : 1);
    if (a.kv_heads > 0 && a.heads % a.kv_heads != 0)
      c.error(m.node()["kv_heads"].Mark(), "attention.kv_heads", "a divisor of heads " + std::to_string(a.heads),
              std::to_string(a.kv_heads));
  }
  a.qkv_bias = m.boolean("qkv_bias", !decoder);
  a.out_bias = m.boolean("out_bias", !decoder);
  if (decoder) {
    a.sinks = m.boolean("sinks", false);
    a.sliding_window = m.integer("sliding_window", false, 0, 0);
    const bool every = m.has("sliding_window_every");
    a.sliding_window_every = m.integer("sliding_window_every", false, a.sliding_window > 0 ? 1 : 0, 0);
    a.global_every = m.has("global_attention_every") ? m.integer("global_attention_every", false, 0, 2) : 0;
    if (a.global_every > 0 && every)
      c.error(m.get("global_attention_every").Mark(), "attention.global_attention_every",
              "either sliding_window_every (the windowed layers) or global_attention_every (the global ones)", "both");
    if (a.global_every > 0 && a.sliding_window == 0)
      c.error(m.get("global_attention_every").Mark(), "attention.global_attention_every",
              "a sliding_window for the other layers", "none");
    a.qk_norm = m.boolean("qk_norm", false);
  }
  m.finish();
}

void read_ffn(Map& top, TransformerSpec& t, Ctx& c, bool decoder) {
  if (!top.has("ffn")) {
    top.missing("ffn", "a map with kind and size");
    return;
  }
  Map m(c, top.get("ffn"), "ffn");
  t.ffn.kind = static_cast<FfnKind>(m.choice("kind", {"swiglu", "gelu", "relu", "geglu"}, decoder ? 0 : 1, true));
  t.ffn.size = m.integer("size", true, 1);
  t.ffn.bias = m.boolean("bias", !decoder);
  m.finish();
}

void read_moe(Map& top, TransformerSpec& t, Ctx& c) {
  if (!top.has("moe")) return;
  Map m(c, top.get("moe"), "moe");
  auto& e = t.moe;
  e.enabled = true;
  e.experts = m.integer("experts", true, 1);
  e.top_k = m.integer("top_k", true, 1);
  e.shared_experts = m.integer("shared_experts", false, 0, 0);
  e.expert_ffn_size = m.integer("expert_ffn_size", true, 1);
  e.dense_layers_first = m.integer("dense_layers_first", false, 0, 0);
  e.router = static_cast<RouterKind>(m.choice("router", {"softmax", "sigmoid"}, 0, false));
  e.router_bias = m.boolean("router_bias", false);
  e.expert_bias = m.boolean("expert_bias", false);
  if (e.top_k > e.experts)
    c.error(m.node()["top_k"].Mark(), "moe.top_k", "<= experts " + std::to_string(e.experts), std::to_string(e.top_k));
  if (t.layers > 0 && e.dense_layers_first > t.layers)
    c.error(m.node()["dense_layers_first"].Mark(), "moe.dense_layers_first", "<= layers " + std::to_string(t.layers),
            std::to_string(e.dense_layers_first));
  m.finish();
}

void read_transformer(Map& m, ModelSpec& s, Ctx& c) {
  auto& t = s.transformer;
  const bool dec = s.family == Family::decoder, enc = s.family == Family::encoder;
  t.hidden = m.integer("hidden", true, 1);
  t.layers = m.integer("layers", true, 1);
  t.norm = static_cast<NormKind>(m.choice("norm", {"rmsnorm", "layernorm"}, dec ? 0 : 1, dec));
  read_attention(m, t, c, dec);
  read_ffn(m, t, c, dec);
  if (dec || enc) {
    t.vocab = m.integer("vocab", true, 1);
    t.max_context = m.integer("max_context", true, 1);
  }
  if (dec) {
    t.position = static_cast<PositionKind>(m.choice("position", {"rotary", "learned", "none"}, 0, true));
    t.rotary_dim = m.integer("rotary_dim", false, 0, 0);
    t.tied_embeddings = m.boolean("tied_embeddings", false);
    t.lm_head_bias = m.boolean("lm_head_bias", false);
    t.parallel_block = m.boolean("parallel_block", false);
    t.post_norms = m.boolean("post_norms", false);
    // Where a parallel block's two post norms would go (before the sum,
    // after it) no published model says, and the generator could only
    // guess: refuse the pair rather than build one silently.
    if (t.post_norms && t.parallel_block)
      c.error(m.get("post_norms").Mark(), "post_norms", "false with parallel_block: true (no model combines them)",
              "true");
    read_moe(m, t, c);
  } else {
    t.position = PositionKind::learned;
  }
  if (enc) {
    t.type_vocab = m.integer("type_vocab", false, 0, 0);
    t.pooler = m.boolean("pooler", true);
  }
  if (s.family == Family::vit) {
    t.patch = m.integer("patch", true, 1);
    t.image_size = m.integer("image_size", true, 1);
    t.channels = m.integer("channels", false, 3);
    t.classes = m.integer("classes", false, 0, 0);
    if (t.patch > 0 && t.image_size % t.patch != 0 && m.node()["image_size"])  // a missing one is reported above
      c.error(m.node()["image_size"].Mark(), "image_size", "a multiple of patch " + std::to_string(t.patch),
              std::to_string(t.image_size));
  }
}

void read_resnet(Map& m, ModelSpec& s, Ctx& c) {
  auto& r = s.resnet;
  r.blocks = m.int_list("blocks", true);
  r.widths = m.int_list("widths", true);
  if (!r.blocks.empty() && !r.widths.empty() && r.blocks.size() != r.widths.size())
    c.error(m.node()["widths"].Mark(), "widths", std::to_string(r.blocks.size()) + " entries (one per stage in blocks)",
            std::to_string(r.widths.size()));
  r.expansion = m.integer("expansion", false, 4);
  r.stem_width = m.integer("stem_width", false, 64);
  r.image_size = m.integer("image_size", false, 224);
  r.channels = m.integer("channels", false, 3);
  r.classes = m.integer("classes", false, 1000);
}

void read_unet(Map& m, ModelSpec& s, Ctx& c) {
  auto& u = s.unet;
  u.channels = m.int_list("channels", true);
  if (u.channels.size() > kMaxUnetLevels)
    c.error(m.node()["channels"].Mark(), "channels", "at most " + std::to_string(kMaxUnetLevels) + " levels",
            std::to_string(u.channels.size()));
  u.transformer_depth = m.int_list("transformer_depth", true, 0);
  // (A missing or malformed transformer_depth is already reported.)
  if (!u.channels.empty() && !u.transformer_depth.empty() && u.transformer_depth.size() != u.channels.size())
    c.error(m.node()["transformer_depth"].Mark(), "transformer_depth",
            std::to_string(u.channels.size()) + " entries (one per level in channels)",
            std::to_string(u.transformer_depth.size()));
  u.layers_per_block = m.integer("layers_per_block", false, 2);
  u.mid_transformer_depth = m.integer("mid_transformer_depth", false, 1, 0);
  u.head_dim = m.integer("head_dim", false, 64);
  u.cross_attention_dim = m.integer("cross_attention_dim", true, 1);
  u.text_tokens = m.integer("text_tokens", false, 77);
  u.norm_groups = m.integer("norm_groups", false, 32);
  u.latent_channels = m.integer("latent_channels", false, 4);
  u.image_size = m.integer("image_size", false, 1024);
  u.addition_embed_dim = m.integer("addition_embed_dim", false, 0, 0);
  for (const std::int64_t ch : u.channels)
    if (ch % u.norm_groups != 0)
      c.error(m.node()["channels"].Mark(), "channels", "multiples of norm_groups " + std::to_string(u.norm_groups),
              std::to_string(ch));
  for (const std::int64_t ch : u.attention_channels())
    if (ch % u.norm_groups == 0 && ch % u.head_dim != 0)
      c.error(m.node()["channels"].Mark(), "channels",
              "multiples of head_dim " + std::to_string(u.head_dim) + " where a level has attention",
              std::to_string(ch));
  // (The default 1024 is a multiple of 8 x 2^7, so only a given size fails;
  // reported at channels should a smaller default ever not be.)
  if (!u.channels.empty() && u.channels.size() <= kMaxUnetLevels && u.image_size % unet_image_multiple(u) != 0)
    c.error(m.node()[m.has("image_size") ? "image_size" : "channels"].Mark(), "image_size",
            "a multiple of " + std::to_string(unet_image_multiple(u)) + " (8 x 2^(levels - 1))",
            std::to_string(u.image_size));
}

void read_dlrm(Map& m, ModelSpec& s, Ctx& c) {
  auto& d = s.dlrm;
  d.dense_features = m.integer("dense_features", true, 1);
  d.embedding_dim = m.integer("embedding_dim", true, 1);
  auto rows = m.int_list("table_rows", true);
  std::vector<std::int64_t> hot;
  if (m.has("multi_hot")) hot = m.int_list("multi_hot", false);
  if (!hot.empty() && hot.size() != rows.size())
    c.error(m.node()["multi_hot"].Mark(), "multi_hot", std::to_string(rows.size()) + " entries (one per table)",
            std::to_string(hot.size()));
  for (std::size_t i = 0; i < rows.size(); ++i) d.tables.push_back({rows[i], i < hot.size() ? hot[i] : 1});
  d.bottom_mlp = m.int_list("bottom_mlp", true);
  d.top_mlp = m.int_list("top_mlp", true);
  if (!d.bottom_mlp.empty() && d.bottom_mlp.back() != d.embedding_dim)
    c.error(m.node()["bottom_mlp"].Mark(), "bottom_mlp",
            "a last layer of embedding_dim " + std::to_string(d.embedding_dim), std::to_string(d.bottom_mlp.back()));
  if (!m.has("interaction")) {
    m.missing("interaction", "a map with kind dot|dcn");
    return;
  }
  Map im(c, m.get("interaction"), "interaction");
  d.interaction = static_cast<InteractionKind>(im.choice("kind", {"dot", "dcn"}, 0, true));
  if (d.interaction == InteractionKind::dcn) {
    d.cross_layers = im.integer("cross_layers", true, 1);
    d.low_rank = im.integer("low_rank", true, 1);
  }
  im.finish();
}

ModelSpec parse_node(const YAML::Node& root, const std::string& file) {
  Ctx c{file, {}};
  ModelSpec s;
  s.file = file;
  Map m(c, root, "");
  if (!root || root.IsNull()) {
    c.error(YAML::Mark(), "(top level)", "a map with name and family", "an empty file");
    throw ModelError(c.errs);
  }
  s.name = m.string("name", true);
  s.family = static_cast<Family>(m.choice("family", {"decoder", "encoder", "vit", "resnet", "dlrm", "unet"}, 0, true));
  if (c.errs.empty() || m.has("family")) {
    switch (s.family) {
      case Family::decoder:
      case Family::encoder:
      case Family::vit: read_transformer(m, s, c); break;
      case Family::resnet: read_resnet(m, s, c); break;
      case Family::dlrm: read_dlrm(m, s, c); break;
      case Family::unet: read_unet(m, s, c); break;
    }
  }
  m.finish();
  if (!c.errs.empty()) throw ModelError(c.errs);
  return s;
}

}  // namespace

ModelSpec parse_model_text(const std::string& text, const std::string& file) {
  YAML::Node root;
  try {
    root = workloads::load_yaml_strict(text);
  } catch (const YAML::Exception& e) {
    throw ModelError(Diagnostic{file, e.mark.line + 1, e.mark.column + 1, "", "valid YAML", e.msg, ""});
  }
  return parse_node(root, file);
}

ModelSpec read_model_file(const std::string& path) {
  if (auto why = workloads::input_file_problem(path); !why.empty())
    throw ModelError(Diagnostic{path, 0, 0, "", "a readable model file", why, ""});
  std::ifstream in(path);
  if (!in) throw ModelError(Diagnostic{path, 0, 0, "", "a readable model file", "cannot open it", ""});
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_model_text(ss.str(), path);
}

}  // namespace tpusim::models
