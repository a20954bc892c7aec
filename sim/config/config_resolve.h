// Config resolution shared inside sim/config: the merged document of a
// chip config (files, `extends` chains, `--set` overrides, HBM preset) with
// the origin of every key, and the diagnostic helpers that validation
// (config_loader.cpp) uses too. Internal; the public API is config_loader.h.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/config/config_loader.h"

namespace tpusim::sim::config_detail {

// Where each dotted key of the merged document came from, so that a
// diagnostic can name the file that wrote the offending value even after
// extends and presets merged several files into one tree.
struct Origin {
  std::string file;
  YAML::Mark key = YAML::Mark::null_mark();
  YAML::Mark value = YAML::Mark::null_mark();
  bool is_override = false;
};
using Origins = std::map<std::string, Origin>;

struct Resolved {
  YAML::Node root;
  Origins origins;
  std::string file;  // the top-level file
  std::string name;  // its stem
};

std::string join(const std::string& prefix, const std::string& key);
// A value as a message shows it: quoted scalar, "a map", "a list", ...
std::string describe(const YAML::Node& n);
Diagnostic file_diag(const std::string& file, const YAML::Mark& m, std::string key, std::string expected,
                     std::string found);
std::string lower(std::string s);

// The file `name_or_path` names, its extends chain merged, then
// `overrides` and the HBM preset applied.
Resolved resolve(const std::string& name_or_path, const std::vector<std::string>& overrides,
                 const ConfigSearchPath& path);

}  // namespace tpusim::sim::config_detail
