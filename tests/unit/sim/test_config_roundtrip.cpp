// resolve -> print -> reload gives an identical TpuConfig, for every
// shipped config, in YAML and JSON, with and without overrides. Identity is
// checked on every schema key (the writer prints exactly those).
#include <gtest/gtest.h>

#include "config_test_util.h"
#include "sim/config/config_loader.h"
#include "sim/config/config_writer.h"
#include "sim/config/schema.h"

namespace tpusim::sim {
namespace {

void expect_identical(const arch::TpuConfig& a, const arch::TpuConfig& b) {
  for (const FieldSpec& f : schema()) {
    EXPECT_EQ(f.present(a), f.present(b)) << f.path;
    EXPECT_TRUE(f.get(a) == f.get(b)) << f.path << ": " << format_field(f, f.get(a)) << " vs "
                                      << format_field(f, f.get(b));
  }
}

void round_trip(const std::string& name, const std::vector<std::string>& sets) {
  SCOPED_TRACE(name);
  testing::TempDir d;
  arch::TpuConfig a = load_tpu_config(name, sets);
  for (auto fmt : {ConfigFormat::yaml, ConfigFormat::json}) {
    std::string text = write_config(a, fmt);
    std::string f = d.write(fmt == ConfigFormat::json ? "out.json" : "out.yaml", text);
    arch::TpuConfig b = load_tpu_config(f);
    expect_identical(a, b);
    // A second print is byte-identical (deterministic output).
    EXPECT_EQ(write_config(b, fmt), text);
  }
}

TEST(RoundTrip, EveryShippedConfig) {
  auto configs = list_configs(default_search_path());
  ASSERT_GE(configs.size(), 9u);
  for (const auto& [name, file] : configs) round_trip(name, {});
}

TEST(RoundTrip, WithOverridesAndOddValues) {
  round_trip("v5e", {"hbm.timings.tCK=0.6001 ns", "chip.clock=1.234567 GHz", "published.peak_tflops=~",
                     "mxu.throughput={bf16: 1, int8: 0.25}"});
}

TEST(RoundTrip, DerivedSectionIsWrittenAndIgnoredOnLoad) {
  arch::TpuConfig a = load_tpu_config("v5e");
  std::string text = write_config(a);
  EXPECT_NE(text.find("derived:"), std::string::npos);
  EXPECT_NE(text.find("hbm_bandwidth: 819.2 GB/s"), std::string::npos);
  // 4 x 128 x 128 x 2 x 1.5 GHz = 196.608 TFLOP/s.
  EXPECT_NE(text.find("bf16: 196.608"), std::string::npos);
}

}  // namespace
}  // namespace tpusim::sim
