// A DMA descriptor: a strided copy of up to 4 dimensions between memory
// spaces (HBM, VMEM, SMEM, CMEM; ICI is named but not modelled yet).
// shape[0] is the contiguous run in bytes; shape[1..3] are counts whose
// consecutive elements are src_stride[d] / dst_stride[d] bytes apart
// (stride[0] is unused). Leaves out: element types, gathers/scatters.
#pragma once

#include <array>
#include <cstdint>

#include "arch/chip/isa.h"

namespace tpusim::arch {

struct DmaDescriptor {
  MemSpace src = MemSpace::hbm;
  MemSpace dst = MemSpace::vmem;
  std::uint64_t src_addr = 0;
  std::uint64_t dst_addr = 0;
  int dims = 1;                                    // 1..4
  std::array<std::uint64_t, 4> shape{0, 1, 1, 1};  // shape[0] in bytes
  std::array<std::uint64_t, 4> src_stride{0, 0, 0, 0};
  std::array<std::uint64_t, 4> dst_stride{0, 0, 0, 0};

  std::uint64_t bytes() const {
    std::uint64_t b = shape[0];
    for (int d = 1; d < dims; ++d) b *= shape[static_cast<std::size_t>(d)];
    return b;
  }

  // The sequencer's 2-D DmaWork as a descriptor.
  static DmaDescriptor from_work(const DmaWork& w) {
    DmaDescriptor d;
    d.src = w.src;
    d.dst = w.dst;
    d.src_addr = w.src_addr;
    d.dst_addr = w.dst_addr;
    d.dims = w.rows > 1 ? 2 : 1;
    d.shape = {w.row_bytes, w.rows, 1, 1};
    d.src_stride = {0, w.src_stride, 0, 0};
    d.dst_stride = {0, w.dst_stride, 0, 0};
    return d;
  }
};

}  // namespace tpusim::arch
