// The YAML/JSON workload format: reading the shipped examples, round trips
// for every op kind, and a table of malformed files with their messages.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "workloads/io/workload_file.h"
#include "workloads/ir/builder.h"
#include "workloads/ir/cost.h"

using namespace tpusim::workloads;
using tpusim::arch::DType;

namespace {

std::string source_dir() {
  const char* s = std::getenv("TPUSIM_SOURCE_DIR");
  return s ? s : TPUSIM_SOURCE_DIR;
}

// One workload that uses every op kind (and every optional attribute).
Workload every_op_kind() {
  WorkloadBuilder b("every_op");
  b.mesh_axis("data", 2);
  b.mesh_axis("model", 4);
  auto x = b.input("x", {2, 16, 64}, DType::bf16);
  auto w = b.weight("w", {64, 64}, DType::bf16, MemSpace::vmem);
  auto ids = b.input("ids", {2, 16}, DType::f32);
  auto table = b.weight("table", {100, 64}, DType::bf16, MemSpace::cmem);
  auto gamma = b.weight("gamma", {64}, DType::bf16);
  auto beta = b.weight("beta", {64}, DType::bf16);
  auto emb = b.gather("embed", table, ids);
  auto h = b.add("sum", x, emb);
  auto ln = b.layer_norm("ln", h, gamma, beta, -1, 1e-5);
  auto rn = b.rms_norm("rn", ln, gamma, -1, 1e-6);
  auto p = b.matmul("proj", rn, w, "", DType::f32);
  auto pc = b.cast("pc", p, DType::bf16);
  auto q = b.reshape("q", pc, {2, 16, 4, 16});
  auto kv = b.kv_cache("kv", {2, 32, 2, 16}, DType::bf16);
  auto att = b.attention("attn", q, kv, kv, true, 0.25);
  auto att2 = b.reshape("att2", att, {2, 16, 64});
  auto tr = b.transpose("tr", att2, {0, 2, 1});
  auto bm = b.matmul("bmm", att2, tr, "bmk,bkn->bmn");
  auto sm = b.softmax("sm", bm, -1);
  auto r = b.reduce("red", sm, ReduceKind::mean, {1}, true);
  auto cond = b.input("cond", {16}, DType::int8);
  auto sel = b.elementwise("sel", "select", {cond, sm, r});
  auto cl = b.elementwise("clamp", EwKind::clamp, {sel, r, r});
  auto cat = b.concat("cat", {cl, sm}, 1);
  auto sl = b.slice("sl", cat, {0, 0, 0}, {2, 32, 16}, {1, 2, 1});
  auto img = b.input("img", {1, 32, 32, 8}, DType::int8);
  auto flt = b.weight("flt", {3, 3, 2, 16}, DType::int8);
  Conv2dAttrs ca;
  ca.stride_h = 2;
  ca.stride_w = 1;
  ca.dilation_h = 1;
  ca.dilation_w = 2;
  ca.padding = PaddingMode::explicit_pads;
  ca.pad_top = 1;
  ca.pad_bottom = 0;
  ca.pad_left = 2;
  ca.pad_right = 2;
  ca.groups = 4;
  ca.out_dtype = DType::f32;
  b.conv2d("conv", img, flt, ca);
  Conv2dAttrs same;
  same.padding = PaddingMode::same;
  auto flt2 = b.weight("flt2", {1, 1, 8, 8}, DType::int8);
  b.conv2d("conv_same", img, flt2, same);
  auto ag = b.all_gather("ag", sl, {"model"}, 1);
  auto rs = b.reduce_scatter("rs", ag, {"data", "model"}, 1, ReduceKind::max);
  auto ar = b.all_reduce("ar", rs, {"data"}, ReduceKind::min);
  auto a2a = b.all_to_all("a2a", ar, {"data"}, 0, 2);
  auto cp = b.collective_permute("cp", a2a, {"model"}, {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
  auto bc = b.broadcast("bc", cp, {"model", "data"}, 5);
  b.mark_output(bc);
  Op off;  // to host memory and back (an offloaded activation)
  off.name = "offload";
  off.kind = OpKind::copy;
  off.inputs = {bc.name};
  off.attrs = CopyAttrs{MemSpace::host};
  Op back = off;
  back.name = "reload";
  back.inputs = {b.add_op(off).name};
  back.attrs = CopyAttrs{MemSpace::hbm};
  b.mark_output(b.add_op(back));
  auto dg = b.matmul("dg", x, x, dot_general_equation(3, 3, {0}, {0}, {2}, {2}));
  b.elementwise("gelu", "gelu", {dg});
  Workload wl = b.build();
  wl.description = "covers every op kind";
  return wl;
}

std::string error_of(const std::string& text, const std::string& file = "bad.yaml") {
  try {
    read_workload_string(text, file);
  } catch (const WorkloadError& e) {
    return e.what();
  }
  return "";
}

const char* kHeader = "tpusim_workload: 1\nname: t\n";

}  // namespace

TEST(WorkloadFile, EveryOpKindIsCovered) {
  Workload wl = every_op_kind();
  for (OpKind k : kAllOpKinds) {
    bool found = false;
    for (const auto& op : wl.ops) found = found || op.kind == k;
    EXPECT_TRUE(found) << op_kind_name(k);
  }
}

TEST(WorkloadFile, YamlRoundTripEveryOpKind) {
  Workload wl = every_op_kind();
  std::string text = workload_to_yaml(wl);
  Workload back = read_workload_string(text, "rt.yaml");
  EXPECT_EQ(back, wl) << text;
  for (std::size_t i = 0; i < wl.ops.size(); ++i) EXPECT_EQ(back.ops[i], wl.ops[i]) << wl.ops[i].name;
  for (std::size_t i = 0; i < wl.tensors.size(); ++i) EXPECT_EQ(back.tensors[i], wl.tensors[i]) << wl.tensors[i].name;
  EXPECT_EQ(workload_to_yaml(back), text);  // writing is deterministic
}

TEST(WorkloadFile, JsonRoundTripEveryOpKind) {
  Workload wl = every_op_kind();
  std::string text = workload_to_json(wl);
  EXPECT_EQ(text.front(), '{');
  Workload back = read_workload_string(text, "rt.json");
  EXPECT_EQ(back, wl) << text;
}

TEST(WorkloadFile, RoundTripThroughFilesByExtension) {
  Workload wl = every_op_kind();
  auto dir = std::filesystem::temp_directory_path() / ("tpusim_wl_rt_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* name : {"w.yaml", "w.json"}) {
    std::string path = (dir / name).string();
    write_workload_file(wl, path);
    Workload back = read_workload_file(path);
    EXPECT_EQ(back, wl) << name;
    EXPECT_EQ(back.loc.file, path);
  }
  std::ifstream j((dir / "w.json").string());
  EXPECT_EQ(j.get(), '{');
  std::filesystem::remove_all(dir);
}

TEST(WorkloadFile, ReadsShippedMlpExample) {
  Workload wl = read_workload_file(source_dir() + "/configs/workloads/mlp.yaml");
  EXPECT_EQ(wl.name, "mlp");
  ASSERT_EQ(wl.ops.size(), 7u);
  const Tensor* y = wl.find_tensor("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->shape, (Shape{8, 4096}));
  EXPECT_EQ(y->kind, TensorKind::output);
  EXPECT_EQ(wl.find_tensor("gate")->kind, TensorKind::activation);
  EXPECT_EQ(wl.find_op("act")->as<ElementwiseAttrs>().kind, EwKind::silu);
  EXPECT_EQ(wl.find_op("gate")->as<MatmulAttrs>().equation, "mk,kn->mn");  // default for rank 2 x rank 2
  EXPECT_EQ(wl.find_op("gate")->loc.line, 15);
  // Three matmuls: 2 * 8 * 4096 * 14336 * 3 FLOPs.
  OpCost c = workload_cost(wl);
  EXPECT_EQ(c.macs, 3ull * 8 * 4096 * 14336);
}

TEST(WorkloadFile, ReadsShippedJsonExample) {
  Workload wl = read_workload_file(source_dir() + "/configs/workloads/attention_gqa.json");
  ASSERT_EQ(wl.ops.size(), 1u);
  EXPECT_TRUE(wl.ops[0].as<AttentionAttrs>().causal);
  EXPECT_EQ(wl.find_tensor("attn")->shape, (Shape{1, 2048, 32, 128}));
}

TEST(WorkloadFile, ReadsShippedLocalAttentionExample) {
  Workload wl = read_workload_file(source_dir() + "/configs/workloads/attention_local.yaml");
  ASSERT_EQ(wl.ops.size(), 1u);
  EXPECT_EQ(wl.ops[0].as<AttentionAttrs>().window, 1024);
  // 1024 x 1025 / 2 + 7168 x 1024 pairs per (batch, head), 32 heads, two
  // matmuls of 128 per pair.
  EXPECT_EQ(workload_cost(wl).macs, 32ull * (1024 * 1025 / 2 + 7168ull * 1024) * 2 * 128);
}

TEST(WorkloadFile, ReadsShippedSplashAttentionExample) {
  Workload wl = read_workload_file(source_dir() + "/configs/workloads/attention_splash.yaml");
  ASSERT_EQ(wl.ops.size(), 1u);
  EXPECT_EQ(wl.ops[0].as<AttentionAttrs>().blocks, (AttentionBlocks{512, 512}));
  EXPECT_TRUE(wl.ops[0].as<AttentionAttrs>().causal);
}

TEST(WorkloadFile, ReadsShippedPallasMatmulExample) {
  Workload wl = read_workload_file(source_dir() + "/configs/workloads/pallas_matmul.yaml");
  ASSERT_EQ(wl.ops.size(), 1u);
  EXPECT_EQ(wl.ops[0].as<MatmulAttrs>().blocks, (MatmulBlocks{512, 1024, 1024}));
  EXPECT_EQ(workload_cost(wl).macs, 8192ull * 8192 * 8192);
}

TEST(WorkloadFile, ReadsShippedMlaDecodeExample) {
  Workload wl = read_workload_file(source_dir() + "/configs/workloads/attention_mla_decode.yaml");
  ASSERT_EQ(wl.ops.size(), 1u);
  const Op& op = wl.ops[0];
  EXPECT_EQ(op.inputs[1], op.inputs[2]);  // the latent is key and value
  EXPECT_EQ(op.as<AttentionAttrs>().value_dim, 512);
  EXPECT_EQ(wl.find_tensor(op.outputs[0])->shape, (Shape{32, 1, 16, 512}));
  // QK^T over 576 and PV over 512 per (query, key) pair and head.
  EXPECT_EQ(workload_cost(wl).macs, 32ull * 16 * 8192 * (576 + 512));
}

TEST(WorkloadFile, MatmulFromDotGeneralDims) {
  std::string text = std::string(kHeader) +
                     "tensors:\n"
                     "  - {name: a, shape: [4, 16, 8], dtype: f32}\n"
                     "  - {name: b, shape: [4, 16, 32], dtype: f32}\n"
                     "ops:\n"
                     "  - {name: mm, op: matmul, inputs: [a, b], lhs_batch: [0], rhs_batch: [0],\n"
                     "     lhs_contracting: [1], rhs_contracting: [1]}\n";
  Workload wl = read_workload_string(text);
  EXPECT_EQ(wl.find_tensor("mm")->shape, (Shape{4, 8, 32}));
}

TEST(WorkloadFile, OpsMayBeListedInAnyOrder) {
  // Consumers before producers: the reader infers h1 before h2 before y.
  std::string text = std::string(kHeader) +
                     "tensors:\n"
                     "  - {name: x, shape: [4, 8], dtype: f32}\n"
                     "  - {name: w, shape: [8, 3], dtype: f32, kind: weight}\n"
                     "ops:\n"
                     "  - {name: y, op: exp, inputs: [h2]}\n"
                     "  - {name: h2, op: relu, inputs: [h1]}\n"
                     "  - {name: h1, op: matmul, inputs: [x, w]}\n";
  Workload wl = read_workload_string(text);
  EXPECT_EQ(wl.find_tensor("y")->shape, (Shape{4, 3}));
  EXPECT_EQ(wl.find_tensor("y")->kind, TensorKind::output);
  EXPECT_EQ(wl.find_tensor("h1")->kind, TensorKind::activation);
  // The reader puts producers first (the lowering walks ops in list order).
  ASSERT_EQ(wl.ops.size(), 3u);
  EXPECT_EQ(wl.ops[0].name, "h1");
  EXPECT_EQ(wl.ops[1].name, "h2");
  EXPECT_EQ(wl.ops[2].name, "y");
  EXPECT_EQ(wl.topo_order(), (std::vector<std::size_t>{0, 1, 2}));
  // Indexed and scanning cost lookups agree.
  TensorIndex index(wl);
  EXPECT_EQ(op_cost(index, wl.ops[0]).flops, op_cost(wl, wl.ops[0]).flops);
  EXPECT_EQ(op_cost(wl, wl.ops[0]).flops, 2u * 4 * 8 * 3);
}

TEST(WorkloadFile, DeclaredOutputShapeIsChecked) {
  std::string text = std::string(kHeader) +
                     "tensors:\n"
                     "  - {name: a, shape: [4, 8], dtype: f32}\n"
                     "  - {name: b, shape: [8, 2], dtype: f32, kind: weight}\n"
                     "  - {name: c, shape: [4, 3], kind: output}\n"
                     "ops:\n"
                     "  - {name: mm, op: matmul, inputs: [a, b], output: c}\n";
  std::string msg = error_of(text);
  EXPECT_NE(msg.find("bad.yaml:8:5"), std::string::npos) << msg;  // the op line
  EXPECT_NE(msg.find("op 'mm'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inferred [4, 2]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("declared [4, 3] at bad.yaml:6:5"), std::string::npos) << msg;
}

// Each malformed file: the message must carry the file:line:column, the key
// path or op name, and what was expected/found.
TEST(WorkloadFile, MalformedFiles) {
  const std::string t2 =
      "tensors:\n"                                                   // line 3
      "  - {name: x, shape: [8, 16], dtype: bf16}\n"                 // line 4
      "  - {name: w, shape: [16, 4], dtype: bf16, kind: weight}\n";  // line 5
  struct Case {
    std::string name, text;
    std::vector<std::string> parts;
  };
  std::vector<Case> cases = {
      {"syntax", "tpusim_workload: 1\nname: [unclosed\n", {"bad.yaml:", "YAML syntax error"}},
      {"not a map", "- 1\n- 2\n", {"bad.yaml:1:1", "expected a map", "found a list"}},
      {"missing version", "name: t\nops: []\n", {"tpusim_workload", "missing key"}},
      {"wrong version",
       "tpusim_workload: 2\nname: t\nops: []\n",
       {"bad.yaml:1:18", "expected format version 1, found 2"}},
      {"unknown top key",
       std::string(kHeader) + "opz: []\nops: []\n",
       {"bad.yaml:3:1", "unknown key 'opz'", "did you mean 'ops'?"}},
      {"unknown dtype",
       std::string(kHeader) + "tensors:\n  - {name: x, shape: [2], dtype: bf61}\nops: []\n",
       {"bad.yaml:4:34", "tensors[0].dtype (tensor 'x')", "unknown dtype 'bf61'", "did you mean 'bf16'?"}},
      {"bad shape value",
       std::string(kHeader) + "tensors:\n  - {name: x, shape: [2, two], dtype: f32}\nops: []\n",
       {"bad.yaml:4:26", "tensors[0].shape[1] (tensor 'x')", "expected an integer, found 'two'"}},
      {"missing shape",
       std::string(kHeader) + "tensors:\n  - {name: x, dtype: f32}\nops: []\n",
       {"bad.yaml:4:5", "tensors[0].shape (tensor 'x')", "need a shape"}},
      {"unknown op key",
       std::string(kHeader) + t2 + "ops:\n  - {name: mm, op: matmul, inputs: [x, w], equaton: \"mk,kn->mn\"}\n",
       {"bad.yaml:7:44", "ops[0].equaton (op 'mm')", "unknown key 'equaton'", "did you mean 'equation'?"}},
      {"unknown op kind",
       std::string(kHeader) + t2 + "ops:\n  - {name: mm, op: matmull, inputs: [x, w]}\n",
       {"bad.yaml:7:20", "ops[0].op (op 'mm')", "unknown op kind 'matmull'", "did you mean 'matmul'?"}},
      {"unknown tensor",
       std::string(kHeader) + t2 + "ops:\n  - {name: mm, op: matmul, inputs: [x, ww]}\n",
       {"bad.yaml:7:5", "op 'mm' (matmul)", "unknown tensor 'ww' referenced as input 1", "did you mean 'w'?"}},
      {"shape mismatch",
       std::string(kHeader) + t2 + "ops:\n  - {name: mm, op: matmul, inputs: [w, x]}\n",
       {"bad.yaml:7:5", "op 'mm' (matmul)", "lhs shape [16, 4]", "rhs shape [8, 16]"}},
      {"operand count",
       std::string(kHeader) + t2 + "ops:\n  - {name: e, op: exp, inputs: [x, w]}\n",
       {"bad.yaml:7:5", "op 'e' (elementwise)", "expected 1 inputs, found 2"}},
      {"produced twice",
       std::string(kHeader) + t2 +
           "ops:\n  - {name: a, op: exp, inputs: [x], output: y}\n  - {name: b, op: neg, inputs: [x], output: y}\n",
       {"bad.yaml:8:5", "op 'b' (elementwise)", "tensor 'y' produced twice", "op 'a' at bad.yaml:7:5"}},
      {"cycle",
       std::string(kHeader) + t2 +
           "ops:\n  - {name: a, op: add, inputs: [x, q], output: p}\n  - {name: b, op: exp, inputs: [p], output: q}\n",
       {"bad.yaml:7:5", "dependency cycle", "'a'", "'b'"}},
      {"bad integer",
       std::string(kHeader) + t2 + "ops:\n  - {name: s, op: softmax, inputs: [x], axis: last}\n",
       {"bad.yaml:7:47", "ops[0].axis (op 's')", "expected an integer, found 'last'"}},
      {"bad padding",
       std::string(kHeader) + t2 + "ops:\n  - {name: c, op: conv2d, inputs: [x, w], padding: [1, 2]}\n",
       {"bad.yaml:7:52", "ops[0].padding (op 'c')", "[top, bottom, left, right], found 2 values"}},
      {"bad equation",
       std::string(kHeader) + t2 + "ops:\n  - {name: mm, op: matmul, inputs: [x, w], equation: \"mk,kn\"}\n",
       {"bad.yaml:7:54", "ops[0].equation (op 'mm')", "found no '->'"}},
      {"unknown mesh axis",
       std::string(kHeader) + "mesh: {data: 2}\n" + t2 +
           "ops:\n  - {name: ar, op: all_reduce, inputs: [x], mesh_axes: [model]}\n",
       {"bad.yaml:8:5", "op 'ar' (all_reduce)", "unknown mesh axis 'model' (declared: data)"}},
      {"missing fn",
       std::string(kHeader) + t2 + "ops:\n  - {name: r, op: reduce, inputs: [x], axes: [1]}\n",
       {"bad.yaml:7:5", "ops[0].fn (op 'r')", "missing key"}},
      {"ops not a list",
       std::string(kHeader) + "ops: {a: 1}\n",
       {"bad.yaml:3:6", "ops", "expected a list of ops, found a map"}},
  };
  for (const auto& c : cases) {
    std::string msg = error_of(c.text);
    EXPECT_FALSE(msg.empty()) << c.name << ": no error";
    for (const auto& p : c.parts)
      EXPECT_NE(msg.find(p), std::string::npos) << c.name << ": '" << p << "' not in:\n" << msg;
  }
}

TEST(WorkloadFile, AllErrorsAreReportedTogether) {
  std::string text = std::string(kHeader) +
                     "tensors:\n"
                     "  - {name: x, shape: [2], dtype: f64}\n"
                     "  - {name: y, shape: [2], dtype: f32, knd: input}\n"
                     "ops: []\n";
  try {
    read_workload_string(text);
    FAIL() << "expected an error";
  } catch (const WorkloadError& e) {
    EXPECT_EQ(e.diagnostics().size(), 2u) << e.what();
  }
}

TEST(WorkloadFile, MissingFileIsAnError) { EXPECT_THROW(read_workload_file("/nonexistent/w.yaml"), WorkloadError); }

TEST(WorkloadFile, QuantizationAndSparsityRoundTrip) {
  const std::string text = std::string(kHeader) +
                           "tensors:\n"
                           "  - {name: x, shape: [8, 256], dtype: bf16}\n"
                           "  - {name: w, shape: [256, 64], dtype: int4, kind: weight, scales: block, group: 128,"
                           " scale_dtype: bf16, sparsity: \"2:4\"}\n"
                           "ops:\n"
                           "  - {name: mm, op: matmul, inputs: [x, w], quantize: int8}\n";
  const Workload wl = read_workload_string(text, "q.yaml");
  const Tensor& w = wl.tensors[1];
  EXPECT_EQ(w.scales.kind, ScaleKind::block);
  EXPECT_EQ(w.scales.group, 128);
  EXPECT_EQ(w.scales.dtype, DType::bf16);
  EXPECT_EQ(w.sparsity.n, 2);
  EXPECT_EQ(w.sparsity.m, 4);
  // 128 of 256 rows kept x 64 int4 = 4096 B, 2 bits each = 2048 B of
  // metadata, 2 groups x 64 bf16 scales = 256 B.
  EXPECT_EQ(w.bytes(), 4096u + 2048u + 256u);
  EXPECT_EQ(wl.ops[0].as<MatmulAttrs>().quantize, DType::int8);
  EXPECT_EQ(read_workload_string(workload_to_yaml(wl), "rt.yaml"), wl);
  EXPECT_EQ(read_workload_string(workload_to_json(wl), "rt.json"), wl);
}

TEST(WorkloadFile, BadQuantizationKeysAreLocated) {
  const auto err = [](const std::string& tensor) {
    try {
      read_workload_string(std::string(kHeader) + "tensors:\n  - " + tensor + "\nops: []\n", "bad.yaml");
    } catch (const WorkloadError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(err("{name: w, shape: [8, 8], dtype: int8, scales: block}").find("needs a group size"), std::string::npos);
  EXPECT_NE(err("{name: w, shape: [8, 8], dtype: int8, scales: chanel}").find("did you mean 'channel'?"),
            std::string::npos);
  EXPECT_NE(err("{name: w, shape: [8, 8], dtype: int8, group: 32}").find("needs 'scales: block'"), std::string::npos);
  const std::string s = err("{name: w, shape: [8, 8], dtype: bf16, sparsity: \"4:2\"}");
  EXPECT_NE(s.find("bad.yaml:4:"), std::string::npos) << s;
  EXPECT_NE(s.find("tensors[0].sparsity (tensor 'w')"), std::string::npos) << s;
  EXPECT_NE(err("{name: w, shape: [8], dtype: bf16, sparsity: \"2:4\"}").find("rank >= 2"), std::string::npos);
}

// The head of a file with a query q [1, 16, 4, 8] and a key k [1, 16, 2, 8]
// (k stands for the value too), up to its ops.
std::string attention_tensors() {
  return std::string(kHeader) +
         "tensors:\n"
         "  - {name: q, shape: [1, 16, 4, 8], dtype: bf16}\n"
         "  - {name: k, shape: [1, 16, 2, 8], dtype: bf16}\n"
         "ops:\n";
}

// An attention op names its kernel with `pass` (forward by default); the
// backward kernels round-trip and a misspelt pass is located.
TEST(WorkloadFile, AttentionPassRoundTripsAndIsChecked) {
  const std::string base = attention_tensors();
  Workload wl = read_workload_string(base + "  - {name: a, op: attention, inputs: [q, k, k], pass: grad_q}\n");
  EXPECT_EQ(wl.ops[0].as<AttentionAttrs>().pass, AttentionPass::grad_q);
  EXPECT_EQ(read_workload_string(workload_to_yaml(wl), "rt.yaml"), wl);
  EXPECT_EQ(read_workload_string(workload_to_json(wl), "rt.json"), wl);
  wl = read_workload_string(base + "  - {name: a, op: attention, inputs: [q, k, k]}\n");
  EXPECT_EQ(wl.ops[0].as<AttentionAttrs>().pass, AttentionPass::forward);
  EXPECT_EQ(workload_to_yaml(wl).find("pass"), std::string::npos);
  const std::string msg = error_of(base + "  - {name: a, op: attention, inputs: [q, k, k], pass: grad_v}\n");
  EXPECT_NE(msg.find("bad.yaml:7:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("pass"), std::string::npos) << msg;
  EXPECT_NE(msg.find("grad_v"), std::string::npos) << msg;
}

// Local attention's window round-trips (left out when 0) and needs a causal
// op and a positive count, each error at the op's line.
TEST(WorkloadFile, AttentionWindowRoundTripsAndIsChecked) {
  const std::string base = attention_tensors();
  Workload wl =
      read_workload_string(base + "  - {name: a, op: attention, inputs: [q, k, k], causal: true, window: 4}\n");
  EXPECT_EQ(wl.ops[0].as<AttentionAttrs>().window, 4);
  EXPECT_EQ(read_workload_string(workload_to_yaml(wl), "rt.yaml"), wl);
  EXPECT_EQ(read_workload_string(workload_to_json(wl), "rt.json"), wl);
  wl = read_workload_string(base + "  - {name: a, op: attention, inputs: [q, k, k], causal: true}\n");
  EXPECT_EQ(wl.ops[0].as<AttentionAttrs>().window, 0);
  EXPECT_EQ(workload_to_yaml(wl).find("window"), std::string::npos);
  std::string msg = error_of(base + "  - {name: a, op: attention, inputs: [q, k, k], window: 4}\n");
  EXPECT_NE(msg.find("bad.yaml:7:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("window: expected causal: true"), std::string::npos) << msg;
  msg = error_of(base + "  - {name: a, op: attention, inputs: [q, k, k], causal: true, window: -2}\n");
  EXPECT_NE(msg.find("bad.yaml:7:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("window: expected >= 1 keys (or 0: none), found -2"), std::string::npos) << msg;
  msg = error_of(base + "  - {name: a, op: attention, inputs: [q, k, k], causal: true, window: wide}\n");
  EXPECT_NE(msg.find("window"), std::string::npos) << msg;
}

// Fixed kernel blocks round-trip (left out when 0) and take splash
// attention's units, each error at the op's line naming its key.
TEST(WorkloadFile, AttentionBlocksRoundTripAndAreChecked) {
  const std::string base = attention_tensors();
  Workload wl =
      read_workload_string(base + "  - {name: a, op: attention, inputs: [q, k, k], block_q: 16, block_kv: 256}\n");
  EXPECT_EQ(wl.ops[0].as<AttentionAttrs>().blocks, (AttentionBlocks{16, 256}));
  EXPECT_EQ(read_workload_string(workload_to_yaml(wl), "rt.yaml"), wl);
  EXPECT_EQ(read_workload_string(workload_to_json(wl), "rt.json"), wl);
  wl = read_workload_string(base + "  - {name: a, op: attention, inputs: [q, k, k], block_kv: 128}\n");
  EXPECT_EQ(wl.ops[0].as<AttentionAttrs>().blocks, (AttentionBlocks{0, 128}));
  EXPECT_EQ(workload_to_yaml(wl).find("block_q"), std::string::npos);
  std::string msg = error_of(base + "  - {name: a, op: attention, inputs: [q, k, k], block_q: 12}\n");
  EXPECT_NE(msg.find("bad.yaml:7:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("block_q: expected a positive multiple of 8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 12"), std::string::npos) << msg;
  msg = error_of(base + "  - {name: a, op: attention, inputs: [q, k, k], block_kv: -128}\n");
  EXPECT_NE(msg.find("bad.yaml:7:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("block_kv: expected a positive multiple of 128"), std::string::npos) << msg;
  msg = error_of(base + "  - {name: a, op: attention, inputs: [q, k, k], block_kv: big}\n");
  EXPECT_NE(msg.find("block_kv"), std::string::npos) << msg;
}

// A matmul kernel's fixed blocks (MatmulBlocks) round-trip (left out when
// 0) and take a Pallas block's units or the whole dimension, each error at
// the op's line naming its key.
TEST(WorkloadFile, MatmulBlocksRoundTripAndAreChecked) {
  const std::string base = std::string(kHeader) +
                           "tensors:\n"
                           "  - {name: x, shape: [2, 64, 256], dtype: bf16}\n"
                           "  - {name: w, shape: [256, 300], dtype: bf16, kind: weight}\n"
                           "ops:\n";
  Workload wl = read_workload_string(
      base + "  - {name: y, op: matmul, inputs: [x, w], block_m: 64, block_k: 128, block_n: 300}\n");
  EXPECT_EQ(wl.ops[0].as<MatmulAttrs>().blocks, (MatmulBlocks{64, 128, 300}));
  EXPECT_EQ(read_workload_string(workload_to_yaml(wl), "rt.yaml"), wl);
  EXPECT_EQ(read_workload_string(workload_to_json(wl), "rt.json"), wl);
  wl = read_workload_string(base + "  - {name: y, op: matmul, inputs: [x, w], block_k: 256}\n");
  EXPECT_EQ(wl.ops[0].as<MatmulAttrs>().blocks, (MatmulBlocks{0, 256, 0}));
  EXPECT_EQ(workload_to_yaml(wl).find("block_m"), std::string::npos);
  // M of the GEMM view is 2 x 64 = 128 rows: 128 is whole, 12 is neither.
  std::string msg = error_of(base + "  - {name: y, op: matmul, inputs: [x, w], block_m: 12}\n");
  EXPECT_NE(msg.find("bad.yaml:7:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("block_m: expected a positive multiple of 8 (sublanes, as a Pallas block takes it), the whole "
                     "dimension (128) or 0 (searched), found 12"),
            std::string::npos)
      << msg;
  msg = error_of(base + "  - {name: y, op: matmul, inputs: [x, w], block_n: 200}\n");
  EXPECT_NE(msg.find("block_n: expected a positive multiple of 128"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(300)"), std::string::npos) << msg;
  msg = error_of(base + "  - {name: y, op: matmul, inputs: [x, w], block_k: -128}\n");
  EXPECT_NE(msg.find("block_k: expected a positive multiple of 128"), std::string::npos) << msg;
  msg = error_of(base + "  - {name: y, op: matmul, inputs: [x, w], block_k: wide}\n");
  EXPECT_NE(msg.find("block_k"), std::string::npos) << msg;
}

// A batched kernel's bound on sequences a step round-trips (left out at
// 0 and 1), is checked against its range and refused beside fixed blocks,
// each error at the op's line naming its key.
TEST(WorkloadFile, MaxStepSeqsRoundTripsAndIsChecked) {
  const std::string base = attention_tensors();
  Workload wl = read_workload_string(base + "  - {name: a, op: attention, inputs: [q, k, k], max_step_seqs: 16}\n");
  EXPECT_EQ(wl.ops[0].as<AttentionAttrs>().max_step_seqs, 16);
  EXPECT_EQ(read_workload_string(workload_to_yaml(wl), "rt.yaml"), wl);
  EXPECT_EQ(read_workload_string(workload_to_json(wl), "rt.json"), wl);
  wl = read_workload_string(base + "  - {name: a, op: attention, inputs: [q, k, k]}\n");
  EXPECT_EQ(workload_to_yaml(wl).find("max_step_seqs"), std::string::npos);
  for (const char* bad : {"-1", "257"}) {
    const std::string msg =
        error_of(base + "  - {name: a, op: attention, inputs: [q, k, k], max_step_seqs: " + bad + "}\n");
    EXPECT_NE(msg.find("bad.yaml:7:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("max_step_seqs: expected 0 to 256"), std::string::npos) << msg;
  }
  const std::string msg =
      error_of(base + "  - {name: a, op: attention, inputs: [q, k, k], block_q: 16, max_step_seqs: 4}\n");
  EXPECT_NE(msg.find("bad.yaml:7:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("max_step_seqs: expected 0 or 1 with fixed blocks"), std::string::npos) << msg;
}

// The value columns a kernel uses (MLA's latent as key and value, PV over
// its first kv_lora_rank columns) round-trip, set the output's last dim,
// and are checked against the value's width and the pass, each error at
// the op's line naming its key.
TEST(WorkloadFile, ValueDimRoundTripsAndIsChecked) {
  const std::string base = attention_tensors();
  Workload wl = read_workload_string(base + "  - {name: a, op: attention, inputs: [q, k, k], value_dim: 4}\n");
  EXPECT_EQ(wl.ops[0].as<AttentionAttrs>().value_dim, 4);
  const Tensor* out = wl.find_tensor(wl.ops[0].outputs[0]);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->shape, (Shape{1, 16, 4, 4}));
  EXPECT_EQ(read_workload_string(workload_to_yaml(wl), "rt.yaml"), wl);
  EXPECT_EQ(read_workload_string(workload_to_json(wl), "rt.json"), wl);
  wl = read_workload_string(base + "  - {name: a, op: attention, inputs: [q, k, k]}\n");
  EXPECT_EQ(workload_to_yaml(wl).find("value_dim"), std::string::npos);
  EXPECT_EQ(wl.find_tensor(wl.ops[0].outputs[0])->shape, (Shape{1, 16, 4, 8}));
  for (const char* bad : {"-1", "9"}) {
    const std::string msg =
        error_of(base + "  - {name: a, op: attention, inputs: [q, k, k], value_dim: " + bad + "}\n");
    EXPECT_NE(msg.find("bad.yaml:7:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("value_dim: expected 0 (all) to the value's last dim 8"), std::string::npos) << msg;
  }
  const std::string msg =
      error_of(base + "  - {name: a, op: attention, inputs: [q, k, k], pass: grad_kv, value_dim: 4}\n");
  EXPECT_NE(msg.find("bad.yaml:7:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("value_dim: expected 0 with pass: grad_kv"), std::string::npos) << msg;
}

// A copy names where it goes: hbm or host, nothing else, and must say so.
TEST(WorkloadFile, CopyNeedsHbmOrHostDestination) {
  const std::string base = std::string(kHeader) +
                           "tensors:\n"
                           "  - {name: a, shape: [4, 8], dtype: bf16}\n"
                           "ops:\n";
  std::string msg = error_of(base + "  - {name: off, op: copy, inputs: [a]}\n");
  EXPECT_NE(msg.find("bad.yaml:6:5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing key (expected the memory space to copy to: hbm or host)"), std::string::npos) << msg;
  msg = error_of(base + "  - {name: off, op: copy, inputs: [a], to: vmem}\n");
  EXPECT_NE(msg.find("to"), std::string::npos) << msg;
  EXPECT_NE(msg.find("vmem"), std::string::npos) << msg;
  EXPECT_EQ(error_of(base + "  - {name: off, op: copy, inputs: [a], to: host}\n"), "");
}

// A matmul's causal (query, key) labels round-trip and must be two labels
// of its equation; a bad one is reported at its op's line.
TEST(WorkloadFile, MatmulCausalLabelsRoundTripAndAreChecked) {
  const std::string base = std::string(kHeader) +
                           "tensors:\n"
                           "  - {name: q, shape: [2, 16, 8], dtype: bf16}\n"
                           "  - {name: k, shape: [2, 16, 8], dtype: bf16}\n"
                           "ops:\n";
  Workload wl = read_workload_string(
      base + "  - {name: s, op: matmul, inputs: [q, k], equation: \"bqd,bkd->bqk\", causal: qk}\n");
  EXPECT_EQ(wl.ops[0].as<MatmulAttrs>().causal, "qk");
  EXPECT_EQ(read_workload_string(workload_to_yaml(wl), "rt.yaml"), wl);
  EXPECT_EQ(read_workload_string(workload_to_json(wl), "rt.json"), wl);
  for (const char* bad : {"qz", "qq", "q", "qkd"}) {
    const std::string msg = error_of(base +
                                     "  - {name: s, op: matmul, inputs: [q, k], equation: \"bqd,bkd->bqk\", "
                                     "causal: " +
                                     std::string(bad) + "}\n");
    EXPECT_NE(msg.find("bad.yaml:7:"), std::string::npos) << bad << ": " << msg;
    EXPECT_NE(msg.find("causal"), std::string::npos) << bad << ": " << msg;
  }
  // A window (local attention) round-trips with its labels; without them,
  // or below 0, it is refused at its op's line.
  Workload local = read_workload_string(
      base + "  - {name: s, op: matmul, inputs: [q, k], equation: \"bqd,bkd->bqk\", causal: qk, window: 4}\n");
  EXPECT_EQ(local.ops[0].as<MatmulAttrs>().window, 4);
  EXPECT_EQ(read_workload_string(workload_to_yaml(local), "rt.yaml"), local);
  EXPECT_EQ(read_workload_string(workload_to_json(local), "rt.json"), local);
  EXPECT_FALSE(local == wl);
  for (const char* bad : {"window: 4", "causal: qk, window: -1"}) {
    const std::string msg = error_of(base + "  - {name: s, op: matmul, inputs: [q, k], equation: \"bqd,bkd->bqk\", " +
                                     std::string(bad) + "}\n");
    EXPECT_NE(msg.find("bad.yaml:7:"), std::string::npos) << bad << ": " << msg;
    EXPECT_NE(msg.find("window: expected"), std::string::npos) << bad << ": " << msg;
  }
}
