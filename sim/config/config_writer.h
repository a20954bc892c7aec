// Prints a fully resolved TpuConfig as YAML or JSON: every schema key with
// its value (defaults included, so the file is the definitive record of what
// was simulated), plus a `derived:` section with the closed-form figures.
// Loading the output gives back an identical TpuConfig: quantities are
// printed in the shortest form that parses to the same double, and the
// loader ignores `derived:` (it recomputes it).
// Leaves out: comments and source citations of the input files.
#pragma once

#include <string>

#include "arch/common/chip_config.h"

namespace tpusim::sim {

enum class ConfigFormat { yaml, json };

std::string write_config(const arch::TpuConfig& c, ConfigFormat format = ConfigFormat::yaml);

}  // namespace tpusim::sim
