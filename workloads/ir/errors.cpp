// Formatting of workload diagnostics (see errors.h).
#include "workloads/ir/errors.h"

#include <utility>

namespace tpusim::workloads {

std::string SourceLoc::str() const {
  std::string s = file;
  if (line > 0) {
    s += (s.empty() ? "" : ":") + std::to_string(line);
    if (column > 0) s += ":" + std::to_string(column);
  }
  return s;
}

std::string Diagnostic::str() const {
  std::string s = loc.str();
  if (!path.empty()) s += (s.empty() ? "" : ": ") + path;
  s += (s.empty() ? "" : ": ") + message;
  return s;
}

static std::string join(const std::vector<Diagnostic>& diags) {
  std::string s;
  for (const auto& d : diags) {
    if (!s.empty()) s += "\n";
    s += d.str();
  }
  if (diags.size() > 1) s += "\n(" + std::to_string(diags.size()) + " errors)";
  return s;
}

WorkloadError::WorkloadError(std::vector<Diagnostic> diags)
    : std::runtime_error(join(diags)), diags_(std::move(diags)) {}

WorkloadError::WorkloadError(SourceLoc loc, std::string path, std::string message)
    : WorkloadError(std::vector<Diagnostic>{{std::move(loc), std::move(path), std::move(message)}}) {}

}  // namespace tpusim::workloads
