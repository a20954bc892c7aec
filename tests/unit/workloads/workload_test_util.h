// Helpers for workload tests: the message of the WorkloadError a call throws.
#pragma once

#include <functional>
#include <string>

#include "workloads/ir/errors.h"

namespace tpusim::workloads::testing {

// what() of the WorkloadError `f` throws; "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const WorkloadError& e) {
    return e.what();
  }
  return "";
}

}  // namespace tpusim::workloads::testing
