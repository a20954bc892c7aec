// Validation case files without running anything: parsing with defaults,
// run arguments, the metric formulas against hand-computed values, the
// outcome rules (strict expected misses), a table of malformed files (each
// message names file:line:column and the key), the reports, and the
// repository's own suite (it loads, has >= 15 cases from >= 4 generations).
#include <gtest/gtest.h>

#include <array>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "config_test_util.h"
#include "sim/config/config_error.h"
#include "sim/validate/case_file.h"
#include "sim/validate/report.h"
#include "sim/validate/runner.h"
#include "tests/cli/tiny_decoder.h"

namespace tpusim::sim::validate {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

const char* kGood = R"yaml(family: demo
defaults:
  source: "a paper, table 1"
  source_metric: "per chip, profiler time"
  arch: v5e
  metric: {kind: tflops, unit: TFLOP/s}
  tolerance: 0.1
cases:
  - id: gemm-a
    title: a gemm
    workload: {gemm: "256,512,1024", dtype: bf16}
    measured: 100
  - id: copy-b
    title: a copy
    set: [hbm.model=channel]
    workload: {file: wl.yaml}
    metric: {kind: bandwidth, unit: GB/s, bytes: "2 * 1048576"}
    measured: 500
    tolerance: 0.2
    expect: miss
    reason: "too slow today (-40%)"
  - id: step-c
    title: a model step
    arch: v6e
    slice: 2x2
    mesh: fsdp=4
    workload: {model: llama3-8b, phase: train, batch: 4, seq: 256, fusion: false}
    metric: {kind: mfu, unit: "%", peak_tflops: 918}
    measured: 40
)yaml";

const char* kWorkload = R"(tpusim_workload: 1
name: wl
tensors:
  - {name: a, shape: [1024], dtype: bf16, kind: input}
ops:
  - {name: c, op: slice, inputs: [a], start: [0], limit: [1024]}
)";

std::vector<Case> parse_in(const TempDir& d, const std::string& text) {
  d.write("wl.yaml", kWorkload);
  return load_cases(d.write("cases.yaml", text), default_search_path());
}

TEST(ValidateCases, ParsesDefaultsAndOverrides) {
  TempDir d;
  const auto cases = parse_in(d, kGood);
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0].id, "gemm-a");
  EXPECT_EQ(cases[0].family, "demo");
  EXPECT_EQ(cases[0].arch, "v5e");
  EXPECT_EQ(cases[0].source, "a paper, table 1");
  EXPECT_EQ(cases[0].line, 9);
  EXPECT_DOUBLE_EQ(cases[0].tolerance, 0.1);
  EXPECT_EQ(cases[0].metric.kind, MetricKind::Tflops);
  EXPECT_FALSE(cases[0].expect_miss);
  // The case's own keys replace the defaults' whole value.
  EXPECT_DOUBLE_EQ(cases[1].tolerance, 0.2);
  EXPECT_EQ(cases[1].metric.kind, MetricKind::Bandwidth);
  EXPECT_DOUBLE_EQ(cases[1].metric.unit_scale, 1e9);
  EXPECT_TRUE(cases[1].expect_miss);
  EXPECT_EQ(cases[1].reason, "too slow today (-40%)");
  EXPECT_EQ(cases[1].workload.value, (fs::path(d.path()) / "wl.yaml").lexically_normal().string());
  EXPECT_EQ(cases[2].arch, "v6e");
}

TEST(ValidateCases, RunArguments) {
  TempDir d;
  const auto cases = parse_in(d, kGood);
  EXPECT_EQ(run_args(cases[0]),
            (std::vector<std::string>{"run", "--arch", "v5e", "--quiet", "--gemm", "256,512,1024", "--dtype", "bf16"}));
  EXPECT_EQ(run_args(cases[1]),
            (std::vector<std::string>{"run", "--arch", "v5e", "--quiet", "--set", "hbm.model=channel", "--workload",
                                      (fs::path(d.path()) / "wl.yaml").lexically_normal().string()}));
  EXPECT_EQ(run_args(cases[2]), (std::vector<std::string>{"run", "--arch", "v6e", "--quiet", "--slice", "2x2", "--mesh",
                                                          "fsdp=4", "--model", "llama3-8b", "--phase", "train",
                                                          "--batch", "4", "--seq", "256", "--no-fusion"}));
  // A remat policy becomes --remat.
  std::string text = kGood;
  const std::string from = "seq: 256, fusion: false}";
  text.replace(text.find(from), from.size(), "seq: 256, remat: selective}");
  const auto r = parse_in(d, text);
  EXPECT_EQ(r[2].workload.remat, "selective");
  const auto a = run_args(r[2]);
  EXPECT_EQ(std::vector<std::string>(a.end() - 2, a.end()), (std::vector<std::string>{"--remat", "selective"}));
  // Per-tensor dtypes of a model become --weight-dtype, --act-dtype, --kv-dtype.
  text = kGood;
  text.replace(text.find(from), from.size(), "seq: 256, weight_dtype: int8, kv_dtype: int8, act_dtype: bf16}");
  const auto q = run_args(parse_in(d, text)[2]);
  EXPECT_EQ(std::vector<std::string>(q.end() - 6, q.end()),
            (std::vector<std::string>{"--weight-dtype", "int8", "--act-dtype", "bf16", "--kv-dtype", "int8"}));
  // The attention's form becomes --attention-kernel.
  text = kGood;
  text.replace(text.find(from), from.size(), "seq: 256, attention_kernel: dense}");
  const auto k = parse_in(d, text);
  EXPECT_EQ(k[2].workload.attention_kernel, "dense");
  const auto ka = run_args(k[2]);
  EXPECT_EQ(std::vector<std::string>(ka.end() - 2, ka.end()),
            (std::vector<std::string>{"--attention-kernel", "dense"}));
  // Adam's state dtype becomes --optimizer-dtype.
  text = kGood;
  text.replace(text.find(from), from.size(), "seq: 256, optimizer_dtype: bf16}");
  const auto oa = run_args(parse_in(d, text)[2]);
  EXPECT_EQ(std::vector<std::string>(oa.end() - 2, oa.end()), (std::vector<std::string>{"--optimizer-dtype", "bf16"}));
  // Quantized training becomes --training-quant.
  text = kGood;
  text.replace(text.find(from), from.size(), "seq: 256, training_quant: fp8}");
  const auto ta = run_args(parse_in(d, text)[2]);
  EXPECT_EQ(std::vector<std::string>(ta.end() - 2, ta.end()), (std::vector<std::string>{"--training-quant", "fp8"}));
  // The flash kernels' fixed blocks become --attention-blocks.
  text = kGood;
  text.replace(text.find(from), from.size(), "seq: 256, attention_blocks: \"q=1024,kv=512\"}");
  const auto ba = run_args(parse_in(d, text)[2]);
  EXPECT_EQ(std::vector<std::string>(ba.end() - 2, ba.end()),
            (std::vector<std::string>{"--attention-blocks", "q=1024,kv=512"}));
}

TEST(ValidateCases, MetricFormulas) {
  TempDir d;
  const auto cases = parse_in(d, kGood);
  const std::map<std::string, std::string> summary = {
      {"seconds", "0.002"}, {"total_flops", "4e11"}, {"hbm_bytes", "123"}};
  // tflops: total_flops / seconds / 1e12 = 4e11 / 0.002 / 1e12 = 200.
  EXPECT_NEAR(simulated_value(cases[0], summary), 200.0, 1e-9);
  // bandwidth: 2 * 1048576 B / 0.002 s / 1e9 = 1.048576 GB/s.
  EXPECT_NEAR(simulated_value(cases[1], summary), 1.048576, 1e-12);
  // mfu: 100 * 4e11 / 0.002 / 918e12 = 21.786...%.
  EXPECT_NEAR(simulated_value(cases[2], summary), 100.0 * 2e14 / 918e12, 1e-9);
  Case t = cases[0];
  t.metric.kind = MetricKind::Time;
  t.metric.unit_scale = 1e-3;  // ms
  EXPECT_NEAR(simulated_value(t, summary), 2.0, 1e-12);
  Case tok = cases[0];
  tok.metric.kind = MetricKind::TokensPerSecond;
  tok.metric.tokens = sweep::Expr::parse("4 * 256");
  EXPECT_NEAR(simulated_value(tok, summary), 1024 / 0.002, 1e-6);
  Case img = cases[0];
  img.metric.kind = MetricKind::SamplesPerSecond;
  img.metric.samples = sweep::Expr::parse("512");
  EXPECT_NEAR(simulated_value(img, summary), 512 / 0.002, 1e-6);
  // Missing or non-positive seconds is an error, not a value.
  EXPECT_THROW(simulated_value(cases[0], {{"total_flops", "1"}}), std::runtime_error);
  EXPECT_THROW(simulated_value(cases[0], {{"seconds", "0"}, {"total_flops", "1"}}), std::runtime_error);
}

TEST(ValidateCases, OutcomesAreStrict) {
  Case c;
  c.measured = 100;
  c.tolerance = 0.1;
  EXPECT_TRUE(within_tolerance(c, 110));  // exactly +10%
  EXPECT_TRUE(within_tolerance(c, 90));   // exactly -10%
  EXPECT_FALSE(within_tolerance(c, 110.01));
  EXPECT_FALSE(within_tolerance(c, 89.99));
  EXPECT_FALSE(within_tolerance(c, NAN));
  EXPECT_EQ(judge(c, 105), Outcome::Pass);
  EXPECT_EQ(judge(c, 120), Outcome::Fail);
  c.expect_miss = true;
  EXPECT_EQ(judge(c, 120), Outcome::ExpectedMiss);
  EXPECT_EQ(judge(c, 105), Outcome::UnexpectedPass);
  CaseResult pass{&c, Outcome::Pass, 1, 0, "", 0}, xfail{&c, Outcome::ExpectedMiss, 1, 0, "", 0};
  CaseResult fail{&c, Outcome::Fail, 1, 0, "", 0}, xpass{&c, Outcome::UnexpectedPass, 1, 0, "", 0};
  CaseResult error{&c, Outcome::Error, 0, 0, "exit 2", 0};
  EXPECT_EQ(exit_code({pass, xfail}), 0);
  EXPECT_EQ(exit_code({pass, fail}), 1);
  EXPECT_EQ(exit_code({pass, xpass}), 1);
  EXPECT_EQ(exit_code({pass, error}), 1);
}

struct BadCase {
  const char* name;
  std::string text;
  std::string expect;  // substring of the rendered message
};

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  if (at == std::string::npos) throw std::logic_error("test text lacks '" + from + "'");
  return s.replace(at, from.size(), to);
}

TEST(ValidateCases, MalformedFilesNameFileLineAndKey) {
  const std::string g = kGood;
  const std::vector<BadCase> bad = {
      {"unknown case key", replace(g, "    title: a gemm", "    titel: a gemm\n    title: a gemm"),
       "cases.yaml:10:5: cases[0].titel: expected one of"},
      {"suggestion", replace(g, "    title: a gemm", "    titel: a gemm\n    title: a gemm"), "did you mean 'title'"},
      {"missing measured", replace(g, "    measured: 100\n", ""), "cases[gemm-a].measured: expected a value for"},
      {"two workload sources", replace(g, "{gemm: \"256,512,1024\", dtype: bf16}", "{gemm: \"1,1,1\", conv: x}"),
       "cases[gemm-a].workload: expected exactly one of"},
      {"unknown metric kind", replace(g, "{kind: tflops, unit: TFLOP/s}", "{kind: tflop, unit: TFLOP/s}"),
       "cases.yaml:6:18: cases[gemm-a].metric.kind"},
      {"unit of another kind", replace(g, "unit: GB/s", "unit: ms"), "cases.yaml:17:37: cases[copy-b].metric.unit"},
      {"bandwidth without bytes", replace(g, ", bytes: \"2 * 1048576\"", ""), "cases[copy-b].metric.bytes"},
      {"flops on a bandwidth metric", replace(g, "bytes: \"2 * 1048576\"", "bytes: \"2 * 1048576\", flops: 1"),
       "cases[copy-b].metric.flops: expected 'flops' only for kind tflops or mfu"},
      {"unknown name in bytes", replace(g, "2 * 1048576", "2 * hbm_byte"), "unknown name 'hbm_byte'"},
      {"samples per second without samples",
       replace(g, "{kind: bandwidth, unit: GB/s, bytes: \"2 * 1048576\"}",
               "{kind: samples_per_second, unit: samples/s}"),
       "cases[copy-b].metric.samples: expected 'samples' for kind samples_per_second"},
      {"samples on a bandwidth metric", replace(g, "bytes: \"2 * 1048576\"", "bytes: \"2 * 1048576\", samples: 8"),
       "cases[copy-b].metric.samples: expected 'samples' only for kind samples_per_second"},
      {"tolerance above 1", replace(g, "tolerance: 0.2", "tolerance: 20"),
       "cases[copy-b].tolerance: expected a "
       "relative tolerance"},
      {"expect without reason", replace(g, "    reason: \"too slow today (-40%)\"\n", ""),
       "cases[copy-b].reason: expected a reason with expect: miss"},
      {"expect other than miss", replace(g, "expect: miss", "expect: pass"), "cases[copy-b].expect: expected miss"},
      {"missing workload file", replace(g, "file: wl.yaml", "file: nope.yaml"), "nope.yaml' does not exist"},
      {"dtype of a workload file", replace(g, "file: wl.yaml", "file: wl.yaml, dtype: int8"),
       "cases[copy-b].workload.dtype: expected 'dtype' only with gemm, conv, attention, model or a SCALE-Sim .csv"},
      {"unknown model", replace(g, "model: llama3-8b", "model: llama9"), "cases[step-c].workload.model"},
      {"missing model file", replace(g, "model: llama3-8b", "model: mine.yaml"),
       "cases[step-c].workload.model: expected an existing model file (relative to the case file)"},
      {"model file with an error", replace(g, "model: llama3-8b", "model: wl.yaml"),
       "cases[step-c].workload.model: expected a valid model file"},
      {"model key on a gemm", replace(g, "dtype: bf16}", "dtype: bf16, batch: 4}"), "'batch' only with model"},
      {"weight dtype on a gemm", replace(g, "dtype: bf16}", "dtype: bf16, weight_dtype: int8}"),
       "'weight_dtype' only with model"},
      {"unknown kv dtype", replace(g, "seq: 256,", "seq: 256, kv_dtype: int9,"),
       "cases[step-c].workload.kv_dtype: expected a dtype"},
      {"duplicate id", replace(g, "id: copy-b", "id: gemm-a"), "already the id of the case at line 9"},
      {"bad override", replace(g, "hbm.model=channel", "hbm.modle=channel"), "cases[copy-b].set"},
      {"unknown chip", replace(g, "arch: v6e", "arch: v99"), "cases[step-c].arch"},
      {"unknown remat policy", replace(g, "seq: 256,", "seq: 256, remat: some,"),
       "cases[step-c].workload.remat: expected a remat policy"},
      {"bad capacity factor", replace(g, "seq: 256,", "seq: 256, moe_capacity_factor: -1,"),
       "cases[step-c].workload.moe_capacity_factor: expected a capacity factor in [0, 64] (0: dropless), found '-1'"},
      {"capacity factor on a gemm", replace(g, "dtype: bf16}", "dtype: bf16, moe_capacity_factor: 1.25}"),
       "'moe_capacity_factor' only with model"},
      {"unknown attention kernel", replace(g, "seq: 256,", "seq: 256, attention_kernel: splash,"),
       "cases[step-c].workload.attention_kernel: expected flash, dense or batched, found 'splash'"},
      {"attention kernel on a gemm", replace(g, "dtype: bf16}", "dtype: bf16, attention_kernel: dense}"),
       "'attention_kernel' only with model"},
      {"bad attention blocks", replace(g, "seq: 256,", "seq: 256, attention_blocks: \"500,512\","),
       "cases[step-c].workload.attention_blocks: expected Q,KV or q=Q,kv=KV"},
      {"attention blocks on a gemm", replace(g, "dtype: bf16}", "dtype: bf16, attention_blocks: \"512,512\"}"),
       "'attention_blocks' only with model"},
      {"unknown optimizer dtype", replace(g, "seq: 256,", "seq: 256, optimizer_dtype: f16,"),
       "cases[step-c].workload.optimizer_dtype: expected f32 or bf16, found 'f16'"},
      {"optimizer dtype on a gemm", replace(g, "dtype: bf16}", "dtype: bf16, optimizer_dtype: bf16}"),
       "'optimizer_dtype' only with model"},
      {"unknown training quantization", replace(g, "seq: 256,", "seq: 256, training_quant: int4,"),
       "cases[step-c].workload.training_quant: expected int8, fp8 or none, found 'int4'"},
      {"training quantization on a gemm", replace(g, "dtype: bf16}", "dtype: bf16, training_quant: fp8}"),
       "'training_quant' only with model"},
      {"bad custom remat entry", replace(g, "seq: 256,", "seq: 256, remat: \"custom:query_proj=gpu\","),
       "cases[step-c].workload.remat: expected a place remat, device or offload (entry 'query_proj=gpu')"},
      {"remat against recompute", replace(g, "seq: 256,", "seq: 256, recompute: true, remat: minimal,"),
       "cases[step-c].workload.remat: expected full, as recompute: true says"},
      {"mesh without slice", replace(g, "    slice: 2x2\n", ""), "cases[step-c].mesh: expected a slice"},
      {"layer sampling of a gemm", replace(g, "dtype: bf16}", "dtype: bf16, sample_layers: 2}"),
       "'sample_layers' only with model"},
      {"layer sampling of an encoder", replace(g, "model: llama3-8b", "model: bert-base, sample_layers: 2"),
       "cases[step-c].workload.sample_layers: expected no layer sampling for model bert-base, found layer sampling "
       "needs a decoder"},
      {"layer sampling of too many layers", replace(g, "seq: 256,", "seq: 256, sample_layers: 16,"),
       "cases[step-c].workload.sample_layers: expected an integer n >= 1 with 2 x n below the model's 32 layers, "
       "found '16'"},
      {"layer sampling of half a layer", replace(g, "seq: 256,", "seq: 256, sample_layers: 1.5,"),
       "expected an integer n >= 1"},
      {"layer sampling of part of a local/global cycle",
       replace(g, "model: llama3-8b", "model: gemma3-12b, sample_layers: 4"),
       "cases[step-c].workload.sample_layers: expected an integer n >= 1 with 2 x n below the model's 48 layers, a "
       "multiple of its layers' period 6 (local and global attention), found '4'"},
      {"sampled metric over an intensive column",
       replace(replace(g, "seq: 256,", "seq: 256, sample_layers: 2,"), "{kind: mfu, unit: \"%\", peak_tflops: 918}",
               "{kind: mfu, unit: \"%\", peak_tflops: 918, flops: \"mxu_utilization * 2\"}"),
       "cases[step-c].metric.flops: expected with sample_layers, a number or an expression over seconds, "
       "total_flops, model_flops, hardware_flops, found 'mxu_utilization'"},
      {"not yaml", "family: [", "cases.yaml:"},
      {"no cases", "family: x\n", "cases: expected a non-empty list"},
  };
  for (const auto& b : bad) {
    TempDir d;
    try {
      parse_in(d, b.text);
      ADD_FAILURE() << b.name << ": no error";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(b.expect), std::string::npos) << b.name << ": " << what;
      EXPECT_NE(what.find("cases.yaml"), std::string::npos) << b.name << ": " << what;
    }
  }
}

// sample_layers: n becomes two runs of n and 2n layers (runner.cpp); the
// case keeps the model's layer count, and the runs' seconds and FLOPs are
// extrapolated linearly to it.
// `fitted` names the config keys solved from a case; defaults may carry it
// for a family whose every case was fitted, a case may not leave it empty.
TEST(ValidateCases, FittedCases) {
  TempDir d;
  const auto cases =
      parse_in(d, replace(kGood, "    measured: 100\n", "    measured: 100\n    fitted: \"kernel.launch_overhead\"\n"));
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0].fitted, "kernel.launch_overhead");
  EXPECT_EQ(cases[1].fitted, "");
  const auto all =
      parse_in(d, replace(kGood, "  tolerance: 0.1\n", "  tolerance: 0.1\n  fitted: ici.link_efficiency\n"));
  for (const auto& c : all) EXPECT_EQ(c.fitted, "ici.link_efficiency") << c.id;
  try {
    parse_in(d, replace(kGood, "    measured: 100\n", "    measured: 100\n    fitted: \"\"\n"));
    ADD_FAILURE() << "an empty fitted was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cases.yaml:13:13: cases[gemm-a].fitted: expected a non-empty string"),
              std::string::npos)
        << e.what();
  }
}

TEST(ValidateCases, LayerSampling) {
  TempDir d;
  const auto c = parse_in(d, replace(kGood, "seq: 256,", "seq: 256, sample_layers: 3,"));
  EXPECT_EQ(c[2].workload.sample_layers, 3);
  EXPECT_EQ(c[2].workload.model_layers, 32);  // llama3-8b
  EXPECT_EQ(c[0].workload.sample_layers, 0);
  const auto x = extrapolate_summary({{"seconds", "1.5"}, {"total_flops", "100"}, {"mxu_utilization", "0.5"}},
                                     {{"seconds", "2"}, {"total_flops", "160"}, {"mxu_utilization", "0.6"}}, 3, 32);
  // x(32) = x(3) + (32 - 3) / 3 (x(6) - x(3)).
  EXPECT_DOUBLE_EQ(std::stod(x.at("seconds")), 1.5 + 29.0 / 3.0 * 0.5);
  EXPECT_DOUBLE_EQ(std::stod(x.at("total_flops")), 100 + 29.0 / 3.0 * 60);
  EXPECT_EQ(x.count("mxu_utilization"), 0u);  // not linear in the layers: left out
  EXPECT_EQ(x.count("model_flops"), 0u);      // in neither run
}

// A model file instead of a zoo name: read relative to the case file,
// passed to the run as its absolute path, and sampled like a zoo model.
TEST(ValidateCases, ModelFileRelativeToTheCaseFile) {
  TempDir d;
  // The tiny decoder with 8 layers, enough to sample 2 and 4 of them.
  d.write("models/small.yaml", replace(test::kTinyDecoder, "layers: 2", "layers: 8"));
  const auto c = parse_in(d, replace(kGood, "model: llama3-8b, phase: train, batch: 4, seq: 256,",
                                     "model: models/small.yaml, phase: train, batch: 4, seq: 256, sample_layers: 2,"));
  const std::string file = (fs::path(d.path()) / "models" / "small.yaml").lexically_normal().string();
  EXPECT_EQ(c[2].workload.value, file);
  EXPECT_EQ(c[2].workload.sample_layers, 2);
  EXPECT_EQ(c[2].workload.model_layers, 8);
  const std::vector<std::string> args = run_args(c[2]);
  const auto at = std::find(args.begin(), args.end(), "--model");
  ASSERT_NE(at, args.end());
  ASSERT_NE(at + 1, args.end());
  EXPECT_EQ(*(at + 1), file);
}

// A model whose first layers differ (DeepSeek-V3: 3 dense, then 58 MoE)
// keeps them in both runs: b + n and b + 2n layers, extrapolated from
// there, x(L) = x(b + n) + (L - b - n) / n (x(b + 2n) - x(b + n)); b + 2n
// must stay below the model's layers.
TEST(ValidateCases, LayerSamplingKeepsTheLeadingDenseLayers) {
  TempDir d;
  const auto c = parse_in(d, replace(kGood, "model: llama3-8b, phase: train, batch: 4, seq: 256,",
                                     "model: deepseek-v3, phase: train, batch: 4, seq: 256, sample_layers: 2,"));
  ASSERT_EQ(c[2].workload.sample_layers, 2);
  EXPECT_EQ(c[2].workload.sample_base, 3);
  EXPECT_EQ(c[2].workload.model_layers, 61);
  EXPECT_EQ(c[2].workload.sampled_run_layers(0), 5);
  EXPECT_EQ(c[2].workload.sampled_run_layers(1), 7);
  const auto x = extrapolate_summary({{"seconds", "5"}}, {{"seconds", "7"}}, 2, 61, 3);
  EXPECT_DOUBLE_EQ(std::stod(x.at("seconds")), 5 + (61.0 - 3 - 2) / 2 * 2);  // 1 s per MoE layer: 61 s
  std::string err;
  try {
    parse_in(d, replace(kGood, "model: llama3-8b, phase: train, batch: 4, seq: 256,",
                        "model: deepseek-v3, phase: train, batch: 4, seq: 256, sample_layers: 29,"));
  } catch (const std::exception& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("an integer n >= 1 with 3 + 2 x n below the model's 61 layers (its first 3 run whole)"),
            std::string::npos)
      << err;
}

TEST(ValidateCases, EveryProblemIsReported) {
  TempDir d;
  std::string t = replace(kGood, "measured: 100", "measured: -1");
  t = replace(t, "tolerance: 0.2", "tolerance: 0");
  try {
    parse_in(d, t);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.diagnostics().size(), 2u) << e.what();
  }
}

namespace {

// The case labels of a validation plot (9 px text), as boxes; fails the
// test when one leaves the plot area or overlaps another.
std::vector<std::array<double, 4>> label_rows(const std::string& svg) {
  std::vector<std::array<double, 4>> boxes;
  for (std::size_t at = svg.find("font-size=\"9\""); at != std::string::npos;
       at = svg.find("font-size=\"9\"", at + 1)) {
    const std::size_t y = svg.rfind(" y=\"", at), x = svg.rfind("<text x=\"", at);
    const std::size_t open = svg.find('>', at), close = svg.find("</text>", at);
    EXPECT_TRUE(y != std::string::npos && x != std::string::npos && open < close);
    if (y == std::string::npos || x == std::string::npos || open >= close) break;
    const double ly = std::stod(svg.substr(y + 4)), lx = std::stod(svg.substr(x + 9));
    const double w = 5.0 * static_cast<double>(close - open - 1);
    const bool end = svg.substr(at, open - at).find("text-anchor=\"end\"") != std::string::npos;
    const std::array<double, 4> b = {end ? lx - w : lx, ly - 9, end ? lx : lx + w, ly + 2};
    EXPECT_GE(b[1], 50.0) << svg.substr(x, 60);  // below the title lines, inside the plot
    EXPECT_LE(b[3], 590.0) << svg.substr(x, 60);
    // Positions are written to 0.1 px: boxes that touch may overlap by that.
    for (const auto& o : boxes)
      EXPECT_FALSE(b[0] < o[2] - 0.2 && o[0] < b[2] - 0.2 && b[1] < o[3] - 0.2 && o[1] < b[3] - 0.2)
          << svg.substr(x, 60);
    boxes.push_back(b);
  }
  return boxes;
}

}  // namespace

TEST(ValidateReports, TableCsvSvgAndHtml) {
  TempDir d;
  const auto cases = parse_in(d, kGood);
  std::vector<CaseResult> r = {{&cases[0], Outcome::Pass, 95, -5, "", 1},
                               {&cases[1], Outcome::ExpectedMiss, 300, -40, "", 1},
                               {&cases[2], Outcome::Error, 0, 0, "exit 2: boom", 1}};
  std::ostringstream table;
  write_table(table, r);
  EXPECT_NE(table.str().find("gemm-a"), std::string::npos);
  EXPECT_NE(table.str().find("-5.0"), std::string::npos);
  EXPECT_NE(table.str().find("exit 2: boom"), std::string::npos);
  // Mean |error| over the cases with a value: (5 + 40) / 2 = 22.5.
  EXPECT_NE(table.str().find("3 cases: 1 pass, 0 fail, 1 expected miss, 0 unexpected pass, 1 error; mean |error| "
                             "22.5%, max 40.0%"),
            std::string::npos)
      << table.str();
  const std::string csv = csv_text(r);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "id,family,title,arch,metric,unit,measured,simulated,error_pct,tolerance_pct,within_tolerance,expect,"
            "outcome,message,fitted,source");
  EXPECT_NE(csv.find("gemm-a,demo,a gemm,v5e,tflops,TFLOP/s,100,95,-5.00,10,true,,pass,,,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("copy-b,demo,a copy,v5e,bandwidth,GB/s,500,300,-40.00,20,false,miss,xfail,,,"), std::string::npos)
      << csv;
  const std::string svg = svg_plot(r);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find(">gemm-a</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">step-c</text>"), std::string::npos);  // an error has no point
  // Many cases at the top of the plot: every label stays below the title
  // and summary lines (y <= 40) and inside the picture.
  std::vector<Case> crowd(30, cases[0]);
  std::vector<CaseResult> top;
  for (std::size_t i = 0; i < crowd.size(); ++i) {
    crowd[i].id = "case-" + std::to_string(i);
    crowd[i].measured = 1000.0 * (1.0 + 0.01 * static_cast<double>(i));
    top.push_back({&crowd[i], Outcome::Pass, crowd[i].measured * 1.1, 10, "", 1});
  }
  top.push_back({&cases[1], Outcome::Pass, 1, 0, "", 1});  // the plot's low end
  const std::string crowded = svg_plot(top);
  EXPECT_EQ(label_rows(crowded).size(), 31u);  // room for every label
  EXPECT_EQ(crowded.find("left out"), std::string::npos);
  // Twice as many at one spot: those that find no room are left out and
  // counted under the plot, none drawn over another.
  std::vector<Case> many(70, cases[0]);
  std::vector<CaseResult> pile;
  for (std::size_t i = 0; i < many.size(); ++i) {
    many[i].id = "crowded-case-" + std::to_string(i);
    many[i].measured = 1000.0;
    pile.push_back({&many[i], Outcome::Pass, 1100.0, 10, "", 1});
  }
  pile.push_back({&cases[1], Outcome::Pass, 1, 0, "", 1});
  const std::string piled = svg_plot(pile);
  const std::size_t drawn = label_rows(piled).size();
  EXPECT_LT(drawn, 71u);
  EXPECT_GT(drawn, 40u);
  EXPECT_NE(piled.find(">" + std::to_string(71 - drawn) + " labels left out where points crowd"), std::string::npos);
  const std::string html = html_page(r);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("exit 2: boom"), std::string::npos);
}

// A fitted case is marked in every report, and the summary adds the mean
// |error| over the other cases: the suite's evidence without the cases
// that pass by construction.
TEST(ValidateReports, FittedCasesAreMarkedAndLeftOutOfTheirMean) {
  TempDir d;
  auto cases = parse_in(d, kGood);
  cases[0].fitted = "kernel.launch_overhead";
  std::vector<CaseResult> r = {{&cases[0], Outcome::Pass, 99, -1, "", 1},
                               {&cases[1], Outcome::ExpectedMiss, 300, -40, "", 1},
                               {&cases[2], Outcome::Pass, 42, 5, "", 1}};
  std::ostringstream table;
  write_table(table, r);
  // All three: (1 + 40 + 5) / 3; the two not fitted: (40 + 5) / 2.
  EXPECT_NE(table.str().find("mean |error| 15.3%, max 40.0%; 1 fitted, the other 2: mean |error| 22.5%"),
            std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("pass, fitted\n"), std::string::npos) << table.str();
  std::ostringstream md;
  write_markdown(md, r);
  EXPECT_NE(md.str().find("| `gemm-a` |"), std::string::npos);
  EXPECT_NE(md.str().find("| pass, fitted |"), std::string::npos) << md.str();
  const std::string csv = csv_text(r);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "id,family,title,arch,metric,unit,measured,simulated,error_pct,tolerance_pct,within_tolerance,expect,"
            "outcome,message,fitted,source");
  EXPECT_NE(csv.find(",pass,,kernel.launch_overhead,\"a paper, table 1\""), std::string::npos) << csv;
  EXPECT_NE(csv.find(",xfail,,,\"a paper, table 1\""), std::string::npos) << csv;
  // The plot draws a fitted case's point as a ring and says so in the legend.
  const std::string svg = svg_plot(r);
  EXPECT_NE(svg.find("fill=\"#fff\" stroke=\"#1a9850\" stroke-width=\"2\""), std::string::npos);
  EXPECT_NE(svg.find(">fitted (a config key solved from it): 1</text>"), std::string::npos);
  EXPECT_NE(svg.find(">mean |error| of the other 2: 22.5%</text>"), std::string::npos);
  // Without fitted cases none of it appears.
  cases[0].fitted.clear();
  std::ostringstream plain;
  write_table(plain, r);
  EXPECT_EQ(plain.str().find("fitted"), std::string::npos) << plain.str();
  EXPECT_EQ(svg_plot(r).find("fitted"), std::string::npos);
}

// Several files or folders form one suite: every case of each, in the
// order given, and an id in two of them is an error naming both places.
TEST(ValidateCases, SeveralPathsAreOneSuiteWithUniqueIds) {
  TempDir d;
  d.write("wl.yaml", kWorkload);
  const std::string first = d.write("cases.yaml", kGood);
  std::string other = kGood;
  for (const char* id : {"gemm-a", "copy-b", "step-c"}) {
    const std::string from = std::string("id: ") + id;
    other.replace(other.find(from), from.size(), from + "-2");
  }
  other.replace(other.find("file: wl.yaml"), 13, "file: ../wl.yaml");  // a folder's *.yaml are all cases
  d.write("more/other.yaml", other);
  const auto cases =
      load_cases(std::vector<std::string>{first, (fs::path(d.path()) / "more").string()}, default_search_path());
  ASSERT_EQ(cases.size(), 6u);
  EXPECT_EQ(cases[0].id, "gemm-a");
  EXPECT_EQ(cases[3].id, "gemm-a-2");
  try {
    load_cases(std::vector<std::string>{first, first}, default_search_path());
    FAIL() << "the same ids twice were accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("already the id of the case at " + first + ":9"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(
      load_cases(std::vector<std::string>{first, (fs::path(d.path()) / "none").string()}, default_search_path()),
      ConfigError);
}

TEST(ValidateSuite, RepositorySuiteLoads) {
  const auto cases = load_cases(default_cases_dir(), default_search_path());
  EXPECT_GE(cases.size(), 15u);
  std::set<std::string> archs, kinds;
  for (const auto& c : cases) {
    archs.insert(c.arch);
    kinds.insert(metric_kind_name(c.metric.kind));
    EXPECT_FALSE(c.source.empty()) << c.id;
    EXPECT_LE(c.tolerance, 0.25) << c.id;
    if (c.expect_miss) {
      EXPECT_FALSE(c.reason.empty()) << c.id;
    }
  }
  EXPECT_GE(archs.size(), 4u);
}

}  // namespace
}  // namespace tpusim::sim::validate
