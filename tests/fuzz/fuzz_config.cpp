// Fuzzes the config loader on a file (the loader reads files: extends and
// presets resolve against the shipped configs/): only ConfigError may leave.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "sim/config/config_error.h"
#include "sim/config/config_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/tpusim_fuzz_config_" + std::to_string(::getpid()) + ".yaml";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    tpusim::sim::load_tpu_config(path);
  } catch (const tpusim::sim::ConfigError&) {}
  return 0;
}
