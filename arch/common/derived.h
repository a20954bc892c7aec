// Figures that follow from a chip config by closed form: peak FLOP/s per
// MXU dtype, HBM peak bandwidth and capacity, ICI bandwidth, roofline ridge
// points; and the check that they agree with the published figures a config
// states. Pure C++ (no YAML): the loader turns mismatches into ConfigErrors.
// Leaves out: VPU FLOPs (peaks are MXU-only, as vendors quote them) and any
// efficiency below peak.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "arch/common/chip_config.h"

namespace tpusim::arch {

// tensorcores x mxu.count x rows x cols x 2 FLOP/MAC x clock x throughput[t];
// 0 if the MXU does not support t.
double peak_flops(const TpuConfig& c, DType t);
// stacks x channels x pseudo_channels x bus_width_bits / 8 x data_rate.
double hbm_peak_bandwidth(const HbmConfig& h);

struct DerivedFigures {
  std::map<DType, double> peak_flops;   // FLOP/s per supported dtype
  double hbm_bandwidth = 0;             // bytes/s
  std::uint64_t hbm_capacity = 0;       // bytes
  double ici_link_bandwidth = 0;        // bytes/s one-way per link
  double ici_chip_bandwidth = 0;        // bytes/s, all ports, both directions
  std::map<DType, double> ridge_point;  // FLOPs per HBM byte, per dtype
};

DerivedFigures derive(const TpuConfig& c);

// A published figure the derived one misses by more than the tolerance.
struct PublishedMismatch {
  std::string key;   // dotted config key of the published figure
  double published;  // in the key's own SI unit (FLOP/s, bytes/s)
  double derived;
  std::string how;  // the formula with this config's numbers
};

inline constexpr double kPublishedTolerance = 0.03;

// Compares every published figure the config states with its derived value;
// |derived - published| / published must not exceed `tolerance`. A published
// peak for a dtype the MXU does not support is a mismatch with derived 0.
std::vector<PublishedMismatch> check_published(const TpuConfig& c, double tolerance = kPublishedTolerance);

}  // namespace tpusim::arch
