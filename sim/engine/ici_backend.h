// The engine's CollectiveBackend: collectives of the lowered program run
// on the ICI network of the whole slice (arch::ici::IciModule), and their
// outcome (algorithm, bytes, time, achieved bandwidth) is kept for ops.csv.
// Two views: the backend itself stands for every chip at once (one
// simulated chip, each collective complete when it is complete on the
// whole slice, its HBM traffic and reductions those of the chip that moves
// the most bytes, as that chip's messages move); chip_port(c)
// is chip c's own view when every chip is simulated (--all-chips): the
// chips start a collective one by one and each is called back when its
// own part is complete (IciSimulator::start_deferred).
#pragma once

#include <memory>

#include "arch/chip/collective_backend.h"
#include "sim/engine/engine.h"
#include "sim/engine/slice_setup.h"

namespace tpusim::sim {

class IciBackendImpl;

class IciBackend : public arch::CollectiveBackend {
 public:
  IciBackend(const arch::TpuConfig& cfg, const std::string& slice, const workloads::MeshSpec& mesh, bool twisted);
  ~IciBackend() override;
  void start(const arch::IciWork& work, const arch::CollectiveGroup& group, arch::InstrId instr,
             std::function<void()> on_done, std::function<void(const arch::CollectiveProgress&)> on_progress) override;
  std::vector<std::pair<std::string, arch::StatList>> block_stats() const override;
  const std::vector<CollectiveRecord>& records() const;
  int chips() const;       // of one slice
  int num_slices() const;  // multislice: the slice count, else 1
  // Chip `chip`'s view (lives as long as the backend). Its block_stats
  // are empty: the network's statistics are the backend's.
  arch::CollectiveBackend& chip_port(int chip);

 private:
  std::unique_ptr<IciBackendImpl> impl_;
};

}  // namespace tpusim::sim
