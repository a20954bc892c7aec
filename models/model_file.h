// Model files: reads models/zoo/<name>.yaml into a ModelSpec.
// Models: one schema per family; unknown keys, wrong types, out-of-range or
// inconsistent values are errors that name file:line:column, the dotted
// key, what was expected and what was found, with the nearest valid key
// suggested for a misspelt one. All problems of a file are collected before
// ModelError is thrown.
// Leaves out: inheritance between model files (each file is complete).
#pragma once

#include "workloads/io/suggest.h"

#include <string>

#include "models/model_spec.h"

namespace tpusim::models {

// Reads and checks one model file; throws ModelError.
ModelSpec read_model_file(const std::string& path);
// Same, from YAML text (file is only used in messages).
ModelSpec parse_model_text(const std::string& text, const std::string& file);

// The nearest plausible candidate ("" if none within max(2, len/3) edits),
// for "did you mean" (workloads/io/suggest.h).
inline std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates) {
  return workloads::nearest_candidate(word, candidates);
}

}  // namespace tpusim::models
