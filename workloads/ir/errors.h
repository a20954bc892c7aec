// Error types of the workload layer and the source positions they cite.
// Models: a user mistake (bad file, bad shape, bad builder call) as a list of
// diagnostics, each with file:line:column, a dotted key or op path and a
// message; thrown only after all diagnostics are collected.
// Leaves out: warnings (there are none: unknown keys are errors).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace tpusim::workloads {

// Where an entity came from. line/column are 1-based; 0 means unknown
// (built in code rather than read from a file).
struct SourceLoc {
  std::string file;
  int line = 0;
  int column = 0;

  bool known() const { return line > 0; }
  // "file:line:column", "file:line", "file" or "" depending on what is known.
  std::string str() const;
};

struct Diagnostic {
  SourceLoc loc;
  std::string path;     // dotted key ("ops[2].attrs.stride") or "op 'proj'"
  std::string message;  // what is wrong: expected ..., found ...

  // "<file>:<line>:<col>: <path>: <message>" (omitting unknown parts).
  std::string str() const;
};

// The user's mistake in a workload (file, builder call or CLI string).
class WorkloadError : public std::runtime_error {
 public:
  explicit WorkloadError(std::vector<Diagnostic> diags);
  WorkloadError(SourceLoc loc, std::string path, std::string message);
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }

 private:
  std::vector<Diagnostic> diags_;
};

// A bug inside tpusim's workload code (an invariant broke), never the user's.
class WorkloadInternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace tpusim::workloads
