// One step of a collective as a chip sees it, shared by the ICI simulator
// that reports it and the chip model that acts on it.
#pragma once

#include <cstdint>

namespace tpusim::arch {

// What the chip must do itself for a collective, one step at a time, when
// the step starts: a message of `sent` bytes leaves the chip (its DMA
// engines read it from HBM as it goes) or one of `received` bytes comes to
// it (written to HBM as it arrives, forwarded ring shards included;
// `reduce` of them are partial results to add on the VPU). The chip issues
// each step's DMAs and reduction then, so that the collective's HBM
// traffic and VPU work follow its progress on the links instead of all
// landing at its start; the collective completes only when they have.
struct CollectiveProgress {
  std::uint64_t sent = 0, received = 0, reduce = 0;
};

}  // namespace tpusim::arch
