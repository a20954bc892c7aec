// Config resolution: finding a chip config on the search path, parsing
// it, merging its `extends` chain, applying `--set` overrides and the HBM
// preset, with the origin (file, line) of every key; see config_loader.h.
// Validation of the result is in config_loader.cpp.
#include "sim/config/config_resolve.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "workloads/io/yaml_strict.h"

namespace tpusim::sim {
namespace fs = std::filesystem;
namespace config_detail {

std::string join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Scalar: return "'" + n.Scalar() + "'";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return "an empty value";
  }
  return "an empty value";
}

Diagnostic file_diag(const std::string& file, const YAML::Mark& m, std::string key, std::string expected,
                     std::string found) {
  Diagnostic d;
  d.file = file;
  if (!m.is_null()) {
    d.line = m.line + 1;
    d.column = m.column + 1;
  }
  d.key = std::move(key);
  d.expected = std::move(expected);
  d.found = std::move(found);
  return d;
}

namespace {

YAML::Node parse_file(const std::string& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw ConfigError(file_diag(file, YAML::Mark::null_mark(), "", "a readable config file", "no such file"));
  YAML::Node root;
  try {
    root = workloads::load_yaml_file_strict(file);
  } catch (const YAML::ParserException& e) {
    throw ConfigError(file_diag(file, e.mark, "", "valid YAML", "a syntax error: " + e.msg));
  } catch (const YAML::BadFile&) {
    throw ConfigError(
        file_diag(file, YAML::Mark::null_mark(), "", "a readable config file", "a file that cannot be read"));
  }
  if (!root.IsMap())
    throw ConfigError(
        file_diag(file, root.Mark(), "", "a map of config keys", root.IsNull() ? "an empty document" : describe(root)));
  return root;
}

void record(const YAML::Node& map, const std::string& file, const std::string& prefix, Origins& o, bool overwrite,
            bool is_override = false) {
  for (const auto& kv : map) {
    if (prefix.empty() && kv.first.Scalar() == "extends") continue;
    std::string path = join(prefix, kv.first.Scalar());
    if (overwrite || !o.count(path)) o[path] = Origin{file, kv.first.Mark(), kv.second.Mark(), is_override};
    if (kv.second.IsMap()) record(kv.second, file, path, o, overwrite, is_override);
  }
}

// Maps merge key by key, recursively; anything else in `over` replaces
// `base`; a null value in `over` deletes the key. Always builds new maps,
// never mutates either input (yaml-cpp nodes share data on assignment).
YAML::Node merge(const YAML::Node& base, const YAML::Node& over) {
  if (!base.IsMap() || !over.IsMap()) return over;
  YAML::Node r(YAML::NodeType::Map);
  for (const auto& kv : base) r[kv.first.Scalar()] = kv.second;
  for (const auto& kv : over) {
    const std::string k = kv.first.Scalar();
    // `key: ~` in a child removes an inherited value (e.g. a published
    // figure the parent states but the child's chip lacks).
    if (kv.second.IsNull()) {
      r.remove(k);
      continue;
    }
    if (base[k] && base[k].IsMap() && kv.second.IsMap())
      r[k] = merge(base[k], kv.second);
    else
      r[k] = kv.second;
  }
  return r;
}

std::string stem_of(const std::string& file) { return fs::path(file).stem().string(); }

std::string dir_of(const std::string& file) {
  fs::path p = fs::path(file).parent_path();
  return p.empty() ? "." : p.string();
}

std::string find_in(const std::string& name, const std::vector<std::string>& dirs) {
  for (const std::string& d : dirs)
    for (const char* ext : {".yaml", ".yml", ".json"}) {
      fs::path p = fs::path(d) / (name + ext);
      std::error_code ec;
      if (fs::is_regular_file(p, ec)) return p.string();
    }
  return "";
}

std::vector<std::string> names_in(const std::vector<std::string>& dirs) {
  std::set<std::string> names;
  for (const std::string& d : dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
      auto ext = it->path().extension();
      if (it->is_regular_file() && (ext == ".yaml" || ext == ".yml")) names.insert(it->path().stem().string());
    }
  }
  return {names.begin(), names.end()};
}

std::string dirs_text(const std::vector<std::string>& dirs) {
  std::string s;
  for (const auto& d : dirs) s += (s.empty() ? "" : ", ") + d;
  return s;
}

Resolved resolve_file(const std::string& file, std::vector<std::string> chain, const ConfigSearchPath& path) {
  std::string canon = fs::weakly_canonical(fs::path(file)).string();
  if (std::find(chain.begin(), chain.end(), canon) != chain.end()) {
    std::string cycle;
    for (const auto& c : chain) cycle += stem_of(c) + " -> ";
    cycle += stem_of(canon);
    throw ConfigError(
        file_diag(file, YAML::Mark::null_mark(), "extends", "an extends chain without cycles", "the cycle " + cycle));
  }
  chain.push_back(canon);
  YAML::Node root = parse_file(file);
  Resolved r;
  r.file = file;
  r.name = stem_of(file);
  YAML::Node own(YAML::NodeType::Map);
  for (const auto& kv : root)
    if (kv.first.Scalar() != "extends") own[kv.first.Scalar()] = kv.second;
  YAML::Node ext = root["extends"];
  if (!ext) {
    r.root = own;
    record(root, file, "", r.origins, true);  // `own` has fresh, unmarked keys
    return r;
  }
  if (!ext.IsScalar() || ext.Scalar().empty())
    throw ConfigError(file_diag(file, ext.Mark(), "extends", "the name or relative path of a config", describe(ext)));
  const std::string& target = ext.Scalar();
  std::string base_file;
  std::vector<std::string> dirs{dir_of(file)};
  dirs.insert(dirs.end(), path.dirs.begin(), path.dirs.end());
  if (looks_like_path(target)) {
    fs::path t(target);
    base_file = (t.is_absolute() ? t : fs::path(dir_of(file)) / t).string();
    std::error_code ec;
    if (!fs::is_regular_file(base_file, ec)) base_file.clear();
  } else {
    base_file = find_in(target, dirs);
  }
  if (base_file.empty()) {
    std::string chain_text;
    for (const auto& c : chain) chain_text += (chain_text.empty() ? "" : " -> ") + stem_of(c);
    Diagnostic d = file_diag(file, ext.Mark(), "extends", "an existing config (searched " + dirs_text(dirs) + ")",
                             "'" + target + "' (extends chain: " + chain_text + " -> " + target + ")");
    d.suggestion = nearest_word(target, names_in(dirs));
    throw ConfigError(d);
  }
  Resolved base = resolve_file(base_file, chain, path);
  r.root = merge(base.root, own);
  r.origins = std::move(base.origins);
  record(root, file, "", r.origins, true);
  return r;
}

void apply_overrides(Resolved& r, const std::vector<std::string>& overrides) {
  std::vector<Diagnostic> diags;
  for (const std::string& s : overrides) {
    const std::string where = "--set " + s;
    size_t eq = s.find('=');
    std::string key = eq == std::string::npos ? "" : s.substr(0, eq);
    std::vector<std::string> segs;
    std::stringstream ss(key);
    for (std::string seg; std::getline(ss, seg, '.');) segs.push_back(seg);
    bool bad_key =
        key.empty() || key.back() == '.' || std::any_of(segs.begin(), segs.end(), [](auto& x) { return x.empty(); });
    if (eq == std::string::npos || bad_key) {
      diags.push_back(file_diag(where, YAML::Mark::null_mark(), "", "key=value with a dotted key, e.g. mxu.rows=256",
                                "'" + s + "'"));
      continue;
    }
    if (segs[0] == "extends") {
      diags.push_back(
          file_diag(where, YAML::Mark::null_mark(), key, "a config key (extends cannot be overridden)", "'extends'"));
      continue;
    }
    YAML::Node value;
    try {
      value = workloads::load_yaml_strict(s.substr(eq + 1));
    } catch (const YAML::ParserException& e) {
      diags.push_back(file_diag(where, YAML::Mark::null_mark(), key, "a YAML value", "a syntax error: " + e.msg));
      continue;
    }
    // `key=~` removes the key, as `key: ~` does in a file; `key=` is a slip.
    if (s.find_first_not_of(" \t", eq + 1) == std::string::npos) {
      diags.push_back(file_diag(where, YAML::Mark::null_mark(), key, "a value after '='", "nothing"));
      continue;
    }
    YAML::Node doc = value;
    for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
      YAML::Node m(YAML::NodeType::Map);
      m[*it] = doc;
      doc = m;
    }
    r.root = merge(r.root, doc);
    Origin o{where, YAML::Mark::null_mark(), YAML::Mark::null_mark(), true};
    r.origins[key] = o;
    if (value.IsMap()) record(value, where, key, r.origins, true, true);
  }
  if (!diags.empty()) throw ConfigError(diags);
}

}  // namespace

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

namespace {

void apply_preset(Resolved& r, const ConfigSearchPath& path) {
  YAML::Node hbm = r.root["hbm"];
  if (!hbm || !hbm.IsMap()) return;
  YAML::Node preset = hbm["preset"];
  if (!preset || !preset.IsScalar()) return;  // validation reports the type
  std::vector<std::string> dirs;
  for (const std::string& d : std::vector<std::string>{dir_of(r.file)}) dirs.push_back((fs::path(d) / "hbm").string());
  for (const std::string& d : path.dirs) dirs.push_back((fs::path(d) / "hbm").string());
  const std::string name = lower(preset.Scalar());
  std::string file = find_in(name, dirs);
  if (file.empty()) {
    const Origin& o = r.origins["hbm.preset"];
    Diagnostic d = file_diag(o.file, o.value, "hbm.preset",
                             "a memory preset in hbm/ (searched " + dirs_text(dirs) + ")", "'" + preset.Scalar() + "'");
    if (o.is_override) d.line = d.column = 0;
    d.suggestion = nearest_word(name, names_in(dirs));
    throw ConfigError(d);
  }
  YAML::Node doc = parse_file(file);
  std::vector<Diagnostic> diags;
  for (const auto& kv : doc)
    if (kv.first.Scalar() != "hbm")
      diags.push_back(file_diag(file, kv.first.Mark(), kv.first.Scalar(), "only an 'hbm:' section in a memory preset",
                                "unknown key '" + kv.first.Scalar() + "'"));
  YAML::Node ph = doc["hbm"];
  if (!ph || !ph.IsMap())
    diags.push_back(
        file_diag(file, doc.Mark(), "hbm", "an 'hbm:' map in a memory preset", ph ? describe(ph) : "no 'hbm:' key"));
  if (!diags.empty()) throw ConfigError(diags);
  YAML::Node root(YAML::NodeType::Map);
  for (const auto& kv : r.root) root[kv.first.Scalar()] = kv.second;
  root["hbm"] = merge(ph, hbm);
  r.root = root;
  record(ph, file, "hbm", r.origins, false);
}
}  // namespace

Resolved resolve(const std::string& name_or_path, const std::vector<std::string>& overrides,
                 const ConfigSearchPath& path) {
  std::string file = looks_like_path(name_or_path) ? name_or_path : find_config_file(name_or_path, path);
  Resolved r = resolve_file(file, {}, path);
  apply_overrides(r, overrides);
  apply_preset(r, path);
  return r;
}

}  // namespace config_detail

using config_detail::dirs_text;
using config_detail::file_diag;
using config_detail::find_in;
using config_detail::names_in;
using config_detail::resolve;

ConfigSearchPath default_search_path(const std::vector<std::string>& extra_dirs) {
  ConfigSearchPath p;
  p.dirs.push_back((fs::path(TPUSIM_SOURCE_DIR) / "configs").string());
  p.dirs.insert(p.dirs.end(), extra_dirs.begin(), extra_dirs.end());
  if (const char* env = std::getenv("TPUSIM_CONFIG_PATH")) {
    std::stringstream ss(env);
    for (std::string d; std::getline(ss, d, ':');)
      if (!d.empty()) p.dirs.push_back(d);
  }
  return p;
}

bool looks_like_path(const std::string& s) {
  auto ends = [&](const std::string& e) {
    return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
  };
  std::error_code ec;
  return s.find('/') != std::string::npos || ends(".yaml") || ends(".yml") || ends(".json") ||
         fs::is_regular_file(s, ec);
}

std::string find_config_file(const std::string& name, const ConfigSearchPath& path) {
  std::string f = find_in(name, path.dirs);
  if (f.empty()) {
    Diagnostic d =
        file_diag(name, YAML::Mark::null_mark(), "", "a config name on the search path (" + dirs_text(path.dirs) + ")",
                  "no config named '" + name + "'");
    d.suggestion = nearest_word(name, names_in(path.dirs));
    throw ConfigError(d);
  }
  return f;
}

std::vector<std::pair<std::string, std::string>> list_configs(const ConfigSearchPath& path) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& n : names_in(path.dirs)) out.emplace_back(n, find_in(n, path.dirs));
  return out;
}

YAML::Node resolve_config_yaml(const std::string& name_or_path, const std::vector<std::string>& overrides,
                               const ConfigSearchPath& path) {
  return resolve(name_or_path, overrides, path).root;
}

}  // namespace tpusim::sim
