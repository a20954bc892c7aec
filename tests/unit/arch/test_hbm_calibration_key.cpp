// The calibration key: two HBM configs share one calibration only when
// every field the detailed model reads is equal. Each field of
// TPUSIM_HBM_FIELDS (the list that declares HbmConfig) and each timing of
// TPUSIM_HBM_TIMINGS is changed in turn; the key must change for every
// one of them but `model` (calibration always runs the detailed model).
#include <gtest/gtest.h>

#include <string>

#include "arch/hbm/hbm_calibration.h"
#include "hbm_test_util.h"

using namespace tpusim;

namespace {

// A different value of each field type (true); the timings are changed
// one by one below (false).
bool change(std::string& v) { return v += "x", true; }
bool change(int& v) { return v += 1, true; }
bool change(std::uint64_t& v) { return v += 1, true; }
bool change(double& v) { return v = v * 2 + 1e-9, true; }
bool change(bool& v) { return v = !v, true; }
bool change(arch::HbmTimings&) { return false; }

TEST(HbmCalibrationKey, EveryFieldButTheModelChangesTheKey) {
  const arch::HbmConfig base = test::load_hbm_preset("hbm2e", 2);
  const std::string k0 = arch::hbm_calibration_key(base);
  int fields = 0;
#define TPUSIM_KEY_FIELD(type, name, init, calibrated)                                       \
  do {                                                                                       \
    arch::HbmConfig c = base;                                                                \
    if (!change(c.name)) break;                                                              \
    if (calibrated)                                                                          \
      EXPECT_NE(arch::hbm_calibration_key(c), k0) << #name " is not in the calibration key"; \
    else                                                                                     \
      EXPECT_EQ(arch::hbm_calibration_key(c), k0) << #name " should not split calibrations"; \
    ++fields;                                                                                \
  } while (false);
  TPUSIM_HBM_FIELDS(TPUSIM_KEY_FIELD)
#undef TPUSIM_KEY_FIELD
#define TPUSIM_KEY_TIMING(name, ps_name, req, positive, description)                       \
  {                                                                                        \
    arch::HbmConfig c = base;                                                              \
    change(c.t.name);                                                                      \
    EXPECT_NE(arch::hbm_calibration_key(c), k0) << #name " is not in the calibration key"; \
    ++fields;                                                                              \
  }
  TPUSIM_HBM_TIMINGS(TPUSIM_KEY_TIMING)
#undef TPUSIM_KEY_TIMING
  EXPECT_GE(fields, 18 + 19);  // today 18 fields besides the timings, and 19 timings
}

}  // namespace
