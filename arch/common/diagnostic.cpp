#include "arch/common/diagnostic.h"

namespace tpusim::arch {

std::string Diagnostic::render() const {
  std::string s;
  if (!file.empty()) {
    s += file;
    if (line > 0) s += ":" + std::to_string(line) + ":" + std::to_string(column);
    s += ": ";
  }
  if (!key.empty()) s += key + ": ";
  if (!expected.empty()) {
    s += "expected " + expected;
    if (!found.empty()) s += ", found " + found;
  } else {
    s += found;
  }
  if (!suggestion.empty()) s += " (did you mean '" + suggestion + "'?)";
  return s;
}

std::string render_all(const std::vector<Diagnostic>& diagnostics) {
  std::string s;
  for (const Diagnostic& d : diagnostics) {
    if (!s.empty()) s += "\n";
    s += d.render();
  }
  return s;
}

}  // namespace tpusim::arch
