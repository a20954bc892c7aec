// Helpers for tests that run the tpusim executable: read a file whole, find
// the binary, run it with output captured in a folder.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tpusim::test {

inline std::string slurp(const std::string& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// $TPUSIM_BINARY, or else the build tree's sim/tpusim next to tests/: the
// shared tpusim_test_dir() passes two variables in one ENVIRONMENT property
// and POST_BUILD discovery splits them, so CTest sets only the first.
inline std::string tpusim_binary() {
  if (const char* b = std::getenv("TPUSIM_BINARY")) return b;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto guess = self.parent_path().parent_path() / "sim" / "tpusim";
  if (ec || !std::filesystem::exists(guess))
    throw std::runtime_error("TPUSIM_BINARY is not set and " + guess.string() + " is missing");
  return guess.string();
}

// A fresh folder under the temp directory, removed with everything in it.
struct TmpDir {
  std::filesystem::path p;
  explicit TmpDir(const std::string& prefix) {
    static int n = 0;
    p = std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()) + "_" + std::to_string(n++));
    std::filesystem::remove_all(p);
    std::filesystem::create_directories(p);
  }
  ~TmpDir() {
    std::error_code ec;
    std::filesystem::remove_all(p, ec);
  }
  std::string operator/(const std::string& s) const { return (p / s).string(); }
};

struct CliResult {
  int rc = -1;  // exit code; -1 when the process did not exit normally
  std::string out, err;
};

// Runs `env tpusim args` (args already shell-quoted where needed), with
// stdout and stderr captured in files of folder `dir`.
inline CliResult run_tpusim_in(const std::string& dir, const std::string& args, const std::string& env = "") {
  const std::string out = dir + "/stdout", err = dir + "/stderr";
  const std::string cmd = env + " '" + tpusim_binary() + "' " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

}  // namespace tpusim::test
