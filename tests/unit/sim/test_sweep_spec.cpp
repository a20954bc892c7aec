// Sweep specs without running anything: the expression language, point
// counts of grid/zip/points/filters, stable ids, shard partitions, a table
// of malformed specs (each message names file:line:column and the key),
// results.csv reading (torn last line), merge duplicates and gaps.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "sim/sweep/results_table.h"
#include "sim/sweep/sweep_spec.h"

namespace tpusim::sim::sweep {
namespace {

namespace fs = std::filesystem;

struct TmpDir {
  fs::path p;
  TmpDir() {
    p = fs::temp_directory_path() /
        ("tpusim_sweep_spec_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::create_directories(p);
  }
  ~TmpDir() {
    std::error_code ec;
    fs::remove_all(p, ec);
  }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

double eval_num(const std::string& text, const std::map<std::string, Value>& env = {}) {
  const Value v = Expr::parse(text).eval([&](const std::string& n) -> std::optional<Value> {
    auto it = env.find(n);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
  EXPECT_TRUE(v.is_number) << text;
  return v.number;
}

TEST(SweepExpr, ArithmeticPrecedenceAndLogic) {
  EXPECT_EQ(eval_num("1 + 2 * 3"), 7);
  EXPECT_EQ(eval_num("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval_num("-2 * -3"), 6);
  EXPECT_EQ(eval_num("7 % 4"), 3);
  EXPECT_EQ(eval_num("1 < 2 and 3 >= 3"), 1);
  EXPECT_EQ(eval_num("not 1 < 2 or 0"), 0);
  EXPECT_EQ(eval_num("max(1, 5, 3) - min(4, 2)"), 3);
  EXPECT_EQ(eval_num("log2(256)"), 8);
  EXPECT_TRUE(std::isnan(eval_num("1 / 0")));
  std::map<std::string, Value> env = {{"arch.mxu.rows", Value::num(256)},
                                      {"model.batch", Value::num(8)},
                                      {"model.context", Value::num(4096)},
                                      {"workload.dtype", Value::str("int8")}};
  // The example of the brief: 256 <= 256 and 8 * 4096 = 32768 < 100000.
  EXPECT_EQ(eval_num("arch.mxu.rows <= 256 and model.batch * model.context < 100000", env), 1);
  EXPECT_EQ(eval_num("workload.dtype == 'int8'", env), 1);
  EXPECT_EQ(eval_num("workload.dtype != \"int8\"", env), 0);
  // Names are recorded with their columns for up-front checks.
  const Expr e = Expr::parse("a.b + c");
  ASSERT_EQ(e.names().size(), 2u);
  EXPECT_EQ(e.names()[0], (std::pair<std::string, int>{"a.b", 1}));
  EXPECT_EQ(e.names()[1], (std::pair<std::string, int>{"c", 7}));
}

TEST(SweepExpr, ParseErrorsCarryTheColumn) {
  struct Case {
    const char* text;
    int column;
    const char* part;
  } cases[] = {
      {"1 +", 4, "ends where a value"},
      {"a = 1", 3, "'=='"},
      {"(1 + 2", 7, "expected ')'"},
      {"a && b", 3, "'and'"},
      {"foo(1)", 1, "unknown function"},
      {"1 < 2 < 3", 7, "do not chain"},
      {"'abc", 1, "unterminated"},
      {"2x", 2, "directly followed"},
      {"", 1, "empty"},
      {"1 2", 3, "after a complete expression"},
  };
  for (const auto& c : cases) {
    try {
      Expr::parse(c.text);
      ADD_FAILURE() << "no error for '" << c.text << "'";
    } catch (const ExprError& e) {
      EXPECT_EQ(e.column(), c.column) << c.text << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(c.part), std::string::npos) << c.text << ": " << e.what();
    }
  }
  EXPECT_THROW(Expr::parse("'a' + 1").eval([](const std::string&) { return std::nullopt; }), ExprError);
  EXPECT_THROW(Expr::parse("'a' < 1").eval([](const std::string&) { return std::nullopt; }), ExprError);
  EXPECT_THROW(Expr::parse("x").eval([](const std::string&) { return std::nullopt; }), ExprError);
}

TEST(SweepSpec, GridZipPointsAndFilterCounts) {
  // grid 3 x 2 = 6, times a zip of 4 = 24; plus 2 explicit points = 26.
  const SweepSpec s = parse_sweep_spec(R"(
base: {arch: v5e, model: llama3-8b, phase: decode}
axes:
  grid:
    arch.mxu.rows: [64, 128, 256]
    workload.dtype: [bf16, int8]
  zip:
    model.batch: [1, 2, 4, 8]
    model.context: [512, 1024, 2048, 4096]
  points:
    - {arch.mxu.rows: 32, model.batch: 1}
    - {arch.mxu.rows: 512, model.batch: 1}
)",
                                       "mem.yaml");
  EXPECT_EQ(s.expanded, 26u);
  EXPECT_EQ(s.points.size(), 26u);
  EXPECT_EQ(s.axes, (std::vector<std::string>{"arch.mxu.rows", "workload.dtype", "model.batch", "model.context"}));
  // Zip pairs values position by position: batch 4 always with context 2048.
  for (const auto& p : s.points)
    if (p.find("model.context") && p.find("model.batch")->text == "4") {
      EXPECT_EQ(p.find("model.context")->text, "2048");
    }

  // Filter: rows <= 256 keeps 24 of the product and the 32-row point (25);
  // batch x context < 5000 keeps zip pairs (1,512), (2,1024) (512, 2048 <
  // 5000; 4 x 2048 = 8192 and 8 x 4096 fail), and the explicit point
  // reads the base context 2048 (run default) x batch 1: 3 x 2 x 2 + 1 = 13.
  const SweepSpec f = parse_sweep_spec(R"(
base: {arch: v5e, model: llama3-8b}
axes:
  grid: {arch.mxu.rows: [64, 128, 256], workload.dtype: [bf16, int8]}
  zip: {model.batch: [1, 2, 4, 8], model.context: [512, 1024, 2048, 4096]}
  points: [{arch.mxu.rows: 32, model.batch: 1}, {arch.mxu.rows: 512, model.batch: 1}]
filters:
  - arch.mxu.rows <= 256 and model.batch * model.context < 5000
)",
                                       "mem.yaml");
  EXPECT_EQ(f.expanded, 26u);
  EXPECT_EQ(f.points.size(), 13u);
  for (std::size_t i = 0; i < f.points.size(); ++i) EXPECT_EQ(f.points[i].index, i);

  // Two zip groups multiply: 2 x 3 = 6; no axes at all = the base run.
  EXPECT_EQ(parse_sweep_spec("base: {gemm: '8,8,8'}\naxes:\n  zip:\n    - {arch.mxu.rows: [8, 16]}\n"
                             "    - {arch.mxu.cols: [8, 16, 32], arch.mxu.count: [1, 2, 3]}\n",
                             "m.yaml")
                .points.size(),
            6u);
  EXPECT_EQ(parse_sweep_spec("base: {gemm: '8,8,8'}\n", "m.yaml").points.size(), 1u);
}

TEST(SweepSpec, PointIdsAreStableAndDependOnlyOnValues) {
  const SweepSpec a = parse_sweep_spec(
      "base: {gemm: '8,8,8'}\naxes:\n  grid: {arch.mxu.rows: [8, 16], workload.dtype: [bf16, int8]}\n", "a.yaml");
  // The same points listed in another order and with another base.
  const SweepSpec b = parse_sweep_spec(
      "base: {gemm: '16,16,16'}\naxes:\n  grid: {workload.dtype: [int8, bf16], arch.mxu.rows: [16, 8]}\n", "b.yaml");
  std::set<std::string> ia, ib;
  for (const auto& p : a.points) ia.insert(p.id);
  for (const auto& p : b.points) ib.insert(p.id);
  EXPECT_EQ(ia.size(), 4u);
  EXPECT_EQ(ia, ib);
  for (const auto& id : ia) {
    EXPECT_EQ(id.size(), 13u);
    EXPECT_EQ(id[0], 'p');
  }
}

TEST(SweepSpec, ShardsAreDisjointAndCompleteForOneToSevenShards) {
  const SweepSpec s = parse_sweep_spec(
      "base: {gemm: '8,8,8'}\naxes:\n  grid: {arch.mxu.rows: [8, 16, 32, 64, 128], arch.mxu.cols: [8, 16, 32, 64]}\n",
      "s.yaml");
  ASSERT_EQ(s.points.size(), 20u);
  for (int n = 1; n <= 7; ++n) {
    std::map<std::string, int> owner;
    std::size_t smallest = SIZE_MAX, largest = 0;
    for (int i = 0; i < n; ++i) {
      std::size_t count = 0;
      for (const auto& p : s.points)
        if (in_shard(p, i, n)) {
          EXPECT_EQ(owner.count(p.id), 0u) << "point " << p.id << " in two shards of " << n;
          owner[p.id] = i;
          ++count;
        }
      smallest = std::min(smallest, count);
      largest = std::max(largest, count);
    }
    EXPECT_EQ(owner.size(), s.points.size()) << n << " shards";
    EXPECT_LE(largest - smallest, 1u) << n << " shards";
  }
}

// Each malformed spec must fail with a message holding its file:line:col
// and the key (and, where there is one, the suggestion).
TEST(SweepSpec, MalformedSpecsNameFileLineColumnAndKey) {
  struct Case {
    const char* text;
    std::vector<std::string> parts;
  } cases[] = {
      {"base: {gemm: '8,8,8'}\naxes:\n  grid:\n    arch.mxu.rowz: [1, 2]\n",
       {"bad.yaml:4:5:", "axes.grid.arch.mxu.rowz", "did you mean 'arch.mxu.rows'"}},
      {"base: {gemm: '8,8,8'}\naxes:\n  grid:\n    mxu.rows: [1, 2]\n",
       {"bad.yaml:4:5:", "did you mean 'arch.mxu.rows'"}},
      {"base: {gemm: '8,8,8'}\naxes:\n  grid:\n    model.bacth: [1, 2]\n",
       {"bad.yaml:4:5:", "model.bacth", "did you mean 'model.batch'"}},
      {"base: {gemm: '8,8,8'}\naxes:\n  zip:\n    arch.mxu.rows: [1, 2]\n    arch.mxu.cols: [1, 2, 3]\n",
       {"bad.yaml:5:20:", "axes.zip.arch.mxu.cols", "2 values", "3 values"}},
      {"base: {gemm: '8,8,8'}\naxes:\n  grid:\n    arch.mxu.rows: 128\n",
       {"bad.yaml:4:20:", "axes.grid.arch.mxu.rows", "non-empty list"}},
      {"base: {gemm: '8,8,8'}\naxes:\n  gird:\n    arch.mxu.rows: [1]\n", {"bad.yaml:3:3:", "axes.gird", "'grid'"}},
      {"base: {gemm: '8,8,8'}\naxis: {}\n", {"bad.yaml:2:1:", "axis", "did you mean 'axes'"}},
      {"base: {gemm: '8,8,8', batchh: 2}\n", {"bad.yaml:1:23:", "base.batchh", "did you mean 'batch'"}},
      {"base: {gemm: '8,8,8', model: llama3-8b}\n", {"bad.yaml:1:7:", "base", "at most one"}},
      {"base: {gemm: '8,8,8'}\naxes:\n  grid:\n    model.batch: [1, 0]\n",
       {"bad.yaml:4:22:", "axes.grid.model.batch", "integer in [1, 2^40]", "'0'"}},
      // Beyond any integer type (a libFuzzer find: its conversion was
      // undefined behaviour).
      {"base: {gemm: '8,8,8'}\naxes:\n  grid:\n    model.batch: [64, 128777777777777777777777777777]\n",
       {"bad.yaml:4:23:", "axes.grid.model.batch", "integer in [1, 2^40]", "'128777777777777777777777777777'"}},
      {"base: {gemm: '8,8,8'}\naxes:\n  grid:\n    model.seq: [2e12]\n",
       {"bad.yaml:4:17:", "axes.grid.model.seq", "integer in [1, 2^40]"}},
      {"base: {gemm: '8,8,8'}\naxes:\n  grid:\n    workload.dtype: [bf16, bf17]\n",
       {"bad.yaml:4:28:", "workload.dtype", "'bf17'"}},
      {"base: {gemm: '8,8,8'}\naxes:\n  grid:\n    arch.mxu.rows: [8]\nfilters:\n  - arch.mxu.rows <= \n",
       {"bad.yaml:6:21:", "filters", "ends where a value"}},
      {"base: {gemm: '8,8,8'}\naxes:\n  grid:\n    arch.mxu.rows: [8]\nfilters:\n  - \"arch.mxu.row < 9\"\n",
       {"bad.yaml:6:6:", "filters", "unknown name 'arch.mxu.row'", "did you mean 'arch.mxu.rows'"}},
      {"base: {gemm: '8,8,8'}\naxes:\n  grid:\n    arch.mxu.rows: [8]\nderived:\n  x: achieved_tflop / 2\n",
       {"bad.yaml:6:6:", "derived.x", "unknown name 'achieved_tflop'", "did you mean 'achieved_tflops'"}},
      {"base: {gemm: '8,8,8'}\naxes:\n  grid:\n    arch.mxu.rows: [8]\nderived:\n  status: 1\n",
       {"bad.yaml:6:11:", "derived.status", "already a column"}},
      {"base: {gemm: '8,8,8'}\naxes:\n  points:\n    - {arch.mxu.rows: 8}\n    - {arch.mxu.rows: 8}\n",
       {"bad.yaml:5:23:", "distinct points"}},
      {"base: {gemm: '8,8,8'}\naxes:\n  grid: {workload.gemm: ['1,1,1']}\n  points: [{model.name: llama3-8b, "
       "workload.conv: '1,1,1,1,1,1,1,1,0'}]\n",
       {"bad.yaml:4:", "one workload source"}},
      {"base: {gemm: '8,8,8'}\naxes: [1, 2\n", {"bad.yaml:3:1:", "valid YAML"}},
      {"base: {gemm: '8,8,8', set: {mxu.rowz: 3}}\n", {"bad.yaml:1:29:", "base.set.arch.mxu.rowz"}},
  };
  int i = 0;
  for (const auto& c : cases) {
    ++i;
    try {
      parse_sweep_spec(c.text, "bad.yaml");
      ADD_FAILURE() << "case " << i << " parsed:\n" << c.text;
    } catch (const ConfigError& e) {
      const std::string msg = e.what();
      for (const auto& part : c.parts)
        EXPECT_NE(msg.find(part), std::string::npos) << "case " << i << ": '" << part << "' not in: " << msg;
    }
  }
}

TEST(SweepSpec, EveryPointResolvedUpFrontInvalidOnesMarked) {
  const SweepSpec s = parse_sweep_spec(
      "base: {arch: v5e, gemm: '128,128,128', set: {published.peak_tflops: '~'}}\n"
      "axes:\n  grid:\n    arch.mxu.rows: [128, 0, 256]\n",
      "ok.yaml");
  const auto pts = prepare_points(s, default_search_path());
  ASSERT_EQ(pts.size(), 3u);
  EXPECT_TRUE(pts[0].error.empty()) << pts[0].error;
  EXPECT_NE(pts[1].error.find("mxu.rows"), std::string::npos) << pts[1].error;
  EXPECT_TRUE(pts[2].error.empty()) << pts[2].error;
  // Different chips, different digests; the run arguments carry the set.
  EXPECT_NE(pts[0].config_hash, pts[2].config_hash);
  EXPECT_EQ(pts[0].config_hash.size(), 16u);
  const auto& a = pts[2].run_args;
  EXPECT_NE(std::find(a.begin(), a.end(), "mxu.rows=256"), a.end());
  EXPECT_NE(std::find(a.begin(), a.end(), "--gemm"), a.end());
  // A base broken for every point is a spec error, not N error rows.
  const SweepSpec bad = parse_sweep_spec("base: {arch: no-such-chip, gemm: '8,8,8'}\n", "bad.yaml");
  EXPECT_THROW(prepare_points(bad, default_search_path()), ConfigError);
}

TEST(SweepSpec, CompilerSwitchesBecomeRunFlags) {
  const SweepSpec s = parse_sweep_spec(
      "base: {arch: v4, gemm: '128,128,128'}\n"
      "axes:\n  grid:\n    workload.cmem: [true, false]\n    workload.fusion: [true, false]\n",
      "ok.yaml");
  const auto pts = prepare_points(s, default_search_path());
  ASSERT_EQ(pts.size(), 4u);
  int no_cmem = 0, no_fusion = 0;
  for (const auto& p : pts) {
    ASSERT_TRUE(p.error.empty()) << p.error;
    const auto& a = p.run_args;
    no_cmem += std::count(a.begin(), a.end(), "--no-cmem");
    no_fusion += std::count(a.begin(), a.end(), "--no-fusion");
  }
  // Half the grid turns each switch off.
  EXPECT_EQ(no_cmem, 2);
  EXPECT_EQ(no_fusion, 2);
  EXPECT_THROW(parse_sweep_spec("base: {arch: v4, gemm: '8,8,8', cmem: maybe}\n", "bad.yaml"), ConfigError);
}

// A workload file gives each tensor its dtype: its points get no --dtype,
// and a dtype axis over one is an error row naming the key, not a sweep of
// identical runs; a SCALE-Sim topology takes the dtype.
TEST(SweepSpec, DtypeOnlyForWorkloadsWithoutTheirOwn) {
  const std::string dir = std::string(TPUSIM_SOURCE_DIR) + "/configs/workloads/";
  const auto args_of = [](const std::string& text) {
    return prepare_points(parse_sweep_spec(text, "ok.yaml"), default_search_path());
  };
  auto pts = args_of("base: {arch: v5e, workload: " + dir + "mlp.yaml}\n");
  ASSERT_EQ(pts.size(), 1u);
  ASSERT_TRUE(pts[0].error.empty()) << pts[0].error;
  EXPECT_EQ(std::count(pts[0].run_args.begin(), pts[0].run_args.end(), "--dtype"), 0);
  pts = args_of("base: {arch: v5e, workload: " + dir + "mlp.yaml}\naxes:\n  grid:\n    workload.dtype: [bf16, int8]\n");
  ASSERT_EQ(pts.size(), 2u);
  for (const auto& p : pts)
    EXPECT_NE(p.error.find("workload.dtype applies to models, built-in workloads and SCALE-Sim CSV"), std::string::npos)
        << p.error;
  pts = args_of("base: {arch: v5e, workload: " + dir + "scalesim_gemm_example.csv, dtype: int8}\n");
  ASSERT_EQ(pts.size(), 1u);
  ASSERT_TRUE(pts[0].error.empty()) << pts[0].error;
  const auto& a = pts[0].run_args;
  const auto it = std::find(a.begin(), a.end(), "--dtype");
  ASSERT_NE(it, a.end());
  EXPECT_EQ(*(it + 1), "int8");
}

// A two-layer decoder model file (hidden 256), small enough to fit a chip
// for training, with `extra` lines (e.g. its experts).
void write_tiny_decoder(const std::string& path, const std::string& extra) {
  std::ofstream(path) << "name: tiny\nfamily: decoder\nhidden: 256\nlayers: 2\nvocab: 1024\nmax_context: 2048\n"
                         "norm: rmsnorm\nposition: rotary\ntied_embeddings: false\n"
                         "attention: {heads: 4, kv_heads: 2, head_dim: 64}\nffn: {kind: swiglu, size: 512}\n"
                      << extra;
}

// model.remat (`remat` in base) sweeps the training remat policy: each point runs
// with --remat <policy>; an unknown policy is a located spec error.
TEST(SweepSpec, RematPolicyBecomesRunFlag) {
  const SweepSpec s = parse_sweep_spec(
      "base: {arch: v5p, model: bert-base, phase: train, batch: 1, seq: 128}\n"
      "axes:\n  grid:\n    model.remat: [none, minimal, selective, full, qkv_proj_offloaded, minimal_offloaded]\n",
      "ok.yaml");
  const auto pts = prepare_points(s, default_search_path());
  ASSERT_EQ(pts.size(), 6u);
  std::set<std::string> seen;
  for (const auto& p : pts) {
    ASSERT_TRUE(p.error.empty()) << p.error;
    const auto& a = p.run_args;
    auto it = std::find(a.begin(), a.end(), "--remat");
    ASSERT_NE(it, a.end());
    ASSERT_NE(it + 1, a.end());
    seen.insert(*(it + 1));
  }
  EXPECT_EQ(seen,
            (std::set<std::string>{"none", "minimal", "selective", "full", "qkv_proj_offloaded", "minimal_offloaded"}));
  try {
    parse_sweep_spec("base: {model: bert-base, phase: train}\naxes:\n  grid:\n    model.remat: [full, some]\n",
                     "bad.yaml");
    ADD_FAILURE() << "parsed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:4:25:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("a remat policy"), std::string::npos) << e.what();
  }
  // A custom policy is one string, its entries checked (a two-layer
  // decoder, small enough to fit).
  TmpDir d;
  const std::string model = (d.p / "tiny.yaml").string();
  write_tiny_decoder(model, "");
  const SweepSpec c = parse_sweep_spec(
      "base: {arch: v5p, model: " + model +
          ", phase: train, batch: 1, seq: 128}\n"
          "axes:\n  grid:\n    model.remat: [\"custom:decoder_layer_input=offload,qkv_proj=device\"]\n",
      "ok.yaml");
  const auto cp = prepare_points(c, default_search_path());
  ASSERT_EQ(cp.size(), 1u);
  ASSERT_TRUE(cp[0].error.empty()) << cp[0].error;
  auto it = std::find(cp[0].run_args.begin(), cp[0].run_args.end(), "--remat");
  ASSERT_NE(it, cp[0].run_args.end());
  EXPECT_EQ(*(it + 1), "custom:decoder_layer_input=offload,qkv_proj=device");
  try {
    parse_sweep_spec(
        "base: {model: llama3-8b, phase: train}\naxes:\n  grid:\n    model.remat: [\"custom:mlpwx=device\"]\n",
        "bad.yaml");
    ADD_FAILURE() << "parsed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:4:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("a name among decoder_layer_input"), std::string::npos) << e.what();
  }
}

// model.moe_capacity_factor (`moe_capacity_factor` in base) becomes
// --moe-capacity-factor on the points that set it (a two-layer MoE model
// file, small enough to fit); a value out of [0, 64] is a located error.
TEST(SweepSpec, MoeCapacityFactorBecomesRunFlag) {
  TmpDir d;
  const std::string model = (d.p / "tiny_moe.yaml").string();
  write_tiny_decoder(model, "moe: {experts: 4, top_k: 2, expert_ffn_size: 512}\n");
  const SweepSpec s = parse_sweep_spec("base: {arch: v5p, model: " + model +
                                           ", phase: train, batch: 1, seq: 64}\n"
                                           "axes:\n  grid:\n    model.moe_capacity_factor: [0, 1.25]\n",
                                       "ok.yaml");
  const auto pts = prepare_points(s, default_search_path());
  ASSERT_EQ(pts.size(), 2u);
  std::vector<std::string> flags;
  for (const auto& pt : pts) {
    ASSERT_TRUE(pt.error.empty()) << pt.error;
    auto it = std::find(pt.run_args.begin(), pt.run_args.end(), "--moe-capacity-factor");
    ASSERT_NE(it, pt.run_args.end());
    flags.push_back(*(it + 1));
  }
  EXPECT_EQ(flags, (std::vector<std::string>{"0", "1.25"}));
  try {
    parse_sweep_spec(
        "base: {model: " + model + ", phase: train}\naxes:\n  grid:\n    model.moe_capacity_factor: [1, 65]\n",
        "bad.yaml");
    ADD_FAILURE() << "parsed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:4:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("a capacity factor in [0, 64]"), std::string::npos) << e.what();
  }
}

TEST(SweepSpec, FusedAttentionBackwardBecomesRunFlag) {
  TmpDir d;
  const std::string model = (d.p / "tiny.yaml").string();
  write_tiny_decoder(model, "");
  const SweepSpec s = parse_sweep_spec("base: {arch: v5p, model: " + model +
                                           ", batch: 1, seq: 64}\n"
                                           "axes:\n  grid:\n    model.phase: [train, prefill]\n"
                                           "    model.fused_attention_backward: [false, true]\n",
                                       "ok.yaml");
  const auto pts = prepare_points(s, default_search_path());
  ASSERT_EQ(pts.size(), 4u);
  int flagged = 0, refused = 0;
  for (const auto& pt : pts) {
    const bool fused =
        std::find(pt.run_args.begin(), pt.run_args.end(), "--fused-attention-backward") != pt.run_args.end();
    const bool train = std::find(pt.run_args.begin(), pt.run_args.end(), "train") != pt.run_args.end();
    if (!pt.error.empty()) {
      // The fused backward kernel on a prefill point: the point's own error.
      EXPECT_NE(pt.error.find("model.fused_attention_backward: true needs model.phase train"), std::string::npos)
          << pt.error;
      ++refused;
    } else {
      flagged += fused;
      EXPECT_TRUE(!fused || train);
    }
  }
  EXPECT_EQ(flagged, 1);
  EXPECT_EQ(refused, 1);
  try {
    parse_sweep_spec(
        "base: {model: " + model + ", phase: train}\naxes:\n  grid:\n    model.fused_attention_backward: [yes]\n",
        "bad.yaml");
    ADD_FAILURE() << "parsed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:4:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("true or false"), std::string::npos) << e.what();
  }
}

// model.attention_kernel sweeps the attention's form: each point's run
// gets --attention-kernel with its value; a value other than flash or
// dense is a located error.
TEST(SweepSpec, AttentionKernelBecomesRunFlag) {
  TmpDir d;
  const std::string model = (d.p / "tiny.yaml").string();
  write_tiny_decoder(model, "");
  const SweepSpec s = parse_sweep_spec("base: {arch: v5e, model: " + model +
                                           ", phase: prefill, batch: 1, seq: 64}\n"
                                           "axes:\n  grid:\n    model.attention_kernel: [flash, dense]\n",
                                       "ok.yaml");
  const auto pts = prepare_points(s, default_search_path());
  ASSERT_EQ(pts.size(), 2u);
  std::vector<std::string> kernels;
  for (const auto& pt : pts) {
    EXPECT_TRUE(pt.error.empty()) << pt.error;
    auto it = std::find(pt.run_args.begin(), pt.run_args.end(), "--attention-kernel");
    ASSERT_NE(it, pt.run_args.end());
    ASSERT_NE(it + 1, pt.run_args.end());
    kernels.push_back(*(it + 1));
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"flash", "dense"}));
  try {
    parse_sweep_spec("base: {model: " + model + "}\naxes:\n  grid:\n    model.attention_kernel: [flash, splash]\n",
                     "bad.yaml");
    ADD_FAILURE() << "parsed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:4:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("flash, dense or batched"), std::string::npos) << e.what();
  }
}

// model.attention_blocks sweeps the flash kernels' fixed blocks (MaxText's
// sa_block_*): each point's run gets --attention-blocks with its value; a
// value that is not splash's spelling or units is a located error.
TEST(SweepSpec, AttentionBlocksBecomeRunFlag) {
  TmpDir d;
  const std::string model = (d.p / "tiny.yaml").string();
  write_tiny_decoder(model, "");
  const SweepSpec s =
      parse_sweep_spec("base: {arch: v5e, model: " + model +
                           ", phase: prefill, batch: 1, seq: 64}\n"
                           "axes:\n  grid:\n    model.attention_blocks: [\"512,512\", \"q=1024,kv=256\"]\n",
                       "ok.yaml");
  const auto pts = prepare_points(s, default_search_path());
  ASSERT_EQ(pts.size(), 2u);
  std::vector<std::string> blocks;
  for (const auto& pt : pts) {
    EXPECT_TRUE(pt.error.empty()) << pt.error;
    auto it = std::find(pt.run_args.begin(), pt.run_args.end(), "--attention-blocks");
    ASSERT_NE(it, pt.run_args.end());
    ASSERT_NE(it + 1, pt.run_args.end());
    blocks.push_back(*(it + 1));
  }
  EXPECT_EQ(blocks, (std::vector<std::string>{"512,512", "q=1024,kv=256"}));
  try {
    parse_sweep_spec("base: {model: " + model + "}\naxes:\n  grid:\n    model.attention_blocks: [\"512,100\"]\n",
                     "bad.yaml");
    ADD_FAILURE() << "parsed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:4:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("kv keys of 128"), std::string::npos) << e.what();
  }
}

// A training-only model key swept over a train and a prefill phase: each
// point's run gets `flag`; the prefill point with `train_value` fails
// alone, naming the key; `bad` among the values is a located error that
// says `expected`.
void expect_train_only_key_becomes_flag(const std::string& arch, const std::string& key, const std::string& plain_value,
                                        const std::string& train_value, const std::string& flag, const std::string& bad,
                                        const std::string& expected) {
  TmpDir d;
  const std::string model = (d.p / "tiny.yaml").string();
  write_tiny_decoder(model, "");
  const SweepSpec s = parse_sweep_spec("base: {arch: " + arch + ", model: " + model +
                                           ", batch: 1, seq: 64}\n"
                                           "axes:\n  grid:\n    model.phase: [train, prefill]\n"
                                           "    " +
                                           key + ": [" + plain_value + ", " + train_value + "]\n",
                                       "ok.yaml");
  const auto pts = prepare_points(s, default_search_path());
  ASSERT_EQ(pts.size(), 4u);
  int ok = 0, refused = 0;
  for (const auto& pt : pts) {
    auto it = std::find(pt.run_args.begin(), pt.run_args.end(), flag);
    if (pt.error.empty()) {
      ++ok;
      ASSERT_NE(it, pt.run_args.end());
      ASSERT_NE(it + 1, pt.run_args.end());
    } else {
      ++refused;
      EXPECT_NE(pt.error.find(key + ": " + train_value + " needs model.phase train"), std::string::npos) << pt.error;
    }
  }
  EXPECT_EQ(ok, 3);
  EXPECT_EQ(refused, 1);
  try {
    parse_sweep_spec(
        "base: {model: " + model + "}\naxes:\n  grid:\n    " + key + ": [" + plain_value + ", " + bad + "]\n",
        "bad.yaml");
    ADD_FAILURE() << "parsed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:4:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

// model.optimizer_dtype sweeps Adam's state dtype of a training step.
TEST(SweepSpec, OptimizerDtypeBecomesRunFlag) {
  expect_train_only_key_becomes_flag("v5e", "model.optimizer_dtype", "f32", "bf16", "--optimizer-dtype", "f8",
                                     "f32 or bf16");
}

// model.training_quant sweeps quantized training.
TEST(SweepSpec, TrainingQuantBecomesRunFlag) {
  expect_train_only_key_becomes_flag("v7", "model.training_quant", "none", "fp8", "--training-quant", "int4",
                                     "int8, fp8 or none");
}

// A run sweep's slice and mesh (run.slice, run.mesh) become --slice and
// --mesh; a slice count (N*SHAPE) sweeps multislice runs. Points whose
// slice the generation cannot build or whose mesh does not land on it are
// error rows before any process starts; malformed text is a spec error.
TEST(SweepSpec, SliceAndMeshBecomeRunFlags) {
  TmpDir d;
  const std::string model = (d.p / "tiny.yaml").string();
  write_tiny_decoder(model, "");
  const SweepSpec s = parse_sweep_spec("base: {arch: v5e, model: " + model +
                                           ", phase: train, batch: 32, seq: 64}\n"
                                           "axes:\n  zip:\n    run.slice: [4x4, '2*4x4', '2*4x4', 4x4x4]\n"
                                           "    run.mesh: ['fsdp=16', 'data=2,fsdp=16', 'fsdp=32', 'fsdp=64']\n",
                                       "ok.yaml");
  const auto pts = prepare_points(s, default_search_path());
  ASSERT_EQ(pts.size(), 4u);
  auto arg = [](const PreparedPoint& pt, const std::string& flag) {
    auto it = std::find(pt.run_args.begin(), pt.run_args.end(), flag);
    return it != pt.run_args.end() && it + 1 != pt.run_args.end() ? *(it + 1) : std::string("-");
  };
  EXPECT_TRUE(pts[0].error.empty()) << pts[0].error;
  EXPECT_EQ(arg(pts[0], "--slice"), "4x4");
  EXPECT_EQ(arg(pts[0], "--mesh"), "fsdp=16");
  EXPECT_TRUE(pts[1].error.empty()) << pts[1].error;
  EXPECT_EQ(arg(pts[1], "--slice"), "2*4x4");
  EXPECT_EQ(arg(pts[1], "--mesh"), "data=2,fsdp=16");
  // fsdp=32 takes the slice count and x, y (2 x 4 x 4): it lands.
  EXPECT_TRUE(pts[2].error.empty()) << pts[2].error;
  // v5e slices are 2D.
  EXPECT_NE(pts[3].error.find("4x4x4"), std::string::npos) << pts[3].error;
  // A mesh without a slice is an error row.
  const SweepSpec lone = parse_sweep_spec(
      "base: {arch: v5e, model: " + model + ", phase: train, batch: 8, seq: 64, run.mesh: 'fsdp=4'}\n", "lone.yaml");
  EXPECT_NE(prepare_points(lone, default_search_path())[0].error.find("run.mesh needs run.slice"), std::string::npos);
  for (const char* bad : {"run.slice: [4y4]", "run.slice: ['0*4x4']", "run.mesh: [fsdp]"}) {
    try {
      parse_sweep_spec("base: {model: " + model + "}\naxes:\n  grid:\n    " + std::string(bad) + "\n", "bad.yaml");
      ADD_FAILURE() << bad;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.yaml:4:"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("axes.grid.run."), std::string::npos) << e.what();
    }
  }
}

// Every sweep the repository ships loads, and its points resolve (a point
// may be an error row, as hbm_batch_llama3's llama3-70b ones are, but not
// every point, and not the multislice one's).
TEST(SweepSpec, ShippedSweepsLoadAndResolve) {
  int specs = 0;
  for (const auto& e : fs::directory_iterator(std::string(TPUSIM_SOURCE_DIR) + "/configs/sweeps")) {
    if (e.path().extension() != ".yaml") continue;
    ++specs;
    SCOPED_TRACE(e.path().string());
    const SweepSpec s = load_sweep_spec(e.path().string());
    const auto pts = prepare_points(s, default_search_path());
    ASSERT_FALSE(pts.empty());
    const auto ok = std::count_if(pts.begin(), pts.end(), [](const PreparedPoint& p) { return p.error.empty(); });
    EXPECT_GT(ok, 0);
    if (e.path().filename() == "multislice_dcn.yaml") {
      EXPECT_EQ(ok, 6);
      for (const auto& p : pts) EXPECT_NE(std::find(p.run_args.begin(), p.run_args.end(), "--slice"), p.run_args.end());
    }
  }
  EXPECT_GE(specs, 6);
}

TEST(SweepResults, TornLastLineIsDropped) {
  TmpDir d;
  const std::string path = (d.p / "results.csv").string();
  const std::vector<std::string> header = {"point", "x"};
  {
    ResultsAppender a(path, header);
    a.append({"p1", "1,5"});
    a.append({"p2", "a \"q\""});
  }
  { std::ofstream(path, std::ios::app) << "p3,\"unfinished"; }
  ResultsFile f = read_results(path, &header);
  EXPECT_EQ(f.dropped, 1u);
  ASSERT_EQ(f.rows.size(), 2u);
  EXPECT_EQ(f.rows[0], (std::vector<std::string>{"p1", "1,5"}));
  EXPECT_EQ(f.rows[1], (std::vector<std::string>{"p2", "a \"q\""}));
  // Reopening an existing file does not write the header again.
  write_results_atomically(path, header, f.rows);
  {
    ResultsAppender again(path, header);
    again.append({"p3", "3"});
  }
  ResultsFile g = read_results(path, &header);
  EXPECT_EQ(g.dropped, 0u);
  EXPECT_EQ(g.rows.size(), 3u);
  const std::vector<std::string> other = {"point", "y"};
  EXPECT_THROW(read_results(path, &other), ConfigError);
}

TEST(SweepResults, MergeRefusesDuplicatesAndReportsGaps) {
  TmpDir d;
  const SweepSpec s = parse_sweep_spec("base: {gemm: '8,8,8'}\naxes:\n  grid: {arch.mxu.rows: [8, 16, 32, 64]}\n",
                                       (d.p / "m.yaml").string());
  const auto header = results_header(s);
  auto row = [&](const SweepPoint& p) {
    std::vector<std::string> r(header.size());
    r[0] = p.id;
    r[2] = p.values[0].text;
    r[3] = "ok";
    return r;
  };
  fs::create_directories(d.p / "a");
  fs::create_directories(d.p / "b");
  write_results_atomically((d.p / "a/results.csv").string(), header, {row(s.points[2]), row(s.points[0])});
  write_results_atomically((d.p / "b/results.csv").string(), header, {row(s.points[1])});
  // Gap: point 3 is in neither input.
  MergeReport r = merge_results(s, {(d.p / "a").string(), (d.p / "b").string()}, (d.p / "out").string());
  EXPECT_TRUE(r.duplicates.empty());
  EXPECT_EQ(r.merged, 3u);
  EXPECT_EQ(r.missing, std::vector<std::string>{s.points[3].id});
  ResultsFile m = read_results((d.p / "out/results.csv").string(), &header);
  ASSERT_EQ(m.rows.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(m.rows[i][0], s.points[i].id);  // spec order
  // Duplicate: point 1 in b and c; nothing is written.
  fs::create_directories(d.p / "c");
  write_results_atomically((d.p / "c/results.csv").string(), header, {row(s.points[1]), row(s.points[3])});
  MergeReport dup =
      merge_results(s, {(d.p / "a").string(), (d.p / "b").string(), (d.p / "c").string()}, (d.p / "out2").string());
  ASSERT_EQ(dup.duplicates.size(), 1u);
  EXPECT_NE(dup.duplicates[0].find(s.points[1].id), std::string::npos);
  EXPECT_FALSE(fs::exists(d.p / "out2/results.csv"));
  // Status over the same folders: b + c complete... a, b under one parent.
  StatusReport st = sweep_status(s, (d.p / "out").string());
  EXPECT_EQ(st.ok, 3u);
  EXPECT_EQ(st.missing.size(), 1u);
}

}  // namespace
}  // namespace tpusim::sim::sweep
