// Strict YAML/JSON loading shared by every reader (configs, workloads,
// sweep specs, model files).
// Models: exactly one document per file, and no map with the same key twice
// (yaml-cpp keeps both silently, so a later value would be ignored or win
// depending on the reader). Both are reported as YAML::ParserException with
// the offending mark, which every reader already turns into a located error.
// Leaves out: anchors/aliases checks, schema (each reader does its own).
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

namespace tpusim::workloads {

// Parses `text` (YAML or JSON); throws YAML::ParserException for a syntax
// error, a second non-empty document, or a duplicate key in any map.
YAML::Node load_yaml_strict(const std::string& text);
// Same, reading the file first; throws YAML::BadFile when it cannot be read.
YAML::Node load_yaml_file_strict(const std::string& path);
// Throws YAML::ParserException at the second occurrence of a duplicate key
// anywhere in `root`.
void check_no_duplicate_keys(const YAML::Node& root);

}  // namespace tpusim::workloads
