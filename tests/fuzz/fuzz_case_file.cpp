// Fuzzes the validation case reader (configs/validation/*.yaml: defaults,
// cases, workloads, metrics): only ConfigError may leave.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/config/config_error.h"
#include "sim/config/config_loader.h"
#include "sim/validate/case_file.h"

// tpusim_sim links SystemC, whose library calls sc_main; libFuzzer owns
// main() here and nothing is simulated.
extern "C" int sc_main(int, char**) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const tpusim::sim::ConfigSearchPath search = tpusim::sim::default_search_path();
  try {
    (void)tpusim::sim::validate::parse_case_file(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml",
                                                 search);
  } catch (const tpusim::sim::ConfigError&) {
  }
  return 0;
}
