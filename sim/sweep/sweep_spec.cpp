// Sweep spec parsing: keys and values checked, axes expanded into points,
// filters applied and derived columns checked; see sweep_spec.h and
// docs/sweeps.md. Per-point resolution is in sweep_points.cpp.
#include "sim/sweep/sweep_spec.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "arch/common/dtype.h"
#include "arch/ici/topology.h"
#include "models/quantize.h"
#include "models/zoo.h"
#include "sim/config/config_writer.h"
#include "sim/config/schema.h"
#include "sim/results/results_writer.h"
#include "sim/sweep/serve_points.h"
#include "sim/sweep/source_keys.h"
#include "workloads/io/input_file.h"
#include "workloads/io/yaml_strict.h"
#include "workloads/ir/mesh.h"

namespace tpusim::sim::sweep {

namespace fs = std::filesystem;

namespace {

// Base keys (short, as `tpusim run` spells its options) -> canonical names.
const std::vector<std::pair<std::string, std::string>>& base_keys() {
  static const std::vector<std::pair<std::string, std::string>> k = [] {
    std::vector<std::pair<std::string, std::string>> v = {
        {"arch", "arch"},
        {"model", "model.name"},
        {"phase", "model.phase"},
        {"batch", "model.batch"},
        {"seq", "model.seq"},
        {"context", "model.context"},
        {"image", "model.image"},
        {"remat", "model.remat"},
        {"workload", "workload.file"},
        {"gemm", "workload.gemm"},
        {"conv", "workload.conv"},
        {"attention", "workload.attention"},
        {"dtype", "workload.dtype"},
        {"fusion", "workload.fusion"},
        {"cmem", "workload.cmem"},
        // Quantization of --model runs (models/quantize.h).
        {"weight_dtype", "model.weight_dtype"},
        {"act_dtype", "model.act_dtype"},
        {"kv_dtype", "model.kv_dtype"},
        {"weight_scales", "model.weight_scales"},
        {"act_quant", "model.act_quant"},
        {"training_quant", "model.training_quant"},
        {"sparsity", "model.sparsity"},
        {"moe_capacity_factor", "model.moe_capacity_factor"},
        {"fused_attention_backward", "model.fused_attention_backward"},
        {"attention_kernel", "model.attention_kernel"},
        {"attention_blocks", "model.attention_blocks"},
        {"optimizer_dtype", "model.optimizer_dtype"},
        // Multi-chip runs (`run --slice --mesh`); named in full, since the
        // short `slice` and `mesh` are a serve sweep's.
        {"run.slice", "run.slice"},
        {"run.mesh", "run.mesh"},
    };
    // Serve points (serve_points.h): `tpusim serve` instead of `tpusim run`.
    v.insert(v.end(), serve_keys().begin(), serve_keys().end());
    return v;
  }();
  return k;
}

std::vector<std::string> run_param_keys() {
  std::vector<std::string> v;
  for (const auto& [s, c] : base_keys()) v.push_back(c);
  return v;
}

SpecPos pos_of(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.line < 0) return {};
  // Quoted scalars carry the tag "!"; their text starts after the quote.
  const int quote = (n.IsScalar() && n.Tag() == "!") ? 1 : 0;
  return {m.line + 1, m.column + 1 + quote};
}

class Collector {
 public:
  explicit Collector(std::string file) : file_(std::move(file)) {}
  void add(SpecPos p, const std::string& key, const std::string& expected, const std::string& found,
           const std::string& suggestion = "") {
    Diagnostic d;
    d.file = file_;
    d.line = p.line;
    d.column = p.column;
    d.key = key;
    d.expected = expected;
    d.found = found;
    d.suggestion = suggestion;
    diags_.push_back(std::move(d));
  }
  void check() const {
    if (!diags_.empty()) throw ConfigError(diags_);
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::vector<Diagnostic> diags_;
};

std::string scalar_text(const YAML::Node& n) {
  if (n.IsNull()) return "~";
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

std::string node_kind(const YAML::Node& n) {
  if (n.IsMap()) return "a map";
  if (n.IsSequence()) return "a list";
  if (n.IsNull()) return "nothing";
  return "'" + n.Scalar() + "'";
}

std::vector<std::string> schema_paths() {
  std::vector<std::string> v;
  for (const auto& f : schema()) v.push_back(f.path);
  return v;
}

// Checks a swept or base key; returns false (with a diagnostic) if unknown.
bool check_key(const std::string& key, SpecPos p, const std::string& where, Collector& c) {
  if (key == "arch") return true;
  for (const auto& k : run_param_keys())
    if (k == key) return true;
  if (key.compare(0, 5, "arch.") == 0) {
    const std::string ck = key.substr(5);
    if (find_field(ck)) return true;
    const std::string near = nearest_word(ck, schema_paths());
    c.add(p, where.empty() ? key : where + "." + key, "a config key (docs/config.md) after 'arch.'",
          "unknown config key '" + ck + "'", near.empty() ? "" : "arch." + near);
    return false;
  }
  if (find_field(key)) {
    c.add(p, where.empty() ? key : where + "." + key, "a swept key: arch, arch.<config key>, model.*, workload.*",
          "'" + key + "'", "arch." + key);
    return false;
  }
  std::vector<std::string> all = run_param_keys();
  all.push_back("arch");
  // "model.name|phase|...": the keys grouped by prefix, from the one list
  // of keys, so that the message names every key there is.
  std::string expected = "a swept key: arch, arch.<config key>";
  for (const char* prefix : {"model.", "workload.", "run.", "serve."}) {
    std::string group;
    for (const auto& k : all)
      if (k.rfind(prefix, 0) == 0) group += (group.empty() ? k : "|" + k.substr(std::strlen(prefix)));
    if (!group.empty()) expected += ", " + group;
  }
  c.add(p, where.empty() ? key : where + "." + key, expected, "unknown key '" + key + "'", nearest_word(key, all));
  return false;
}

// Checks a value of a run parameter whose form is known up front.
void check_value(const std::string& key, const std::string& text, SpecPos p, const std::string& where, Collector& c) {
  const std::string k = where.empty() ? key : where + "." + key;
  if (is_serve_key(key)) {
    const std::string expected = check_serve_value(key, text);
    if (!expected.empty()) c.add(p, k, expected, "'" + text + "'");
    return;
  }
  if (key == "run.slice") {
    try {
      int slices = 1;
      (void)arch::ici::parse_shape(arch::ici::split_slices(text, slices));
    } catch (const std::exception&) {
      c.add(p, k, "a slice shape such as 4x4, 4x4x8, or N*SHAPE for N slices (4*16x16)", "'" + text + "'");
    }
    return;
  }
  if (key == "run.mesh") {
    try {
      (void)workloads::parse_mesh(text);
    } catch (const std::exception& e) {
      c.add(p, k, "mesh axes NAME=SIZE,... such as fsdp=16,tensor=4", "'" + text + "'");
    }
    return;
  }
  if (key == "model.batch" || key == "model.seq" || key == "model.context" || key == "model.image") {
    const Value v = Value::from_text(text);
    // Bounded before any conversion: a double beyond long long's range does
    // not convert (undefined behaviour), and `tpusim run` takes up to 2^40.
    if (!v.is_number || !(v.number >= 1 && v.number <= 1099511627776.0) || v.number != std::floor(v.number))
      c.add(p, k, "an integer in [1, 2^40]", "'" + text + "'");
  } else if (key == "workload.dtype" || key == "model.weight_dtype" || key == "model.act_dtype" ||
             key == "model.kv_dtype") {
    if (!arch::parse_dtype(text)) c.add(p, k, "a dtype (f32, bf16, f16, int8, ...)", "'" + text + "'");
  } else if (key == "model.weight_scales") {
    workloads::QuantScales sc;
    if (!models::parse_scales(text, &sc)) c.add(p, k, "none, tensor, channel or block:G", "'" + text + "'");
  } else if (key == "model.act_quant") {
    if (text != "static" && text != "dynamic") c.add(p, k, "static or dynamic", "'" + text + "'");
  } else if (key == "model.training_quant") {
    std::optional<arch::DType> tq;
    if (!models::parse_training_quant(text, &tq)) c.add(p, k, "int8, fp8 or none", "'" + text + "'");
  } else if (key == "model.sparsity") {
    workloads::NmSparsity sp;
    if (!models::parse_sparsity(text, &sp)) c.add(p, k, "N:M with 1 <= N < M <= 64, or dense", "'" + text + "'");
  } else if (key == "model.moe_capacity_factor") {
    const Value v = Value::from_text(text);
    if (!v.is_number || !(v.number >= 0 && v.number <= 64))
      c.add(p, k, "a capacity factor in [0, 64] (0: dropless)", "'" + text + "'");
  } else if (key == "workload.fusion" || key == "workload.cmem" || key == "model.fused_attention_backward") {
    if (text != "true" && text != "false") c.add(p, k, "true or false", "'" + text + "'");
  } else if (key == "model.attention_kernel") {
    models::AttentionImpl ak;
    if (!models::parse_attention_impl(text, &ak)) c.add(p, k, "flash, dense or batched", "'" + text + "'");
  } else if (key == "model.attention_blocks") {
    models::SplashBlocks sb;
    const std::string err = models::parse_splash_blocks(text, &sb);
    if (!err.empty()) c.add(p, k, err, "'" + text + "'");
  } else if (key == "model.optimizer_dtype") {
    arch::DType od;
    if (!models::parse_optimizer_dtype(text, &od)) c.add(p, k, "f32 or bf16", "'" + text + "'");
  } else if (key == "model.phase") {
    models::Phase ph;
    if (!models::parse_phase(text, &ph)) c.add(p, k, "a phase: prefill, decode, train, infer", "'" + text + "'");
  } else if (key == "model.remat") {
    models::RematPolicy r;
    models::RematCustom custom;
    const std::string err = models::parse_remat_spec(text, &r, &custom);
    if (!err.empty()) c.add(p, k, err, "'" + text + "'");
  }
}

std::vector<SweptValue> read_list(const YAML::Node& list, const std::string& key, const std::string& where,
                                  Collector& c) {
  std::vector<SweptValue> out;
  if (!list.IsSequence() || list.size() == 0) {
    c.add(pos_of(list), where + "." + key, "a non-empty list of values", node_kind(list));
    return out;
  }
  for (const auto& v : list) {
    if (v.IsSequence()) {
      c.add(pos_of(v), where + "." + key, "a value", "a list");
      continue;
    }
    SweptValue sv{key, scalar_text(v), pos_of(v)};
    check_value(key, sv.text, sv.pos, where, c);
    out.push_back(sv);
  }
  return out;
}

std::string point_id(const std::vector<SweptValue>& values) {
  std::vector<std::string> parts;
  for (const auto& v : values) parts.push_back(v.key + "=" + v.text + "\n");
  std::sort(parts.begin(), parts.end());
  std::string all;
  for (const auto& s : parts) all += s;
  return "p" + config_hash(all).substr(0, 12);
}

void add_axis(std::vector<std::string>& axes, const std::string& key) {
  if (std::find(axes.begin(), axes.end(), key) == axes.end()) axes.push_back(key);
}

std::vector<NamedExpr> read_exprs(const YAML::Node& node, bool named, const std::string& where, Collector& c) {
  std::vector<NamedExpr> out;
  auto one = [&](const YAML::Node& n, const std::string& name, const std::string& key) {
    if (!n.IsScalar()) {
      c.add(pos_of(n), key, "an expression string", node_kind(n));
      return;
    }
    const SpecPos p = pos_of(n);
    try {
      out.push_back({name, Expr::parse(n.Scalar()), p});
    } catch (const ExprError& e) {
      c.add({p.line, p.column + std::max(0, e.column() - 1)}, key, "an expression (docs/sweeps.md)",
            std::string(e.what()) + " in '" + n.Scalar() + "'");
    }
  };
  if (named) {
    if (!node.IsMap()) {
      c.add(pos_of(node), where, "a map of column name: expression", node_kind(node));
      return out;
    }
    for (const auto& kv : node) {
      const std::string name = kv.first.Scalar();
      one(kv.second, name, where + "." + name);
    }
  } else if (node.IsScalar()) {
    one(node, node.Scalar(), where);
  } else if (node.IsSequence()) {
    for (const auto& n : node) one(n, n.IsScalar() ? n.Scalar() : "", where);
  } else {
    c.add(pos_of(node), where, "an expression or a list of expressions", node_kind(node));
  }
  return out;
}

}  // namespace

SweepSpec load_sweep_spec(const std::string& file) {
  if (auto why = workloads::input_file_problem(file); !why.empty()) {
    Diagnostic d;
    d.file = file;
    d.expected = "a readable sweep spec file";
    d.found = why;
    throw ConfigError(d);
  }
  std::ifstream in(file);
  if (!in) {
    Diagnostic d;
    d.file = file;
    d.expected = "a readable sweep spec file";
    d.found = "no such file";
    throw ConfigError(d);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_sweep_spec(ss.str(), file);
}

SweepSpec parse_sweep_spec(const std::string& text, const std::string& file) {
  Collector c(file);
  YAML::Node root;
  try {
    root = workloads::load_yaml_strict(text);
  } catch (const YAML::Exception& e) {
    c.add({e.mark.line + 1, e.mark.column + 1}, "", "valid YAML", e.msg);
    c.check();
  }
  SweepSpec spec;
  spec.file = file;
  std::error_code ec;
  spec.dir = fs::absolute(fs::path(file), ec).parent_path().string();
  spec.name = fs::path(file).stem().string();
  if (!root.IsMap()) {
    c.add(pos_of(root), "", "a map with base, axes, filters, derived", node_kind(root));
    c.check();
  }
  static const std::vector<std::string> top = {"name", "base", "axes", "filters", "derived"};
  for (const auto& kv : root) {
    const std::string k = kv.first.Scalar();
    if (std::find(top.begin(), top.end(), k) == top.end())
      c.add(pos_of(kv.first), k, "a key of the spec (name, base, axes, filters, derived)", "unknown key '" + k + "'",
            nearest_word(k, top));
  }
  if (root["name"]) {
    spec.name = root["name"].Scalar();
    // The name reaches file names, job names and generated scripts.
    for (unsigned char ch : spec.name)
      if (ch < 0x20 || ch == 0x7f) {
        c.add(pos_of(root["name"]), "name", "a name without control characters (newline, tab, ...)",
              "'" + spec.name + "'");
        break;
      }
  }

  // base
  if (const YAML::Node base = root["base"]) {
    if (!base.IsMap()) {
      c.add(pos_of(base), "base", "a map of run options", node_kind(base));
    } else {
      std::vector<std::string> names;
      for (const auto& [s, cn] : base_keys()) names.push_back(s);
      names.push_back("set");
      for (const auto& kv : base) {
        const std::string k = kv.first.Scalar();
        if (k == "set") {
          if (!kv.second.IsMap()) {
            c.add(pos_of(kv.second), "base.set", "a map of config key: value", node_kind(kv.second));
            continue;
          }
          // Nested sections flatten to dotted keys (set: {mxu: {rows: 256}}).
          std::function<void(const YAML::Node&, const std::string&)> flat = [&](const YAML::Node& m,
                                                                                const std::string& prefix) {
            for (const auto& e : m) {
              const std::string key = prefix + e.first.Scalar();
              if (e.second.IsMap() && is_section(key)) {
                flat(e.second, key + ".");
                continue;
              }
              if (check_key("arch." + key, pos_of(e.first), "base.set", c))
                spec.base["arch." + key] = {"arch." + key, scalar_text(e.second), pos_of(e.second)};
            }
          };
          flat(kv.second, "");
          continue;
        }
        auto it = std::find_if(base_keys().begin(), base_keys().end(), [&](const auto& p) { return p.first == k; });
        if (it == base_keys().end()) {
          c.add(
              pos_of(kv.first), "base." + k,
              "a base option (" +
                  [&] {
                    std::string l;
                    for (const auto& n : names) l += (l.empty() ? "" : ", ") + n;
                    return l;
                  }() +
                  ")",
              "unknown key '" + k + "'", nearest_word(k, names));
          continue;
        }
        if (!kv.second.IsScalar()) {
          c.add(pos_of(kv.second), "base." + k, "a value", node_kind(kv.second));
          continue;
        }
        SweptValue v{it->second, kv.second.Scalar(), pos_of(kv.second)};
        check_value(it->second, v.text, v.pos, "base", c);
        spec.base[it->second] = v;
      }
      int sources = 0;
      for (const auto& s : kSourceKeys) sources += spec.base.count(s) ? 1 : 0;
      if (sources > 1)
        c.add(pos_of(base), "base", "at most one of model, workload, gemm, conv, attention",
              std::to_string(sources) + " of them");
    }
  }

  // axes
  std::vector<std::vector<SweptValue>> combos;  // grid x zip
  std::vector<std::vector<SweptValue>> explicit_points;
  bool has_product = false;
  if (const YAML::Node axes = root["axes"]) {
    if (!axes.IsMap()) {
      c.add(pos_of(axes), "axes", "a map with grid, zip, points", node_kind(axes));
    } else {
      static const std::vector<std::string> kinds = {"grid", "zip", "points"};
      for (const auto& kv : axes) {
        const std::string k = kv.first.Scalar();
        if (std::find(kinds.begin(), kinds.end(), k) == kinds.end())
          c.add(pos_of(kv.first), "axes." + k, "grid, zip or points", "unknown key '" + k + "'",
                nearest_word(k, kinds));
      }
      combos.push_back({});
      if (const YAML::Node grid = axes["grid"]) {
        has_product = true;
        if (!grid.IsMap()) {
          c.add(pos_of(grid), "axes.grid", "a map of key: [values]", node_kind(grid));
        } else {
          for (const auto& kv : grid) {
            const std::string key = kv.first.Scalar();
            if (!check_key(key, pos_of(kv.first), "axes.grid", c)) continue;
            add_axis(spec.axes, key);
            const auto vals = read_list(kv.second, key, "axes.grid", c);
            std::vector<std::vector<SweptValue>> next;
            for (const auto& prefix : combos)
              for (const auto& v : vals) {
                auto p = prefix;
                p.push_back(v);
                next.push_back(std::move(p));
              }
            combos = std::move(next);
          }
        }
      }
      if (const YAML::Node zip = axes["zip"]) {
        has_product = true;
        std::vector<YAML::Node> groups;
        if (zip.IsMap()) {
          groups.push_back(zip);
        } else if (zip.IsSequence()) {
          for (const auto& g : zip) groups.push_back(g);
        } else {
          c.add(pos_of(zip), "axes.zip", "a map of key: [values] (or a list of such maps)", node_kind(zip));
        }
        for (const auto& g : groups) {
          if (!g.IsMap()) {
            c.add(pos_of(g), "axes.zip", "a map of key: [values]", node_kind(g));
            continue;
          }
          std::vector<std::vector<SweptValue>> cols;
          std::size_t len = 0;
          std::string first_key;
          for (const auto& kv : g) {
            const std::string key = kv.first.Scalar();
            if (!check_key(key, pos_of(kv.first), "axes.zip", c)) continue;
            add_axis(spec.axes, key);
            auto vals = read_list(kv.second, key, "axes.zip", c);
            if (cols.empty()) {
              len = vals.size();
              first_key = key;
            } else if (vals.size() != len) {
              c.add(pos_of(kv.second), "axes.zip." + key,
                    "a list as long as axes.zip." + first_key + " (" + std::to_string(len) + " values)",
                    std::to_string(vals.size()) + " values");
              continue;
            }
            cols.push_back(std::move(vals));
          }
          if (cols.empty()) continue;
          std::vector<std::vector<SweptValue>> next;
          for (const auto& prefix : combos)
            for (std::size_t i = 0; i < len; ++i) {
              auto p = prefix;
              for (const auto& col : cols) p.push_back(col[i]);
              next.push_back(std::move(p));
            }
          combos = std::move(next);
        }
      }
      if (const YAML::Node pts = axes["points"]) {
        if (!pts.IsSequence()) {
          c.add(pos_of(pts), "axes.points", "a list of maps key: value", node_kind(pts));
        } else {
          for (const auto& m : pts) {
            if (!m.IsMap()) {
              c.add(pos_of(m), "axes.points", "a map key: value", node_kind(m));
              continue;
            }
            std::vector<SweptValue> p;
            for (const auto& kv : m) {
              const std::string key = kv.first.Scalar();
              if (!check_key(key, pos_of(kv.first), "axes.points", c)) continue;
              if (kv.second.IsSequence()) {
                c.add(pos_of(kv.second), "axes.points." + key, "one value (a point is not a list)", "a list");
                continue;
              }
              add_axis(spec.axes, key);
              SweptValue v{key, scalar_text(kv.second), pos_of(kv.second)};
              check_value(key, v.text, v.pos, "axes.points", c);
              p.push_back(v);
            }
            explicit_points.push_back(std::move(p));
          }
        }
      }
    }
  }
  if (!has_product) combos.clear();
  if (combos.empty() && explicit_points.empty()) combos.push_back({});  // the base run alone
  for (auto& p : explicit_points) combos.push_back(std::move(p));

  if (const YAML::Node f = root["filters"]) spec.filters = read_exprs(f, false, "filters", c);
  if (const YAML::Node d = root["derived"]) spec.derived = read_exprs(d, true, "derived", c);
  c.check();

  // Points, ids and the source rule.
  std::vector<SweepPoint> all;
  std::map<std::string, std::size_t> seen;
  for (auto& vals : combos) {
    // Column order, so that rows read the same whatever the axis kind.
    std::stable_sort(vals.begin(), vals.end(), [&](const SweptValue& a, const SweptValue& b) {
      return std::find(spec.axes.begin(), spec.axes.end(), a.key) <
             std::find(spec.axes.begin(), spec.axes.end(), b.key);
    });
    SweepPoint p;
    p.values = vals;
    p.id = point_id(vals);
    std::set<std::string> keys;
    int sources = 0;
    for (const auto& v : vals) {
      if (!keys.insert(v.key).second)
        c.add(v.pos, v.key, "each key once per point", "'" + v.key + "' set twice (by two axes)");
      sources += is_source(v.key) ? 1 : 0;
    }
    if (sources > 1)
      c.add(vals.front().pos, "axes", "one workload source per point (model.name or workload.file|gemm|conv|attention)",
            std::to_string(sources) + " in the point " + p.id);
    if (seen.count(p.id)) {
      c.add(vals.empty() ? SpecPos{} : vals.front().pos, "axes", "distinct points",
            "a point with the same values as point #" + std::to_string(seen[p.id]));
    } else {
      seen[p.id] = all.size();
    }
    all.push_back(std::move(p));
  }
  c.check();
  spec.expanded = all.size();

  // Names an expression may read: any run parameter or config key set in
  // some point (filters), plus summary.csv metrics (derived).
  std::set<std::string> names;
  for (const auto& p : all)
    for (const auto& [k, v] : point_params(spec, p)) {
      names.insert(k);
      spec.serve = spec.serve || is_serve_key(k);
    }
  for (const char* k : {"arch", "model.phase", "model.batch", "model.seq", "model.context", "model.image",
                        "model.remat", "model.fused_attention_backward", "model.attention_kernel",
                        "model.optimizer_dtype", "workload.dtype", "workload.fusion", "workload.cmem"})
    names.insert(k);
  std::vector<std::string> name_list(names.begin(), names.end());
  auto check_names = [&](const NamedExpr& e, const std::string& key, bool metrics) {
    std::vector<std::string> cands = name_list;
    if (metrics)
      for (const auto& m : metric_columns(spec)) cands.push_back(m);
    for (const auto& [n, col] : e.expr.names())
      if (std::find(cands.begin(), cands.end(), n) == cands.end())
        c.add({e.pos.line, e.pos.column + col - 1}, key,
              std::string("a swept or base value") + (metrics ? " or a summary.csv metric" : ""),
              "unknown name '" + n + "'", nearest_word(n, cands));
  };
  for (const auto& f : spec.filters) check_names(f, "filters", false);
  std::set<std::string> columns(spec.axes.begin(), spec.axes.end());
  for (const auto& m : metric_columns(spec)) columns.insert(m);
  for (const char* fixed : {"point", "config_hash", "status", "message"}) columns.insert(fixed);
  for (const auto& d : spec.derived) {
    check_names(d, "derived." + d.name, true);
    if (!columns.insert(d.name).second)
      c.add(d.pos, "derived." + d.name, "a new column name", "'" + d.name + "', already a column");
  }
  c.check();

  for (auto& p : all) {
    bool keep = true;
    for (const auto& f : spec.filters) {
      try {
        keep = f.expr.eval([&](const std::string& n) { return lookup_point_value(spec, p, n); }).truthy();
      } catch (const ExprError& e) {
        std::string vals;
        for (const auto& v : p.values) vals += (vals.empty() ? "" : ", ") + v.key + "=" + v.text;
        c.add({f.pos.line, f.pos.column + std::max(0, e.column() - 1)}, "filters",
              "an expression that evaluates for every point", std::string(e.what()) + " for point {" + vals + "}");
        keep = false;
      }
      if (!keep) break;
    }
    if (keep) {
      p.index = spec.points.size();
      spec.points.push_back(std::move(p));
    }
  }
  c.check();
  return spec;
}

const std::vector<std::string>& metric_columns(const SweepSpec& spec) {
  return spec.serve ? serve_summary_columns() : summary_columns();
}

const std::vector<std::string>& summary_columns() {
  static const std::vector<std::string> cols = [] {
    std::ostringstream os;
    write_summary_csv(RunReport{}, RunMetrics{}, os);
    const std::string s = os.str();
    std::vector<std::string> v;
    std::string header = s.substr(0, s.find('\n')), cell;
    std::stringstream hs(header);
    while (std::getline(hs, cell, ',')) v.push_back(cell);
    return v;
  }();
  return cols;
}

}  // namespace tpusim::sim::sweep
