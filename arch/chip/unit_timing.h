// The interface between the sequencer and a compute unit's pure timing
// model (MXU, VPU, XLU): the sequencer hands an instruction and the cycle
// it is ready; the model answers when it starts and finishes, keeping its
// own busy-until state so that back-to-back work overlaps as the hardware
// allows. This is the loosely-timed TLM style (a call that returns an
// annotated delay): no thread per unit, no idle clocks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "arch/chip/isa.h"
#include "arch/common/stats.h"

namespace tpusim::arch {

struct Interval {
  std::uint64_t start = 0;
  std::uint64_t finish = 0;
};

class UnitTiming {
 public:
  virtual ~UnitTiming() = default;
  // `ready` is the TensorCore cycle at which the instruction is issued and
  // its inputs are available. Returns start >= ready and finish >= start.
  virtual Interval issue(const Instr& in, std::uint64_t ready) = 0;
  virtual StatList stats() const = 0;
};

}  // namespace tpusim::arch
