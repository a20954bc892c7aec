// Fuzzes the workload reader (YAML and JSON): only WorkloadError may leave.
#include <cstddef>
#include <cstdint>
#include <string>

#include "workloads/io/workload_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    tpusim::workloads::read_workload_string(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  } catch (const tpusim::workloads::WorkloadError&) {}
  return 0;
}
