// Loading a TPU chip config: find it on the search path, resolve `extends`
// chains and the HBM preset, apply `--set key=value` overrides, validate
// every key against the schema (sim/config/schema.h), fill arch::TpuConfig
// and check the derived peaks against the published figures (3%).
// All problems found are reported together in one ConfigError.
// Leaves out: run options and workloads (other loaders).
//
// Search order for a name such as "v5e" (first match wins; the name maps to
// <dir>/v5e.yaml, then .yml, then .json):
//   1. the directory of the file that names it (for `extends:` only),
//   2. the source tree's configs/ (compile definition TPUSIM_SOURCE_DIR),
//   3. each --config-path DIR, in command-line order,
//   4. each directory of the colon-separated TPUSIM_CONFIG_PATH env var.
// HBM presets are looked up as hbm/<lowercased preset>.yaml under the chip
// file's directory, then the same list.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <vector>

#include "arch/common/chip_config.h"
#include "sim/config/config_error.h"

namespace tpusim::sim {

struct ConfigSearchPath {
  std::vector<std::string> dirs;  // searched in order
};

// The source tree's configs/, then `extra_dirs` (--config-path), then
// TPUSIM_CONFIG_PATH. Directories that do not exist are kept (harmless).
ConfigSearchPath default_search_path(const std::vector<std::string>& extra_dirs = {});

// True if `name_or_path` is a file path (contains '/', ends in .yaml, .yml
// or .json, or names an existing file) rather than a config name.
bool looks_like_path(const std::string& name_or_path);

// The file a name resolves to; throws ConfigError listing the directories
// searched if there is none.
std::string find_config_file(const std::string& name, const ConfigSearchPath& path);

// Every config name on the path with the file it resolves to (first
// directory wins), sorted by name. Only *.yaml files directly in each
// directory (not hbm/ or other subfolders).
std::vector<std::pair<std::string, std::string>> list_configs(const ConfigSearchPath& path);

// The fully merged YAML document (extends, preset and overrides applied;
// `extends` removed) before schema validation. Throws ConfigError for YAML
// syntax errors, missing files, extends cycles and malformed overrides.
YAML::Node resolve_config_yaml(const std::string& name_or_path, const std::vector<std::string>& overrides = {},
                               const ConfigSearchPath& path = default_search_path());

// Resolves, validates and converts. Throws ConfigError (all diagnostics).
arch::TpuConfig load_tpu_config(const std::string& name_or_path, const std::vector<std::string>& overrides = {},
                                const ConfigSearchPath& path = default_search_path());

}  // namespace tpusim::sim
