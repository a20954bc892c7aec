// The Slurm job-array script; see cluster.h.
#include "sim/sweep/cluster.h"

#include <cctype>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "sim/results/format.h"

namespace tpusim::sim::sweep {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  return q + "'";
}

namespace {
bool has_control(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}
// #SBATCH lines are read by sbatch, not the shell: no quoting works there,
// so their values keep to a conservative character set.
bool sbatch_safe(const std::string& s) {
  for (unsigned char c : s)
    if (!std::isalnum(c) && std::string("._+-:@%=,/").find(static_cast<char>(c)) == std::string::npos) return false;
  return true;
}
}  // namespace

std::string slurm_option_problem(const SlurmOptions& o) {
  for (const auto& [what, v] :
       {std::pair<const char*, const std::string*>{"the executable path", &o.executable}, {"the spec path", &o.spec}})
    if (has_control(*v)) return std::string(what) + " contains a control character (newline, tab, ...)";
  for (const auto& d : o.config_path)
    if (has_control(d)) return "--config-path '" + d + "' contains a control character";
  for (const auto& [what, v] : {std::pair<const char*, const std::string*>{"the output directory (--out)", &o.out_dir},
                                {"the job name (--job-name, or tpusim-<spec name>)", &o.job_name},
                                {"--time", &o.time_limit},
                                {"--partition", &o.partition}})
    if (!sbatch_safe(*v))
      return std::string(what) + " '" + *v +
             "' has a character sbatch cannot take in an #SBATCH line (allowed: letters, digits and ._+-:@%=,/)";
  return "";
}

std::string slurm_script(const SlurmOptions& o) {
  if (auto why = slurm_option_problem(o); !why.empty()) throw std::invalid_argument("sweep slurm: " + why);
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# Written by `tpusim sweep slurm`: one array task per shard of\n"
    << "#   " << o.spec << "\n"
    << "# Submit:    sbatch " << o.out_dir << "/sweep.sbatch\n"
    << "# Missing:   tpusim sweep status " << o.spec << " " << o.out_dir << "\n"
    << "# Resubmit only some shards: sbatch --array=1,3 " << o.out_dir << "/sweep.sbatch\n"
    << "# (every task resumes, so rerunning a finished shard costs nothing)\n"
    << "# Merge:     tpusim sweep merge " << o.spec << " --out " << o.out_dir << " " << o.out_dir << "/shard-*\n"
    << "#SBATCH --job-name=" << o.job_name << "\n"
    << "#SBATCH --array=0-" << (o.shards - 1) << "\n"
    << "#SBATCH --ntasks=1\n"
    << "#SBATCH --cpus-per-task=" << o.cpus_per_task << "\n"
    << "#SBATCH --output=" << o.out_dir << "/logs/shard-%a.log\n";
  if (!o.time_limit.empty()) s << "#SBATCH --time=" << o.time_limit << "\n";
  if (!o.partition.empty()) s << "#SBATCH --partition=" << o.partition << "\n";
  s << "set -euo pipefail\n"
    << "TASK=\"${SLURM_ARRAY_TASK_ID:?run this script with sbatch (an array job)}\"\n"
    << "exec " << shell_quote(o.executable);
  for (const auto& d : o.config_path) s << " --config-path " << shell_quote(d);
  s << " sweep " << shell_quote(o.spec) << " --shard \"$TASK/" << o.shards << "\" --resume"
    << " --out " << shell_quote(o.out_dir) << "/shard-\"$TASK\""
    << " --jobs \"${SLURM_CPUS_PER_TASK:-" << o.cpus_per_task << "}\"";
  if (o.point_timeout > 0) s << " --point-timeout " << format_real(o.point_timeout, 9);
  s << "\n";
  return s.str();
}

}  // namespace tpusim::sim::sweep
