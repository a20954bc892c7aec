// Per-block energy from activity counts; see energy_model.h.
#include "arch/power/energy_model.h"

#include <string>

#include "arch/common/errors.h"

namespace tpusim::arch {

const char* energy_part_name(EnergyPart p) {
  switch (p) {
    case EnergyPart::mxu: return "mxu";
    case EnergyPart::vpu: return "vpu";
    case EnergyPart::vmem: return "vmem";
    case EnergyPart::cmem: return "cmem";
    case EnergyPart::hbm: return "hbm";
    case EnergyPart::ici: return "ici";
    case EnergyPart::static_power: return "static";
  }
  return "?";
}

double EnergyBreakdown::total() const {
  double s = 0;
  for (double j : joules) s += j;
  return s;
}

EnergyBreakdown energy_of(const EnergyConfig& cfg, const EnergyActivity& a) {
  auto check = [](double v, const char* what) {
    if (!(v >= 0))
      throw ConfigError(std::string("energy model: ") + what + " must be >= 0, found " + std::to_string(v));
  };
  check(a.vpu_ops, "VPU operations");
  check(a.vmem_bytes, "VMEM bytes");
  check(a.cmem_bytes, "CMEM bytes");
  check(a.hbm_bytes, "HBM bytes");
  check(a.hbm_activates, "HBM activations");
  check(a.ici_link_bytes, "ICI link bytes");
  check(a.seconds, "run time");
  EnergyBreakdown e;
  for (const auto& [t, slots] : a.mac_slots) {
    check(slots, "MXU MAC slots");
    auto it = cfg.mxu_mac.find(t);
    if (it != cfg.mxu_mac.end()) e[EnergyPart::mxu] += slots * it->second;
  }
  e[EnergyPart::vpu] = a.vpu_ops * cfg.vpu_op;
  e[EnergyPart::vmem] = a.vmem_bytes * cfg.vmem_byte;
  e[EnergyPart::cmem] = a.cmem_bytes * cfg.cmem_byte;
  e[EnergyPart::hbm] = a.hbm_bytes * 8.0 * cfg.hbm_bit + a.hbm_activates * cfg.hbm_activate;
  e[EnergyPart::ici] = a.ici_link_bytes * 8.0 * cfg.ici_bit;
  e[EnergyPart::static_power] = a.seconds * cfg.static_power;
  return e;
}

}  // namespace tpusim::arch
