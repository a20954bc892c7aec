#include "sim/run/model_fit.h"

#include <cmath>
#include <sstream>

#include "models/zoo.h"
#include "sim/lowering/lowering.h"

namespace tpusim::sim {

ModelFit check_model_fit(const models::ModelSpec& m, const models::PhaseOptions& o, const arch::TpuConfig& cfg) {
  ModelFit r;
  r.report = models::check_fit(m, o, cfg.hbm.capacity_bytes, cfg.host_memory_per_chip());
  models::FitReport& fit = r.report;
  const double capacity = static_cast<double>(cfg.hbm.capacity_bytes);
  // A ResNet's or UNet's closed form is its graph's liveness without the
  // plan's on-chip residency, so it can sit further above the plan than
  // the margin; their graphs are small, so the plan decides any refusal.
  const bool graph = m.family == models::Family::resnet || m.family == models::Family::unet;
  const bool beyond_margin = static_cast<double>(fit.needed_bytes) > kClosedFormMargin * capacity;
  if (fit.fits || !fit.host_fits || (beyond_margin && !graph)) return r;
  LoweringOptions lo;
  lo.multi_chip = !o.mesh.empty();
  r.plan_checked = true;
  r.plan_peak_bytes = hbm_plan_peak(models::generate(m, o), cfg, lo);
  constexpr double gib = 1024.0 * 1024.0 * 1024.0;
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(2);
  s << "the closed-form footprint, " << fit.needed_gib << " GiB per chip, is above the chip's "
    << fit.available_gib << " GiB";
  if (beyond_margin)
    s << " (a " << models::family_name(m.family) << "'s closed form leaves out the tensors the plan keeps on chip)";
  else
    s << " by less than its margin over the memory plan (" << std::lround(100 * (kClosedFormMargin - 1)) << "%)";
  s << "; the memory plan of the workload (tensors placed by liveness) peaks at "
    << static_cast<double>(r.plan_peak_bytes) / gib << " GiB";
  r.note = s.str();
  if (r.plan_peak_bytes <= cfg.hbm.capacity_bytes) {
    fit.fits = true;
    r.note += ", which fits";
  } else {
    fit.message += "; " + r.note + ", which does not fit either";
  }
  return r;
}

}  // namespace tpusim::sim
