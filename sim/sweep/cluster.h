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
  std::string executable;                // absolute path of tpusim
  std::string spec;                      // absolute path of the spec
  std::string out_dir;                   // absolute; shards go to out_dir/shard-<i>
  int shards = 1;
  int cpus_per_task = 1;                 // also the sweep's --jobs
  std::string time_limit;                // "HH:MM:SS" or empty
  std::string partition;                 // empty = cluster default
  std::string job_name = "tpusim-sweep";
  std::vector<std::string> config_path;  // passed on as --config-path
  double point_timeout = 0;
};

// The sbatch script text (bash). Paths are single-quoted for the shell.
std::string slurm_script(const SlurmOptions& o);

// A word quoted for POSIX sh: 'it'"'"'s'.
std::string shell_quote(const std::string& s);

}  // namespace tpusim::sim::sweep
