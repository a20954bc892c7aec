// Energy of a chip's run from what its blocks did: every block statistic
// that costs energy (MXU MAC slots per dtype, VPU element operations, VMEM
// and CMEM bytes, HBM bits and row activations, ICI link bits) times its
// energy per event from the config's `energy:` section (EnergyConfig),
// plus the static power over the run's time. Pure arithmetic, no SystemC:
// sim/results collects the activity from the blocks' statistics and
// spreads the joules over time for the power profile (docs/energy.md).
// Leaves out: voltage and frequency scaling, temperature-dependent
// leakage, data-dependent switching (zeros cost as much as other values),
// the scalar core, DMA engines and SMEM (in the static power), the host
// and its PCIe link, and power capping (a run over TDP is reported, never
// slowed down).
#pragma once

#include <array>
#include <map>

#include "arch/common/chip_config.h"
#include "arch/common/dtype.h"

namespace tpusim::arch {

// What one chip did during a run, in the units the energies are given in.
struct EnergyActivity {
  std::map<DType, double> mac_slots;  // MXU MAC slots issued, by the dtype the array ran
  double vpu_ops = 0;                 // VPU element operations (ALU and transcendental) and XLU slot passes
  double vmem_bytes = 0;              // bytes read from or written to VMEM
  double cmem_bytes = 0;              // bytes read from or written to CMEM
  double hbm_bytes = 0;               // bytes read from or written to HBM
  double hbm_activates = 0;           // DRAM row activations
  double ici_link_bytes = 0;          // bytes this chip sent over ICI links, each hop counted
  double seconds = 0;                 // run time (static power)
};

// The parts of a breakdown, in the order every table prints them.
enum class EnergyPart : std::uint8_t { mxu, vpu, vmem, cmem, hbm, ici, static_power };
inline constexpr std::size_t kEnergyParts = 7;
inline constexpr EnergyPart kAllEnergyParts[kEnergyParts] = {EnergyPart::mxu,         EnergyPart::vpu, EnergyPart::vmem,
                                                             EnergyPart::cmem,        EnergyPart::hbm, EnergyPart::ici,
                                                             EnergyPart::static_power};
const char* energy_part_name(EnergyPart p);

// Joules per part.
struct EnergyBreakdown {
  std::array<double, kEnergyParts> joules{};
  double& operator[](EnergyPart p) { return joules[static_cast<std::size_t>(p)]; }
  double operator[](EnergyPart p) const { return joules[static_cast<std::size_t>(p)]; }
  double total() const;
  double dynamic() const { return total() - (*this)[EnergyPart::static_power]; }
};

// Joules of `a` under `cfg`. A MAC slot of a dtype absent from
// cfg.mxu_mac costs nothing. Throws ConfigError on a negative count.
EnergyBreakdown energy_of(const EnergyConfig& cfg, const EnergyActivity& a);

}  // namespace tpusim::arch
