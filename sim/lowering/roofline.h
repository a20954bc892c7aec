// An operator's roofline: the fewest cycles its fused group could take on
// the whole chip, max(MACs / MXU peak, memory traffic / bandwidth). The
// traffic is the group's external inputs once and its final output once
// (operands in CMEM count against CMEM's bandwidth, HBM and CMEM being
// separate paths; VMEM-resident operands cost none), never more than what
// the program actually moves (an
// operator that reads a subset, such as a slice or a strided 1x1
// convolution, has that as its bound). Vector work is bounded by memory.
// Collectives keep the link bound their lowering set.
#pragma once

#include <vector>

#include "sim/lowering/op_lowering.h"

namespace tpusim::sim::lowering {

void fill_roofline(const LowerContext& cx, std::size_t op, const std::vector<Step>& steps, OpPlan& plan);

}  // namespace tpusim::sim::lowering
