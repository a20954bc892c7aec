// Step simulations in child processes (see step_runner.h).
#include "sim/serve/step_runner.h"

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "sim/sweep/child_pool.h"

namespace tpusim::sim::serve {

std::vector<std::string> StepSimSetup::child_args(const GridPoint& p) const {
  // Every digit of the limit: std::to_string's six decimals turned a limit
  // below 1 us into 0 (no limit).
  char limit[32];
  std::snprintf(limit, sizeof limit, "%.17g", max_sim_time);
  std::vector<std::string> a = {"serve",          "step",
                                "--arch",         arch,
                                "--model",        model,
                                "--dtype",        dtype,
                                "--prefill",      std::to_string(p.prefill),
                                "--decode",       std::to_string(p.decode),
                                "--context",      std::to_string(std::max<std::int64_t>(1, p.context)),
                                "--max-sim-time", limit};
  for (const auto& s : sets) {
    a.push_back("--set");
    a.push_back(s);
  }
  if (!slice.empty()) {
    a.push_back("--slice");
    a.push_back(slice);
  }
  if (!mesh.empty()) {
    a.push_back("--mesh");
    a.push_back(mesh);
  }
  if (twisted) a.push_back("--twisted");
  if (attention_kernel != "flash") {
    a.push_back("--attention-kernel");
    a.push_back(attention_kernel);
  }
  if (p.adapters > 0) {
    for (const std::string& x : {std::string("--lora-rank"), std::to_string(lora_rank), std::string("--lora-targets"),
                                 lora_targets, std::string("--adapters"), std::to_string(p.adapters)})
      a.push_back(x);
  }
  if (p.prefix > 0) {
    a.push_back("--prefix");
    a.push_back(std::to_string(p.prefix));
  }
  if (p.chunks > 1) {
    a.push_back("--chunks");
    a.push_back(std::to_string(p.chunks));
  }
  if (decode_tokens > 1) {
    a.push_back("--decode-tokens");
    a.push_back(std::to_string(decode_tokens));
  }
  return a;
}

models::PhaseOptions step_phase(const GridPoint& p, const models::MeshSpec& mesh, arch::DType dtype, int decode_tokens,
                                const models::LoraOptions& lora) {
  models::PhaseOptions o;
  if (p.adapters > 0) {
    o.lora = lora;
    o.lora.adapters = p.adapters;
  }
  o.decode_tokens = decode_tokens;
  o.mesh = mesh;
  o.weight_dtype = o.activation_dtype = o.kv_dtype = dtype;
  o.context = std::max<std::int64_t>(1, p.context);
  if (p.prefill > 0) {
    o.phase = models::Phase::prefill;
    o.batch = 1;
    o.seq_len = p.prefill;
    o.serve_decode = p.decode;
    o.prefill_context = p.prefix;
    o.prefill_chunks = p.chunks;
    o.cost_probe = true;
  } else {
    o.phase = models::Phase::decode;
    o.batch = p.decode;
  }
  return o;
}

void simulate_points(const std::vector<GridPoint>& points, const StepSimSetup& setup, int jobs,
                     const std::string& work_dir, StepCostModel& model, const std::function<void()>& tick) {
  namespace fs = std::filesystem;
  if (points.empty()) return;
  const fs::path base = fs::path(work_dir) / "step-sims";
  fs::create_directories(base);
  sweep::ChildPoolOptions po;
  po.jobs = jobs;
  std::string failure;
  int failure_exit = 1;
  auto dir = [&](std::size_t i) { return (base / std::to_string(i)).string(); };
  sweep::run_children(
      points.size(), po,
      [&](std::size_t i) {
        sweep::ChildSpec c;
        c.args = setup.child_args(points[i]);
        c.dir = dir(i);
        fs::create_directories(c.dir);
        c.keep_stdout = true;
        return c;
      },
      [&](std::size_t i, const sweep::ChildExit& e) {
        const GridPoint& p = points[i];
        const std::string what = "step prefill=" + std::to_string(p.prefill) + " decode=" + std::to_string(p.decode) +
                                 " context=" + std::to_string(p.context) +
                                 (p.prefix > 0 ? " prefix=" + std::to_string(p.prefix) : std::string()) +
                                 (p.chunks > 1 ? " chunks=" + std::to_string(p.chunks) : std::string());
        const std::string why = sweep::child_failure(e, dir(i));
        if (!why.empty()) {
          if (failure.empty()) {
            failure = what + ": " + why;
            failure_exit = WIFEXITED(e.status) && WEXITSTATUS(e.status) == 2 ? 2 : 1;
          }
          return;
        }
        std::istringstream out(sweep::slurp_file(dir(i) + "/stdout.txt"));
        std::string word;
        double sec = 0;
        while (out >> word)
          if (word == "step_seconds" && (out >> sec)) break;
        if (!(sec > 0) || !std::isfinite(sec)) {
          if (failure.empty()) failure = what + ": no step_seconds in the child's output";
          return;
        }
        model.add(p, sec);
      },
      tick);
  std::error_code ec;
  fs::remove_all(base, ec);
  if (!failure.empty()) throw StepSimError("serve: simulating " + failure, failure_exit);
}

}  // namespace tpusim::sim::serve
