// `tpusim sweep` and its helpers: run a sweep spec (docs/sweeps.md) point
// by point as child processes, merge shard outputs, write a Slurm array
// script, and report what is done, failed and missing.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "sim/cli/cli.h"
#include "sim/sweep/cluster.h"
#include "sim/sweep/results_table.h"
#include "sim/sweep/runner.h"
#include "sim/sweep/sweep_spec.h"

namespace tpusim::sim {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

std::string list(const std::vector<std::string>& v, std::size_t max = 20) {
  std::string s;
  for (std::size_t i = 0; i < v.size() && i < max; ++i) s += (i ? ", " : "") + v[i];
  if (v.size() > max) s += ", ... (" + std::to_string(v.size() - max) + " more)";
  return s;
}

int sweep_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("sweep options");
  opts.add_options()("spec", po::value<std::string>()->required(), "sweep spec (YAML)")(
      "out", po::value<std::string>()->required(), "output directory (results.csv, runs/)")(
      "jobs,j", po::value<int>()->default_value(0), "points run in parallel (0 = all cores)")(
      "resume", po::bool_switch(), "keep the rows of OUT/results.csv and run only the missing points")(
      "retry-failed", po::bool_switch(), "with --resume: run the points of error rows again")(
      "shard", po::value<std::string>(), "run only shard I of N (I/N, 0-based)")(
      "point-timeout", po::value<double>()->default_value(0), "seconds before a point is killed (0 = none)")(
      "keep-runs", po::bool_switch(), "keep each point's run folder under OUT/runs/<point id>/")(
      "quiet,q", po::bool_switch(), "no progress on stderr")(
      "dry-run", po::bool_switch(), "list the points (id, values, config hash or error) and run nothing");
  po::variables_map vm;
  if (!parse_command_args("sweep",
                          "tpusim sweep SPEC --out DIR [--jobs N] [--resume [--retry-failed]] [--shard I/N] "
                          "[--point-timeout S] [--keep-runs] [--quiet]\n"
                          "       tpusim sweep merge SPEC --out DIR SHARD_DIR...\n"
                          "       tpusim sweep slurm SPEC --shards N --out DIR\n"
                          "       tpusim sweep status SPEC DIR",
                          args, opts, {{"spec", 1}}, vm, ctx))
    return 0;
  sweep::SweepRunOptions o;
  o.out_dir = vm["out"].as<std::string>();
  o.jobs = vm["jobs"].as<int>();
  if (o.jobs < 0) throw UsageError("sweep: --jobs must be >= 0");
  o.resume = vm["resume"].as<bool>();
  o.retry_failed = vm["retry-failed"].as<bool>();
  if (o.retry_failed && !o.resume) throw UsageError("sweep: --retry-failed needs --resume");
  if (vm.count("shard")) {
    try {
      std::tie(o.shard_index, o.shard_count) = sweep::parse_shard(vm["shard"].as<std::string>());
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("sweep: ") + e.what());
    }
  }
  o.point_timeout = vm["point-timeout"].as<double>();
  if (!(o.point_timeout >= 0 && o.point_timeout <= 1e9))  // NaN fails both
    throw UsageError("sweep: --point-timeout must be a number of seconds in [0, 1e9], found " +
                     std::to_string(o.point_timeout));
  o.keep_runs = vm["keep-runs"].as<bool>();
  o.quiet = vm["quiet"].as<bool>();
  o.config_path = ctx.global.config_path;
  o.progress = &ctx.err;
  o.progress_tty = ::isatty(2) != 0;

  const sweep::SweepSpec spec = sweep::load_sweep_spec(vm["spec"].as<std::string>());
  const auto points = sweep::prepare_points(spec, ctx.global.search_path());
  if (vm["dry-run"].as<bool>()) {
    for (const auto& pp : points) {
      if (!sweep::in_shard(*pp.point, o.shard_index, o.shard_count)) continue;
      ctx.out << pp.point->id;
      for (const auto& v : pp.point->values) ctx.out << " " << v.key << "=" << v.text;
      ctx.out << "  " << (pp.error.empty() ? "config " + pp.config_hash : "error: " + pp.error) << "\n";
    }
    ctx.out << spec.points.size() << " points (" << spec.expanded - spec.points.size() << " filtered out)\n";
    return 0;
  }
  const sweep::SweepRunSummary s = sweep::run_sweep(spec, points, o);
  if (!o.quiet) {
    ctx.err << "sweep: " << s.shard_points << " points";
    if (o.shard_count > 1) ctx.err << " in shard " << o.shard_index << "/" << o.shard_count;
    ctx.err << ": " << s.already_done << " already done, " << s.ok << " ok, " << s.failed << " failed";
    if (s.dropped) ctx.err << ", " << s.dropped << " torn line(s) dropped";
    if (s.retried) ctx.err << ", " << s.retried << " failed point(s) retried";
    if (s.duplicates_removed) ctx.err << ", " << s.duplicates_removed << " duplicate row(s) removed";
    ctx.err << " in " << s.wall_seconds << " s\n";
  }
  ctx.out << "results: " << (fs::path(o.out_dir) / "results.csv").string() << "\n";
  return 0;
}

int merge_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("merge options");
  opts.add_options()("spec", po::value<std::string>()->required(), "the sweep spec the shards ran")(
      "out", po::value<std::string>()->required(), "directory for the merged results.csv")(
      "inputs", po::value<std::vector<std::string>>()->required(), "shard directories (or results CSV files)");
  po::variables_map vm;
  if (!parse_command_args("sweep merge", "tpusim sweep merge SPEC --out DIR SHARD_DIR...", args, opts,
                          {{"spec", 1}, {"inputs", -1}}, vm, ctx))
    return 0;
  const sweep::SweepSpec spec = sweep::load_sweep_spec(vm["spec"].as<std::string>());
  const auto rep = sweep::merge_results(spec, vm["inputs"].as<std::vector<std::string>>(), vm["out"].as<std::string>());
  if (!rep.duplicates.empty() || !rep.unknown.empty()) {
    if (!rep.duplicates.empty())
      ctx.err << "tpusim: sweep merge: " << rep.duplicates.size()
              << " point(s) appear in more than one input: " << list(rep.duplicates) << "\n";
    if (!rep.unknown.empty())
      ctx.err << "tpusim: sweep merge: " << rep.unknown.size()
              << " row(s) are not points of this spec: " << list(rep.unknown) << "\n";
    ctx.err << "tpusim: sweep merge: nothing written\n";
    return 2;
  }
  ctx.out << "merged " << rep.merged << " of " << rep.total << " points (" << rep.failed << " failed) into "
          << (fs::path(vm["out"].as<std::string>()) / "results.csv").string() << "\n";
  if (!rep.missing.empty()) {
    ctx.err << "tpusim: sweep merge: " << rep.missing.size() << " point(s) missing: " << list(rep.missing) << "\n";
    return 1;
  }
  return 0;
}

int slurm_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("slurm options");
  opts.add_options()("spec", po::value<std::string>()->required(), "sweep spec")(
      "shards", po::value<int>()->required(), "array tasks (shards)")("out", po::value<std::string>()->required(),
                                                                      "output directory (shard-<i>/ per task)")(
      "cpus-per-task", po::value<int>()->default_value(1), "CPUs per task (the shard's --jobs)")(
      "time", po::value<std::string>()->default_value(""), "Slurm time limit per task, e.g. 01:00:00")(
      "partition", po::value<std::string>()->default_value(""), "Slurm partition")(
      "job-name", po::value<std::string>()->default_value(""), "Slurm job name (default: tpusim-<spec name>)")(
      "point-timeout", po::value<double>()->default_value(0), "passed on to each shard");
  po::variables_map vm;
  if (!parse_command_args("sweep slurm", "tpusim sweep slurm SPEC --shards N --out DIR", args, opts, {{"spec", 1}}, vm,
                          ctx))
    return 0;
  sweep::SlurmOptions o;
  o.shards = vm["shards"].as<int>();
  if (o.shards < 1) throw UsageError("sweep slurm: --shards must be >= 1");
  o.cpus_per_task = vm["cpus-per-task"].as<int>();
  if (o.cpus_per_task < 1) throw UsageError("sweep slurm: --cpus-per-task must be >= 1");
  const std::string spec_path = vm["spec"].as<std::string>();
  const sweep::SweepSpec spec = sweep::load_sweep_spec(spec_path);
  sweep::prepare_points(spec, ctx.global.search_path());  // spec errors now, not on the cluster
  o.spec = fs::absolute(spec_path).lexically_normal().string();
  o.out_dir = fs::absolute(vm["out"].as<std::string>()).lexically_normal().string();
  std::error_code ec;
  o.executable = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw std::runtime_error("cannot find the tpusim executable: " + ec.message());
  for (const auto& d : ctx.global.config_path) o.config_path.push_back(fs::absolute(d).string());
  o.time_limit = vm["time"].as<std::string>();
  o.partition = vm["partition"].as<std::string>();
  o.job_name = vm["job-name"].as<std::string>().empty() ? "tpusim-" + spec.name : vm["job-name"].as<std::string>();
  o.point_timeout = vm["point-timeout"].as<double>();
  if (!(o.point_timeout >= 0 && o.point_timeout <= 1e9))
    throw UsageError("sweep slurm: --point-timeout must be a number of seconds in [0, 1e9]");
  if (static_cast<std::size_t>(o.shards) > std::max<std::size_t>(1, spec.points.size()))
    throw UsageError("sweep slurm: --shards " + std::to_string(o.shards) + " is more than the spec's " +
                     std::to_string(spec.points.size()) + " points (an array task per point at most)");
  if (auto why = sweep::slurm_option_problem(o); !why.empty()) throw UsageError("sweep slurm: " + why);
  // Slurm does not create the --output directory.
  fs::create_directories(fs::path(o.out_dir) / "logs");
  const std::string script = (fs::path(o.out_dir) / "sweep.sbatch").string();
  {
    std::ofstream f(script);
    f << sweep::slurm_script(o);
    if (!f) throw std::runtime_error("cannot write " + script);
  }
  fs::permissions(script, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add, ec);
  std::ofstream(fs::path(o.out_dir) / "shards.txt") << o.shards << "\n";
  ctx.out << "wrote " << script << " (" << o.shards << " array tasks, " << spec.points.size() << " points)\n"
          << "submit: sbatch " << script << "\n";
  return 0;
}

int status_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("status options");
  opts.add_options()("spec", po::value<std::string>()->required(), "sweep spec")(
      "dir", po::value<std::string>()->required(), "sweep output (or the parent of shard-*/ folders)")(
      "shards", po::value<int>()->default_value(0), "shard count (default: DIR/shards.txt)")(
      "list", po::bool_switch(), "list every missing point id");
  po::variables_map vm;
  if (!parse_command_args("sweep status", "tpusim sweep status SPEC DIR", args, opts, {{"spec", 1}, {"dir", 1}}, vm,
                          ctx))
    return 0;
  const sweep::SweepSpec spec = sweep::load_sweep_spec(vm["spec"].as<std::string>());
  const std::string dir = vm["dir"].as<std::string>();
  const auto st = sweep::sweep_status(spec, dir, vm["shards"].as<int>());
  ctx.out << "points:  " << st.total << "\n"
          << "done:    " << st.ok + st.failed << " (" << st.ok << " ok, " << st.failed << " failed)\n"
          << "missing: " << st.missing.size() << "\n";
  if (!st.missing.empty())
    ctx.out << "missing points: " << list(st.missing, vm["list"].as<bool>() ? st.missing.size() : 10) << "\n";
  if (!st.missing_by_shard.empty()) {
    std::string shards;
    for (const auto& [s, n] : st.missing_by_shard) shards += (shards.empty() ? "" : ",") + std::to_string(s);
    ctx.out << "shards with missing points: " << shards << "\n"
            << "resubmit: sbatch --array=" << shards << " " << (fs::path(dir) / "sweep.sbatch").string() << "\n";
  }
  if (!st.duplicates.empty()) ctx.out << "duplicated points (in two results files): " << list(st.duplicates) << "\n";
  if (st.files.empty()) ctx.out << "no results.csv found under " << dir << "\n";
  // Scripts and resubmission loops test the exit code: 0 only when every
  // point has exactly one row.
  return st.missing.empty() && st.duplicates.empty() ? 0 : 1;
}

}  // namespace

void register_sweep_commands() {
  register_command("sweep", "Run a sweep spec: one tpusim run per point, rows in OUT/results.csv", sweep_cmd);
  register_command("sweep merge", "Merge shard outputs of a sweep into one results.csv", merge_cmd);
  register_command("sweep slurm", "Write a Slurm job-array script that runs a sweep in shards", slurm_cmd);
  register_command("sweep status", "Report done, failed and missing points of a sweep", status_cmd);
}

}  // namespace tpusim::sim
