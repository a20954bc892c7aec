// The tpusim executable: hands the command line to the CLI library, which
// maps outcomes to exit codes. main() silences the SystemC banner (printed
// by sc_elab_and_sim before sc_main) and then enters the kernel as usual.
#include <cstdlib>
#include <systemc>

#include "sim/cli/cli.h"

int sc_main(int argc, char* argv[]) { return tpusim::sim::cli_main(argc, argv); }

int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}
