// Command-line front end: subcommands, option parsing, exit codes
// (0 ok, 2 usage or config error, 1 simulation or internal error).
#pragma once

namespace tpusim::sim {

int cli_main(int argc, char* argv[]);

}  // namespace tpusim::sim
