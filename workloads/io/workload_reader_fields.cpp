// Typed field getters of the workload reader: source positions, key
// checks with suggestions, and the string, integer, number, boolean, list
// and dtype getters that report a wrong type at the node. See
// workload_reader.h.
#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "workloads/io/workload_reader.h"

namespace tpusim::workloads::detail {

const char* node_kind(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar:
    case YAML::NodeType::Undefined: return "a scalar";
  }
  return "a scalar";
}

SourceLoc Reader::at(const YAML::Node& n) const {
  YAML::Mark m = n.Mark();
  if (m.line < 0) return {file_, 0, 0};
  return {file_, m.line + 1, m.column + 1};
}

void Reader::error(const YAML::Node& n, const std::string& path, const std::string& msg) {
  diags_.push_back({at(n), path, msg});
}

std::string Reader::index_path(const std::string& path, std::size_t i) {
  std::string idx = "[" + std::to_string(i) + "]";
  auto p = path.find(" (");
  return p == std::string::npos ? path + idx : path.substr(0, p) + idx + path.substr(p);
}

std::string Reader::join(const std::string& base, const std::string& key) {
  return base.empty() ? key : base + "." + key;
}

void Reader::check_keys(const YAML::Node& map, const std::string& path, const std::vector<std::string>& allowed,
                        const std::string& suffix) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    std::string key = it->first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string near = nearest_candidate(key, allowed);
    std::string valid;
    for (const auto& a : allowed) valid += (valid.empty() ? "" : ", ") + a;
    error(it->first, join(path, key) + suffix,
          "unknown key '" + key + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
              "; valid keys here: " + valid);
  }
}

std::optional<std::string> Reader::get_str(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) {
    error(n, path, std::string("expected a string, found ") + node_kind(n));
    return std::nullopt;
  }
  return n.Scalar();
}

std::optional<std::int64_t> Reader::get_int(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) {
    error(n, path, std::string("expected an integer, found ") + node_kind(n));
    return std::nullopt;
  }
  const std::string& s = n.Scalar();
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) {
    error(n, path, "expected an integer, found '" + s + "'");
    return std::nullopt;
  }
  return static_cast<std::int64_t>(v);
}

std::optional<double> Reader::get_double(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) {
    error(n, path, std::string("expected a number, found ") + node_kind(n));
    return std::nullopt;
  }
  const std::string& s = n.Scalar();
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0') {
    error(n, path, "expected a number, found '" + s + "'");
    return std::nullopt;
  }
  return v;
}

std::optional<bool> Reader::get_bool(const YAML::Node& n, const std::string& path) {
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    if (s == "true" || s == "True" || s == "1") return true;
    if (s == "false" || s == "False" || s == "0") return false;
    error(n, path, "expected true or false, found '" + s + "'");
  } else {
    error(n, path, std::string("expected true or false, found ") + node_kind(n));
  }
  return std::nullopt;
}

std::optional<std::vector<std::int64_t>> Reader::get_ints(const YAML::Node& n, const std::string& path,
                                                          bool scalar_ok) {
  std::vector<std::int64_t> v;
  if (scalar_ok && n.IsScalar()) {
    if (auto i = get_int(n, path)) return std::vector<std::int64_t>{*i};
    return std::nullopt;
  }
  if (!n.IsSequence()) {
    error(n, path, std::string("expected a list of integers, found ") + node_kind(n));
    return std::nullopt;
  }
  bool ok = true;
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (auto x = get_int(n[i], index_path(path, i)))
      v.push_back(*x);
    else
      ok = false;
  }
  if (!ok) return std::nullopt;
  return v;
}

std::optional<std::vector<std::string>> Reader::get_strs(const YAML::Node& n, const std::string& path, bool scalar_ok) {
  if (scalar_ok && n.IsScalar()) return std::vector<std::string>{n.Scalar()};
  if (!n.IsSequence()) {
    error(n, path, std::string("expected a list of names, found ") + node_kind(n));
    return std::nullopt;
  }
  std::vector<std::string> v;
  bool ok = true;
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (auto s = get_str(n[i], index_path(path, i)))
      v.push_back(*s);
    else
      ok = false;
  }
  if (!ok) return std::nullopt;
  return v;
}

std::optional<DType> Reader::get_dtype(const YAML::Node& n, const std::string& path) {
  auto s = get_str(n, path);
  if (!s) return std::nullopt;
  if (auto d = arch::parse_dtype(*s)) return d;
  std::vector<std::string> names;
  for (DType t : arch::kAllDTypes) names.emplace_back(arch::dtype_name(t));
  std::string near = nearest_candidate(*s, names);
  std::string all;
  for (const auto& x : names) all += (all.empty() ? "" : ", ") + x;
  error(n, path,
        "unknown dtype '" + *s + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") + "; expected one of " +
            all);
  return std::nullopt;
}

bool Reader::get_hw(const YAML::Node& n, const std::string& path, std::int64_t& h, std::int64_t& w) {
  auto v = get_ints(n, path, true);
  if (!v) return false;
  if (v->size() == 1) {
    h = w = (*v)[0];
    return true;
  }
  if (v->size() == 2) {
    h = (*v)[0];
    w = (*v)[1];
    return true;
  }
  error(n, path, "expected an integer or [h, w], found " + std::to_string(v->size()) + " values");
  return false;
}

}  // namespace tpusim::workloads::detail
