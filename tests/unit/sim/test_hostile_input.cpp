// Hostile config, sweep-spec, expression, model-file and Slurm input
// (issue 17): physical bounds with file:line:col, the hardware models'
// checks made by `config check` too, duplicate keys and extra documents,
// expression depth and length limits, and script values that could
// inject commands.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "config_test_util.h"
#include "models/model_file.h"
#include "sim/config/config_error.h"
#include "sim/config/config_loader.h"
#include "sim/serve/suite.h"
#include "sim/sweep/cluster.h"
#include "sim/sweep/expr.h"
#include "sim/sweep/sweep_spec.h"

namespace tpusim::sim {
namespace {

using testing::TempDir;

std::string config_error(const std::string& file, const std::vector<std::string>& sets = {}) {
  try {
    load_tpu_config(file, sets);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(HostileConfig, StructuralCountsAndRatesHavePhysicalBounds) {
  // Each of these once ran out of memory, spun or crashed (issue 17).
  struct C {
    const char* set;
    const char* expect;
  } cases[] = {
      {"hbm.banks_per_group=1000000", "hbm.banks_per_group: expected an integer >= 1 and <= 64"},
      {"hbm.stacks=100000", "hbm.stacks: expected an integer >= 1 and <= 64"},
      {"chip.tensorcores=1000000", "chip.tensorcores: expected an integer >= 1 and <= 64"},
      {"dma.engines=1000000", "dma.engines: expected an integer >= 1 and <= 1024"},
      {"chip.clock=3THz", "at least 1 MHz and at most 100 GHz"},
      {"chip.clock=1e-6Hz", "at least 1 MHz and at most 100 GHz"},
      {"chip.clock=1e30Hz", "at least 1 MHz and at most 100 GHz"},
      {"hbm.refresh_postpone=9", "hbm.refresh_postpone: expected an integer >= 0 and <= 8"},
      {"vmem.bandwidth=1e20B/s", "vmem.bandwidth"},
  };
  for (const auto& c : cases) {
    const std::string e = config_error("v5e", {c.set});
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.set << ": " << e;
  }
  // The bounds are inclusive ('~' drops the published peaks, which the
  // derived ones would no longer match).
  EXPECT_EQ(config_error("v5e", {"chip.clock=1MHz", "published.peak_tflops=~"}), "");
  EXPECT_EQ(config_error("v5e", {"chip.clock=100GHz", "published.peak_tflops=~"}), "");
}

TEST(HostileConfig, ProductOfBankCountsIsBounded) {
  // 64 stacks x 64 channels x 8 pseudo-channels = 32768 > 4096.
  const std::string e = config_error("v5e", {"hbm.stacks=64", "hbm.channels=64", "hbm.pseudo_channels=8"});
  EXPECT_NE(e.find("at most 4096 pseudo-channels"), std::string::npos) << e;
}

TEST(HostileConfig, HardwareModelChecksAreMadeAtLoadWithTheKeysLine) {
  TempDir d;
  // extends the shipped v5e; line 3 holds tRFC, line 4 the row size.
  const std::string f = d.write("bad.yaml", "extends: v5e\nhbm:\n  timings: {tRFC: 5 us}\n  row_size: 1000 B\n");
  const std::string e = config_error(f);
  EXPECT_NE(e.find("bad.yaml:3:"), std::string::npos) << e;
  EXPECT_NE(e.find("hbm.timings.tRFC: expected hbm.timings.tRFC must be below tREFI"), std::string::npos) << e;
  // Made once, though three models check it.
  const auto first = e.find("must be below tREFI");
  EXPECT_EQ(e.find("must be below tREFI", first + 1), std::string::npos) << e;
  const std::string g = d.write("row.yaml", "extends: v5e\nhbm:\n  row_size: 1000 B\n");
  const std::string e2 = config_error(g);
  EXPECT_NE(e2.find("row.yaml:3:"), std::string::npos) << e2;
  EXPECT_NE(e2.find("hbm.row_size"), std::string::npos) << e2;
  const std::string gr = config_error("v5e", {"vmem.granule=1GiB"});
  EXPECT_NE(gr.find("vmem.granule: expected a granule no larger than vmem.size"), std::string::npos) << gr;
}

TEST(HostileConfig, DuplicateKeysAndSecondDocumentsAreErrors) {
  TempDir d;
  const std::string e = config_error(d.write("dup.yaml", "extends: v5e\nmxu:\n  rows: 128\n  rows: 256\n"));
  EXPECT_NE(e.find("dup.yaml:4:3"), std::string::npos) << e;
  EXPECT_NE(e.find("duplicate key 'rows'"), std::string::npos) << e;
  const std::string m = config_error(d.write("multi.yaml", "extends: v5e\n---\nmxu: {rows: 8}\n"));
  EXPECT_NE(m.find("second document"), std::string::npos) << m;
}

TEST(HostileSweep, SpecDuplicateKeysSecondDocumentsAndNewlineNames) {
  auto spec_error = [](const std::string& text) {
    try {
      sweep::parse_sweep_spec(text, "s.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(spec_error("name: a\nname: b\nbase: {gemm: '8,8,8'}\n").find("duplicate key 'name'"), std::string::npos);
  EXPECT_NE(spec_error("base: {gemm: '8,8,8'}\n---\nname: b\n").find("second document"), std::string::npos);
  const std::string nl = spec_error("name: \"a\\nrm -rf /\"\nbase: {gemm: '8,8,8'}\n");
  EXPECT_NE(nl.find("s.yaml:1:8: name"), std::string::npos) << nl;  // the value's column
  EXPECT_NE(nl.find("control characters"), std::string::npos) << nl;
}

TEST(HostileSweep, ExpressionLimitsAreErrorsNotStackOverflows) {
  auto parse_error = [](const std::string& text) {
    try {
      sweep::Expr::parse(text);
    } catch (const sweep::ExprError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // The three crashes (exit 139 before).
  EXPECT_NE(parse_error(std::string(7000, '(') + "1" + std::string(7000, ')')).find("too long"), std::string::npos);
  std::string sum = "1";
  for (int i = 0; i < 29999; ++i) sum += "+1";
  EXPECT_NE(parse_error(sum).find("too long"), std::string::npos);
  EXPECT_NE(parse_error(std::string(30000, '-') + "1").find("too long"), std::string::npos);
  // Within the length limits, the depth limit: 300 parentheses, 300 unary
  // minus, 300 'not', a 300-term sum (a left-deep tree 300 levels high).
  EXPECT_NE(parse_error(std::string(300, '(') + "1" + std::string(300, ')')).find("nested too deeply"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(300, '-') + "1").find("nested too deeply"), std::string::npos);
  std::string nots;
  for (int i = 0; i < 300; ++i) nots += "not ";
  EXPECT_NE(parse_error(nots + "1").find("nested too deeply"), std::string::npos);
  std::string s300 = "1";
  for (int i = 0; i < 299; ++i) s300 += "+1";
  EXPECT_NE(parse_error(s300).find("nested too deeply"), std::string::npos);
  EXPECT_NE(parse_error("1e999999 > 0").find("out of range"), std::string::npos);
  // Just inside: 200 levels parse and evaluate (200 nested minus signs: +1).
  const auto v = sweep::Expr::parse(std::string(200, '-') + "1").eval([](const std::string&) {
    return std::optional<sweep::Value>();
  });
  EXPECT_EQ(v.number, 1);
  std::string s200 = "1";
  for (int i = 0; i < 199; ++i) s200 += "+1";
  EXPECT_EQ(sweep::Expr::parse(s200).eval([](const std::string&) { return std::optional<sweep::Value>(); }).number,
            200);
}

TEST(HostileSweep, SlurmValuesThatCouldInjectCommandsAreRejected) {
  sweep::SlurmOptions o;
  o.executable = "/usr/bin/tpusim";
  o.spec = "/s/spec.yaml";
  o.out_dir = "/s/out";
  o.shards = 2;
  EXPECT_EQ(sweep::slurm_option_problem(o), "");
  auto bad = [&](auto set) {
    sweep::SlurmOptions b = o;
    set(b);
    return sweep::slurm_option_problem(b);
  };
  EXPECT_NE(bad([](auto& b) { b.job_name = "tpusim-x\nrm -rf ~"; }).find("job name"), std::string::npos);
  EXPECT_NE(bad([](auto& b) { b.spec = "/s/a\nb.yaml"; }).find("control character"), std::string::npos);
  EXPECT_NE(bad([](auto& b) { b.out_dir = "/s/o ut"; }).find("--out"), std::string::npos);
  EXPECT_NE(bad([](auto& b) { b.partition = "p;reboot"; }).find("--partition"), std::string::npos);
  EXPECT_NE(bad([](auto& b) { b.time_limit = "1:00\n#SBATCH --x"; }).find("--time"), std::string::npos);
  sweep::SlurmOptions b = o;
  b.job_name = "a\nb";
  EXPECT_THROW(sweep::slurm_script(b), std::invalid_argument);
}

TEST(HostileModelFile, DuplicateKeysAndNonRegularFilesAreErrors) {
  auto model_error = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const models::ModelError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(model_error([] { models::parse_model_text("name: a\nname: b\n", "m.yaml"); }).find("duplicate key 'name'"),
            std::string::npos);
  EXPECT_NE(model_error([] { models::parse_model_text("name: a\n---\nname: b\n", "m.yaml"); }).find("second document"),
            std::string::npos);
  EXPECT_NE(model_error([] { models::read_model_file("/dev/zero"); }).find("not a regular file"), std::string::npos);
  // Found by tests/fuzz/fuzz_model_file: a vit model whose image_size key
  // is garbled threw YAML::InvalidNode (std::terminate in the fuzzer).
  const std::string vit = model_error([] {
    models::read_model_file(std::string(TPUSIM_SOURCE_DIR) +
                            "/tests/fuzz/regressions/model_file_vit_no_image_size.yaml");
  });
  EXPECT_NE(vit.find("image_size"), std::string::npos) << vit;
  // Found by fuzz_model_file: a unet file without transformer_depth (its
  // key garbled) threw YAML::InvalidNode from the per-level check; the
  // missing key is the error.
  const std::string unet = model_error([] {
    models::read_model_file(std::string(TPUSIM_SOURCE_DIR) +
                            "/tests/fuzz/regressions/model_file_unet_no_transformer_depth.yaml");
  });
  EXPECT_NE(unet.find("transformer_depth"), std::string::npos) << unet;
  EXPECT_NE(unet.find("transformer_depth: expected a list of integers, found no such key"), std::string::npos) << unet;
}

// Found by tests/fuzz/fuzz_suite (make fuzz-cli): a suite file whose map
// had a non-scalar key (a flow sequence or map, or `? [a]: b`) threw
// YAML::TypedBadConversion past the reader's ConfigError (std::terminate
// in the fuzzer, an internal error in the CLI). Now a located diagnostic.
TEST(HostileSuite, NonScalarKeysAreErrors) {
  auto suite_error = [](const std::string& text) {
    try {
      serve::parse_suite(text, "s.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string top = suite_error("suite: x\n? [a, b]\n: 1\nscenarios: []\n");
  EXPECT_NE(top.find("s.yaml:2:3"), std::string::npos) << top;
  EXPECT_NE(top.find("expected suite, defaults or scenarios, found [a, b]"), std::string::npos) << top;
  const std::string scen = suite_error("suite: x\nscenarios:\n  - {name: a, {k: v}: 1}\n");
  EXPECT_NE(scen.find("expected a key name, found {k: v}"), std::string::npos) << scen;
  std::ifstream in(std::string(TPUSIM_SOURCE_DIR) + "/tests/fuzz/regressions/suite_non_scalar_key.yaml",
                   std::ios::binary);
  ASSERT_TRUE(in);
  const std::string found((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(suite_error(found), "");
}

// Found by fuzz_sweep_spec (tests/fuzz/regressions/): a model.batch of
// 1.3e29 was converted to long long to check that it is whole, undefined
// behaviour (UBSan); now bounded first and refused by name.
TEST(HostileInput, SweepSpecBatchBeyondAnyIntegerIsRefused) {
  std::ifstream in(std::string(TPUSIM_SOURCE_DIR) + "/tests/fuzz/regressions/sweep_spec_batch_beyond_long_long.yaml",
                   std::ios::binary);
  ASSERT_TRUE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    sweep::parse_sweep_spec(text, "s.yaml");
    FAIL() << "parsed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("model.batch: expected an integer in [1, 2^40]"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tpusim::sim
