// Collecting the mistakes of a YAML file as diagnostics positioned at its
// nodes (file:line:col, dotted key, expected, found, suggestion), thrown
// together as one ConfigError. Shared by the validation case files
// (sim/validate/case_file.cpp) and the serving suite files
// (sim/serve/suite.cpp).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <utility>
#include <vector>

#include "sim/config/config_error.h"

namespace tpusim::sim {

class NodeDiagnostics {
 public:
  explicit NodeDiagnostics(std::string file) : file_(std::move(file)) {}
  void add(const YAML::Node& at, const std::string& key, const std::string& expected, const std::string& found,
           const std::string& suggestion = "") {
    Diagnostic d;
    d.file = file_;
    const YAML::Mark m = at.Mark();
    if (m.line >= 0) {
      d.line = m.line + 1;
      d.column = m.column + 1;
    }
    d.key = key;
    d.expected = expected;
    d.found = found;
    d.suggestion = suggestion;
    diags.push_back(std::move(d));
  }
  // Throws ConfigError holding every diagnostic, if any.
  void check() const {
    if (!diags.empty()) throw ConfigError(diags);
  }
  const std::string& file() const { return file_; }
  std::vector<Diagnostic> diags;

 private:
  std::string file_;
};

}  // namespace tpusim::sim
