// Fuzzes the model-file reader: only ModelError may leave.
#include <cstddef>
#include <cstdint>
#include <string>

#include "models/model_file.h"
#include "models/model_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    tpusim::models::parse_model_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  } catch (const tpusim::models::ModelError&) {}
  return 0;
}
