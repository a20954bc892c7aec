// See input_file.h.
#include "workloads/io/input_file.h"

#include <filesystem>

namespace tpusim::workloads {

std::string input_file_problem(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!fs::exists(st)) return "no such file";
  if (fs::is_directory(st)) return "a directory, not a file";
  if (!fs::is_regular_file(st)) return "not a regular file (a FIFO, socket or device cannot be read)";
  if (fs::file_size(path, ec) > kMaxInputFileBytes) return "larger than 1 GiB";
  return "";
}

}  // namespace tpusim::workloads
