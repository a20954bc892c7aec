// `tpusim list`: one line per chip config on the search path with its
// headline figures (derived, not published).
#include <cstdio>
#include <ostream>

#include "arch/common/derived.h"
#include "sim/cli/cli.h"

namespace tpusim::sim {
namespace po = boost::program_options;
namespace {

int list(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts;
  po::variables_map vm;
  if (!parse_command_args("list",
                          "tpusim list\n\nLists every chip config found on the config path: "
                          "peak TFLOP/s (bf16, or int8 where the MXU has no bf16), HBM capacity "
                          "and bandwidth, ICI ports and bandwidth per link per direction.",
                          args, opts, {}, vm, ctx))
    return 0;
  const ConfigSearchPath path = ctx.global.search_path();
  std::vector<Diagnostic> errors;
  char line[256];
  std::snprintf(line, sizeof line, "%-8s %16s %14s %12s %16s  %s\n", "name", "peak TFLOP/s", "HBM GiB", "HBM GB/s",
                "ICI ports x GB/s", "file");
  ctx.out << line;
  for (const auto& [name, file] : list_configs(path)) {
    arch::TpuConfig c;
    try {
      c = load_tpu_config(file, {}, path);
    } catch (const ConfigError& e) {
      errors.insert(errors.end(), e.diagnostics().begin(), e.diagnostics().end());
      continue;
    }
    arch::DerivedFigures d = arch::derive(c);
    arch::DType t = d.peak_flops.count(arch::DType::bf16) ? arch::DType::bf16 : arch::DType::int8;
    if (!d.peak_flops.count(t)) t = d.peak_flops.begin()->first;
    std::snprintf(line, sizeof line, "%-8s %9.1f %-6s %14.1f %12.1f %8d x %5.1f  %s\n", name.c_str(),
                  d.peak_flops[t] / 1e12, std::string(arch::dtype_name(t)).c_str(),
                  static_cast<double>(d.hbm_capacity) / (1024.0 * 1024 * 1024), d.hbm_bandwidth / 1e9, c.ici.ports,
                  c.ici.link_bandwidth / 1e9, file.c_str());
    ctx.out << line;
  }
  if (!errors.empty()) throw ConfigError(errors);
  return 0;
}

}  // namespace

void register_list_command() {
  register_command("list", "List the chip configs on the config path with their peaks", list);
}

}  // namespace tpusim::sim
