// The engine's CollectiveBackend: collectives of the lowered program run
// on the ICI network of the whole slice (arch::ici::IciModule), and their
// outcome (algorithm, bytes, time, achieved bandwidth) is kept for ops.csv.
#pragma once

#include <memory>

#include "arch/chip/collective_backend.h"
#include "sim/engine/engine.h"
#include "sim/engine/slice_setup.h"

namespace tpusim::sim {

class IciBackendImpl;

class IciBackend : public arch::CollectiveBackend {
 public:
  IciBackend(const arch::TpuConfig& cfg, const std::string& slice, const MeshAxes& mesh,
             bool twisted);
  ~IciBackend() override;
  void start(const arch::IciWork& work, arch::InstrId instr, std::function<void()> on_done) override;
  std::vector<std::pair<std::string, arch::StatList>> block_stats() const override;
  const std::vector<CollectiveRecord>& records() const;
  int chips() const;

 private:
  std::unique_ptr<IciBackendImpl> impl_;
};

}  // namespace tpusim::sim
