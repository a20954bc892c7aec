// Fuzzes the sweep spec reader (tpusim sweep's YAML: base, axes, filters,
// derived columns): only ConfigError (a located diagnostic) may leave.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/config/config_error.h"
#include "sim/sweep/sweep_spec.h"

// tpusim_sim links SystemC, whose library calls sc_main; libFuzzer owns
// main() here and nothing is simulated.
extern "C" int sc_main(int, char**) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)tpusim::sim::sweep::parse_sweep_spec(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  } catch (const tpusim::sim::ConfigError&) {
  }
  return 0;
}
