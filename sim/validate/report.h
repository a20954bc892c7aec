// Reports of a validation run: the terminal table, a Markdown table (for
// docs/validation.md), validation.csv, the simulated-vs-measured plot
// (validation.svg, log-log, y = x and the +-25% band, each case's own
// tolerance as a bar) and validation.html embedding the plot and the table.
// Every output is deterministic (no wall-clock times).
// Leaves out: running the cases (runner.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "sim/validate/runner.h"

namespace tpusim::sim::validate {

// case, measured, simulated, unit, error %, tolerance, outcome; then a
// summary line (counts, mean absolute error of the non-error cases).
void write_table(std::ostream& os, const std::vector<CaseResult>& results);

// The same as a Markdown table.
void write_markdown(std::ostream& os, const std::vector<CaseResult>& results);

// validation.csv text: one row per case (docs/validation.md lists the
// columns).
std::string csv_text(const std::vector<CaseResult>& results);

// A self-contained SVG document.
std::string svg_plot(const std::vector<CaseResult>& results);

// A self-contained HTML page: the SVG inline and the table.
std::string html_page(const std::vector<CaseResult>& results);

// Writes validation.csv, validation.svg and validation.html into `dir`.
void write_reports(const std::string& dir, const std::vector<CaseResult>& results);

}  // namespace tpusim::sim::validate
