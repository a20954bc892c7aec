// Built-in micro-workloads and their CLI string forms (see builtin.h).
#include "workloads/builtin.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>

#include "workloads/io/suggest.h"
#include "workloads/ir/builder.h"

namespace tpusim::workloads::builtin {

namespace {

std::string dname(DType t) { return std::string(arch::dtype_name(t)); }

[[noreturn]] void spec_error(const std::string& what, const std::string& spec, const std::string& msg) {
  throw WorkloadError(SourceLoc{}, what + " '" + spec + "'", msg);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// Fields of a spec: either all positional or all key=value.
struct Fields {
  std::vector<std::string> positional;
  std::map<std::string, std::string> named;
  bool is_named = false;
};

Fields parse_fields(const std::string& what, const std::string& spec) {
  Fields f;
  if (spec.empty()) spec_error(what, spec, "empty specification");
  auto parts = split(spec, ',');
  bool any_named = false, any_pos = false;
  for (const auto& p : parts) {
    if (p.empty()) spec_error(what, spec, "empty field (two commas in a row, or a trailing comma)");
    auto eq = p.find('=');
    if (eq == std::string::npos) {
      any_pos = true;
      f.positional.push_back(p);
    } else {
      any_named = true;
      std::string k = p.substr(0, eq);
      if (!f.named.emplace(k, p.substr(eq + 1)).second) spec_error(what, spec, "key '" + k + "' given twice");
    }
  }
  if (any_named && any_pos) spec_error(what, spec, "mixes positional and key=value fields; use one form");
  f.is_named = any_named;
  return f;
}

std::int64_t to_int(const std::string& what, const std::string& spec, const std::string& field, const std::string& text,
                    std::int64_t min_value = 1) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    spec_error(what, spec, "field " + field + ": expected an integer, found '" + text + "'");
  if (v < min_value)
    spec_error(what, spec,
               "field " + field + ": expected an integer >= " + std::to_string(min_value) + ", found " + text);
  return v;
}

// Reads named fields `keys` (with defaults where given), rejecting unknown
// keys with a suggestion. Returns values in keys order.
std::vector<std::int64_t> named_ints(const std::string& what, const std::string& spec, Fields& f,
                                     const std::vector<std::string>& keys,
                                     const std::map<std::string, std::int64_t>& defaults,
                                     const std::map<std::string, std::int64_t>& mins, DType& dtype) {
  std::vector<std::string> valid = keys;
  valid.push_back("dtype");
  for (const auto& [k, v] : f.named) {
    if (std::find(valid.begin(), valid.end(), k) != valid.end()) continue;
    std::string near = nearest_candidate(k, valid), all;
    for (const auto& x : valid) all += (all.empty() ? "" : ", ") + x;
    spec_error(
        what, spec,
        "unknown key '" + k + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") + "; valid keys: " + all);
  }
  if (auto it = f.named.find("dtype"); it != f.named.end()) {
    auto d = arch::parse_dtype(it->second);
    if (!d) spec_error(what, spec, "field dtype: unknown dtype '" + it->second + "'");
    dtype = *d;
  }
  std::vector<std::int64_t> out;
  for (const auto& k : keys) {
    auto it = f.named.find(k);
    auto mit = mins.find(k);
    std::int64_t mn = mit == mins.end() ? 1 : mit->second;
    if (it != f.named.end()) {
      out.push_back(to_int(what, spec, k, it->second, mn));
    } else if (auto d = defaults.find(k); d != defaults.end()) {
      out.push_back(d->second);  // -1 marks "derived from another field"
    } else {
      spec_error(what, spec, "missing key '" + k + "'");
    }
  }
  return out;
}

std::vector<std::int64_t> positional_ints(const std::string& what, const std::string& spec, const Fields& f,
                                          const std::vector<std::string>& names, std::size_t min_count,
                                          const std::map<std::string, std::int64_t>& mins) {
  if (f.positional.size() < min_count || f.positional.size() > names.size()) {
    std::string all;
    for (const auto& n : names) all += (all.empty() ? "" : ",") + n;
    spec_error(what, spec,
               "expected " +
                   (min_count == names.size() ? std::to_string(names.size())
                                              : std::to_string(min_count) + " to " + std::to_string(names.size())) +
                   " comma-separated integers " + all + ", found " + std::to_string(f.positional.size()));
  }
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < f.positional.size(); ++i) {
    auto mit = mins.find(names[i]);
    out.push_back(to_int(what, spec, std::to_string(i + 1) + " (" + names[i] + ")", f.positional[i],
                         mit == mins.end() ? 1 : mit->second));
  }
  return out;
}

}  // namespace

Workload gemm(std::int64_t m, std::int64_t k, std::int64_t n, DType dtype, MatmulBlocks blocks) {
  WorkloadBuilder b("gemm_" + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) +
                    (blocks.m > 0 ? "_bm" + std::to_string(blocks.m) : "") +
                    (blocks.k > 0 ? "_bk" + std::to_string(blocks.k) : "") +
                    (blocks.n > 0 ? "_bn" + std::to_string(blocks.n) : "") + "_" + dname(dtype));
  auto a = b.input("a", {m, k}, dtype);
  auto w = b.weight("b", {k, n}, dtype);
  b.matmul("c", a, w, "mk,kn->mn", std::nullopt, "", 0, blocks);
  return b.build();
}

Workload conv(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c, std::int64_t kh, std::int64_t kw,
              std::int64_t oc, std::int64_t stride, std::int64_t pad, DType dtype) {
  WorkloadBuilder b("conv_" + std::to_string(n) + "x" + std::to_string(h) + "x" + std::to_string(w) + "x" +
                    std::to_string(c) + "_k" + std::to_string(kh) + "x" + std::to_string(kw) + "x" +
                    std::to_string(oc) + "_s" + std::to_string(stride) + "_p" + std::to_string(pad) + "_" +
                    dname(dtype));
  auto x = b.input("x", {n, h, w, c}, dtype);
  auto f = b.weight("filter", {kh, kw, c, oc}, dtype);
  Conv2dAttrs a;
  a.stride_h = a.stride_w = stride;
  a.padding = PaddingMode::explicit_pads;
  a.pad_top = a.pad_bottom = a.pad_left = a.pad_right = pad;
  b.conv2d("y", x, f, a);
  return b.build();
}

Workload attention(std::int64_t batch, std::int64_t q_len, std::int64_t kv_len, std::int64_t heads,
                   std::int64_t kv_heads, std::int64_t head_dim, bool causal, DType dtype, std::int64_t window,
                   AttentionBlocks blocks, std::int64_t max_step_seqs, bool latent, std::int64_t value_dim) {
  WorkloadBuilder b("attention_b" + std::to_string(batch) + "_q" + std::to_string(q_len) + "_kv" +
                    std::to_string(kv_len) + "_h" + std::to_string(heads) + "_kvh" + std::to_string(kv_heads) + "_d" +
                    std::to_string(head_dim) + (causal ? "_causal" : "") +
                    (window > 0 ? "_w" + std::to_string(window) : "") +
                    (blocks.q > 0 ? "_bq" + std::to_string(blocks.q) : "") +
                    (blocks.kv > 0 ? "_bkv" + std::to_string(blocks.kv) : "") +
                    (max_step_seqs > 1 ? "_seqs" + std::to_string(max_step_seqs) : "") + (latent ? "_latent" : "") +
                    (value_dim > 0 ? "_dv" + std::to_string(value_dim) : "") + "_" + dname(dtype));
  auto q = b.input("q", {batch, q_len, heads, head_dim}, dtype);
  auto k = b.kv_cache("k", {batch, kv_len, kv_heads, head_dim}, dtype);
  auto v = latent ? k : b.kv_cache("v", {batch, kv_len, kv_heads, head_dim}, dtype);
  b.attention("o", q, k, v, causal, std::nullopt, AttentionPass::forward, window, blocks, value_dim);
  Workload w = b.build();
  w.ops.back().as<AttentionAttrs>().max_step_seqs = max_step_seqs;
  return w;
}

Workload elementwise(EwKind kind, const Shape& shape, DType dtype, std::optional<DType> to) {
  std::string name = "elementwise_" + std::string(ew_kind_name(kind));
  for (auto d : shape) name += "_" + std::to_string(d);
  name += "_" + dname(dtype);
  WorkloadBuilder b(name);
  std::vector<TensorRef> ins;
  bool has_cond = kind == EwKind::select || kind == EwKind::where;
  for (int i = 0; i < ew_arity(kind); ++i) {
    DType t = has_cond && i == 0 ? DType::int8 : dtype;
    ins.push_back(b.input("x" + std::to_string(i), shape, t));
  }
  if (kind == EwKind::cast) {
    if (!to) throw WorkloadError(SourceLoc{}, "elementwise cast", "expected a target dtype, found none");
    b.cast("y", ins[0], *to);
  } else {
    b.elementwise("y", kind, ins);
  }
  return b.build();
}

Workload parse_gemm(const std::string& spec, DType dtype) {
  const std::string what = "gemm spec";
  Fields f = parse_fields(what, spec);
  std::vector<std::int64_t> v;
  if (f.is_named) {
    v = named_ints(what, spec, f, {"m", "k", "n", "bm", "bk", "bn"}, {{"bm", 0}, {"bk", 0}, {"bn", 0}},
                   {{"bm", 0}, {"bk", 0}, {"bn", 0}}, dtype);
  } else {
    v = positional_ints(what, spec, f, {"M", "K", "N"}, 3, {});
    v.insert(v.end(), {0, 0, 0});  // blocks searched
  }
  const struct {
    const char* key;
    std::int64_t block, full, unit;
    const char* units;
  } blocks[] = {{"bm", v[3], v[0], MatmulBlocks::kMUnit, "sublanes"},
                {"bk", v[4], v[1], MatmulBlocks::kKUnit, "lanes"},
                {"bn", v[5], v[2], MatmulBlocks::kNUnit, "lanes"}};
  for (const auto& b : blocks)
    if (!MatmulBlocks::allowed(b.block, b.full, b.unit))
      spec_error(what, spec,
                 std::string("field ") + b.key + ": expected a multiple of " + std::to_string(b.unit) + " (" + b.units +
                     ") or the whole dimension (" + std::to_string(b.full) + "), found " + std::to_string(b.block));
  return gemm(v[0], v[1], v[2], dtype, MatmulBlocks{v[3], v[4], v[5]});
}

Workload parse_conv(const std::string& spec, DType dtype) {
  const std::string what = "conv spec";
  Fields f = parse_fields(what, spec);
  std::vector<std::int64_t> v;
  if (f.is_named)
    v = named_ints(what, spec, f, {"n", "h", "w", "c", "kh", "kw", "oc", "stride", "pad"}, {{"stride", 1}, {"pad", 0}},
                   {{"pad", 0}}, dtype);
  else
    v = positional_ints(what, spec, f, {"N", "H", "W", "C", "KH", "KW", "OC", "stride", "pad"}, 9, {{"pad", 0}});
  return conv(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], dtype);
}

Workload parse_attention(const std::string& spec, DType dtype) {
  const std::string what = "attention spec";
  Fields f = parse_fields(what, spec);
  std::vector<std::int64_t> v;
  if (f.is_named) {
    v = named_ints(what, spec, f,
                   {"b", "q", "kv", "h", "kvh", "d", "causal", "window", "bq", "bkv", "seqs", "latent", "dv"},
                   {{"b", 1},
                    {"kv", -1},
                    {"kvh", -1},
                    {"causal", 0},
                    {"window", 0},
                    {"bq", 0},
                    {"bkv", 0},
                    {"seqs", 0},
                    {"latent", 0},
                    {"dv", 0}},
                   {{"causal", 0}, {"window", 0}, {"bq", 0}, {"bkv", 0}, {"seqs", 0}, {"latent", 0}, {"dv", 0}}, dtype);
    if (v[2] == -1) v[2] = v[1];  // kv defaults to q
    if (v[4] == -1) v[4] = v[3];  // kvh defaults to h (MHA)
  } else {
    v = positional_ints(what, spec, f, {"B", "Q", "KV", "H", "KVH", "D", "causal"}, 6, {{"causal", 0}});
    if (v.size() == 6) v.push_back(0);
    // No window, blocks searched, one sequence a step, separate K and V.
    v.insert(v.end(), {0, 0, 0, 0, 0, 0});
  }
  if (v[6] > 1) spec_error(what, spec, "field causal: expected 0 or 1, found " + std::to_string(v[6]));
  if (v[7] > 0 && v[6] != 1)
    spec_error(what, spec, "field window: expected causal=1 with it (a window ends at each query)");
  if (v[3] % v[4] != 0)
    spec_error(what, spec, "heads " + std::to_string(v[3]) + " not a multiple of kv_heads " + std::to_string(v[4]));
  if (v[8] % AttentionBlocks::kQUnit != 0)
    spec_error(what, spec,
               "field bq: expected a multiple of " + std::to_string(AttentionBlocks::kQUnit) + " (sublanes), found " +
                   std::to_string(v[8]));
  if (v[9] % AttentionBlocks::kKvUnit != 0)
    spec_error(what, spec,
               "field bkv: expected a multiple of " + std::to_string(AttentionBlocks::kKvUnit) + " (lanes), found " +
                   std::to_string(v[9]));
  if (v[10] > AttentionAttrs::kMaxStepSeqsLimit)
    spec_error(what, spec,
               "field seqs: expected 0 to " + std::to_string(AttentionAttrs::kMaxStepSeqsLimit) +
                   " (sequences a grid step may hold), found " + std::to_string(v[10]));
  if (v[10] > 1 && (v[8] > 0 || v[9] > 0))
    spec_error(what, spec,
               "field seqs: expected 0 or 1 with bq or bkv (splash attention's kernel walks one sequence "
               "a step), found " +
                   std::to_string(v[10]));
  if (v[11] > 1) spec_error(what, spec, "field latent: expected 0 or 1, found " + std::to_string(v[11]));
  if (v[12] > v[5])
    spec_error(what, spec,
               "field dv: expected 0 (every column) to d " + std::to_string(v[5]) + ", found " + std::to_string(v[12]));
  return attention(v[0], v[1], v[2], v[3], v[4], v[5], v[6] == 1, dtype, v[7], AttentionBlocks{v[8], v[9]}, v[10],
                   v[11] == 1, v[12]);
}

Workload parse_elementwise(const std::string& spec, DType dtype) {
  const std::string what = "elementwise spec";
  Fields f = parse_fields(what, spec);
  if (f.is_named || f.positional.size() < 2)
    spec_error(
        what, spec,
        "expected KIND,D0[,D1,...] (e.g. silu,8,4096), found " + std::to_string(f.positional.size()) + " fields");
  std::string kind_s = f.positional[0];
  std::optional<DType> to;
  if (auto c = kind_s.find(':'); c != std::string::npos) {
    to = arch::parse_dtype(kind_s.substr(c + 1));
    if (!to) spec_error(what, spec, "field 1 (KIND): unknown dtype '" + kind_s.substr(c + 1) + "' after ':'");
    kind_s = kind_s.substr(0, c);
  }
  auto kind = parse_ew_kind(kind_s);
  if (!kind) {
    std::vector<std::string> names;
    for (auto n : all_ew_kind_names()) names.emplace_back(n);
    std::string near = nearest_candidate(kind_s, names);
    spec_error(what, spec,
               "field 1 (KIND): unknown elementwise kind '" + kind_s + "'" +
                   (near.empty() ? "" : " (did you mean '" + near + "'?)"));
  }
  if (*kind == EwKind::cast && !to) spec_error(what, spec, "cast needs a target dtype: cast:<dtype>,D0,...");
  if (*kind != EwKind::cast && to) spec_error(what, spec, "':<dtype>' is only valid for cast");
  Shape shape;
  for (std::size_t i = 1; i < f.positional.size(); ++i)
    shape.push_back(to_int(what, spec, std::to_string(i + 1) + " (D" + std::to_string(i - 1) + ")", f.positional[i]));
  return elementwise(*kind, shape, dtype, to);
}

Workload parse(const std::string& kind, const std::string& spec, DType dtype) {
  if (kind == "gemm") return parse_gemm(spec, dtype);
  if (kind == "conv") return parse_conv(spec, dtype);
  if (kind == "attention") return parse_attention(spec, dtype);
  if (kind == "elementwise") return parse_elementwise(spec, dtype);
  std::string near = nearest_candidate(kind, {"gemm", "conv", "attention", "elementwise"});
  throw WorkloadError(SourceLoc{}, "builtin '" + kind + "'",
                      "unknown built-in workload" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                          "; expected gemm, conv, attention or elementwise");
}

}  // namespace tpusim::workloads::builtin
