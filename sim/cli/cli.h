// Command-line front end: global options, a registry of subcommands, and
// the one place where exceptions become exit codes and messages
// (0 ok, 2 usage or config error, 1 simulation or internal error).
//
// Adding a subcommand (in your own file, e.g. sim/run/run_command.cpp):
//
//   #include "sim/cli/cli.h"
//   namespace tpusim::sim {
//   static int run_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
//     namespace po = boost::program_options;
//     po::options_description opts;
//     opts.add_options()("arch", po::value<std::string>()->required(), "chip config");
//     po::variables_map vm;
//     if (!parse_command_args("run", "tpusim run <arch> [options]", args, opts, {{"arch", 1}}, vm, ctx))
//       return 0;  // --help was printed
//     ... throw ConfigError / UsageError / anything else; never exit() ...
//     return 0;
//   }
//   void register_run_commands() { register_command("run", "Run a workload", run_cmd); }
//   }  // namespace tpusim::sim
//
// then add `register_run_commands` to kCommandModules in sim/cli/cli.cpp
// (one line). The list is explicit on purpose: tpusim_sim is a static
// library, and the linker drops object files nobody references, so a
// self-registering static object in your file would silently never run.
// Names may contain a space ("config show"): the dispatcher matches the
// longest registered name, and `tpusim config` lists the group.
#pragma once

#include <boost/program_options.hpp>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/config/config_loader.h"

namespace tpusim::sim {

// A malformed command line (exit code 2).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct GlobalOptions {
  std::vector<std::string> config_path;  // --config-path DIR, in order
  ConfigSearchPath search_path() const { return default_search_path(config_path); }
};

struct CommandContext {
  GlobalOptions& global;
  std::ostream& out;
  std::ostream& err;
};

using CommandFn = std::function<int(const std::vector<std::string>& args, CommandContext& ctx)>;

// Registers a subcommand; a duplicate name throws InternalError.
void register_command(const std::string& name, const std::string& summary, CommandFn fn);

// Parses a subcommand's arguments with Boost.Program_options, adding --help
// and --config-path (which may also follow the command). Returns false
// after printing `usage` and the options for --help. Throws UsageError.
bool parse_command_args(const std::string& name, const std::string& usage, const std::vector<std::string>& args,
                        boost::program_options::options_description& opts,
                        const boost::program_options::positional_options_description& pos,
                        boost::program_options::variables_map& vm, CommandContext& ctx);
// The same with the positional arguments given as (option, count) in
// order, count -1 for all the rest: {{"spec", 1}, {"inputs", -1}}; {} for none.
bool parse_command_args(const std::string& name, const std::string& usage, const std::vector<std::string>& args,
                        boost::program_options::options_description& opts,
                        std::initializer_list<std::pair<const char*, int>> positional,
                        boost::program_options::variables_map& vm, CommandContext& ctx);

// Checks of paths given on the command line; each throws UsageError naming
// `what` (e.g. "run: --out") and the path.
// A directory to write results into: non-empty, not an existing
// non-directory, creatable (it is created) and writable.
void check_output_dir(const std::string& what, const std::string& path);
// A file to be created (the VCD): its folder exists and a file can be
// created there. `path` may omit the .vcd suffix SystemC adds.
void check_vcd_path(const std::string& what, const std::string& path);
// An input file: see workloads::input_file_problem().
void check_input_file(const std::string& what, const std::string& path);

int cli_main(int argc, char* argv[]);

}  // namespace tpusim::sim
