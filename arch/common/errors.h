// Error types of the hardware layer (arch/). Models: a user's mistake (an
// invalid config value, a request that cannot fit, e.g. buffers beyond a
// memory's capacity) as ConfigError, and a broken invariant inside tpusim
// (a caller misusing an API, e.g. freeing a buffer twice) as InternalError,
// so that main can map them to different exit codes and messages.
// Leaves out: source positions (sim/config adds file:line to config errors).
#pragma once

#include <stdexcept>
#include <string>

namespace tpusim::arch {

// The user's mistake: a config value out of range or work that does not fit.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bug inside tpusim: an API misused by other tpusim code.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace tpusim::arch
