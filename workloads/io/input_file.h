// Input files of every reader (workloads, SCALE-Sim CSV, model files,
// sweep specs): only a regular file of sane size is opened, so that a FIFO
// cannot block a read forever and /dev/zero cannot fill memory.
#pragma once

#include <string>

namespace tpusim::workloads {

// Largest input file read: 1 GiB (shipped workloads are a few hundred KiB).
inline constexpr unsigned long long kMaxInputFileBytes = 1ull << 30;

// Empty when `path` is a regular file of at most kMaxInputFileBytes, else
// what it is instead ("no such file", "not a regular file (...)", ...).
std::string input_file_problem(const std::string& path);

}  // namespace tpusim::workloads
