// check_input_file (cli.h), on its own so that the serving readers' fuzzer
// (tests/fuzz/fuzz_serve_inputs.cpp) links it without the rest of the CLI.
#include "sim/cli/cli.h"
#include "workloads/io/input_file.h"

namespace tpusim::sim {

void check_input_file(const std::string& what, const std::string& path) {
  if (auto why = workloads::input_file_problem(path); !why.empty()) throw UsageError(what + " '" + path + "': " + why);
}

}  // namespace tpusim::sim
