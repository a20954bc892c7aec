// report.html of `tpusim run --report`: a self-contained page (inline SVG,
// no network) with the operator timeline per TensorCore unit and DMA
// engine, the roofline of the operators (arithmetic intensity vs achieved
// FLOP/s under the chip's compute and HBM roofs), time by operator kind,
// HBM bandwidth over time, and the run's totals.
// Figures: an operator's point uses its fused group's FLOPs (its own and
// those fused into it) over the group's minimum HBM bytes (ops.csv
// hbm_bytes) and over its interval (ops.csv cycles / clock_hz); HBM
// bandwidth spreads each DMA with an HBM end evenly over its start..finish
// interval, in 100 bins of the run. Marks carry their numbers in data-*
// attributes (svg.h).
// Leaves out: per-chip views of --all-chips runs (the slowest chip is
// shown), ICI link utilization.
#pragma once

#include <string>

#include "sim/results/metrics.h"
#include "sim/results/run_report.h"

namespace tpusim::sim {
namespace report {

std::string timeline_svg(const RunReport& r);
std::string roofline_svg(const RunReport& r, const RunMetrics& m);
std::string kind_time_svg(const RunReport& r, const RunMetrics& m);
std::string hbm_bandwidth_svg(const RunReport& r, const RunMetrics& m);

std::string run_report_html(const RunReport& r, const RunMetrics& m);
// Writes dir/report.html; throws std::runtime_error when it cannot.
void write_run_report(const RunReport& r, const RunMetrics& m, const std::string& dir);

}  // namespace report
using report::write_run_report;
}  // namespace tpusim::sim
