// The fit check of a model run (`tpusim run --model`, shard-search, sweep
// points). models::check_fit's closed form is cheap and errs high: it sits
// 6-8% above the memory plan the lowering makes (tests/module FitAgreement
// bounds it at kClosedFormMargin). A refusal by less than that margin is
// not trusted: the whole model's workload is generated and its memory plan
// (lowering::plan_memory, tensors placed by liveness) decides. Its peak is
// what the lowering itself refuses above the chip's capacity. A ResNet's
// or UNet's closed form is the liveness of its generated graph, which
// does not know what the plan keeps in VMEM (up to 19% above the plan
// for ResNet-50 on v5e); the plan decides every refusal of those.
#pragma once

#include <cstdint>
#include <string>

#include "arch/common/chip_config.h"
#include "models/analysis.h"
#include "models/model_spec.h"

namespace tpusim::sim {

inline constexpr double kClosedFormMargin = 1.10;

struct ModelFit {
  models::FitReport report;  // fits: the closed form's verdict, or the plan's
  bool plan_checked = false;  // the memory plan decided
  std::uint64_t plan_peak_bytes = 0;
  std::string note;  // plan_checked: both figures, one line
};

// check_fit, then (when it refuses HBM by less than kClosedFormMargin, or
// at all for a ResNet or UNet, and the host memory fits) the memory plan of models::generate(m, o): if its
// peak fits, the report says fits. Throws what generate throws.
ModelFit check_model_fit(const models::ModelSpec& m, const models::PhaseOptions& o, const arch::TpuConfig& cfg);

}  // namespace tpusim::sim
