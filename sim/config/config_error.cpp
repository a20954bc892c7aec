// Rendering of config diagnostics and the typo suggester; see config_error.h.
#include "sim/config/config_error.h"

#include <algorithm>

namespace tpusim::sim {
namespace {

std::string render_all(const std::vector<Diagnostic>& ds) {
  std::string s;
  for (const Diagnostic& d : ds) {
    if (!s.empty()) s += "\n";
    s += d.render();
  }
  return s;
}

}  // namespace

std::string Diagnostic::render() const {
  std::string s = file;
  if (line > 0) s += ":" + std::to_string(line) + ":" + std::to_string(column);
  s += ": ";
  if (!key.empty()) s += key + ": ";
  s += "expected " + expected + ", found " + found;
  if (!suggestion.empty()) s += " (did you mean '" + suggestion + "'?)";
  return s;
}

ConfigError::ConfigError(std::vector<Diagnostic> diagnostics)
    : arch::ConfigError(render_all(diagnostics)), diagnostics_(std::move(diagnostics)) {}

// Optimal string alignment distance: Levenshtein plus adjacent
// transpositions, the commonest typo ("hmb" for "hbm" is 1, not 2).
}  // namespace tpusim::sim
