// Parsing and checking of validation case files, run arguments and the
// metric formulas; see case_file.h and docs/validation.md.
#include "sim/validate/case_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "arch/common/dtype.h"
#include "models/analysis.h"
#include "models/model_spec.h"
#include "models/quantize.h"
#include "models/zoo.h"
#include "sim/config/config_error.h"
#include "sim/config/node_diagnostics.h"
#include "sim/sweep/sweep_spec.h"
#include "sim/validate/runner.h"
#include "workloads/io/scalesim_csv.h"

namespace tpusim::sim::validate {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kTopKeys = {"family", "description", "defaults", "cases"};
const std::vector<std::string> kCaseKeys = {"id",        "title",  "source", "source_metric", "notes",  "arch",
                                            "set",       "slice",  "mesh",   "workload",      "metric", "measured",
                                            "tolerance", "expect", "reason", "fitted"};
const std::vector<std::string> kRequired = {"id",       "title",  "source",   "source_metric", "arch",
                                            "workload", "metric", "measured", "tolerance"};
const std::vector<std::string> kSources = {"gemm", "conv", "attention", "file", "model"};
// Keys of a `model:` workload only (tpusim run's model options).
const std::vector<std::string> kModelOnly = {"phase",
                                             "batch",
                                             "seq",
                                             "context",
                                             "image",
                                             "sequence_parallel",
                                             "recompute",
                                             "remat",
                                             "weight_dtype",
                                             "act_dtype",
                                             "kv_dtype",
                                             "fused_attention_backward",
                                             "moe_capacity_factor",
                                             "attention_kernel",
                                             "attention_blocks",
                                             "optimizer_dtype",
                                             "training_quant",
                                             "sample_layers"};
// Every workload key: a source, the keys of any source, the model's.
const std::vector<std::string> kWorkloadKeys = [] {
  std::vector<std::string> v = kSources;
  v.insert(v.end(), {"dtype", "fusion", "cmem"});
  v.insert(v.end(), kModelOnly.begin(), kModelOnly.end());
  return v;
}();
const std::vector<std::string> kMetricKeys = {"kind", "unit", "flops", "bytes", "tokens", "samples", "peak_tflops"};
const std::vector<std::string> kKinds = {"time", "tflops", "bandwidth", "tokens_per_second", "samples_per_second",
                                         "mfu"};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Diagnostics at YAML nodes (sim/config/node_diagnostics.h).
using Collector = NodeDiagnostics;

std::string kind_of(const YAML::Node& n) {
  if (n.IsMap()) return "a map";
  if (n.IsSequence()) return "a list";
  if (n.IsNull()) return "nothing";
  return "'" + n.Scalar() + "'";
}

void check_keys(const YAML::Node& map, const std::vector<std::string>& valid, const std::string& where, Collector& c) {
  for (const auto& kv : map) {
    const std::string k = kv.first.Scalar();
    if (!contains(valid, k))
      c.add(kv.first, where.empty() ? k : where + "." + k, "one of: " + join(valid), "unknown key '" + k + "'",
            nearest_word(k, valid));
  }
}

// A non-empty string scalar, or "" with a diagnostic.
std::string text(const YAML::Node& n, const std::string& key, Collector& c) {
  if (!n.IsScalar() || n.Scalar().empty()) {
    c.add(n, key, "a non-empty string", kind_of(n));
    return "";
  }
  return n.Scalar();
}

std::optional<double> number(const YAML::Node& n, const std::string& key, Collector& c) {
  if (n.IsScalar()) {
    const sweep::Value v = sweep::Value::from_text(n.Scalar());
    if (v.is_number && std::isfinite(v.number) && n.Scalar() != "true" && n.Scalar() != "false") return v.number;
  }
  c.add(n, key, "a number", kind_of(n));
  return std::nullopt;
}

bool boolean(const YAML::Node& n, const std::string& key, Collector& c) {
  if (n.IsScalar() && (n.Scalar() == "true" || n.Scalar() == "false")) return n.Scalar() == "true";
  c.add(n, key, "true or false", kind_of(n));
  return false;
}

std::string positive_int(const YAML::Node& n, const std::string& key, Collector& c) {
  const auto v = number(n, key, c);
  if (v && (*v < 1 || *v != std::floor(*v))) c.add(n, key, "an integer >= 1", "'" + n.Scalar() + "'");
  return n.IsScalar() ? n.Scalar() : "";
}

// An expression over numbers and summary.csv columns.
std::optional<sweep::Expr> expression(const YAML::Node& n, const std::string& key, Collector& c) {
  if (!n.IsScalar() || n.Scalar().empty()) {
    c.add(n, key, "a number or an expression over summary.csv columns", kind_of(n));
    return std::nullopt;
  }
  try {
    sweep::Expr e = sweep::Expr::parse(n.Scalar());
    const auto& cols = sweep::summary_columns();
    for (const auto& [name, col] : e.names())
      if (!contains(cols, name))
        c.add(n, key, "names of summary.csv columns (docs/results.md)", "unknown name '" + name + "'",
              nearest_word(name, cols));
    return e;
  } catch (const sweep::ExprError& err) {
    c.add(n, key, "a valid expression", std::string(err.what()) + " at column " + std::to_string(err.column()));
    return std::nullopt;
  }
}

void parse_workload(const YAML::Node& w, const std::string& dir, Case& k, Collector& c) {
  const std::string where = "cases[" + k.id + "].workload";
  if (!w.IsMap()) {
    c.add(w, where, "a map with one of gemm, conv, attention, file, model", kind_of(w));
    return;
  }
  check_keys(w, kWorkloadKeys, where, c);
  std::vector<std::string> given;
  for (const auto& s : kSources)
    if (w[s]) given.push_back(s);
  if (given.size() != 1) {
    c.add(w, where, "exactly one of gemm, conv, attention, file, model",
          given.empty() ? "none" : "'" + join(given) + "'");
    return;
  }
  Workload& wl = k.workload;
  wl.source = given[0];
  wl.value = text(w[wl.source], where + "." + wl.source, c);
  // A file named by the case: relative to the case file; false (and a
  // diagnostic) when there is no such file.
  auto case_file_path = [&](const std::string& key, const std::string& what) {
    fs::path p(wl.value);
    if (p.is_relative()) p = fs::path(dir) / p;
    wl.value = p.lexically_normal().string();
    if (fs::is_regular_file(p)) return true;
    c.add(w[key], where + "." + key, "an existing " + what + " (relative to the case file)",
          "'" + wl.value + "' does not exist");
    return false;
  };
  if (wl.source == "file" && !wl.value.empty()) case_file_path("file", "workload file");
  // A model: a name of the zoo, or a model file (a path, as load_model
  // tells them apart), read here so that its errors are the case file's.
  std::optional<models::ModelSpec> spec;
  if (wl.source == "model" && !wl.value.empty()) {
    if (models::is_model_path(wl.value)) {
      if (case_file_path("model", "model file")) {
        try {
          spec = models::load_model(wl.value);
        } catch (const std::exception& e) {
          c.add(w["model"], where + ".model", "a valid model file", e.what());
        }
      }
    } else {
      const auto names = models::list_models();
      if (contains(names, wl.value)) {
        if (w["sample_layers"]) spec = models::load_model(wl.value);  // the only reader of a zoo model here
      } else {
        c.add(w["model"], where + ".model", "a model of the zoo (tpusim model list) or a model file (.yaml)",
              "'" + wl.value + "'", nearest_word(wl.value, names));
      }
    }
  }
  if (wl.source != "model")
    for (const auto& m : kModelOnly)
      if (w[m]) c.add(w[m], where + "." + m, "'" + m + "' only with model", "workload source " + wl.source);
  const std::pair<const char*, std::string*> dtypes[] = {{"dtype", &wl.dtype},
                                                         {"weight_dtype", &wl.weight_dtype},
                                                         {"act_dtype", &wl.act_dtype},
                                                         {"kv_dtype", &wl.kv_dtype}};
  for (const auto& [key, dst] : dtypes) {
    if (!w[key]) continue;
    *dst = text(w[key], where + "." + key, c);
    if (!dst->empty() && !arch::parse_dtype(*dst))
      c.add(w[key], where + "." + key, "a dtype (f32, bf16, fp8_e4m3, int8, ...)", "'" + *dst + "'");
  }
  if (w["dtype"] && wl.source == "file" && !workloads::is_scalesim_path(wl.value))
    c.add(w["dtype"], where + ".dtype", "'dtype' only with gemm, conv, attention, model or a SCALE-Sim .csv",
          "a workload file, which gives each tensor its dtype");
  if (w["phase"]) {
    wl.phase = text(w["phase"], where + ".phase", c);
    models::Phase ph;
    if (!wl.phase.empty() && !models::parse_phase(wl.phase, &ph))
      c.add(w["phase"], where + ".phase", "a phase: prefill, decode, train, infer", "'" + wl.phase + "'");
  }
  if (w["batch"]) wl.batch = positive_int(w["batch"], where + ".batch", c);
  if (w["seq"]) wl.seq = positive_int(w["seq"], where + ".seq", c);
  if (w["context"]) wl.context = positive_int(w["context"], where + ".context", c);
  if (w["image"]) wl.image = positive_int(w["image"], where + ".image", c);
  if (w["fusion"]) wl.fusion = boolean(w["fusion"], where + ".fusion", c);
  if (w["cmem"]) wl.cmem = boolean(w["cmem"], where + ".cmem", c);
  if (w["sequence_parallel"]) wl.sequence_parallel = boolean(w["sequence_parallel"], where + ".sequence_parallel", c);
  if (w["recompute"]) wl.recompute = boolean(w["recompute"], where + ".recompute", c);
  if (w["fused_attention_backward"])
    wl.fused_attention_backward = boolean(w["fused_attention_backward"], where + ".fused_attention_backward", c);
  if (w["moe_capacity_factor"]) {
    const std::string key = where + ".moe_capacity_factor";
    const std::optional<double> f = number(w["moe_capacity_factor"], key, c);
    if (f && !(*f >= 0 && *f <= 64))
      c.add(w["moe_capacity_factor"], key, "a capacity factor in [0, 64] (0: dropless)",
            "'" + w["moe_capacity_factor"].Scalar() + "'");
    else if (f)
      wl.moe_capacity_factor = w["moe_capacity_factor"].Scalar();
  }
  if (w["attention_kernel"]) {
    const std::string key = where + ".attention_kernel";
    models::AttentionImpl k;
    if (!w["attention_kernel"].IsScalar() || !models::parse_attention_impl(w["attention_kernel"].Scalar(), &k))
      c.add(w["attention_kernel"], key, "flash, dense or batched", kind_of(w["attention_kernel"]));
    else
      wl.attention_kernel = w["attention_kernel"].Scalar();
  }
  if (w["attention_blocks"]) {
    const std::string key = where + ".attention_blocks";
    models::SplashBlocks b;
    std::string err =
        w["attention_blocks"].IsScalar() ? models::parse_splash_blocks(w["attention_blocks"].Scalar(), &b) : "a string";
    if (!err.empty())
      c.add(w["attention_blocks"], key, err, kind_of(w["attention_blocks"]));
    else
      wl.attention_blocks = w["attention_blocks"].Scalar();
  }
  if (w["optimizer_dtype"]) {
    const std::string key = where + ".optimizer_dtype";
    arch::DType d;
    if (!w["optimizer_dtype"].IsScalar() || !models::parse_optimizer_dtype(w["optimizer_dtype"].Scalar(), &d))
      c.add(w["optimizer_dtype"], key, "f32 or bf16", kind_of(w["optimizer_dtype"]));
    else
      wl.optimizer_dtype = w["optimizer_dtype"].Scalar();
  }
  if (w["training_quant"]) {
    const std::string key = where + ".training_quant";
    std::optional<arch::DType> tq;
    if (!w["training_quant"].IsScalar() || !models::parse_training_quant(w["training_quant"].Scalar(), &tq))
      c.add(w["training_quant"], key, "int8, fp8 or none", kind_of(w["training_quant"]));
    else
      wl.training_quant = w["training_quant"].Scalar();
  }
  if (w["sample_layers"] && spec) {
    const std::string key = where + ".sample_layers";
    const std::optional<double> n = number(w["sample_layers"], key, c);
    const std::string why = models::layer_sampling_obstacle(*spec);
    const std::int64_t layers = why.empty() ? spec->transformer.layers : 0;
    const std::int64_t base = models::layer_sampling_base(*spec);
    const std::int64_t period = models::layer_sampling_period(*spec);
    const std::string below = base > 0 ? std::to_string(base) + " + 2 x n below the model's " + std::to_string(layers) +
                                             " layers (its first " + std::to_string(base) + " run whole)"
                                       : "2 x n below the model's " + std::to_string(layers) + " layers";
    const std::string multiple =
        period > 1 ? ", a multiple of its layers' period " + std::to_string(period) + " (local and global attention)"
                   : "";
    if (!n) {
      // number() reported it
    } else if (!why.empty()) {
      c.add(w["sample_layers"], key, "no layer sampling for model " + wl.value, why);
    } else if (!(*n >= 1 && *n == std::floor(*n) && static_cast<double>(base) + 2 * *n < static_cast<double>(layers) &&
                 std::fmod(*n, static_cast<double>(period)) == 0)) {
      c.add(w["sample_layers"], key, "an integer n >= 1 with " + below + multiple,
            "'" + w["sample_layers"].Scalar() + "'");
    } else {
      wl.sample_layers = static_cast<std::int64_t>(*n);
      wl.sample_base = base;
      wl.model_layers = layers;
    }
  }
  if (w["remat"]) {
    wl.remat = text(w["remat"], where + ".remat", c);
    models::RematPolicy r = models::RematPolicy::none;
    models::RematCustom custom;
    const std::string err =
        wl.remat.empty() ? "" : models::parse_remat_spec(wl.remat, &r, &custom);  // empty: text() reported it
    if (!err.empty())
      c.add(w["remat"], where + ".remat", err, "'" + wl.remat + "'");
    else if (!wl.remat.empty() && wl.recompute && r != models::RematPolicy::full)
      c.add(w["remat"], where + ".remat", "full, as recompute: true says", "'" + wl.remat + "'");
  }
}

void parse_metric(const YAML::Node& m, Case& k, Collector& c) {
  const std::string where = "cases[" + k.id + "].metric";
  if (!m.IsMap()) {
    c.add(m, where, "a map with kind and unit", kind_of(m));
    return;
  }
  check_keys(m, kMetricKeys, where, c);
  if (!m["kind"] || !m["unit"]) {
    c.add(m, where, "kind and unit", std::string("no ") + (m["kind"] ? "unit" : "kind"));
    return;
  }
  const std::string kind = text(m["kind"], where + ".kind", c);
  const std::string unit = text(m["unit"], where + ".unit", c);
  Metric& mt = k.metric;
  mt.unit = unit;
  // Units each kind accepts, with the SI value of one unit.
  std::vector<std::pair<std::string, double>> units;
  if (kind == "time") {
    mt.kind = MetricKind::Time;
    units = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}};
  } else if (kind == "tflops") {
    mt.kind = MetricKind::Tflops;
    units = {{"TFLOP/s", 1e12}};
  } else if (kind == "bandwidth") {
    mt.kind = MetricKind::Bandwidth;
    units = {{"GB/s", 1e9}, {"TB/s", 1e12}};
  } else if (kind == "tokens_per_second") {
    mt.kind = MetricKind::TokensPerSecond;
    units = {{"tokens/s", 1}};
  } else if (kind == "samples_per_second") {
    mt.kind = MetricKind::SamplesPerSecond;
    units = {{"samples/s", 1}};
  } else if (kind == "mfu") {
    mt.kind = MetricKind::Mfu;
    units = {{"%", 1}};
  } else {
    if (!kind.empty())
      c.add(m["kind"], where + ".kind", "one of: " + join(kKinds), "'" + kind + "'", nearest_word(kind, kKinds));
    return;
  }
  std::vector<std::string> names;
  bool found = false;
  for (const auto& [u, s] : units) {
    names.push_back(u);
    if (u == unit) {
      mt.unit_scale = s;
      found = true;
    }
  }
  if (!found && !unit.empty())
    c.add(m["unit"], where + ".unit", "for kind " + kind + ": " + join(names), "'" + unit + "'");
  // Keys that only some kinds read, with the kinds named for the message.
  auto only_for = [&](const std::string& key, std::vector<MetricKind> kinds, const std::string& names) {
    if (m[key] && std::find(kinds.begin(), kinds.end(), mt.kind) == kinds.end())
      c.add(m[key], where + "." + key, "'" + key + "' only for kind " + names, "kind " + kind);
  };
  only_for("flops", {MetricKind::Tflops, MetricKind::Mfu}, "tflops or mfu");
  only_for("bytes", {MetricKind::Bandwidth}, "bandwidth");
  only_for("tokens", {MetricKind::TokensPerSecond}, "tokens_per_second");
  only_for("samples", {MetricKind::SamplesPerSecond}, "samples_per_second");
  only_for("peak_tflops", {MetricKind::Mfu}, "mfu");
  auto required = [&](const std::string& key, MetricKind kd) {
    if (mt.kind == kd && !m[key]) c.add(m, where + "." + key, "'" + key + "' for kind " + kind, "none");
  };
  required("bytes", MetricKind::Bandwidth);
  required("tokens", MetricKind::TokensPerSecond);
  required("samples", MetricKind::SamplesPerSecond);
  required("peak_tflops", MetricKind::Mfu);
  if (m["flops"]) mt.flops = expression(m["flops"], where + ".flops", c);
  if (m["bytes"]) mt.bytes = expression(m["bytes"], where + ".bytes", c);
  if (m["tokens"]) mt.tokens = expression(m["tokens"], where + ".tokens", c);
  if (m["samples"]) mt.samples = expression(m["samples"], where + ".samples", c);
  if (m["peak_tflops"]) {
    const auto p = number(m["peak_tflops"], where + ".peak_tflops", c);
    if (p && *p <= 0) c.add(m["peak_tflops"], where + ".peak_tflops", "a number > 0", m["peak_tflops"].Scalar());
    if (p) mt.peak_tflops = *p;
  }
}

// Checks that the chip config and overrides resolve; a ConfigError from the
// loader becomes one diagnostic at the case's `arch` or `set`.
void check_config(const YAML::Node& at, const Case& k, const ConfigSearchPath& search, Collector& c) {
  try {
    (void)load_tpu_config(k.arch, k.sets, search);
  } catch (const ConfigError& e) {
    std::string all;
    for (const auto& d : e.diagnostics()) all += (all.empty() ? "" : "; ") + d.render();
    c.add(at, "cases[" + k.id + "]." + (k.sets.empty() ? "arch" : "set"), "a chip config and overrides that resolve",
          all);
  } catch (const arch::ConfigError& e) {
    c.add(at, "cases[" + k.id + "].arch", "a valid chip config", e.what());
  }
}

}  // namespace

const char* metric_kind_name(MetricKind k) {
  switch (k) {
    case MetricKind::Time: return "time";
    case MetricKind::Tflops: return "tflops";
    case MetricKind::Bandwidth: return "bandwidth";
    case MetricKind::TokensPerSecond: return "tokens_per_second";
    case MetricKind::SamplesPerSecond: return "samples_per_second";
    case MetricKind::Mfu: return "mfu";
  }
  return "?";
}

std::string default_cases_dir() { return (fs::path(TPUSIM_SOURCE_DIR) / "configs" / "validation").string(); }

std::vector<Case> parse_case_file(const std::string& content, const std::string& file, const ConfigSearchPath& search) {
  Collector c(file);
  // Read through const nodes only: operator[] on a non-const YAML::Node
  // inserts the key it looks up.
  YAML::Node loaded;
  try {
    loaded = YAML::Load(content);
  } catch (const YAML::Exception& e) {
    Diagnostic d;
    d.file = file;
    d.line = e.mark.line >= 0 ? e.mark.line + 1 : 0;
    d.column = e.mark.column >= 0 ? e.mark.column + 1 : 0;
    d.expected = "valid YAML";
    d.found = e.msg;
    throw ConfigError(d);
  }
  const YAML::Node& root = loaded;
  if (!root.IsMap()) {
    c.add(root, "", "a map with family and cases", kind_of(root));
    throw ConfigError(c.diags);
  }
  check_keys(root, kTopKeys, "", c);
  std::string family;
  if (!root["family"])
    c.add(root, "family", "a family name", "none");
  else
    family = text(root["family"], "family", c);
  const YAML::Node defaults =
      root["defaults"] && root["defaults"].IsMap() ? root["defaults"] : YAML::Node(YAML::NodeType::Undefined);
  if (root["defaults"] && !root["defaults"].IsMap())
    c.add(root["defaults"], "defaults", "a map of case keys", kind_of(root["defaults"]));
  if (defaults) {
    check_keys(defaults, kCaseKeys, "defaults", c);
    if (defaults["id"]) c.add(defaults["id"], "defaults.id", "a key every case may share (not id)", "id");
  }
  const YAML::Node cases = root["cases"];
  std::vector<Case> out;
  if (!cases || !cases.IsSequence() || cases.size() == 0) {
    c.add(cases ? cases : root, "cases", "a non-empty list of cases", cases ? kind_of(cases) : "none");
    throw ConfigError(c.diags);
  }
  const std::string dir = fs::path(file).parent_path().string();
  static const std::regex id_re("[A-Za-z0-9][A-Za-z0-9._-]*");
  std::size_t index = 0;
  for (const auto& entry : cases) {
    const std::string at = "cases[" + std::to_string(index++) + "]";
    if (!entry.IsMap()) {
      c.add(entry, at, "a map", kind_of(entry));
      continue;
    }
    check_keys(entry, kCaseKeys, at, c);
    // The case's own keys, then the defaults for those it lacks.
    auto get = [&](const std::string& key) -> YAML::Node {
      if (entry[key]) return entry[key];
      if (defaults && defaults[key]) return defaults[key];
      return YAML::Node(YAML::NodeType::Undefined);  // false, unlike Node() (a defined null)
    };
    Case k;
    k.file = file;
    k.line = entry.Mark().line + 1;
    k.family = family;
    if (entry["id"]) k.id = text(entry["id"], at + ".id", c);
    if (!k.id.empty() && !std::regex_match(k.id, id_re))
      c.add(entry["id"], at + ".id", "letters, digits, '.', '_' or '-'", "'" + k.id + "'");
    const std::string where = "cases[" + (k.id.empty() ? std::to_string(index - 1) : k.id) + "]";
    bool complete = true;
    for (const auto& r : kRequired)
      if (!get(r)) {
        c.add(entry, where + "." + r, "a value for '" + r + "'", "none");
        complete = false;
      }
    if (!complete) continue;
    k.title = text(get("title"), where + ".title", c);
    k.source = text(get("source"), where + ".source", c);
    k.source_metric = text(get("source_metric"), where + ".source_metric", c);
    if (get("notes")) k.notes = text(get("notes"), where + ".notes", c);
    k.arch = text(get("arch"), where + ".arch", c);
    if (const YAML::Node s = get("set")) {
      if (!s.IsSequence()) {
        c.add(s, where + ".set", "a list of key=value overrides", kind_of(s));
      } else {
        for (const auto& v : s) {
          const std::string kv = text(v, where + ".set", c);
          if (!kv.empty() && kv.find('=') == std::string::npos)
            c.add(v, where + ".set", "key=value", "'" + kv + "'");
          else if (!kv.empty())
            k.sets.push_back(kv);
        }
      }
    }
    if (get("slice")) k.slice = text(get("slice"), where + ".slice", c);
    if (get("mesh")) {
      k.mesh = text(get("mesh"), where + ".mesh", c);
      if (k.slice.empty()) c.add(get("mesh"), where + ".mesh", "a slice with the mesh", "no slice");
    }
    parse_workload(get("workload"), dir, k, c);
    parse_metric(get("metric"), k, c);
    if (k.workload.sample_layers > 0) {
      // A sampled case's summary holds the extrapolated columns only (runner.h).
      const std::pair<const char*, const std::optional<sweep::Expr>*> exprs[] = {{"flops", &k.metric.flops},
                                                                                 {"bytes", &k.metric.bytes},
                                                                                 {"tokens", &k.metric.tokens},
                                                                                 {"samples", &k.metric.samples}};
      for (const auto& [key, e] : exprs) {
        if (!*e) continue;
        for (const auto& [name, col] : (*e)->names()) {
          const auto& ok = kSampledColumns;
          if (std::find(std::begin(ok), std::end(ok), name) == std::end(ok))
            c.add(get("metric")[key], where + ".metric." + key,
                  "with sample_layers, a number or an expression over seconds, total_flops, model_flops, "
                  "hardware_flops",
                  "'" + name + "'");
        }
      }
    }
    if (const auto v = number(get("measured"), where + ".measured", c)) {
      if (*v <= 0) c.add(get("measured"), where + ".measured", "a value > 0", get("measured").Scalar());
      k.measured = *v;
    }
    if (const auto v = number(get("tolerance"), where + ".tolerance", c)) {
      if (*v <= 0 || *v > 1)
        c.add(get("tolerance"), where + ".tolerance", "a relative tolerance in (0, 1], e.g. 0.15",
              get("tolerance").Scalar());
      k.tolerance = *v;
    }
    if (const YAML::Node e = get("expect")) {
      const std::string v = text(e, where + ".expect", c);
      if (v != "miss" && !v.empty()) c.add(e, where + ".expect", "miss", "'" + v + "'");
      k.expect_miss = v == "miss";
      if (!get("reason")) c.add(e, where + ".reason", "a reason with expect: miss", "none");
    }
    if (const YAML::Node r = get("reason")) {
      k.reason = text(r, where + ".reason", c);
      if (!get("expect")) c.add(r, where + ".reason", "a reason only with expect: miss", "no expect");
    }
    if (const YAML::Node f = get("fitted")) k.fitted = text(f, where + ".fitted", c);
    if (!k.arch.empty()) check_config(get("set") ? get("set") : get("arch"), k, search, c);
    out.push_back(std::move(k));
  }
  std::map<std::string, int> seen;
  for (const auto& k : out) {
    if (k.id.empty()) continue;
    auto [it, fresh] = seen.emplace(k.id, k.line);
    if (!fresh) {
      Diagnostic d;
      d.file = file;
      d.line = k.line;
      d.key = "cases[" + k.id + "].id";
      d.expected = "an id unique in the suite";
      d.found = "'" + k.id + "', already the id of the case at line " + std::to_string(it->second);
      c.diags.push_back(d);
    }
  }
  if (!c.diags.empty()) throw ConfigError(c.diags);
  return out;
}

std::vector<Case> load_cases(const std::string& path, const ConfigSearchPath& search) {
  return load_cases(std::vector<std::string>{path}, search);
}

std::vector<Case> load_cases(const std::vector<std::string>& paths, const ConfigSearchPath& search) {
  std::vector<std::string> files;
  for (const auto& path : paths) {
    std::vector<std::string> here;
    if (fs::is_directory(path)) {
      for (const auto& e : fs::directory_iterator(path))
        if (e.is_regular_file() && e.path().extension() == ".yaml") here.push_back(e.path().string());
      std::sort(here.begin(), here.end());
    } else if (fs::is_regular_file(path)) {
      here.push_back(path);
    }
    if (here.empty()) {
      Diagnostic d;
      d.file = path;
      d.expected = "a case file or a folder of *.yaml case files";
      d.found = fs::exists(path) ? "no *.yaml file" : "no such file or folder";
      throw ConfigError(d);
    }
    files.insert(files.end(), here.begin(), here.end());
  }
  std::vector<Case> all;
  std::vector<Diagnostic> diags;
  std::map<std::string, std::string> where;  // id -> file:line
  for (const auto& f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    try {
      for (auto& k : parse_case_file(ss.str(), f, search)) {
        const std::string here = k.file + ":" + std::to_string(k.line);
        auto [it, fresh] = where.emplace(k.id, here);
        if (!fresh) {
          Diagnostic d;
          d.file = k.file;
          d.line = k.line;
          d.key = "cases[" + k.id + "].id";
          d.expected = "an id unique in the suite";
          d.found = "'" + k.id + "', already the id of the case at " + it->second;
          diags.push_back(d);
        }
        all.push_back(std::move(k));
      }
    } catch (const ConfigError& e) {
      diags.insert(diags.end(), e.diagnostics().begin(), e.diagnostics().end());
    }
  }
  if (!diags.empty()) throw ConfigError(diags);
  return all;
}

std::vector<std::string> run_args(const Case& c) {
  std::vector<std::string> a = {"run", "--arch", c.arch, "--quiet"};
  for (const auto& s : c.sets) a.insert(a.end(), {"--set", s});
  if (!c.slice.empty()) a.insert(a.end(), {"--slice", c.slice});
  if (!c.mesh.empty()) a.insert(a.end(), {"--mesh", c.mesh});
  const Workload& w = c.workload;
  a.insert(a.end(), {"--" + (w.source == "file" ? std::string("workload") : w.source), w.value});
  if (!w.dtype.empty()) a.insert(a.end(), {"--dtype", w.dtype});
  const std::pair<const char*, const std::string*> model_opts[] = {
      {"--phase", &w.phase},         {"--batch", &w.batch},      {"--seq", &w.seq},
      {"--context", &w.context},     {"--image", &w.image},      {"--weight-dtype", &w.weight_dtype},
      {"--act-dtype", &w.act_dtype}, {"--kv-dtype", &w.kv_dtype}};
  for (const auto& [flag, v] : model_opts)
    if (!v->empty()) a.insert(a.end(), {flag, *v});
  if (w.sequence_parallel) a.push_back("--sequence-parallel");
  if (w.recompute) a.push_back("--recompute");
  if (w.fused_attention_backward) a.push_back("--fused-attention-backward");
  if (!w.moe_capacity_factor.empty()) a.insert(a.end(), {"--moe-capacity-factor", w.moe_capacity_factor});
  if (!w.attention_kernel.empty()) a.insert(a.end(), {"--attention-kernel", w.attention_kernel});
  if (!w.attention_blocks.empty()) a.insert(a.end(), {"--attention-blocks", w.attention_blocks});
  if (!w.optimizer_dtype.empty()) a.insert(a.end(), {"--optimizer-dtype", w.optimizer_dtype});
  if (!w.training_quant.empty()) a.insert(a.end(), {"--training-quant", w.training_quant});
  if (!w.remat.empty()) a.insert(a.end(), {"--remat", w.remat});
  if (!w.fusion) a.push_back("--no-fusion");
  if (!w.cmem) a.push_back("--no-cmem");
  return a;
}

double simulated_value(const Case& c, const std::map<std::string, std::string>& summary) {
  auto lookup = [&](const std::string& name) -> std::optional<sweep::Value> {
    auto it = summary.find(name);
    if (it == summary.end()) return std::nullopt;
    return sweep::Value::from_text(it->second);
  };
  auto eval = [&](const sweep::Expr& e, const char* what) {
    const sweep::Value v = e.eval(lookup);
    if (!v.is_number || !std::isfinite(v.number))
      throw std::runtime_error(std::string(what) + " '" + e.text() + "' is not a number");
    return v.number;
  };
  const auto s = lookup("seconds");
  if (!s || !s->is_number || !(s->number > 0))
    throw std::runtime_error("the run's summary.csv has no positive 'seconds'");
  const double sec = s->number;
  const Metric& m = c.metric;
  auto flops = [&] {
    if (m.flops) return eval(*m.flops, "flops");
    const auto f = lookup("total_flops");
    if (!f || !f->is_number) throw std::runtime_error("the run's summary.csv has no 'total_flops'");
    return f->number;
  };
  switch (m.kind) {
    case MetricKind::Time: return sec / m.unit_scale;
    case MetricKind::Tflops: return flops() / sec / 1e12;
    case MetricKind::Bandwidth: return eval(*m.bytes, "bytes") / sec / m.unit_scale;
    case MetricKind::TokensPerSecond: return eval(*m.tokens, "tokens") / sec;
    case MetricKind::SamplesPerSecond: return eval(*m.samples, "samples") / sec;
    case MetricKind::Mfu: return 100.0 * flops() / sec / (m.peak_tflops * 1e12);
  }
  throw std::logic_error("unknown metric kind");
}

}  // namespace tpusim::sim::validate
