// main() for the bench programs: silences the SystemC banner (printed by
// sc_elab_and_sim before sc_main, so it would precede every bench's
// numbers) and then enters the kernel, which calls the bench's sc_main.
// Include once, in the bench's .cpp.
#pragma once

#include <cstdlib>
#include <systemc>

int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}
