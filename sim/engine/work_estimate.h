// What a lowered program will cost to simulate, known before simulation:
// the events the engine will process (every instruction, and every DMA
// memory request with the channel and detailed HBM models, which work per
// request, so that requests dominate the wall time of a large run; the
// calibrated model serves a transfer as a whole, with a few events per
// transfer, so with it each DMA transfer counts once) and a lower bound on the simulated time
// (the program's MXU work at the chip's peak and its HBM traffic at the
// peak bandwidth: no schedule can be faster). The engine refuses a program
// beyond --max-events or --max-sim-time up front with these figures
// instead of simulating until the limit.
// Leaves out: ICI packets of collectives (counted as one event each) and
// VPU/XLU work in the time bound (the bound stays a lower bound).
#pragma once

#include <cstdint>

#include "arch/chip/isa.h"
#include "arch/common/chip_config.h"

namespace tpusim::sim {

struct WorkEstimate {
  std::uint64_t instructions = 0;   // of all simulated chips
  std::uint64_t dma_requests = 0;   // of all simulated chips
  std::uint64_t dma_transfers = 0;  // DMA instructions, of all simulated chips
  bool per_request = true;          // the HBM model's events are requests (else transfers)
  std::uint64_t dma_events() const { return per_request ? dma_requests : dma_transfers; }
  std::uint64_t events() const {  // saturating
    const std::uint64_t d = dma_events();
    return d > ~std::uint64_t{0} - instructions ? ~std::uint64_t{0} : instructions + d;
  }
  double mxu_seconds = 0;  // MXU MACs at the chip's peak
  double hbm_seconds = 0;  // HBM bytes at the peak bandwidth
  double min_seconds() const { return mxu_seconds > hbm_seconds ? mxu_seconds : hbm_seconds; }
};

// `chips`: how many chips the engine simulates (1, or the slice's with
// --all-chips); counts saturate at 2^64-1.
WorkEstimate estimate_work(const arch::TpuConfig& cfg, const arch::Program& program, int chips = 1);

// Default of --max-events (docs/hostile-input.md): the engine processes
// about 5 million events per second of wall time with the default
// (channel) HBM model on the 2-core development machine (llama3-8b prefill
// at 2048 tokens on v5e: 62 M events in 11.5 s), so 1e10 events is about
// half an hour; the detailed HBM model is 5-70x slower per event. With the
// calibrated model a program's instructions bound it first: Llama 3 70B
// training on v6e-256 at 8192 tokens per chip is 23 M instructions
// (15 G requests), simulated in about a minute with 4 GB of memory.
inline constexpr std::uint64_t kDefaultMaxEvents = 10'000'000'000ULL;

}  // namespace tpusim::sim
