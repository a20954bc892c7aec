#include "sim/cli/cli.h"

#include <cstring>
#include <iostream>

namespace tpusim::sim {

int cli_main(int argc, char* argv[]) {
  if (argc >= 2 && std::strcmp(argv[1], "--version") == 0) {
    std::cout << "tpusim " << TPUSIM_VERSION << "\n";
    return 0;
  }
  std::cerr << "usage: tpusim --version\n";
  return 2;
}

}  // namespace tpusim::sim
