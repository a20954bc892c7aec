// Errors in the user's configuration: every problem found in a file (and its
// extends chain, presets and --set overrides) as a list of diagnostics, each
// with its position and what was expected. Internal bugs use InternalError.
// Leaves out: warnings (there are none: unknown keys are errors too).
#pragma once

#include "workloads/io/suggest.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "arch/common/diagnostic.h"
#include "arch/common/errors.h"

namespace tpusim::sim {

// file:line:col, key, expected, found, suggestion (arch/common/diagnostic.h).
using arch::Diagnostic;

// Derives from arch::ConfigError so that one handler catches the user's
// mistakes from both layers.
class ConfigError : public arch::ConfigError {
 public:
  explicit ConfigError(std::vector<Diagnostic> diagnostics);
  explicit ConfigError(Diagnostic d) : ConfigError(std::vector<Diagnostic>{std::move(d)}) {}
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

// A bug in tpusim itself (a broken invariant), never the user's mistake.
using InternalError = arch::InternalError;

// "Did you mean": the candidate nearest to `word` if it is close enough to
// be a plausible typo (distance <= max(2, len/3)); empty otherwise.
using workloads::edit_distance;
inline std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates) {
  return workloads::nearest_candidate(word, candidates);
}

}  // namespace tpusim::sim
