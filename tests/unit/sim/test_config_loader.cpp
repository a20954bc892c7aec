// Loader: every shipped generation loads and its derived figures match the
// public figures within 3% (the numbers below are typed from the sources
// the configs/*.yaml headers cite: Cloud TPU docs, JAX tpu_info.py, the
// TPUv1 and v4i papers; not from configs/); extends, --set, HBM presets,
// the search path, and positions of diagnostics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "arch/common/derived.h"
#include "config_test_util.h"
#include "sim/config/config_loader.h"

namespace tpusim::sim {
namespace {

using arch::DType;
using testing::TempDir;

constexpr double T = 1e12;
constexpr double G = 1e9;
constexpr double GiB = 1024.0 * 1024 * 1024;
constexpr double MiB = 1024.0 * 1024;

void expect_within(double derived, double published, const std::string& what) {
  EXPECT_LE(std::fabs(derived - published), 0.03 * published)
      << what << ": derived " << derived << " vs published " << published;
}

struct Spec {
  const char* name;
  DType peak_dtype;
  double peak;    // FLOP/s or OP/s
  double hbm_bw;  // bytes/s
};

// Peak compute and HBM bandwidth per generation (sources above).
const Spec kSpecs[] = {{"v1", DType::int8, 92 * T, 34 * G},     {"v2", DType::bf16, 46 * T, 716 * G},
                       {"v3", DType::bf16, 123 * T, 900 * G},   {"v4", DType::bf16, 275 * T, 1200 * G},
                       {"v4i", DType::bf16, 138 * T, 614 * G},  {"v5e", DType::bf16, 197 * T, 819 * G},
                       {"v5p", DType::bf16, 459 * T, 2765 * G}, {"v6e", DType::bf16, 918 * T, 1640 * G},
                       {"v7", DType::bf16, 2307 * T, 7380 * G}};

TEST(ShippedConfigs, PeaksAndHbmBandwidthMatchPublished) {
  for (const Spec& s : kSpecs) {
    SCOPED_TRACE(s.name);
    arch::TpuConfig c = load_tpu_config(s.name);
    EXPECT_EQ(c.chip.name, s.name);
    EXPECT_EQ(c.chip.generation, s.name);
    expect_within(arch::peak_flops(c, s.peak_dtype), s.peak, "peak");
    expect_within(arch::hbm_peak_bandwidth(c.hbm), s.hbm_bw, "HBM bandwidth");
  }
}

TEST(ShippedConfigs, OtherDtypePeaks) {
  // int8 / fp8 / int4 peaks (Cloud TPU docs, JAX tpu_info.py).
  struct P {
    const char* name;
    DType t;
    double v;
  } ps[] = {{"v4", DType::int8, 275 * T},   {"v4i", DType::int8, 138 * T},    {"v5e", DType::int8, 394 * T},
            {"v5e", DType::int4, 788 * T},  {"v5p", DType::int8, 918 * T},    {"v5p", DType::fp8_e4m3, 459 * T},
            {"v5p", DType::int4, 1840 * T}, {"v6e", DType::int8, 1836 * T},   {"v6e", DType::fp8_e4m3, 918 * T},
            {"v6e", DType::int4, 3680 * T}, {"v7", DType::fp8_e4m3, 4614 * T}};
  for (const P& p : ps) {
    SCOPED_TRACE(std::string(p.name) + " " + std::string(arch::dtype_name(p.t)));
    expect_within(arch::peak_flops(load_tpu_config(p.name), p.t), p.v, "peak");
  }
  // Unsupported: v1 has no bf16, v5e no fp8, v7 no integer (JAX tpu_info.py; TPUv1 paper).
  EXPECT_EQ(arch::peak_flops(load_tpu_config("v1"), DType::bf16), 0);
  EXPECT_EQ(arch::peak_flops(load_tpu_config("v5e"), DType::fp8_e4m3), 0);
  EXPECT_EQ(arch::peak_flops(load_tpu_config("v7"), DType::int8), 0);
}

TEST(ShippedConfigs, MemoriesAndInterconnect) {
  // Memories and interconnect (Cloud TPU docs, v4i paper).
  EXPECT_EQ(load_tpu_config("v1").hbm.capacity_bytes, 8 * GiB);
  EXPECT_EQ(load_tpu_config("v3").hbm.capacity_bytes, 32 * GiB);
  EXPECT_EQ(load_tpu_config("v4").hbm.capacity_bytes, 32 * GiB);
  EXPECT_EQ(load_tpu_config("v4i").hbm.capacity_bytes, 8 * GiB);
  EXPECT_EQ(load_tpu_config("v7").hbm.capacity_bytes, 192 * GiB);
  EXPECT_EQ(load_tpu_config("v5e").vmem.size_bytes, 128 * MiB);
  EXPECT_EQ(load_tpu_config("v5p").vmem.size_bytes, 64 * MiB);
  EXPECT_EQ(load_tpu_config("v4").vmem.size_bytes, 16 * MiB);
  arch::TpuConfig v4 = load_tpu_config("v4");
  EXPECT_TRUE(v4.cmem.present);
  EXPECT_EQ(v4.cmem.size_bytes, 128 * MiB);
  EXPECT_FALSE(load_tpu_config("v5e").cmem.present);
  EXPECT_EQ(v4.ici.ports, 6);
  expect_within(v4.ici.link_bandwidth, 45 * G, "v4 ICI");
  expect_within(load_tpu_config("v5p").ici.link_bandwidth, 90 * G, "v5p ICI");
  expect_within(load_tpu_config("v6e").ici.link_bandwidth, 90 * G, "v6e ICI");
  expect_within(arch::derive(load_tpu_config("v7")).ici_chip_bandwidth, 1200 * G, "v7 ICI");
  // v4i extends v4 but has only 2 ICI ports and drops v4's published link figure.
  arch::TpuConfig v4i = load_tpu_config("v4i");
  EXPECT_EQ(v4i.ici.ports, 2);
  EXPECT_FALSE(v4i.published.ici_link_bandwidth.has_value());
  EXPECT_TRUE(v4i.cmem.present);  // inherited: 128 MiB CMEM (v4i paper)
  // Ridge point, scaling book: v5e bf16 1.97e14 / 8.2e11 = 240 FLOPs/byte.
  EXPECT_NEAR(arch::derive(load_tpu_config("v5e")).ridge_point.at(DType::bf16), 240, 240 * 0.03);
}

TEST(Loader, ExtendsDeepMergesAndNullRemoves) {
  TempDir d;
  d.write("base.yaml", "extends: v5e\nmxu:\n  rows: 64\n  cols: 64\n");
  std::string child = d.write("child.yaml",
                              "extends: ./base.yaml\nmxu:\n  rows: 32\n"
                              "published: {peak_tflops: ~, hbm_bandwidth: ~}\n");
  arch::TpuConfig c = load_tpu_config(child);
  EXPECT_EQ(c.mxu.rows, 32);  // child wins
  EXPECT_EQ(c.mxu.cols, 64);  // inherited from base
  EXPECT_EQ(c.mxu.count, 4);  // inherited from v5e through base
  EXPECT_EQ(c.chip.name, "child");
  EXPECT_TRUE(c.published.peak_flops.empty());
}

TEST(Loader, OverridesAreValidatedLikeFileKeys) {
  arch::TpuConfig c =
      load_tpu_config("v5e", {"mxu.rows=256", "hbm.stacks=4", "published.peak_tflops=~", "published.hbm_bandwidth=~"});
  EXPECT_EQ(c.mxu.rows, 256);
  EXPECT_EQ(c.hbm.stacks, 4);
  try {
    load_tpu_config("v5e", {"mxu.rowz=256"});
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    const Diagnostic& d = e.diagnostics()[0];
    EXPECT_EQ(d.file, "--set mxu.rowz=256");
    EXPECT_EQ(d.key, "mxu.rowz");
    EXPECT_EQ(d.found, "unknown key 'rowz'");
    EXPECT_EQ(d.suggestion, "rows");
  }
  // Without removing the published figures, a 4x peak fails the 3% check.
  EXPECT_THROW(load_tpu_config("v5e", {"mxu.rows=256"}), ConfigError);
  EXPECT_THROW(load_tpu_config("v5e", {"noequals"}), ConfigError);
  EXPECT_THROW(load_tpu_config("v5e", {"mxu..rows=1"}), ConfigError);
}

TEST(Loader, PresetMergesUnderChipKeys) {
  // v5e takes HBM2e from configs/hbm/hbm2e.yaml; an override of one hbm key
  // wins over the preset while the rest still come from it.
  arch::TpuConfig a = load_tpu_config("v5e");
  EXPECT_EQ(a.hbm.preset, "HBM2e");
  EXPECT_GT(a.hbm.t.tRCD, 0);
  arch::TpuConfig b = load_tpu_config("v5e", {"hbm.data_rate=3.6 GT/s", "published.hbm_bandwidth=~"});
  EXPECT_DOUBLE_EQ(b.hbm.data_rate, 3.6e9);
  EXPECT_EQ(b.hbm.channels, a.hbm.channels);
  EXPECT_EQ(b.hbm.t.tRCD, a.hbm.t.tRCD);
  // A preset of a user's own, found in hbm/ next to the chip file.
  TempDir d;
  d.write("hbm/mine.yaml",
          "hbm:\n  channels: 4\n  data_rate: \"1 GT/s\"\n"
          "  timings: {tCK: 1 ns, tCL: 14 ns, tRCD: 14 ns, tRP: 14 ns, tRAS: 33 ns,\n"
          "            tRFC: 350 ns, tREFI: 3.9 us}\n");
  std::string chip = d.write("chip.yaml",
                             "extends: v5e\nhbm: {preset: Mine}\n"
                             "published: {hbm_bandwidth: ~}\n");
  arch::TpuConfig c = load_tpu_config(chip);
  EXPECT_EQ(c.hbm.channels, 4);
  EXPECT_DOUBLE_EQ(c.hbm.data_rate, 1e9);
  EXPECT_DOUBLE_EQ(c.hbm.t.tRAS, 33e-9);
  EXPECT_EQ(c.hbm.t.tRRD_S, 0);  // optional timing, not in this preset
}

TEST(Loader, SearchPathOrder) {
  TempDir d1, d2;
  d1.write("chipa.yaml", "extends: v5e\nmxu: {input_latency: 1}\n");
  d2.write("chipa.yaml", "extends: v5e\nmxu: {input_latency: 2}\n");
  d2.write("chipb.yaml", "extends: v5e\nmxu: {input_latency: 3}\n");
  // --config-path dirs in order, then TPUSIM_CONFIG_PATH.
  setenv("TPUSIM_CONFIG_PATH", d2.path().c_str(), 1);
  ConfigSearchPath p = default_search_path({d1.path()});
  unsetenv("TPUSIM_CONFIG_PATH");
  ASSERT_EQ(p.dirs.size(), 3u);
  EXPECT_EQ(p.dirs[0], std::string(TPUSIM_SOURCE_DIR) + "/configs");
  EXPECT_EQ(load_tpu_config("chipa", {}, p).mxu.input_latency, 1);
  EXPECT_EQ(load_tpu_config("chipb", {}, p).mxu.input_latency, 3);
  // The source tree comes first: a v5e.yaml elsewhere does not shadow it.
  d1.write("v5e.yaml", "this is not a chip config: [\n");
  EXPECT_EQ(load_tpu_config("v5e", {}, p).chip.generation, "v5e");
  try {
    load_tpu_config("v5x", {}, p);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no config named 'v5x'"), std::string::npos);
    EXPECT_EQ(e.diagnostics()[0].suggestion, "v5e");
  }
}

TEST(Loader, DiagnosticsCarryPositionsAndAreAllCollected) {
  TempDir d;
  std::string f = d.write("bad.yaml",
                          "extends: v5e\n"
                          "mxu:\n"
                          "  rows: 0\n"
                          "  colz: 128\n"
                          "chip:\n"
                          "  clock: \"1.5 GB/s\"\n");
  try {
    load_tpu_config(f);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 3u) << e.what();
    const auto& ds = e.diagnostics();
    EXPECT_EQ(ds[0].key, "mxu.rows");
    EXPECT_EQ(ds[0].line, 3);
    EXPECT_EQ(ds[0].column, 9);  // the value 0
    EXPECT_EQ(ds[0].expected, "an integer >= 1 and <= 4096");
    EXPECT_EQ(ds[0].found, "'0'");
    EXPECT_EQ(ds[1].key, "mxu.colz");
    EXPECT_EQ(ds[1].line, 4);
    EXPECT_EQ(ds[1].column, 3);  // the key
    EXPECT_EQ(ds[1].suggestion, "cols");
    EXPECT_EQ(ds[2].key, "chip.clock");
    EXPECT_EQ(ds[2].line, 6);
    EXPECT_NE(ds[2].found.find("that is a bandwidth"), std::string::npos);
    EXPECT_EQ(ds[0].render(), f + ":3:9: mxu.rows: expected an integer >= 1 and <= 4096, found '0'");
    // what() renders one per line.
    std::string w = e.what();
    EXPECT_EQ(std::count(w.begin(), w.end(), '\n'), 2);
  }
}

TEST(Loader, ErrorInPresetFileNamesThePresetFile) {
  TempDir d;
  d.write("hbm/broken.yaml", "hbm:\n  chanels: 8\n");
  std::string chip = d.write("chip.yaml", "extends: v5e\nhbm: {preset: broken}\n");
  try {
    load_tpu_config(chip);
    FAIL();
  } catch (const ConfigError& e) {
    // The typo is reported in the preset file (the missing timings too,
    // at the chip's hbm key).
    const Diagnostic* typo = nullptr;
    for (const auto& x : e.diagnostics())
      if (x.key == "hbm.chanels") typo = &x;
    ASSERT_NE(typo, nullptr) << e.what();
    EXPECT_NE(typo->file.find("hbm/broken.yaml"), std::string::npos);
    EXPECT_EQ(typo->line, 2);
    EXPECT_EQ(typo->suggestion, "channels");
  }
}

TEST(Loader, ResolveConfigYamlGivesTheMergedDocument) {
  YAML::Node n = resolve_config_yaml("v4i", {"mxu.rows=64"});
  EXPECT_FALSE(n["extends"]);
  EXPECT_EQ(n["mxu"]["rows"].as<int>(), 64);
  EXPECT_EQ(n["mxu"]["count"].as<int>(), 4);  // from v4
  EXPECT_EQ(n["chip"]["generation"].as<std::string>(), "v4i");
  EXPECT_TRUE(n["hbm"]["timings"]["tRCD"]);  // from the HBM2 preset
}

}  // namespace
}  // namespace tpusim::sim
