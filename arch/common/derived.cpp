// Closed-form chip figures; see derived.h.
#include "arch/common/derived.h"

#include <cmath>
#include <sstream>

namespace tpusim::arch {

double peak_flops(const TpuConfig& c, DType t) {
  auto it = c.mxu.throughput.find(t);
  if (it == c.mxu.throughput.end()) return 0;
  return static_cast<double>(c.chip.tensorcores) * c.mxu.count * c.mxu.rows * c.mxu.cols * 2.0 * c.chip.clock_hz *
         it->second;
}

double hbm_peak_bandwidth(const HbmConfig& h) {
  return static_cast<double>(h.stacks) * h.channels * h.pseudo_channels * h.bus_width_bits / 8.0 * h.data_rate;
}

DerivedFigures derive(const TpuConfig& c) {
  DerivedFigures d;
  d.hbm_bandwidth = hbm_peak_bandwidth(c.hbm);
  d.hbm_capacity = c.hbm.capacity_bytes;
  d.ici_link_bandwidth = c.ici.link_bandwidth;
  d.ici_chip_bandwidth = 2.0 * c.ici.ports * c.ici.link_bandwidth;
  for (const auto& [t, rate] : c.mxu.throughput) {
    (void)rate;
    d.peak_flops[t] = peak_flops(c, t);
    if (d.hbm_bandwidth > 0) d.ridge_point[t] = d.peak_flops[t] / d.hbm_bandwidth;
  }
  return d;
}

namespace {

bool off(double derived, double published, double tol) {
  return std::fabs(derived - published) > tol * std::fabs(published);
}

}  // namespace

std::vector<PublishedMismatch> check_published(const TpuConfig& c, double tolerance) {
  std::vector<PublishedMismatch> out;
  const PublishedFigures& p = c.published;
  for (const auto& [t, pub] : p.peak_flops) {
    double d = peak_flops(c, t);
    if (!off(d, pub, tolerance)) continue;
    std::ostringstream how;
    auto it = c.mxu.throughput.find(t);
    if (it == c.mxu.throughput.end()) {
      how << "mxu.throughput has no " << dtype_name(t);
    } else {
      how << c.chip.tensorcores << " TC x " << c.mxu.count << " MXU x " << c.mxu.rows << "x" << c.mxu.cols << " x 2 x "
          << c.chip.clock_hz / 1e6 << " MHz x " << it->second;
    }
    out.push_back({"published.peak_tflops." + std::string(dtype_name(t)), pub, d, how.str()});
  }
  if (p.hbm_bandwidth && off(hbm_peak_bandwidth(c.hbm), *p.hbm_bandwidth, tolerance)) {
    std::ostringstream how;
    how << c.hbm.stacks << " stacks x " << c.hbm.channels << " ch x " << c.hbm.pseudo_channels << " pc x "
        << c.hbm.bus_width_bits << " bit / 8 x " << c.hbm.data_rate / 1e9 << " GT/s";
    out.push_back({"published.hbm_bandwidth", *p.hbm_bandwidth, hbm_peak_bandwidth(c.hbm), how.str()});
  }
  if (p.ici_link_bandwidth && off(c.ici.link_bandwidth, *p.ici_link_bandwidth, tolerance)) {
    out.push_back({"published.ici_link_bandwidth", *p.ici_link_bandwidth, c.ici.link_bandwidth, "ici.link_bandwidth"});
  }
  if (p.ici_chip_bandwidth) {
    double d = 2.0 * c.ici.ports * c.ici.link_bandwidth;
    if (off(d, *p.ici_chip_bandwidth, tolerance)) {
      std::ostringstream how;
      how << "2 directions x " << c.ici.ports << " ports x " << c.ici.link_bandwidth / 1e9 << " GB/s";
      out.push_back({"published.ici_chip_bandwidth", *p.ici_chip_bandwidth, d, how.str()});
    }
  }
  return out;
}

}  // namespace tpusim::arch
