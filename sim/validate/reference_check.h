// The committed validation table (results/reference/validation.csv,
// written by `make reference`) against a run: `tpusim validate --reference
// FILE` fails when a simulated figure of a case it ran differs from the
// file, so that a change of any number in docs/validation.md is a visible,
// reviewed diff. Compared columns: every column of validation.csv except
// the descriptive text (title, source), exactly as written (the simulator
// is deterministic). Leaves out: running the cases (runner.h).
#pragma once

#include <string>
#include <vector>

#include "sim/validate/runner.h"

namespace tpusim::sim::validate {

// One line per difference, readable on its own:
//   case v5e.gemm: simulated 181.2 -> 183.0, error_pct -8.00 -> -7.10
//   case new.case: not in <file> (a new case)
//   case old.case: in <file> but not in the suite (removed)
// Rows for cases that were not run are ignored unless `whole_suite` (then
// a reference row without a case is reported). `reference_csv` is the
// file's text; `name` is how messages call it. Throws ConfigError when the
// text is not a validation.csv (no header with id and simulated):
// arch::ConfigError, naming `name`.
std::vector<std::string> reference_differences(const std::string& reference_csv, const std::string& name,
                                               const std::vector<CaseResult>& results, bool whole_suite);

}  // namespace tpusim::sim::validate
