// The per-block energy model (arch/power/energy_model.h): joules are the
// activity counts times the configured energy per event, part by part.
#include <gtest/gtest.h>

#include "arch/common/errors.h"
#include "arch/power/energy_model.h"

namespace tpusim::arch {
namespace {

EnergyConfig config() {
  EnergyConfig c;
  c.present = true;
  c.mxu_mac = {{DType::bf16, 0.4e-12}, {DType::int8, 0.2e-12}};
  c.vpu_op = 0.3e-12;
  c.vmem_byte = 0.5e-12;
  c.cmem_byte = 1e-12;
  c.hbm_bit = 4e-12;
  c.hbm_activate = 1e-9;
  c.ici_bit = 5e-12;
  c.static_power = 55;
  return c;
}

TEST(EnergyModel, MxuEnergyIsLinearInMacSlots) {
  EnergyActivity a;
  a.mac_slots[DType::bf16] = 1e12;
  const double one = energy_of(config(), a)[EnergyPart::mxu];
  a.mac_slots[DType::bf16] = 3e12;
  const double three = energy_of(config(), a)[EnergyPart::mxu];
  EXPECT_DOUBLE_EQ(one, 1e12 * 0.4e-12);  // 0.4 J
  EXPECT_DOUBLE_EQ(three, 3 * one);
}

TEST(EnergyModel, EachDtypeCostsItsOwnEnergyAndUnlistedOnesNothing) {
  EnergyActivity a;
  a.mac_slots[DType::bf16] = 1e12;
  a.mac_slots[DType::int8] = 2e12;
  a.mac_slots[DType::fp8_e4m3] = 5e12;  // not in the config's map
  // 1e12 x 0.4 pJ + 2e12 x 0.2 pJ = 0.8 J; fp8 adds nothing.
  EXPECT_DOUBLE_EQ(energy_of(config(), a)[EnergyPart::mxu], 0.8);
}

TEST(EnergyModel, IdleRunCostsStaticPowerTimesTime) {
  EnergyActivity a;
  a.seconds = 2.5e-3;
  const EnergyBreakdown e = energy_of(config(), a);
  EXPECT_DOUBLE_EQ(e.total(), 55 * 2.5e-3);
  EXPECT_DOUBLE_EQ(e.dynamic(), 0);
}

TEST(EnergyModel, MemoriesAndLinksArePerByteBitAndActivation) {
  EnergyActivity a;
  a.vpu_ops = 1e9;
  a.vmem_bytes = 2e9;
  a.cmem_bytes = 3e9;
  a.hbm_bytes = 1e9;
  a.hbm_activates = 1e6;
  a.ici_link_bytes = 1e9;
  const EnergyBreakdown e = energy_of(config(), a);
  EXPECT_DOUBLE_EQ(e[EnergyPart::vpu], 1e9 * 0.3e-12);
  EXPECT_DOUBLE_EQ(e[EnergyPart::vmem], 2e9 * 0.5e-12);
  EXPECT_DOUBLE_EQ(e[EnergyPart::cmem], 3e9 * 1e-12);
  // 8e9 bits x 4 pJ + 1e6 ACTs x 1 nJ = 0.032 + 0.001 J.
  EXPECT_DOUBLE_EQ(e[EnergyPart::hbm], 8e9 * 4e-12 + 1e6 * 1e-9);
  EXPECT_DOUBLE_EQ(e[EnergyPart::ici], 8e9 * 5e-12);
  EXPECT_DOUBLE_EQ(e[EnergyPart::static_power], 0);
  EXPECT_DOUBLE_EQ(e.total(), e.dynamic());
}

TEST(EnergyModel, NegativeCountsAreRefused) {
  EnergyActivity a;
  a.hbm_bytes = -1;
  EXPECT_THROW(energy_of(config(), a), ConfigError);
}

TEST(EnergyModel, PartNamesAreDistinct) {
  for (std::size_t i = 0; i < kEnergyParts; ++i)
    for (std::size_t j = i + 1; j < kEnergyParts; ++j)
      EXPECT_STRNE(energy_part_name(kAllEnergyParts[i]), energy_part_name(kAllEnergyParts[j]));
}

}  // namespace
}  // namespace tpusim::arch
