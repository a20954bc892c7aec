// PhaseOptions of one phase for the model tests (test_serve_step.cpp,
// test_lora.cpp).
#pragma once

#include <cstdint>

#include "models/model_spec.h"

namespace tpusim::models::test {

// A decode step of `batch` sequences over `context` cached tokens each.
inline PhaseOptions decode(std::int64_t batch, std::int64_t context) {
  PhaseOptions o;
  o.phase = Phase::decode;
  o.batch = batch;
  o.context = context;
  return o;
}

}  // namespace tpusim::models::test
