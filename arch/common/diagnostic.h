// One problem in the user's input: a config or model file, a --set
// override, a command-line string such as --mesh. Config, model and mesh
// errors carry a list of these, collected before anything is thrown, so
// that one run names every mistake.
// Leaves out: warnings (there are none: unknown keys are errors too).
#pragma once

#include <string>
#include <vector>

namespace tpusim::arch {

struct Diagnostic {
  std::string file;      // file path, or what stands for one ("--set key=value", "--mesh 'x=4'")
  int line = 0;          // 1-based; 0 = no position (override, missing key)
  int column = 0;        // 1-based
  std::string key;       // dotted path, e.g. "mxu.rows"; empty for the whole file
  std::string expected;  // empty: `found` is the whole message
  std::string found;
  std::string suggestion;  // nearest valid key or value; empty if none

  // "file:line:col: key: expected X, found Y (did you mean 'Z'?)", leaving
  // out the parts that are empty.
  std::string render() const;
};

// Every diagnostic rendered, one per line.
std::string render_all(const std::vector<Diagnostic>& diagnostics);

}  // namespace tpusim::arch
