// Running a sweep on a cluster: the Slurm job-array script that
// `tpusim sweep slurm` writes. Each array task runs one shard with
// --resume into OUT/shard-<task>, so resubmitting the script (for all
// tasks or `sbatch --array=<missing>`) finishes what is missing without
// redoing what is done; `tpusim sweep merge` then joins the shards.
// Leaves out: submitting (the user or a test calls sbatch), other
// schedulers (GNU parallel and plain loops use --shard the same way, see
// docs/sweeps.md).
#pragma once

#include <string>
#include <vector>

namespace tpusim::sim::sweep {

struct SlurmOptions {
  std::string executable;  // absolute path of tpusim
  std::string spec;        // absolute path of the spec
  std::string out_dir;     // absolute; shards go to out_dir/shard-<i>
  int shards = 1;
  int cpus_per_task = 1;   // also the sweep's --jobs
  std::string time_limit;  // "HH:MM:SS" or empty
  std::string partition;   // empty = cluster default
  std::string job_name = "tpusim-sweep";
  std::vector<std::string> config_path;  // passed on as --config-path
  double point_timeout = 0;
};

// Empty when every value can go into the script safely, else what is wrong:
// no value may hold a control character (a newline would start a new
// command), and values on #SBATCH lines (out_dir, job_name, time_limit,
// partition) keep to letters, digits and ._+-:@%=,/ since sbatch does not
// unquote them.
std::string slurm_option_problem(const SlurmOptions& o);
// The sbatch script text (bash). Paths are single-quoted for the shell.
// Throws std::invalid_argument when slurm_option_problem() finds one.
std::string slurm_script(const SlurmOptions& o);

// A word quoted for POSIX sh: 'it'"'"'s'.
std::string shell_quote(const std::string& s);

}  // namespace tpusim::sim::sweep
