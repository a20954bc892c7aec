// The energy and power figures of one run (docs/energy.md): the joules of
// each block from its statistics (arch/power/energy_model.h), the average
// power, a power profile in fixed windows with its peak, performance per
// watt and whether the average exceeds the chip's TDP. Figures are per
// chip: the one summary.csv reports (with --all-chips, each count the
// largest of any chip's, as the shared mode's chip counts collectives).
// The profile spreads each part's joules over the instructions that cause
// it, in proportion to their work and uniformly over each instruction's
// start..finish; work no instruction shows (a collective's reduction on
// the VPU and its HBM copies) is spread with the instructions of its kind.
// Leaves out: power of the chips of a slice other than the reported one.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "arch/power/energy_model.h"
#include "sim/results/run_report.h"

namespace tpusim::sim {

// Profile windows: 1 us, widened so that a run has at most kMaxPowerBins.
inline constexpr double kPowerWindowSeconds = 1e-6;
inline constexpr std::size_t kMaxPowerBins = 1u << 18;

struct PowerBin {
  double start = 0;                                // seconds
  double width = 0;                                // seconds (the last bin may be shorter)
  std::array<double, arch::kEnergyParts> watts{};  // per part, EnergyPart order
  double total() const;
};

struct EnergyMetrics {
  arch::EnergyActivity activity;
  arch::EnergyBreakdown joules;
  double energy_j = 0;                     // joules.total()
  double avg_power_w = 0;                  // energy_j / seconds (static power for a run of no time)
  double peak_power_w = 0;                 // highest bin of the profile
  double window_s = 0;                     // the profile's bin width
  double tdp_w = 0;                        // EnergyConfig::tdp; 0 = unknown
  bool over_tdp = false;                   // tdp_w > 0 and avg_power_w > tdp_w
  std::optional<double> flops_per_joule;   // total_flops / energy_j = FLOP/s per W
  std::optional<double> tokens_per_joule;  // RunReport::tokens / (energy_j x chips)
  std::vector<PowerBin> profile;
};

// Empty when the config has no energy model (`energy:` absent). Throws
// arch::InternalError on an inconsistent report.
std::optional<EnergyMetrics> compute_energy(const RunReport& r, double seconds, std::uint64_t total_flops);

}  // namespace tpusim::sim
