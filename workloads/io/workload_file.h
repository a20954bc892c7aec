// Workload files: the versioned YAML format (JSON accepted, being YAML) and
// its writer. The format is documented key by key in docs/workload-format.md.
// Models: everything in the IR, with output tensors optionally left out of
// `tensors:` (their shape and dtype are then inferred).
// Leaves out: includes/imports between files, comments on write.
#pragma once

#include <iosfwd>
#include <string>

#include "workloads/ir/workload.h"

namespace tpusim::workloads {

// Reads a workload file (.yaml, .yml or .json). Collects every problem
// (syntax, unknown keys with the nearest valid key suggested, wrong types,
// unknown tensors, shape mismatches, cycles, ...) and throws one
// WorkloadError whose diagnostics carry file:line:column and the key path
// or op name. The result is validated.
Workload read_workload_file(const std::string& path);
// Same, from text; `filename` is used in messages only.
Workload read_workload_string(const std::string& text, const std::string& filename = "<string>");

// Writes every tensor (with its inferred shape) and op explicitly, so that
// reading the text back gives an equal Workload.
std::string workload_to_yaml(const Workload& wl);
std::string workload_to_json(const Workload& wl);
// Chooses JSON for a ".json" path, YAML otherwise. Throws WorkloadError if
// the file cannot be written.
void write_workload_file(const Workload& wl, const std::string& path);

}  // namespace tpusim::workloads
