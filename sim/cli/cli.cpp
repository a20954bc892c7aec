// The subcommand registry, global options and exception-to-exit-code
// mapping; see cli.h.
#include "sim/cli/cli.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <new>

#include "models/model_spec.h"
#include "sim/engine/engine.h"
#include "sim/lowering/lowering.h"
#include "sim/results/results_writer.h"
#include "workloads/ir/errors.h"
#include "workloads/ir/mesh.h"

#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "sim/config/config_error.h"
#include "sim/serve/step_runner.h"

namespace tpusim::sim {

// One entry per file that registers commands; see cli.h.
void register_config_commands();
void register_list_command();
void register_model_commands();
void register_run_command();
void register_serve_commands();
void register_sweep_commands();
void register_validate_command();
void register_check_commands();
void register_compare_command();
void register_sweep_plot_command();
void register_shard_search_commands();
void register_suite_commands();

namespace {

void (*const kCommandModules[])() = {register_config_commands,    register_list_command,   register_model_commands,
                                     register_run_command,        register_sweep_commands, register_validate_command,
                                     register_check_commands,     register_compare_command,
                                     register_sweep_plot_command, register_serve_commands,
                                     register_shard_search_commands, register_suite_commands};

struct Command {
  std::string summary;
  CommandFn fn;
};

std::map<std::string, Command>& registry() {
  static std::map<std::string, Command> r;
  return r;
}

void register_all() {
  static bool done = false;
  if (done) return;
  done = true;
  for (auto* m : kCommandModules) m();
}

void print_help(std::ostream& os) {
  os << "usage: tpusim [--config-path DIR]... <command> [<args>]\n\n"
        "Cycle-level simulator of Google TPU chips.\n\n"
        "Commands:\n";
  // The summaries start two spaces after the longest command name.
  std::size_t width = 0;
  for (const auto& [name, c] : registry()) width = std::max(width, name.size());
  for (const auto& [name, c] : registry())
    os << "  " << std::left << std::setw(static_cast<int>(width + 2)) << name << c.summary << "\n";
  os << "\nGlobal options:\n"
        "  --config-path DIR  also search DIR for configs (repeatable; after the source\n"
        "                     tree's configs/, before $TPUSIM_CONFIG_PATH)\n"
        "  --help             this help; `tpusim <command> --help` for a command\n"
        "  --version          print the version\n"
        "\nExit codes: 0 ok, 2 usage or config error, 1 simulation or internal error.\n";
}

int dispatch(const std::vector<std::string>& args, CommandContext& ctx) {
  // Longest registered name made of the leading words wins.
  for (size_t n = std::min<size_t>(args.size(), 3); n >= 1; --n) {
    std::string name;
    for (size_t i = 0; i < n; ++i) name += (i ? " " : "") + args[i];
    auto it = registry().find(name);
    if (it != registry().end()) return it->second.fn(std::vector<std::string>(args.begin() + n, args.end()), ctx);
  }
  // A group word ("config") alone or with an unknown subcommand.
  std::string group = args[0] + " ";
  std::string list;
  for (const auto& [name, c] : registry())
    if (name.compare(0, group.size(), group) == 0) list += "\n  " + name + "  " + c.summary;
  if (!list.empty()) {
    std::string what =
        args.size() > 1 ? "unknown command '" + args[0] + " " + args[1] + "'" : "'" + args[0] + "' needs a subcommand";
    throw UsageError(what + "; one of:" + list);
  }
  std::vector<std::string> names;
  for (const auto& [name, c] : registry()) names.push_back(name.substr(0, name.find(' ')));
  std::string near = nearest_word(args[0], names);
  throw UsageError("unknown command '" + args[0] + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                   "; see 'tpusim --help'");
}

}  // namespace

void register_command(const std::string& name, const std::string& summary, CommandFn fn) {
  if (!registry().emplace(name, Command{summary, std::move(fn)}).second)
    throw InternalError("command registered twice: " + name);
}

bool parse_command_args(const std::string& name, const std::string& usage, const std::vector<std::string>& args,
                        boost::program_options::options_description& opts,
                        const boost::program_options::positional_options_description& pos,
                        boost::program_options::variables_map& vm, CommandContext& ctx) {
  namespace po = boost::program_options;
  po::options_description all("Options");
  all.add(opts);
  std::vector<std::string> extra_dirs;
  all.add_options()("config-path", po::value<std::vector<std::string>>(&extra_dirs),
                    "also search DIR for configs (repeatable)")("help,h", "show this help");
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    if (vm.count("help")) {
      ctx.out << "usage: " << usage << "\n\n" << all << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(name + ": " + e.what() + "; see 'tpusim " + name + " --help'");
  }
  for (auto& d : extra_dirs) ctx.global.config_path.push_back(d);
  return true;
}

bool parse_command_args(const std::string& name, const std::string& usage, const std::vector<std::string>& args,
                        boost::program_options::options_description& opts,
                        std::initializer_list<std::pair<const char*, int>> positional,
                        boost::program_options::variables_map& vm, CommandContext& ctx) {
  boost::program_options::positional_options_description pos;
  for (const auto& [option, count] : positional) pos.add(option, count);
  return parse_command_args(name, usage, args, opts, pos, vm, ctx);
}

void check_output_dir(const std::string& what, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw UsageError(what + ": expected a directory path, found ''");
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    throw UsageError(what + " '" + path + "': exists and is not a directory");
  fs::create_directories(path, ec);
  if (ec) throw UsageError(what + " '" + path + "': cannot create the directory: " + ec.message());
  if (::access(path.c_str(), W_OK | X_OK) != 0)
    throw UsageError(what + " '" + path + "': the directory is not writable: " + std::strerror(errno));
}

void check_vcd_path(const std::string& what, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw UsageError(what + ": expected a file path, found ''");
  std::string file = path;
  if (file.size() <= 4 || file.compare(file.size() - 4, 4, ".vcd") != 0) file += ".vcd";
  std::error_code ec;
  if (fs::is_directory(file, ec)) throw UsageError(what + " '" + file + "': is a directory");
  const fs::path dir = fs::path(file).parent_path().empty() ? fs::path(".") : fs::path(file).parent_path();
  if (!fs::is_directory(dir, ec)) throw UsageError(what + " '" + file + "': no such directory " + dir.string());
  const bool existed = fs::exists(file, ec);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw UsageError(what + " '" + file + "': cannot create the file: " + std::strerror(errno));
  ::close(fd);
  if (!existed) fs::remove(file, ec);
}

namespace {
int cli_main_unchecked(int argc, char* argv[]);
}  // namespace

// Every command writes to std::cout; a write that failed (a full disk, a
// closed pipe) must not end in exit 0, so the stream is flushed and checked
// once the command is done.
int cli_main(int argc, char* argv[]) {
  const int rc = cli_main_unchecked(argc, argv);
  errno = 0;
  std::cout.flush();
  if (!std::cout) {
    const int e = errno;
    std::cerr << "tpusim: error writing standard output" << (e ? std::string(": ") + std::strerror(e) : "") << "\n";
    return rc != 0 ? rc : 1;
  }
  return rc;
}

namespace {
int cli_main_unchecked(int argc, char* argv[]) {
  std::ostream& out = std::cout;
  std::ostream& err = std::cerr;
  try {
    register_all();
    GlobalOptions global;
    std::vector<std::string> rest;
    int i = 1;
    for (; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h" || a == "help") {
        print_help(out);
        return 0;
      }
      if (a == "--version") {
        out << "tpusim " << TPUSIM_VERSION << "\n";
        return 0;
      }
      if (a == "--config-path") {
        if (i + 1 >= argc) throw UsageError("--config-path needs a directory");
        global.config_path.push_back(argv[++i]);
      } else if (a.rfind("--config-path=", 0) == 0) {
        global.config_path.push_back(a.substr(14));
      } else if (!a.empty() && a[0] == '-') {
        throw UsageError("unknown option '" + a + "'; see 'tpusim --help'");
      } else {
        break;
      }
    }
    for (; i < argc; ++i) rest.emplace_back(argv[i]);
    if (rest.empty()) {
      print_help(err);
      return 2;
    }
    CommandContext ctx{global, out, err};
    return dispatch(rest, ctx);
  } catch (const ConfigError& e) {
    out.flush();
    err << e.what() << "\n";
    return 2;
  } catch (const arch::ConfigError& e) {
    // A user mistake found by a hardware model (no file position).
    out.flush();
    err << "tpusim: config error: " << e.what() << "\n";
    return 2;
  } catch (const UsageError& e) {
    out.flush();
    err << "tpusim: " << e.what() << "\n";
    return 2;
  } catch (const workloads::WorkloadError& e) {
    // A workload file's or generator's mistake: file:line:col: op: message.
    out.flush();
    err << "tpusim: workload error:\n" << e.what() << "\n";
    return 2;
  } catch (const workloads::MeshError& e) {
    out.flush();
    err << "tpusim: " << e.what() << "\n";
    return 2;
  } catch (const models::ModelError& e) {
    out.flush();
    err << "tpusim: model error:\n" << e.what() << "\n";
    return 2;
  } catch (const SimLimitError& e) {
    out.flush();
    err << "tpusim: simulation limit: " << e.what() << "\n";
    return 2;
  } catch (const ResultsError& e) {
    // An output file that cannot be written (a full disk, an I/O error):
    // not the user's mistake and not a bug; exit 1 naming the path.
    out.flush();
    err << "tpusim: output error: " << e.what() << "\n";
    return 1;
  } catch (const LoweringError& e) {
    // The workload cannot run on this chip (dtype, capacity, collectives).
    out.flush();
    err << "tpusim: cannot map the workload onto the chip: " << e.what() << "\n";
    return 2;
  } catch (const serve::StepSimError& e) {
    // A step simulation of `tpusim serve` failed in its child process:
    // its message is the child's own error.
    out.flush();
    err << "tpusim: step simulation failed: " << e.what() << "\n";
    return e.child_exit();
  } catch (const std::bad_alloc&) {
    // Not a bug in the input: the lowered program (every instruction of
    // the step, held at once) or the event queue outgrew this machine.
    out.flush();
    err << "tpusim: out of memory: this simulation needs more memory than the machine gives it (the lowered "
           "program holds every instruction of the step); simulate fewer tokens or sequences per chip, or fewer "
           "layers (a model file), or run it on a larger machine\n";
    return 1;
  } catch (const std::exception& e) {
    out.flush();
    err << "tpusim: internal error: " << e.what() << "\n";
    return 1;
  } catch (...) {
    err << "tpusim: internal error: unknown exception\n";
    return 1;
  }
}
}  // namespace

}  // namespace tpusim::sim
