// Fuzzes the SCALE-Sim topology CSV reader: only WorkloadError may leave.
#include <cstddef>
#include <cstdint>
#include <string>

#include "workloads/io/scalesim_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    tpusim::workloads::read_scalesim_csv_string(std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv", {});
  } catch (const tpusim::workloads::WorkloadError&) {}
  return 0;
}
