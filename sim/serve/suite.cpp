#include "sim/serve/suite.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "sim/cli/cli.h"
#include "sim/config/config_error.h"
#include "sim/config/node_diagnostics.h"
#include "sim/results/format.h"
#include "sim/serve/report.h"
#include "sim/serve/request_workload.h"
#include "sim/sweep/results_table.h"

namespace tpusim::sim::serve {

namespace {

enum class Kind { text, integer, number, boolean, list };

// Keys a scenario (or `defaults:`) may set, each one `tpusim serve` flag
// (underscores for dashes; docs/serving.md lists them).
const std::map<std::string, Kind>& value_keys() {
  static const std::map<std::string, Kind> k = {
      {"arch", Kind::text},
      {"set", Kind::list},
      {"slice", Kind::text},
      {"mesh", Kind::text},
      {"twisted", Kind::boolean},
      {"model", Kind::text},
      {"dtype", Kind::text},
      {"attention_kernel", Kind::text},
      {"replicas", Kind::integer},
      {"requests", Kind::integer},
      {"input", Kind::text},
      {"output", Kind::text},
      {"seed", Kind::integer},
      {"max_batch", Kind::integer},
      {"max_tokens", Kind::integer},
      {"chunked_prefill", Kind::boolean},
      {"policy", Kind::text},
      {"batching", Kind::text},
      {"page_size", Kind::integer},
      {"kv_pages", Kind::integer},
      {"slo", Kind::text},
      {"rate", Kind::number},
      {"concurrency", Kind::integer},
      {"rate_tolerance", Kind::number},
      {"spec_tokens", Kind::integer},
      {"draft_model", Kind::text},
      {"acceptance", Kind::text},
      {"notes", Kind::text},
  };
  return k;
}

const char* const kKinds[] = {"offline", "server", "poisson", "closed"};

using Diags = NodeDiagnostics;

std::string text_of(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

bool full_int(const std::string& s, long long* v) {
  try {
    std::size_t used = 0;
    *v = std::stoll(s, &used);
    return used == s.size();
  } catch (const std::exception&) {
    return false;
  }
}

bool full_double(const std::string& s, double* v) {
  try {
    std::size_t used = 0;
    *v = std::stod(s, &used);
    return used == s.size() && std::isfinite(*v);
  } catch (const std::exception&) {
    return false;
  }
}

// One map of values (defaults or a scenario) into `into`; `where` prefixes keys.
void read_values(const YAML::Node& map, const std::string& where, const std::set<std::string>& extra,
                 std::map<std::string, std::string>& into, std::vector<std::string>& sets,
                 std::map<std::string, YAML::Node>& nodes, Diags& d) {
  std::vector<std::string> known;
  for (const auto& [k, kind] : value_keys()) known.push_back(k);
  known.insert(known.end(), extra.begin(), extra.end());
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) {  // e.g. a flow map as a key
      d.add(kv.first, where, "a key name", text_of(kv.first));
      continue;
    }
    const std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    const std::string path = where + key;
    if (extra.count(key)) continue;
    const auto it = value_keys().find(key);
    if (it == value_keys().end()) {
      d.add(kv.first, path, "a scenario key", "'" + key + "'", nearest_word(key, known));
      continue;
    }
    nodes[key] = v;
    if (it->second == Kind::list) {
      sets.clear();
      if (v.IsScalar()) {
        sets.push_back(v.Scalar());
      } else if (v.IsSequence()) {
        for (const auto& s : v) {
          if (!s.IsScalar() || s.Scalar().find('=') == std::string::npos)
            d.add(s, path, "key=value", text_of(s));
          else
            sets.push_back(s.Scalar());
        }
      } else {
        d.add(v, path, "key=value or a list of them", text_of(v));
      }
      continue;
    }
    if (!v.IsScalar()) {
      d.add(v, path, "a scalar", text_of(v));
      continue;
    }
    const std::string s = v.Scalar();
    long long i = 0;
    double x = 0;
    switch (it->second) {
      case Kind::integer:
        if (!full_int(s, &i) || i < 0) d.add(v, path, "a non-negative integer", "'" + s + "'");
        break;
      case Kind::number:
        if (!full_double(s, &x) || !(x > 0)) d.add(v, path, "a positive number", "'" + s + "'");
        break;
      case Kind::boolean:
        if (s != "true" && s != "false") d.add(v, path, "true or false", "'" + s + "'");
        break;
      case Kind::text:
      case Kind::list: break;
    }
    into[key] = s;
  }
}

// A model given as a file relative to the suite resolves next to the suite
// file when it exists there (else as given, from the working directory).
std::string resolve_model(const std::string& v, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const bool file =
      v.size() > 5 && (v.compare(v.size() - 5, 5, ".yaml") == 0 || v.compare(v.size() - 4, 4, ".yml") == 0);
  if (!file || fs::path(v).is_absolute()) return v;
  const fs::path p = dir / v;
  return fs::exists(p) ? p.lexically_normal().string() : v;
}

}  // namespace

Suite load_suite(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("suite: cannot read '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return parse_suite(text.str(), path);
}

Suite parse_suite(const std::string& text, const std::string& path) {
  namespace fs = std::filesystem;
  Diags d(path);
  Suite suite;
  suite.file = path;
  suite.name = fs::path(path).stem().string();
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    Diagnostic g;
    g.file = path;
    g.line = e.mark.line + 1;
    g.column = e.mark.column + 1;
    g.expected = "valid YAML";
    g.found = e.msg;
    throw ConfigError(g);
  }
  if (!root.IsMap()) {
    d.add(root, "", "a map with suite, defaults and scenarios", text_of(root));
    d.check();
  }
  std::map<std::string, std::string> defaults;
  std::vector<std::string> default_sets;
  std::map<std::string, YAML::Node> default_nodes;
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) {
      d.add(kv.first, "", "suite, defaults or scenarios", text_of(kv.first));
      continue;
    }
    const std::string key = kv.first.Scalar();
    if (key != "suite" && key != "defaults" && key != "scenarios")
      d.add(kv.first, key, "suite, defaults or scenarios", "'" + key + "'",
            nearest_word(key, {"suite", "defaults", "scenarios"}));
  }
  if (const YAML::Node n = root["suite"]) {
    if (!n.IsScalar() || n.Scalar().empty())
      d.add(n, "suite", "a name", text_of(n));
    else
      suite.name = n.Scalar();
  }
  if (const YAML::Node n = root["defaults"]) {
    if (!n.IsMap())
      d.add(n, "defaults", "a map of scenario keys", text_of(n));
    else
      read_values(n, "defaults.", {}, defaults, default_sets, default_nodes, d);
  }
  const YAML::Node list = root["scenarios"];
  if (!list || !list.IsSequence() || list.size() == 0) {
    d.add(list ? list : root, "scenarios", "a non-empty list of scenarios", list ? text_of(list) : "nothing");
    d.check();
  }
  const std::regex name_re("[A-Za-z0-9._-]+");
  std::set<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node& n = list[i];
    const std::string where = "scenarios[" + std::to_string(i) + "].";
    if (!n.IsMap()) {
      d.add(n, where.substr(0, where.size() - 1), "a map", text_of(n));
      continue;
    }
    SuiteScenario sc;
    sc.values = defaults;
    sc.sets = default_sets;
    std::map<std::string, YAML::Node> nodes = default_nodes;
    read_values(n, where, {"name", "scenario"}, sc.values, sc.sets, nodes, d);
    const YAML::Node nm = n["name"];
    if (!nm || !nm.IsScalar() || !std::regex_match(nm.Scalar(), name_re))
      d.add(nm ? nm : n, where + "name", "a name of letters, digits, '.', '_' or '-'", nm ? text_of(nm) : "nothing");
    else if (!names.insert(nm.Scalar()).second)
      d.add(nm, where + "name", "a name not used by another scenario", "'" + nm.Scalar() + "' again");
    else
      sc.name = nm.Scalar();
    const YAML::Node kn = n["scenario"];
    std::vector<std::string> kinds(std::begin(kKinds), std::end(kKinds));
    if (!kn || !kn.IsScalar() || std::find(kinds.begin(), kinds.end(), kn.Scalar()) == kinds.end())
      d.add(kn ? kn : n, where + "scenario", "offline, server, poisson or closed", kn ? text_of(kn) : "nothing",
            kn && kn.IsScalar() ? nearest_word(kn.Scalar(), kinds) : "");
    else
      sc.kind = kn.Scalar();
    auto node_of = [&](const std::string& k) { return nodes.count(k) ? nodes[k] : n; };
    if (!sc.values.count("model")) d.add(n, where + "model", "a model (zoo name or file)", "nothing");
    for (const char* k : {"input", "output"}) {
      if (!sc.values.count(k)) continue;
      try {
        parse_length_dist(std::string("suite: ") + k, sc.values[k]);
      } catch (const UsageError& e) {
        d.add(node_of(k), where + k, "fixed:N, uniform:LO:HI, normal:MEAN:SD or hist:...", e.what());
      }
    }
    if (sc.values.count("slo")) {
      try {
        parse_slo(sc.values["slo"]);
      } catch (const UsageError& e) {
        d.add(node_of("slo"), where + "slo", "METRIC_STAT=TIME items, e.g. ttft_p99=2s,tpot_p99=200ms", e.what());
      }
    }
    if (sc.kind == "server" && !sc.values.count("slo"))
      d.add(n, where + "slo", "latency limits (a server scenario searches the highest rate meeting them)", "nothing");
    if (sc.kind == "poisson" && !sc.values.count("rate"))
      d.add(n, where + "rate", "requests per second (a poisson scenario)", "nothing");
    if (sc.kind == "closed" && !sc.values.count("concurrency"))
      d.add(n, where + "concurrency", "clients (a closed scenario)", "nothing");
    if (sc.kind != "server" && sc.values.count("rate_tolerance"))
      d.add(node_of("rate_tolerance"), where + "rate_tolerance", "only in server scenarios", sc.kind);
    const fs::path dir = fs::path(path).parent_path();
    for (const char* k : {"model", "draft_model"})
      if (sc.values.count(k)) sc.values[k] = resolve_model(sc.values[k], dir);
    if (sc.values.count("notes")) sc.notes = sc.values["notes"];
    suite.scenarios.push_back(std::move(sc));
  }
  d.check();
  return suite;
}

std::vector<std::string> SuiteScenario::serve_args() const {
  std::vector<std::string> a = {"serve"};
  auto flag = [](std::string k) {
    std::replace(k.begin(), k.end(), '_', '-');
    return "--" + k;
  };
  for (const auto& [k, v] : values) {
    if (k == "notes" || k == "set") continue;
    const Kind kind = value_keys().at(k);
    if (k == "chunked_prefill") {
      if (v == "false") a.push_back("--no-chunked-prefill");
    } else if (kind == Kind::boolean) {
      if (v == "true") a.push_back(flag(k));
    } else {  // a server scenario's rate is its search's first probe
      a.insert(a.end(), {flag(k), v});
    }
  }
  for (const auto& s : sets) a.insert(a.end(), {"--set", s});
  if (kind == "offline") {
    a.insert(a.end(), {"--arrival", "offline"});
  } else if (kind == "server") {
    a.insert(a.end(), {"--arrival", "poisson", "--find-max-rate"});
  } else if (kind == "poisson") {
    a.insert(a.end(), {"--arrival", "poisson"});
  } else {
    a.insert(a.end(), {"--arrival", "closed"});
  }
  return a;
}

const std::vector<std::string>& suite_columns() {
  static const std::vector<std::string> c = {
      "suite",          "scenario",  "kind",         "model",       "arch",       "slice",      "mesh",
      "replicas",       "requests",  "input",        "output",      "slo",        "rate",       "slo_met",
      "throughput_rps", "input_tps", "output_tps",   "ttft_p50_s",  "ttft_p99_s", "tpot_p50_s", "tpot_p99_s",
      "itl_p99_s",      "e2e_p99_s", "kv_util_peak", "preemptions", "notes"};
  return c;
}

std::vector<std::string> suite_row(const Suite& s, const SuiteScenario& sc, const std::string& summary_text,
                                   const std::string& summary_file) {
  const auto rows = sweep::parse_csv(summary_text);
  if (rows.size() < 2 || rows[0].size() != rows[1].size())
    throw UsageError("suite: " + summary_file + ": expected a header row and a value row");
  std::map<std::string, std::string> m;
  for (std::size_t i = 0; i < rows[0].size(); ++i) m[rows[0][i]] = rows[1][i];
  auto get = [&](const std::string& k) {
    const auto it = m.find(k);
    if (it == m.end()) throw UsageError("suite: " + summary_file + ": no column '" + k + "'");
    return it->second;
  };
  auto val = [&](const std::string& k) {
    const auto it = sc.values.find(k);
    return it == sc.values.end() ? std::string() : it->second;
  };
  std::vector<std::string> r;
  for (const std::string& c : suite_columns()) {
    if (c == "suite")
      r.push_back(s.name);
    else if (c == "scenario")
      r.push_back(sc.name);
    else if (c == "kind")
      r.push_back(sc.kind);
    else if (c == "input" || c == "output" || c == "slo")
      r.push_back(val(c));
    else if (c == "notes")
      r.push_back(sc.notes);
    else
      r.push_back(get(c));
  }
  return r;
}

void write_suite_table(const std::string& path, const SuiteTable& t) {
  std::ofstream f(path);
  auto line = [&](const std::vector<std::string>& v) {
    for (std::size_t i = 0; i < v.size(); ++i) f << (i ? "," : "") << csv_field(v[i]);
    f << "\n";
  };
  line(t.columns);
  for (const auto& r : t.rows) line(r);
  if (!f) throw UsageError("suite: cannot write " + path);
}

SuiteTable read_suite_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("suite diff: cannot read '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  const auto rows = sweep::parse_csv(text.str());
  if (rows.empty()) throw UsageError("suite diff: " + path + ": empty file (expected a suite.csv)");
  SuiteTable t;
  t.columns = rows[0];
  for (const char* k : {"suite", "scenario"})
    if (std::find(t.columns.begin(), t.columns.end(), k) == t.columns.end())
      throw UsageError("suite diff: " + path + ":1: no column '" + k + "' (expected a suite.csv)");
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].size() != t.columns.size())
      throw UsageError("suite diff: " + path + ":" + std::to_string(i + 1) + ": " + std::to_string(rows[i].size()) +
                       " fields, the header has " + std::to_string(t.columns.size()));
    t.rows.push_back(rows[i]);
  }
  return t;
}

std::string format_suite_table(const SuiteTable& t) {
  // The columns a reader compares first; the file has them all.
  const std::vector<std::string> show = {"scenario",   "kind",       "rate",       "slo_met",    "throughput_rps",
                                         "output_tps", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s"};
  std::vector<std::size_t> idx;
  for (const auto& c : show) {
    const auto it = std::find(t.columns.begin(), t.columns.end(), c);
    if (it != t.columns.end()) idx.push_back(static_cast<std::size_t>(it - t.columns.begin()));
  }
  auto cell = [](const std::string& v) {
    double x = 0;
    if (!full_double(v, &x)) return v;
    char b[32];
    std::snprintf(b, sizeof b, "%.4g", x);
    return std::string(b);
  };
  std::vector<std::size_t> width(idx.size());
  for (std::size_t j = 0; j < idx.size(); ++j) {
    width[j] = t.columns[idx[j]].size();
    for (const auto& r : t.rows) width[j] = std::max(width[j], cell(r[idx[j]]).size());
  }
  std::ostringstream o;
  auto line = [&](auto get) {
    for (std::size_t j = 0; j < idx.size(); ++j) {
      const std::string v = get(idx[j]);
      o << (j ? "  " : "") << v << std::string(width[j] - v.size(), ' ');
    }
    o << "\n";
  };
  line([&](std::size_t i) { return t.columns[i]; });
  for (const auto& r : t.rows) line([&](std::size_t i) { return cell(r[i]); });
  return o.str();
}

std::vector<std::string> diff_suite_tables(const SuiteTable& a, const SuiteTable& b, double rel_tol) {
  std::vector<std::string> out;
  auto col = [](const SuiteTable& t, const std::string& c) {
    const auto it = std::find(t.columns.begin(), t.columns.end(), c);
    return it == t.columns.end() ? -1 : static_cast<int>(it - t.columns.begin());
  };
  for (const auto& c : a.columns)
    if (col(b, c) < 0) out.push_back("column " + c + ": only in the first table");
  for (const auto& c : b.columns)
    if (col(a, c) < 0) out.push_back("column " + c + ": only in the second table");
  auto key = [&](const SuiteTable& t, const std::vector<std::string>& r) {
    return r[static_cast<std::size_t>(col(t, "suite"))] + "/" + r[static_cast<std::size_t>(col(t, "scenario"))];
  };
  std::map<std::string, const std::vector<std::string>*> rb;
  for (const auto& r : b.rows) rb[key(b, r)] = &r;
  std::set<std::string> seen;
  for (const auto& r : a.rows) {
    const std::string k = key(a, r);
    seen.insert(k);
    const auto it = rb.find(k);
    if (it == rb.end()) {
      out.push_back(k + ": only in the first table");
      continue;
    }
    for (std::size_t i = 0; i < a.columns.size(); ++i) {
      const int j = col(b, a.columns[i]);
      if (j < 0) continue;
      const std::string& x = r[i];
      const std::string& y = (*it->second)[static_cast<std::size_t>(j)];
      double u = 0, v = 0;
      if (full_double(x, &u) && full_double(y, &v)) {
        const double scale = std::max(std::abs(u), std::abs(v));
        if (u == v || std::abs(u - v) <= rel_tol * scale) continue;
        char b2[160];
        std::snprintf(b2, sizeof b2, ": %s -> %s (%+.3g%%)", x.c_str(), y.c_str(),
                      u != 0 ? 100.0 * (v - u) / std::abs(u) : 100.0);
        out.push_back(k + " " + a.columns[i] + b2);
      } else if (x != y) {
        out.push_back(k + " " + a.columns[i] + ": '" + x + "' -> '" + y + "'");
      }
    }
  }
  for (const auto& r : b.rows)
    if (!seen.count(key(b, r))) out.push_back(key(b, r) + ": only in the second table");
  return out;
}

}  // namespace tpusim::sim::serve
