// Simulating serving steps on the cycle-level engine: the workload of one
// step shape (the model zoo's serving step, models/model_spec.h), and a
// pool of `tpusim serve step` child processes that simulates many shapes
// in parallel (sim/sweep/child_pool.h: SystemC elaborates once per
// process) and fills a StepCostModel.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/model_spec.h"
#include "sim/serve/step_cost.h"
#include "workloads/ir/workload.h"

namespace tpusim::sim::serve {

// What every step simulation of one deployment shares (one replica).
struct StepSimSetup {
  std::string arch;               // --arch
  std::vector<std::string> sets;  // --set key=value
  std::string slice;              // "" = one chip
  std::string mesh;               // "" = none; tensor/expert axes only
  bool twisted = false;
  std::string model;              // zoo name or file
  std::string dtype = "bf16";
  // --attention-kernel: flash (one sequence a grid step) or batched
  // (models::AttentionImpl).
  std::string attention_kernel = "flash";
  double max_sim_time = 3600;
  int decode_tokens = 1;  // > 1: speculative verification steps
  std::int64_t lora_rank = 0;  // LoRA adapters (points with adapters > 0)
  std::string lora_targets;
  // The arguments of `tpusim serve step` for a point.
  std::vector<std::string> child_args(const GridPoint& p) const;
};

// The phase options of one step: P > 0: the zoo's serving step (P prefill
// tokens in p.chunks chunks, each after p.prefix cached tokens of its own, with B
// decoding sequences over `context` tokens; a cost probe, which may pass
// max_context at a grid corner); P == 0: a decode step of batch B at
// `context`.
// With p.adapters > 0, `lora` (rank and targets) applies with
// p.adapters distinct adapters.
models::PhaseOptions step_phase(const GridPoint& p, const models::MeshSpec& mesh, arch::DType dtype,
                                int decode_tokens = 1, const models::LoraOptions& lora = {});

// A step simulation that failed: the child's own error (a simulation
// limit, a workload that does not map onto the chip, ...), not a bug of
// the serving simulation. `child_exit` is the child's exit code (2: the
// user's setup, 1: otherwise), which `tpusim serve` exits with.
class StepSimError : public std::runtime_error {
 public:
  StepSimError(const std::string& what, int child_exit) : std::runtime_error(what), child_exit_(child_exit) {}
  int child_exit() const { return child_exit_; }

 private:
  int child_exit_;
};

// Simulates `points` (at most `jobs` children at a time, in a temporary
// folder under `work_dir`) and adds each one's seconds to `model`.
// `tick` is called while waiting. Throws StepSimError naming the point and
// the child's error message when one fails.
void simulate_points(const std::vector<GridPoint>& points, const StepSimSetup& setup, int jobs,
                     const std::string& work_dir, StepCostModel& model, const std::function<void()>& tick = {});

}  // namespace tpusim::sim::serve
