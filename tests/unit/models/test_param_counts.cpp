// Parameter counts and per-token FLOPs of the zoo against published figures
// (sources in each models/zoo/*.yaml). Tolerance 1% unless the published
// figure is itself rounded more coarsely (then: its rounding interval).
#include <gtest/gtest.h>

#include <cmath>

#include "models/zoo.h"
#include "workloads/ir/cost.h"

using namespace tpusim::models;

namespace {

ParamCounts P(const std::string& n) { return count_params(load_model(n)); }
void near_pct(double got, double want, double pct) {
  EXPECT_LE(std::abs(got - want) / want, pct / 100.0) << "got " << got << ", published " << want;
}

}  // namespace

TEST(ParamCounts, DenseDecodersMatchPublishedWithin1Pct) {
  near_pct(P("llama2-7b").total, 6.74e9, 1);
  near_pct(P("llama2-13b").total, 13.0e9, 1);
  near_pct(P("llama2-70b").total, 69.0e9, 1);
  near_pct(P("llama3-8b").total, 8.03e9, 1);
  near_pct(P("llama3-70b").total, 70.6e9, 1);
  near_pct(P("llama3.1-405b").total, 405e9, 1);
  near_pct(P("gpt3-175b").total, 175e9, 1);
  near_pct(P("gpt-j-6b").total, 6.05e9, 1);
}

// Gemma 3: the technical report's Table 1 gives 25,600M non-embedding
// parameters for 27B (rounded to 100M) and 10,759M for 12B; the tied
// token table is the rest.
TEST(ParamCounts, Gemma3) {
  auto c = P("gemma3-27b");
  const double table = 262208.0 * 5376;
  EXPECT_NEAR(static_cast<double>(c.total) - table, 25.6e9, 0.05e9);
  EXPECT_EQ(c.active, c.total);
  // 12B: 1,012M embedding (the tied table, 262144 x 3840 = 1,006.6M, is
  // within 1%), 10,759M non-embedding.
  auto d = P("gemma3-12b");
  const double table12 = 262144.0 * 3840;
  near_pct(table12, 1012e6, 1);
  near_pct(static_cast<double>(d.total) - table12, 10759e6, 0.1);
}

TEST(ParamCounts, DenseModelsHaveActiveEqualTotal) {
  auto c = P("llama3-8b");
  EXPECT_EQ(c.active, c.total);
  EXPECT_EQ(c.routed_experts, 0u);
  // Untied: the token table (128256 x 4096) is lookup-only.
  EXPECT_EQ(c.embedding, 128256ull * 4096);
}

TEST(ParamCounts, Mixtral) {
  // Mistral's 12.9B active counts both embedding tables and 2 of 8 experts.
  auto c = P("mixtral-8x7b");
  near_pct(c.total, 46.7e9, 1);
  near_pct(c.active, 12.9e9, 1);
  // Mistral's announcement of 8x22B: "141B" total, "39B" active, both
  // rounded to whole billions (so within 0.5B); counted as for 8x7B.
  auto d = P("mixtral-8x22b");
  EXPECT_NEAR(d.total, 141e9, 0.5e9);
  EXPECT_NEAR(d.active, 39e9, 0.5e9);
}

TEST(ParamCounts, DeepSeekV3) {
  // 671B total: all 61 layers (3 dense), both embedding tables, no MTP module.
  auto c = P("deepseek-v3");
  near_pct(c.total, 671e9, 1);
  // "37B activated": the parameters a token multiplies (shared + 8 routed
  // experts, attention, dense layers, output head; not the input table,
  // which is only looked up) come to 36.6B; counting the input table too
  // gives 37.6B. The published figure is rounded to whole billions, so
  // the tolerance is its rounding interval [36.5, 37.5).
  EXPECT_GE(c.active_compute(), 36.5e9);
  EXPECT_LT(c.active_compute(), 37.5e9);
  EXPECT_EQ(c.active - c.active_compute(), 129280ull * 7168);
}

TEST(ParamCounts, Qwen3) {
  // Qwen3 technical report (arXiv:2505.09388): "235B total and 22B
  // activated parameters", both rounded to whole billions; both embedding
  // tables counted in each, as for Mixtral.
  auto c = P("qwen3-235b-a22b");
  EXPECT_NEAR(c.total, 235e9, 0.5e9);
  EXPECT_NEAR(c.active, 22e9, 0.5e9);
  // Qwen3-32B model card: 32.8B parameters, 31.2B without the embeddings
  // (its two untied tables of 151936 x 5120), rounded to 0.1B.
  auto d = P("qwen3-32b");
  EXPECT_NEAR(d.total, 32.8e9, 0.05e9);
  EXPECT_NEAR(d.total - 2.0 * 151936 * 5120, 31.2e9, 0.05e9);
  // Qwen3-30B-A3B model card: 30.5B in total.
  EXPECT_NEAR(P("qwen3-30b-a3b").total, 30.5e9, 0.05e9);
}

TEST(ParamCounts, GptOss120b) {
  // Model card: 116.83B total, 5.13B active counting the unembedding but
  // not the embedding (our active_compute convention).
  auto c = P("gpt-oss-120b");
  near_pct(c.total, 116.83e9, 1);
  near_pct(c.active_compute(), 5.13e9, 1);
}

TEST(ParamCounts, EncodersVisionAndConv) {
  near_pct(P("bert-large").total, 335e6, 1);
  near_pct(P("bert-base").total, 110e6, 1);
  near_pct(P("vit-b16").total, 86e6, 1);
  near_pct(P("vit-l16").total, 304e6, 1.5);  // paper: 307M; 304.3M with a 1000-class head
  // torchvision resnet50: 25,557,032 (convolutions without bias, BN gamma and
  // beta, fc with bias).
  EXPECT_EQ(P("resnet50").total, 25557032ull);
}

TEST(ParamCounts, ResNet50MacsPerImage) {
  ModelSpec m = load_model("resnet50");
  PhaseOptions o;
  o.phase = Phase::infer;
  // torchvision reports 4.09 GMACs at 224x224 (conv + fc).
  near_pct(flops_per_sample(m, o) / 2, 4.09e9, 1.5);
}

// SDXL base 1.0's UNet (stabilityai/stable-diffusion-xl-base-1.0,
// unet/config.json; models/zoo/sdxl-unet.yaml): 2,567,463,684 parameters,
// every convolution, linear, norm and bias of diffusers'
// UNet2DConditionModel counted once.
TEST(ParamCounts, SdxlUnetMatchesThePublishedModel) { EXPECT_EQ(P("sdxl-unet").total, 2567463684ull); }

TEST(ParamCounts, DlrmV2TablesDominate) {
  auto c = P("dlrm-v2");
  std::uint64_t rows = 0;
  for (auto r : load_model("dlrm-v2").dlrm.tables) rows += r.rows;
  EXPECT_EQ(c.embedding, rows * 128);
  // MLPs: bottom 13*512+512 + 512*256+256 + 256*128+128; DCN 3 x
  // (2*3456*512 + 3456); top 3456*1024+1024 + 1024^2+1024 + 1024*512+512 +
  // 512*256+256 + 256+1.
  std::uint64_t bottom = 13 * 512 + 512 + 512 * 256 + 256 + 256 * 128 + 128;
  std::uint64_t dcn = 3 * (2ull * 3456 * 512 + 3456);
  std::uint64_t top = 3456ull * 1024 + 1024 + 1024ull * 1024 + 1024 + 1024 * 512 + 512 + 512 * 256 + 256 + 256 + 1;
  EXPECT_EQ(c.total - c.embedding, bottom + dcn + top);
}

TEST(KvCache, BytesPerToken) {
  // llama3-70b: 80 layers x 2 (K,V) x 8 heads x 128 x 2 bytes = 327,680 B.
  EXPECT_EQ(kv_cache_bytes_per_token(load_model("llama3-70b"), tpusim::arch::DType::bf16), 327680u);
  // deepseek-v3 MLA: 61 layers x (512 + 64) x 2 bytes = 70,272 B.
  EXPECT_EQ(kv_cache_bytes_per_token(load_model("deepseek-v3"), tpusim::arch::DType::bf16), 70272u);
  // int8 cache halves it.
  EXPECT_EQ(kv_cache_bytes_per_token(load_model("llama3-70b"), tpusim::arch::DType::int8), 163840u);
  EXPECT_EQ(kv_cache_bytes_per_token(load_model("bert-base"), tpusim::arch::DType::bf16), 0u);
}

TEST(Flops, PerTokenIsTwiceActivePlusAttention) {
  ModelSpec m = load_model("llama2-7b");
  // Attention per layer at context c: heads 32 x c x (2*128 + 2*128 + 5).
  const double c = 4000;
  double attn = 32.0 * 32 * c * (2 * 128 + 2 * 128 + 5);
  EXPECT_DOUBLE_EQ(attention_flops_per_token(m, 4000), attn);
  EXPECT_DOUBLE_EQ(flops_per_token(m, 4000), 2.0 * count_params(m).active_compute() + attn);
  // Sanity against the "2N" rule: 2 * 6.74e9 = 13.5 GFLOP plus attention.
  near_pct(flops_per_token(m, 1), 2 * (6.74e9 - 32000.0 * 4096), 1);
}
