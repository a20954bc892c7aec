// Process start-up setting for a simulator run: freed heap memory stays in
// the process for reuse instead of going back to the kernel.
//
// A large run builds vectors of hundreds of MB (the program's
// instructions, one record per instruction, the lowering's steps) that
// grow by doubling. By default glibc serves every block over 128 KiB-32 MiB
// with its own mmap and unmaps it on free, so each growth step and each
// short-lived large buffer costs fresh pages, which the kernel clears one
// by one (on this project's VM, page clearing was ~35% of a llama3-70b
// training step's lowering). With the thresholds raised, large blocks come
// from the heap and freed ones are reused by later allocations. Only the
// executables call this (tpusim, bench programs): it is a process-wide
// policy, not a library's choice.
#pragma once

#include <climits>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tpusim::sim {

inline void keep_freed_heap_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, INT_MAX);  // blocks up to 2 GiB from the heap, not their own mmap
  mallopt(M_TRIM_THRESHOLD, INT_MAX);  // freed memory at the heap's top is kept
#endif
}

}  // namespace tpusim::sim
