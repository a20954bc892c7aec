// The model zoo's public API: find and load model files, generate a
// workload for a phase, and (via analysis.h) the analytics.
// Models: a zoo is a directory of <name>.yaml model files; the shipped one
// is TPUSIM_SOURCE_DIR/models/zoo.
// Leaves out: downloading configs from model hubs.
#pragma once

#include <string>
#include <vector>

#include "models/analysis.h"
#include "models/model_file.h"
#include "models/model_spec.h"
#include "workloads/ir/workload.h"

namespace tpusim::models {

// TPUSIM_SOURCE_DIR "/models/zoo".
std::string default_zoo_dir();

// Names (file stems) of the *.yaml files in zoo_dir, sorted. Throws
// ModelError if the directory cannot be read.
std::vector<std::string> list_models(const std::string& zoo_dir = default_zoo_dir());

// Whether load_model reads `name_or_path` as a file path (it has a '/' or
// ends in .yaml) rather than a zoo name.
bool is_model_path(const std::string& name_or_path);

// A name ("llama3-8b", looked up as zoo_dir/<name>.yaml) or a path
// (is_model_path). Throws ModelError; an unknown name suggests the nearest
// zoo model.
ModelSpec load_model(const std::string& name_or_path, const std::string& zoo_dir = default_zoo_dir());

// The workload of one phase. Throws ModelError for options the model does
// not take (unsupported phase, sizes out of range).
workloads::Workload generate(const ModelSpec& m, const PhaseOptions& o);
// The same without PhaseOptions::quant applied (models/quantize.h).
workloads::Workload generate_unquantized(const ModelSpec& m, const PhaseOptions& o);

}  // namespace tpusim::models
