// ConfigError: the rendered diagnostics as its message; see config_error.h.
#include "sim/config/config_error.h"

namespace tpusim::sim {

ConfigError::ConfigError(std::vector<Diagnostic> diagnostics)
    : arch::ConfigError(arch::render_all(diagnostics)), diagnostics_(std::move(diagnostics)) {}

}  // namespace tpusim::sim
