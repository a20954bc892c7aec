// main() for the bench programs: silences the SystemC banner (printed by
// sc_elab_and_sim before sc_main, so it would precede every bench's
// numbers), keeps freed heap memory as tpusim does (sim/run/heap_reuse.h)
// and then enters the kernel, which calls the bench's sc_main.
// Include once, in the bench's .cpp.
#pragma once

#include <cstdlib>
#include <systemc>

#include "sim/run/heap_reuse.h"

int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  tpusim::sim::keep_freed_heap_memory();
  return sc_core::sc_elab_and_sim(argc, argv);
}
