// `tpusim config show|check|keys`: print a resolved chip config, validate
// config files, document the schema.
#include <iomanip>
#include <ostream>

#include "sim/cli/cli.h"

#include <limits>
#include "sim/config/config_writer.h"
#include "sim/config/schema.h"

namespace tpusim::sim {
namespace po = boost::program_options;
namespace {

int show(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts;
  std::string arch, format;
  std::vector<std::string> sets;
  opts.add_options()("arch", po::value<std::string>(&arch)->required(),
                     "config name on the search path (e.g. v5e) or a file")(
      "set", po::value<std::vector<std::string>>(&sets)->composing(),
      "override a key: --set mxu.rows=256 (repeatable)")(
      "format", po::value<std::string>(&format)->default_value("yaml"), "yaml or json");
  po::variables_map vm;
  if (!parse_command_args("config show",
                          "tpusim config show <arch|file> [--set key=value ...] "
                          "[--format yaml|json]\n\nPrints the fully resolved config (extends, "
                          "preset and overrides applied, defaults filled in) with its derived "
                          "figures.",
                          args, opts, {{"arch", 1}}, vm, ctx))
    return 0;
  if (format != "yaml" && format != "json")
    throw UsageError("config show: --format must be yaml or json, not '" + format + "'");
  arch::TpuConfig c = load_tpu_config(arch, sets, ctx.global.search_path());
  ctx.out << write_config(c, format == "json" ? ConfigFormat::json : ConfigFormat::yaml);
  return 0;
}

int check(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts;
  std::vector<std::string> files, sets;
  opts.add_options()("file", po::value<std::vector<std::string>>(&files)->required(),
                     "config files (or names) to check")("set", po::value<std::vector<std::string>>(&sets)->composing(),
                                                         "override applied to every file (repeatable)");
  po::variables_map vm;
  if (!parse_command_args("config check",
                          "tpusim config check <file>...\n\nValidates each config and prints "
                          "'<file>: ok', or every error found in it.",
                          args, opts, {{"file", -1}}, vm, ctx))
    return 0;
  // Every file is checked; the errors of all of them are raised together.
  std::vector<Diagnostic> all;
  for (const std::string& f : files) {
    try {
      load_tpu_config(f, sets, ctx.global.search_path());
      ctx.out << f << ": ok\n";
    } catch (const ConfigError& e) {
      all.insert(all.end(), e.diagnostics().begin(), e.diagnostics().end());
    }
  }
  if (!all.empty()) throw ConfigError(all);
  return 0;
}

int keys(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts;
  po::variables_map vm;
  if (!parse_command_args("config keys",
                          "tpusim config keys\n\nPrints every config key as a Markdown table: "
                          "type, unit, default, meaning.",
                          args, opts, {}, vm, ctx))
    return 0;
  const arch::TpuConfig defaults;
  ctx.out << "| key | type | default | meaning |\n|---|---|---|---|\n";
  for (const FieldSpec& f : schema()) {
    std::string type;
    switch (f.type) {
      case FieldType::integer: type = "integer"; break;
      case FieldType::real: type = "number"; break;
      case FieldType::boolean: type = "bool"; break;
      case FieldType::string: type = "string"; break;
      case FieldType::quantity: type = unit_kind_si_name(f.unit); break;
      case FieldType::dtype: type = "dtype"; break;
      case FieldType::dtype_map: type = "dtype map"; break;
    }
    std::string def = f.required ? "**required**" : (f.present(defaults) ? format_field(f, f.get(defaults)) : "unset");
    if (def.empty()) def = "\"\"";
    std::string doc = f.doc;
    if (!f.choices.empty() && f.type == FieldType::string) {
      doc += " (";
      for (size_t i = 0; i < f.choices.size(); ++i) doc += (i ? ", " : "") + f.choices[i];
      doc += ")";
    }
    // The physical bounds the loader enforces (docs/config.md, Keys).
    std::string range;
    const bool quantity = f.type == FieldType::quantity;
    auto text = [&](double v) { return quantity ? format_quantity(v, f.unit) : format_scaled(v, 1, 1); };
    if (f.type == FieldType::integer || f.type == FieldType::real || quantity) {
      if (f.min > 0) range = ">= " + text(f.min);
      if (f.max != std::numeric_limits<double>::infinity()) range += (range.empty() ? "<= " : ", <= ") + text(f.max);
    }
    if (!range.empty()) doc += "; " + range;
    ctx.out << "| `" << f.path << "` | " << type << " | " << def << " | " << doc << " |\n";
  }
  return 0;
}

}  // namespace

void register_config_commands() {
  register_command("config show", "Print a fully resolved chip config (YAML or JSON)", show);
  register_command("config check", "Validate config files; print ok or every error", check);
  register_command("config keys", "Print every config key with type, default and meaning", keys);
}

}  // namespace tpusim::sim
