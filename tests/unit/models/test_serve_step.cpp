// The zoo's serving step (PhaseOptions::serve_decode): a prefill chunk and
// decoding sequences in one program. Its rows are the chunk's tokens plus
// one per decoding sequence in every matmul, its attention is the chunk's
// causal attention plus each sequence's over its cache, and its logits are
// the chunk's last position plus the decoded tokens: so its matmul and
// attention FLOPs are exactly a prefill of the chunk plus a decode step of
// the sequences, each generated on its own (the decode by the decode
// path, which shares no attention code with the serving step).
#include <gtest/gtest.h>

#include "models/zoo.h"
#include "phase_options.h"
#include "workloads/ir/cost.h"

using namespace tpusim::models;
using namespace tpusim::workloads;
using tpusim::models::test::decode;

namespace {

double mm_attn_flops(const Workload& w) {
  double f = 0;
  for (const auto& op : w.ops)
    if (op.kind == OpKind::matmul || op.kind == OpKind::attention) f += static_cast<double>(op_cost(w, op).flops);
  return f;
}

PhaseOptions prefill(std::int64_t P) {
  PhaseOptions o;
  o.phase = Phase::prefill;
  o.batch = 1;
  o.seq_len = P;
  return o;
}

PhaseOptions step(std::int64_t P, std::int64_t B, std::int64_t C) {
  PhaseOptions o;
  o.phase = Phase::prefill;
  o.batch = 1;
  o.seq_len = P;
  o.serve_decode = B;
  o.context = C;
  return o;
}

}  // namespace

TEST(ServeStep, FlopsArePrefillOfTheChunkPlusDecodeOfTheSequences) {
  for (const char* name : {"llama3-8b", "mixtral-8x7b", "gpt-j-6b"}) {
    const ModelSpec m = load_model(name);
    for (auto [P, B, C] : {std::tuple<int, int, int>{64, 8, 300}, {17, 3, 1000}, {128, 1, 64}}) {
      const Workload w = generate(m, step(P, B, C));
      EXPECT_NO_THROW(w.validate());
      const PhaseOptions pre = prefill(P);
      const PhaseOptions dec = decode(B, C);
      const double want = mm_attn_flops(generate(m, pre)) + mm_attn_flops(generate(m, dec)), got = mm_attn_flops(w);
      // Mixtral routes P + B tokens together: experts touched by the
      // union, not each part separately, so only the dense models are exact.
      const double tol = std::string(name) == "mixtral-8x7b" ? 0.01 : 1e-12;
      EXPECT_NEAR(got / want, 1.0, tol) << name << " P=" << P << " B=" << B << " C=" << C;
    }
  }
}

TEST(ServeStep, WithoutDecodesItIsThePlainPrefill) {
  const ModelSpec m = load_model("llama3-8b");
  const Workload a = generate(m, prefill(64)), b = generate(m, step(64, 0, 1));
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) EXPECT_EQ(a.ops[i].name, b.ops[i].name);
}

TEST(ServeStep, ChunkAttendsToItsCachedPrefix) {
  const ModelSpec m = load_model("llama3-8b");
  PhaseOptions o = step(64, 0, 1);
  o.prefill_context = 512;
  const Workload w = generate(m, o);
  const Op* core = w.find_op("layers.0.attn.chunk_core");
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(w.find_tensor(core->inputs[1])->shape, (Shape{1, 576, 8, 128}));  // 512 cached + 64 new keys
}

// Several prompts' chunks in one step (PhaseOptions::prefill_chunks): the
// P tokens are n sequences, each attending causally to itself only, each
// with its last position's logits: the FLOPs of the per-chunk prefills
// (batch of the equal chunks; two batches when P mod n > 0) plus the
// decode, all matmul rows but the logits the same as one chunk's.
TEST(ServeStep, SeveralPromptsAreTheirOwnPrefills) {
  const ModelSpec m = load_model("llama3-8b");
  const PhaseOptions dec = decode(4, 300);
  auto prefills = [&](std::int64_t count, std::int64_t len) {
    PhaseOptions o = prefill(len);
    o.batch = count;
    return mm_attn_flops(generate(m, o));
  };
  for (auto [P, n] : {std::pair<std::int64_t, std::int64_t>{1024, 4}, {1000, 3}, {64, 64}}) {
    PhaseOptions o = step(P, 4, 300);
    o.prefill_chunks = n;
    const Workload w = generate(m, o);
    EXPECT_NO_THROW(w.validate());
    const std::int64_t q = P / n, r = P % n;
    const double want = (r > 0 ? prefills(r, q + 1) : 0) + prefills(n - r, q) + mm_attn_flops(generate(m, dec));
    EXPECT_NEAR(mm_attn_flops(w) / want, 1.0, 1e-12) << "P " << P << " chunks " << n;
    if (q >= 128) {  // long chunks: fewer causal pairs outweigh n - 1 more logits rows
      EXPECT_LT(mm_attn_flops(w), mm_attn_flops(generate(m, step(P, 4, 300)))) << P << " in " << n;
    }
  }
  PhaseOptions o = step(64, 0, 1);
  o.prefill_chunks = 65;
  EXPECT_THROW(check_options(m, o), ModelError);
  o.prefill_chunks = 0;
  EXPECT_THROW(check_options(m, o), ModelError);
}

// A chunk and its cached prefix past max_context are refused, except in a
// cost probe (a corner of tpusim serve's step grid that no real step
// reaches): there the chunk attends to the whole prefix.
TEST(ServeStep, CostProbeMayPassMaxContextWithItsPrefix) {
  const ModelSpec m = load_model("llama3-8b");
  PhaseOptions o = step(2048, 0, 1);
  o.prefill_context = m.transformer.max_context;
  EXPECT_THROW(check_options(m, o), ModelError);
  o.cost_probe = true;
  EXPECT_NO_THROW(check_options(m, o));
  const Workload w = generate(m, o);
  const Op* core = w.find_op("layers.0.attn.chunk_core");
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(w.find_tensor(core->inputs[1])->shape.at(1), m.transformer.max_context + 2048);
  o.context = m.transformer.max_context;  // a decoding sequence's context is still bounded
  o.serve_decode = 1;
  EXPECT_THROW(check_options(m, o), ModelError);
}

TEST(ServeStep, OptionsOutsideAServingStepAreRefused) {
  const ModelSpec m = load_model("llama3-8b");
  PhaseOptions o = step(64, 4, 100);
  o.batch = 2;
  EXPECT_THROW(check_options(m, o), ModelError);
  o = step(64, 4, 100);
  o.mesh = MeshSpec{{{"data", 2}}};
  EXPECT_THROW(check_options(m, o), ModelError);
  EXPECT_THROW(check_options(load_model("deepseek-v3"), step(64, 4, 100)), ModelError);
  o = step(64, 4, 8192);
  EXPECT_THROW(check_options(m, o), ModelError);  // context + 1 > max_context
}

// Speculative verification: T query tokens per decoding sequence, each
// attending to the cache and each with logits, is T decode tokens' FLOPs
// (the closed form counts T x flops_per_token), in a decode and in a
// serving step.
TEST(ServeStep, VerificationOfDraftedTokensCostsTDecodeTokens) {
  const ModelSpec m = load_model("llama3-8b");
  PhaseOptions dec = decode(4, 300);
  dec.decode_tokens = 5;
  const Workload w = generate(m, dec);
  EXPECT_NO_THROW(w.validate());
  EXPECT_NEAR(mm_attn_flops(w) / phase_matmul_flops(m, dec), 1.0, 1e-3);
  PhaseOptions one = dec;
  one.decode_tokens = 1;
  one.batch = 20;  // 4 sequences x 5 tokens as 20 single-token rows
  EXPECT_NEAR(mm_attn_flops(w) / mm_attn_flops(generate(m, one)), 1.0, 1e-12);
  PhaseOptions st = step(64, 4, 300);
  st.decode_tokens = 5;
  EXPECT_NEAR(mm_attn_flops(generate(m, st)) / (mm_attn_flops(generate(m, prefill(64))) + mm_attn_flops(w)), 1.0,
              1e-12);
}
