// Built-in micro-workloads and their CLI string forms, including errors.
#include <gtest/gtest.h>

#include <functional>

#include "workload_test_util.h"
#include "workloads/builtin.h"
#include "workloads/ir/cost.h"

using namespace tpusim::workloads;
using tpusim::arch::DType;

namespace {
using tpusim::workloads::testing::error_of;

// Each spec is refused by `parse` with a message containing its part.
void expect_refused(const std::function<Workload(const std::string&)>& parse,
                    const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& c : cases) {  // not a structured binding: the lambda captures it (C++17)
    const std::string msg = error_of([&] { parse(c.first); });
    EXPECT_FALSE(msg.empty()) << c.first << " was accepted";
    EXPECT_NE(msg.find(c.second), std::string::npos) << c.first << ": '" << c.second << "' not in: " << msg;
  }
}
Workload attention_spec(const std::string& s) { return builtin::parse_attention(s); }
Workload gemm_spec(const std::string& s) { return builtin::parse_gemm(s); }
}  // namespace

TEST(Builtin, GemmFromString) {
  Workload wl = builtin::parse_gemm("8192,4096,1024");
  ASSERT_EQ(wl.ops.size(), 1u);
  EXPECT_EQ(wl.find_tensor("a")->shape, (Shape{8192, 4096}));  // M x K
  EXPECT_EQ(wl.find_tensor("b")->shape, (Shape{4096, 1024}));  // K x N
  EXPECT_EQ(wl.find_tensor("c")->shape, (Shape{8192, 1024}));
  EXPECT_EQ(wl.find_tensor("c")->kind, TensorKind::output);
  EXPECT_EQ(wl.find_tensor("b")->kind, TensorKind::weight);
  // 2 * 8192 * 4096 * 1024 = 68,719,476,736
  EXPECT_EQ(workload_cost(wl).flops, 68719476736ull);
  EXPECT_EQ(builtin::parse_gemm("m=8192,k=4096,n=1024"), wl);
  Workload f8 = builtin::parse_gemm("m=16,k=32,n=64,dtype=fp8_e4m3");
  EXPECT_EQ(f8.find_tensor("a")->dtype, DType::fp8_e4m3);
  EXPECT_EQ(builtin::parse("gemm", "16,32,64", DType::int8).find_tensor("a")->dtype, DType::int8);
}

TEST(Builtin, ConvFromString) {
  Workload wl = builtin::parse_conv("1,224,224,3,7,7,64,2,3");
  // (224 + 2*3 - 7) / 2 + 1 = 112
  EXPECT_EQ(wl.find_tensor("y")->shape, (Shape{1, 112, 112, 64}));
  EXPECT_EQ(wl.find_tensor("filter")->shape, (Shape{7, 7, 3, 64}));
  // 112*112*64 outputs * 7*7*3 MACs = 118,013,952
  EXPECT_EQ(workload_cost(wl).macs, 118013952u);
  EXPECT_EQ(builtin::parse_conv("n=1,h=224,w=224,c=3,kh=7,kw=7,oc=64,stride=2,pad=3"), wl);
  // key=value defaults: stride 1, pad 0 -> 8 - 3 + 1 = 6
  EXPECT_EQ(builtin::parse_conv("n=2,h=8,w=8,c=4,kh=3,kw=3,oc=5").find_tensor("y")->shape, (Shape{2, 6, 6, 5}));
}

TEST(Builtin, AttentionFromString) {
  Workload wl = builtin::parse_attention("b=1,q=2048,kv=2048,h=32,kvh=8,d=128,causal=1");
  EXPECT_EQ(wl.find_tensor("q")->shape, (Shape{1, 2048, 32, 128}));
  EXPECT_EQ(wl.find_tensor("k")->shape, (Shape{1, 2048, 8, 128}));
  EXPECT_EQ(wl.find_tensor("k")->kind, TensorKind::kv_cache);
  EXPECT_TRUE(wl.ops[0].as<AttentionAttrs>().causal);
  // Causal 2048x2048: 2048*2049/2 = 2,098,176 pairs per head, 32 heads,
  // MACs = pairs * (128 + 128).
  EXPECT_EQ(workload_cost(wl).macs, 2098176ull * 32 * 256);
  EXPECT_EQ(builtin::parse_attention("1,2048,2048,32,8,128,1"), wl);
  // Defaults: b=1, kv=q, kvh=h, causal=0.
  Workload d = builtin::parse_attention("q=16,h=4,d=8");
  EXPECT_EQ(d.find_tensor("k")->shape, (Shape{1, 16, 4, 8}));
  EXPECT_FALSE(d.ops[0].as<AttentionAttrs>().causal);
  EXPECT_FALSE(builtin::parse_attention("2,16,32,4,2,8").ops[0].as<AttentionAttrs>().causal);
}

// bq= and bkv= fix the kernel's blocks (splash attention's block_q and
// block_kv), 0 or absent leaves them to the search; the units are splash's.
TEST(Builtin, AttentionBlocksFromString) {
  const Workload wl = builtin::parse_attention("q=8192,h=8,d=128,causal=1,bq=512,bkv=1024");
  EXPECT_EQ(wl.ops[0].as<AttentionAttrs>().blocks, (AttentionBlocks{512, 1024}));
  EXPECT_NE(wl.name.find("_bq512_bkv1024"), std::string::npos) << wl.name;
  EXPECT_FALSE(builtin::parse_attention("q=8192,h=8,d=128").ops[0].as<AttentionAttrs>().blocks.fixed());
  EXPECT_FALSE(builtin::parse_attention("1,16,16,4,4,8,1").ops[0].as<AttentionAttrs>().blocks.fixed());
  expect_refused(attention_spec, {{"q=64,h=1,d=8,bq=12", "field bq: expected a multiple of 8 (sublanes), found 12"},
                                  {"q=64,h=1,d=8,bkv=100", "field bkv: expected a multiple of 128 (lanes), found 100"},
                                  {"q=64,h=1,d=8,bkv=-128", "bkv"}});
}

// bm=, bk= and bn= fix a matmul kernel's blocks (a Pallas matmul's
// BlockSpecs, MatmulBlocks), 0 or absent leaves them to the search; each
// is a multiple of its vreg unit or the whole dimension.
TEST(Builtin, GemmBlocksFromString) {
  const Workload wl = builtin::parse_gemm("m=4096,k=2048,n=1024,bm=512,bk=1024,bn=256");
  EXPECT_EQ(wl.ops[0].as<MatmulAttrs>().blocks, (MatmulBlocks{512, 1024, 256}));
  EXPECT_NE(wl.name.find("_bm512_bk1024_bn256"), std::string::npos) << wl.name;
  EXPECT_EQ(builtin::parse_gemm("m=100,k=300,n=200,bm=100,bk=300,bn=200").ops[0].as<MatmulAttrs>().blocks,
            (MatmulBlocks{100, 300, 200}));  // whole dimensions
  EXPECT_EQ(builtin::parse_gemm("m=64,k=128,n=128,bk=128").ops[0].as<MatmulAttrs>().blocks, (MatmulBlocks{0, 128, 0}));
  EXPECT_FALSE(builtin::parse_gemm("m=64,k=128,n=128").ops[0].as<MatmulAttrs>().blocks.fixed());
  EXPECT_FALSE(builtin::parse_gemm("64,128,128").ops[0].as<MatmulAttrs>().blocks.fixed());
  expect_refused(gemm_spec, {{"m=64,k=128,n=128,bm=12",
                              "field bm: expected a multiple of 8 (sublanes) or the whole dimension (64), found 12"},
                             {"m=64,k=256,n=128,bk=100",
                              "field bk: expected a multiple of 128 (lanes) or the whole dimension (256)"},
                             {"m=64,k=128,n=384,bn=200", "field bn: expected a multiple of 128 (lanes)"},
                             {"m=64,k=128,n=128,bn=-128", "bn"},
                             {"m=64,k=128,n=128,bx=128", "unknown key 'bx'"}});
}

// latent=1 makes one kv_cache tensor the key and the value (MLA's latent,
// read once) and dv= narrows PV to the value's first columns
// (AttentionAttrs::value_dim); out of range they are refused by name.
TEST(Builtin, AttentionLatentAndValueDimFromString) {
  const Workload wl = builtin::parse_attention("b=16,q=1,kv=4096,h=8,kvh=1,d=576,latent=1,dv=512");
  ASSERT_EQ(wl.ops.size(), 1u);
  const Op& op = wl.ops[0];
  EXPECT_EQ(op.inputs[1], op.inputs[2]);
  EXPECT_EQ(op.as<AttentionAttrs>().value_dim, 512);
  EXPECT_EQ(wl.find_tensor(op.outputs[0])->shape, (Shape{16, 1, 8, 512}));
  EXPECT_NE(wl.name.find("_latent_dv512"), std::string::npos) << wl.name;
  const Workload plain = builtin::parse_attention("b=16,q=1,kv=4096,h=8,kvh=1,d=576");
  EXPECT_NE(plain.ops[0].inputs[1], plain.ops[0].inputs[2]);
  EXPECT_EQ(plain.ops[0].as<AttentionAttrs>().value_dim, 0);
  expect_refused(attention_spec, {{"q=64,h=1,d=8,latent=2", "field latent: expected 0 or 1, found 2"},
                                  {"q=64,h=1,d=8,dv=9", "field dv: expected 0 (every column) to d 8, found 9"},
                                  {"q=64,h=1,d=8,dv=-1", "dv"}});
}

// seqs= makes the op a batched kernel (AttentionAttrs::max_step_seqs, up
// to that many sequences a grid step), 0 or absent one a step; out of its
// range or beside fixed blocks it is refused by name.
TEST(Builtin, AttentionSeqsFromString) {
  const Workload wl = builtin::parse_attention("b=64,q=1,kv=256,h=32,kvh=8,d=128,seqs=16");
  EXPECT_EQ(wl.ops[0].as<AttentionAttrs>().max_step_seqs, 16);
  EXPECT_NE(wl.name.find("_seqs16"), std::string::npos) << wl.name;
  EXPECT_EQ(builtin::parse_attention("b=64,q=1,kv=256,h=32,kvh=8,d=128").ops[0].as<AttentionAttrs>().max_step_seqs, 0);
  expect_refused(attention_spec, {{"q=64,h=1,d=8,seqs=257", "field seqs: expected 0 to 256"},
                                  {"q=64,h=1,d=8,seqs=-1", "seqs"},
                                  {"q=64,h=1,d=8,bq=8,seqs=4", "field seqs: expected 0 or 1 with bq or bkv"}});
}

TEST(Builtin, ElementwiseFromString) {
  Workload wl = builtin::parse_elementwise("silu,8,4096");
  EXPECT_EQ(wl.find_tensor("y")->shape, (Shape{8, 4096}));
  EXPECT_EQ(wl.ops[0].as<ElementwiseAttrs>().kind, EwKind::silu);
  Workload add = builtin::parse_elementwise("add,16");
  EXPECT_EQ(add.ops[0].inputs.size(), 2u);
  Workload sel = builtin::parse_elementwise("select,4,4", DType::f32);
  EXPECT_EQ(sel.find_tensor("x0")->dtype, DType::int8);
  EXPECT_EQ(sel.find_tensor("y")->dtype, DType::f32);
  Workload c = builtin::parse_elementwise("cast:f32,8,8");
  EXPECT_EQ(c.find_tensor("y")->dtype, DType::f32);
  EXPECT_EQ(c.find_tensor("x0")->dtype, DType::bf16);
}

TEST(Builtin, MalformedStrings) {
  struct Case {
    std::function<void()> f;
    std::vector<std::string> parts;
  };
  std::vector<Case> cases = {
      {[] { builtin::parse_gemm("8192,8192"); }, {"gemm spec '8192,8192'", "expected 3", "M,K,N", "found 2"}},
      {[] { builtin::parse_gemm("8192,x,8192"); }, {"field 2 (K)", "expected an integer, found 'x'"}},
      {[] { builtin::parse_gemm("8192,0,8192"); }, {"field 2 (K)", "expected an integer >= 1, found 0"}},
      {[] { builtin::parse_gemm("8192,,8192"); }, {"empty field"}},
      {[] { builtin::parse_gemm(""); }, {"empty specification"}},
      {[] { builtin::parse_gemm("m=1,2,3"); }, {"mixes positional and key=value"}},
      {[] { builtin::parse_gemm("m=1,k=2"); }, {"missing key 'n'"}},
      {[] { builtin::parse_gemm("m=1,k=2,n=3,dtype=f64"); }, {"unknown dtype 'f64'"}},
      {[] { builtin::parse_conv("1,224,224,3,7,7,64,2"); }, {"conv spec", "expected 9", "found 8"}},
      {[] { builtin::parse_conv("1,4,4,3,7,7,64,1,0"); }, {"op 'y' (conv2d)", "larger than the input"}},
      {[] { builtin::parse_attention("b=1,q=2048,kv=2048,h=32,kvhh=8,d=128"); },
       {"unknown key 'kvhh'", "did you mean 'kvh'?"}},
      {[] { builtin::parse_attention("b=1,q=16,h=32,kvh=5,d=8"); }, {"heads 32 not a multiple of kv_heads 5"}},
      {[] { builtin::parse_attention("q=16,h=4,d=8,causal=2"); }, {"field causal: expected 0 or 1, found 2"}},
      {[] { builtin::parse_attention("q=16,q=4,h=4,d=8"); }, {"key 'q' given twice"}},
      {[] { builtin::parse_elementwise("sillu,8"); }, {"unknown elementwise kind 'sillu'", "did you mean 'silu'?"}},
      {[] { builtin::parse_elementwise("cast,8"); }, {"cast needs a target dtype"}},
      {[] { builtin::parse_elementwise("exp:f32,8"); }, {"only valid for cast"}},
      {[] { builtin::parse_elementwise("exp"); }, {"expected KIND,D0"}},
      {[] { builtin::parse("gem", "1,2,3"); }, {"unknown built-in workload", "did you mean 'gemm'?"}},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::string msg = error_of(cases[i].f);
    EXPECT_FALSE(msg.empty()) << "case " << i << " did not throw";
    for (const auto& p : cases[i].parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "case " << i << ": '" << p << "' not in: " << msg;
  }
}
