// Bad model files produce errors naming file:line:col, the key, what was
// expected and what was found; fit-check numbers against hand arithmetic.
#include <gtest/gtest.h>

#include "models/sharding.h"
#include "models/zoo.h"
#include "workloads/ir/mesh.h"

using namespace tpusim::models;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_model_text(text, "m.yaml");
  } catch (const ModelError& e) {
    return e.what();
  }
  return "(no error)";
}

const char* kGood =
    "name: tiny\n"
    "family: decoder\n"
    "hidden: 64\n"
    "layers: 2\n"
    "vocab: 100\n"
    "max_context: 128\n"
    "norm: rmsnorm\n"
    "position: rotary\n"
    "attention: {heads: 4, kv_heads: 2, head_dim: 16}\n"
    "ffn: {kind: swiglu, size: 128}\n";

}  // namespace

TEST(ModelFile, GoodFileParses) {
  ModelSpec m = parse_model_text(kGood, "m.yaml");
  EXPECT_EQ(m.name, "tiny");
  EXPECT_EQ(m.transformer.attention.kv_heads, 2);
  // 2 layers x (attn 64*64 + 2*64*32 + 64*64 + ffn 3*64*128 + norms 2*64)
  // + embed 100*64 + lm_head 64*100 + final norm 64.
  std::uint64_t layer = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 128 + 2 * 64;
  EXPECT_EQ(count_params(m).total, 2 * layer + 2 * 100 * 64 + 64);
}

TEST(ModelFile, UnknownKeySuggestsNearest) {
  std::string e = error_of(std::string(kGood) + "hiden_size: 3\nmax_contxt: 5\n");
  EXPECT_NE(e.find("m.yaml:11:1: hiden_size: expected a known key, found unknown key 'hiden_size'"), std::string::npos)
      << e;
  EXPECT_NE(e.find("m.yaml:12:1: max_contxt: expected a known key, found unknown key 'max_contxt' (did you mean "
                   "'max_context'?)"),
            std::string::npos)
      << e;
}

TEST(ModelFile, NestedUnknownKeyHasDottedPath) {
  std::string t = kGood;
  t.replace(t.find("kv_heads"), 8, "kv_head");
  std::string e = error_of(t);
  EXPECT_NE(e.find("attention.kv_head: expected a known key, found unknown key 'kv_head' (did you mean 'kv_heads'?)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("m.yaml:9:"), std::string::npos) << e;
}

TEST(ModelFile, WrongTypesAndValues) {
  std::string t = kGood;
  t.replace(t.find("hidden: 64"), 10, "hidden: big");
  EXPECT_NE(error_of(t).find("m.yaml:3:9: hidden: expected an integer >= 1, found 'big'"), std::string::npos)
      << error_of(t);
  t = kGood;
  t.replace(t.find("swiglu"), 6, "swiglo");
  EXPECT_NE(
      error_of(t).find("ffn.kind: expected one of swiglu|gelu|relu|geglu, found 'swiglo' (did you mean 'swiglu'?)"),
      std::string::npos)
      << error_of(t);
  t = kGood;
  t.replace(t.find("layers: 2"), 9, "layers: 0");
  EXPECT_NE(error_of(t).find("m.yaml:4:9: layers: expected an integer >= 1, found 0"), std::string::npos)
      << error_of(t);
}

TEST(ModelFile, MissingKeysAndInconsistentValues) {
  std::string t = kGood;
  t.erase(t.find("vocab: 100\n"), 11);
  EXPECT_NE(error_of(t).find("vocab: expected an integer >= 1, found no such key"), std::string::npos) << error_of(t);
  t = kGood;
  t.replace(t.find("kv_heads: 2"), 11, "kv_heads: 3");
  EXPECT_NE(error_of(t).find("attention.kv_heads: expected a divisor of heads 4, found 3"), std::string::npos)
      << error_of(t);
  std::string moe = std::string(kGood) + "moe: {experts: 4, top_k: 8, expert_ffn_size: 32}\n";
  EXPECT_NE(error_of(moe).find("moe.top_k: expected <= experts 4, found 8"), std::string::npos) << error_of(moe);
}

TEST(ModelFile, AllErrorsCollected) {
  std::string e = error_of("name: x\nfamily: decoder\nhidden: -1\nlayers: q\n");
  EXPECT_NE(e.find("hidden"), std::string::npos);
  EXPECT_NE(e.find("layers"), std::string::npos);
  EXPECT_NE(e.find("attention: expected a map"), std::string::npos) << e;
}

// A UNet file: one transformer depth per level, widths that the norm
// groups (and, with attention, the heads) divide, an image size the
// levels halve evenly; each error names the line and key.
TEST(ModelFile, UnetLevelsAndWidthsAreChecked) {
  const std::string head = "name: u\nfamily: unet\ncross_attention_dim: 64\n";
  const ModelSpec ok = parse_model_text(head + "channels: [64, 128]\ntransformer_depth: [0, 1]\n", "m.yaml");
  EXPECT_EQ(ok.family, Family::unet);
  EXPECT_EQ(ok.unet.channels, (std::vector<std::int64_t>{64, 128}));
  EXPECT_EQ(ok.unet.time_embed_dim(), 256);
  const std::string depth = error_of(head + "channels: [64, 128]\ntransformer_depth: [1]\n");
  EXPECT_NE(depth.find("m.yaml:5:"), std::string::npos) << depth;
  EXPECT_NE(depth.find("transformer_depth: expected 2 entries (one per level in channels), found 1"), std::string::npos)
      << depth;
  const std::string groups = error_of(head + "channels: [64, 100]\ntransformer_depth: [0, 0]\n");
  EXPECT_NE(groups.find("m.yaml:4:"), std::string::npos) << groups;
  EXPECT_NE(groups.find("channels: expected multiples of norm_groups 32, found 100"), std::string::npos) << groups;
  const std::string heads = error_of(head + "channels: [64, 96]\ntransformer_depth: [0, 1]\nhead_dim: 64\n");
  EXPECT_NE(heads.find("channels: expected multiples of head_dim 64 where a level has attention, found 96"),
            std::string::npos)
      << heads;
  // The middle block attends at the deepest width, even where its level's
  // own blocks do not.
  const std::string mid =
      error_of(head + "channels: [64, 96]\ntransformer_depth: [0, 0]\nmid_transformer_depth: 1\nhead_dim: 64\n");
  EXPECT_NE(mid.find("channels: expected multiples of head_dim 64 where a level has attention, found 96"),
            std::string::npos)
      << mid;
  const std::string image = error_of(head + "channels: [64, 128, 256]\ntransformer_depth: [0, 0, 0]\nimage_size: 48\n");
  EXPECT_NE(image.find("image_size: expected a multiple of 32 (8 x 2^(levels - 1)), found 48"), std::string::npos)
      << image;
  const std::string levels = error_of(head + "channels: [32, 32, 32, 32, 32, 32, 32, 32, 32]\n" +
                                      "transformer_depth: [0, 0, 0, 0, 0, 0, 0, 0, 0]\n");
  EXPECT_NE(levels.find("channels: expected at most 8 levels, found 9"), std::string::npos) << levels;
  const std::string negative = error_of(head + "channels: [64]\ntransformer_depth: [-1]\n");
  EXPECT_NE(negative.find("transformer_depth[0]"), std::string::npos) << negative;
}

TEST(ModelFile, SyntaxErrorAndUnknownModel) {
  EXPECT_NE(error_of("name: [x\n").find("m.yaml:"), std::string::npos);
  try {
    load_model("llama3-9b");
    FAIL();
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("found 'llama3-9b' (did you mean 'llama3-8b'?)"), std::string::npos)
        << e.what();
  }
}

TEST(FitCheck, Llama3_70bBf16DoesNotFitOneV5e) {
  ModelSpec m = load_model("llama3-70b");
  PhaseOptions o;
  o.phase = Phase::decode;
  o.batch = 1;
  o.context = 1023;
  const std::uint64_t v5e = 16ull << 30;  // 16 GiB HBM (Cloud TPU v5e docs: 16 GB)
  FitReport r = check_fit(m, o, v5e);
  EXPECT_FALSE(r.fits);
  // Weights: 70.55e9 params x 2 bytes = 141.1 GB.
  EXPECT_NEAR(static_cast<double>(r.footprint.weights), 141.1e9, 0.2e9);
  // KV cache: 1024 tokens x 327,680 B.
  EXPECT_EQ(r.footprint.kv_cache, 1024u * 327680u);
  // 141.1 GB / 17.18 GB = 8.2 -> 9 chips (activations at batch 1 are < 1 GB).
  EXPECT_EQ(r.min_chips, 9);
  EXPECT_EQ(r.min_chips, static_cast<std::int64_t>((r.needed_bytes + v5e - 1) / v5e));
  EXPECT_NEAR(r.available_gib, 16.0, 1e-9);
  EXPECT_NE(r.message.find("does not fit; at least 9 chips"), std::string::npos) << r.message;
}

TEST(FitCheck, TrainingAddsGradientsAndAdamState) {
  ModelSpec m = load_model("llama2-7b");
  PhaseOptions o;
  o.phase = Phase::train;
  o.batch = 1;
  o.seq_len = 1024;
  MemoryFootprint f = memory_footprint(m, o);
  const std::uint64_t n = count_params(m).total;
  EXPECT_EQ(f.gradients, 2 * n);
  EXPECT_EQ(f.optimizer, 12 * n);  // f32 master + m + v
  o.remat = RematPolicy::full;
  EXPECT_LT(memory_footprint(m, o).activations, f.activations);
  FitReport r = check_fit(m, o, 95ull << 30);  // v5p: 95 GiB usable
  EXPECT_FALSE(r.fits);                        // 16 B/param x 6.74e9 = 108 GB alone
  EXPECT_EQ(r.min_chips, 2);
  EXPECT_TRUE(check_fit(load_model("resnet50"), PhaseOptions{Phase::infer}, 16ull << 30).fits);
}

// Llama 2 70B (hidden 8192, 64 heads of 128, 8 KV heads, SwiGLU FFN 28672,
// 80 layers, vocab 32000) training at 4096 tokens per chip under FSDP 512
// (MaxText's v5p-512 recipe): activations per chip by remat policy, per
// token and layer in bf16 (docs/models.md, docs/remat.md):
//   none:      6h + 64*(128+128) + 2*8*128 + 4*28672       = 182272 elements
//   minimal:   3h + 64*128 + 2*8*128 + 2*28672             =  92160 (matmul outputs + input)
//   selective: 3h + 64*128 + 2*8*128                       =  34816 (no gate/up outputs)
//   full:      h (the layer input)                         =   8192
// The activations peak either at the loss, with the final norm's input and
// output, the head's input gradient (3h) and the logits (32000, which the
// loss gradient overwrites), or at the first layer of backward, with that
// layer rebuilt (182272) when recomputing: all x 4096 tokens x 2 bytes.
// One 4096-token sequence per chip, FSDP over 512 chips.
static PhaseOptions llama2_70b_on_v5p512() {
  PhaseOptions o;
  o.phase = Phase::train;
  o.batch = 512;
  o.seq_len = 4096;
  o.mesh = tpusim::workloads::parse_mesh("fsdp=512", mesh_axis_names());
  return o;
}

TEST(FitCheck, RematPolicyActivationsPerChipLlama2_70bOnV5p512) {
  ModelSpec m = load_model("llama2-70b");
  PhaseOptions o = llama2_70b_on_v5p512();
  const double tok_bytes = 4096.0 * 2.0, at_loss = 3 * 8192.0 + 32000;
  auto act = [&](RematPolicy r) {
    o.remat = r;
    return static_cast<double>(memory_footprint(m, o).activations);
  };
  // Nothing rebuilt: the loss is the peak; otherwise the rebuilt layer
  // (182272) outweighs the loss's 56576.
  EXPECT_NEAR(act(RematPolicy::none), tok_bytes * (80 * 182272.0 + at_loss), 1.0);
  EXPECT_NEAR(act(RematPolicy::minimal), tok_bytes * (80 * 92160.0 + 182272), 1.0);
  EXPECT_NEAR(act(RematPolicy::selective), tok_bytes * (80 * 34816.0 + 182272), 1.0);
  EXPECT_NEAR(act(RematPolicy::full), tok_bytes * (80 * 8192.0 + 182272), 1.0);
  // The weight gradients (bf16, 1/512 of 70B each) are all live only at
  // the end of backward, with the first layer's rebuilt activations and the
  // embedding table's dense gradient (32000 x 8192 bf16).
  o.remat = RematPolicy::full;
  const MemoryFootprint f = memory_footprint(m, o);
  EXPECT_NEAR(static_cast<double>(f.activations_with_gradients), tok_bytes * 182272 + 32000.0 * 8192 * 2, 1.0);
  EXPECT_EQ(f.total(), f.weights + f.optimizer + std::max(f.activations, f.gradients + f.activations_with_gradients));
  const std::uint64_t v5p = 96ull << 30;  // configs/v5p.yaml: hbm.capacity 96 GiB
  o.remat = RematPolicy::none;
  EXPECT_FALSE(check_fit(m, o, v5p).fits);  // 111 GiB of activations alone
  for (RematPolicy r : {RematPolicy::minimal, RematPolicy::selective}) {
    o.remat = r;
    EXPECT_TRUE(check_fit(m, o, v5p).fits) << remat_name(r);
  }
  o.remat = RematPolicy::full;
  EXPECT_TRUE(check_fit(m, o, v5p).fits);
}

// The offloaded policies keep in HBM the layer inputs (h per layer), and
// at the first layer of backward (their peak, as the loss's 3h + 32000 is
// smaller) the layer being rebuilt (182272) and the offloaded tensors of
// two layers (the one in backward and the prefetched one); the rest is in
// host memory. Llama 2 70B as above, 4096 tokens per chip:
//   qkv_proj_offloaded: q, k, v = 64*128 + 2*8*128 = 10240 per layer:
//     HBM 80*8192 + 182272 + 2*10240, host 80*10240
//   minimal_offloaded: minimal's kept matmul outputs but the input,
//     92160 - 8192 = 83968 per layer: HBM 80*8192 + 182272 + 2*83968,
//     host 80*83968
TEST(FitCheck, OffloadedRematKeepsActivationsInHostMemory) {
  ModelSpec m = load_model("llama2-70b");
  PhaseOptions o = llama2_70b_on_v5p512();
  const double tok_bytes = 4096.0 * 2.0;
  o.remat = RematPolicy::qkv_proj_offloaded;
  MemoryFootprint f = memory_footprint(m, o);
  EXPECT_NEAR(static_cast<double>(f.activations), tok_bytes * (80 * 8192.0 + 182272 + 2 * 10240), 1.0);
  EXPECT_NEAR(static_cast<double>(f.host_activations), tok_bytes * 80 * 10240.0, 1.0);
  o.remat = RematPolicy::minimal_offloaded;
  f = memory_footprint(m, o);
  EXPECT_NEAR(static_cast<double>(f.activations), tok_bytes * (80 * 8192.0 + 182272 + 2 * 83968), 1.0);
  EXPECT_NEAR(static_cast<double>(f.host_activations), tok_bytes * 80 * 83968.0, 1.0);
  o.remat = RematPolicy::full;
  EXPECT_EQ(memory_footprint(m, o).host_activations, 0u);
}

// MaxText's custom policy as its v6e Llama 3.1 70B recipe sets it
// (tpu-recipes training/trillium/Llama3.1-70B-MaxText: decoder_layer_input,
// query_proj, key_proj, value_proj offloaded), Llama 2 70B's shapes as
// above: nothing of a layer stays in HBM; host 80 x (8192 + 10240); the
// peak is the first layer of backward, with the layer rebuilt and two
// layers' offloaded tensors read back: 182272 + 2 x 18432. Kept on the
// device instead, the same names are HBM's (80 x 18432). The layer input
// placed `remat` stays in HBM (the scan carry), as `device` does.
TEST(FitCheck, CustomRematPlacesNamedActivations) {
  ModelSpec m = load_model("llama2-70b");
  PhaseOptions o = llama2_70b_on_v5p512();
  const double tok_bytes = 4096.0 * 2.0;
  ASSERT_EQ(parse_remat_spec("custom:decoder_layer_input=offload,qkv_proj=offload", &o.remat, &o.remat_custom), "");
  MemoryFootprint f = memory_footprint(m, o);
  EXPECT_NEAR(static_cast<double>(f.activations), tok_bytes * (182272 + 2 * 18432.0), 1.0);
  EXPECT_NEAR(static_cast<double>(f.host_activations), tok_bytes * 80 * 18432.0, 1.0);
  ASSERT_EQ(parse_remat_spec("custom:decoder_layer_input=device,qkv_proj=device", &o.remat, &o.remat_custom), "");
  f = memory_footprint(m, o);
  EXPECT_NEAR(static_cast<double>(f.activations), tok_bytes * (80 * 18432.0 + 182272), 1.0);
  EXPECT_EQ(f.host_activations, 0u);
  PhaseOptions r = o;
  ASSERT_EQ(parse_remat_spec("custom:decoder_layer_input=remat,qkv_proj=device", &r.remat, &r.remat_custom), "");
  EXPECT_EQ(memory_footprint(m, r).activations, f.activations);
}

// The host's DRAM bounds the offloaded activations: with 32 GiB of host
// memory per chip, minimal_offloaded's 8192 B x 80 x 83968 = 51.25 GiB per
// chip (above) does not fit, qkv_proj_offloaded's 80 x 10240 x 8192 B =
// 6.25 GiB does; an unknown host memory (0) is not checked.
TEST(FitCheck, OffloadedActivationsMustFitTheHostMemory) {
  ModelSpec m = load_model("llama2-70b");
  PhaseOptions o = llama2_70b_on_v5p512();
  const std::uint64_t v5p = 96ull << 30, host = 32ull << 30;
  o.remat = RematPolicy::minimal_offloaded;
  ASSERT_TRUE(check_fit(m, o, v5p).fits);
  FitReport r = check_fit(m, o, v5p, host);
  EXPECT_FALSE(r.fits);
  EXPECT_FALSE(r.host_fits);
  EXPECT_NE(r.message.find("51.25 GiB of offloaded activations per chip exceed the host memory's 32.00 GiB"),
            std::string::npos)
      << r.message;
  EXPECT_TRUE(check_fit(m, o, v5p, 52ull << 30).fits);
  o.remat = RematPolicy::qkv_proj_offloaded;
  r = check_fit(m, o, v5p, host);
  EXPECT_TRUE(r.fits) << r.message;
  EXPECT_TRUE(r.host_fits);
}

// Gemma 3's layer pattern: with global_attention_every N, the last layer of
// each N is global and the others use the window; the key excludes
// sliding_window_every, needs a window and N >= 2. Post norms and QK norms
// add their scales to the parameter count; geglu is a gated FFN.
TEST(ModelFile, GlobalAttentionEveryPostNormsQkNormAndGeglu) {
  std::string t = kGood;
  const std::string attn = "attention: {heads: 4, kv_heads: 2, head_dim: 16}";
  t.replace(t.find(attn), attn.size(),
            "attention: {heads: 4, kv_heads: 2, head_dim: 16, sliding_window: 8, global_attention_every: 3, "
            "qk_norm: true}\npost_norms: true");
  t.replace(t.find("swiglu"), 6, "geglu");
  const ModelSpec m = parse_model_text(t, "m.yaml");
  const auto& a = m.transformer.attention;
  for (std::int64_t i = 0; i < 7; ++i) EXPECT_EQ(a.windowed(i), i % 3 != 2) << i;
  EXPECT_TRUE(m.transformer.ffn.gated());
  // The layer of the good file plus two post norms (2 x 64) and the query
  // and key norms (2 x 16), per layer.
  const std::uint64_t layer = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 128 + 2 * 64 + 2 * 64 + 2 * 16;
  EXPECT_EQ(count_params(m).total, 2 * layer + 2 * 100 * 64 + 64);
  std::string both = t;
  both.replace(both.find("global_attention_every: 3"), 25, "global_attention_every: 3, sliding_window_every: 2");
  EXPECT_NE(error_of(both).find("attention.global_attention_every: expected either sliding_window_every (the windowed "
                                "layers) or global_attention_every (the global ones), found both"),
            std::string::npos)
      << error_of(both);
  std::string no_window = t;
  no_window.replace(no_window.find("sliding_window: 8, "), 19, "");
  EXPECT_NE(error_of(no_window).find("attention.global_attention_every: expected a sliding_window for the other "
                                     "layers, found none"),
            std::string::npos)
      << error_of(no_window);
  std::string one = t;
  one.replace(one.find("global_attention_every: 3"), 25, "global_attention_every: 1");
  EXPECT_NE(error_of(one).find("global_attention_every: expected an integer >= 2, found 1"), std::string::npos)
      << error_of(one);
  // Post norms in a parallel block: refused, naming the key and its line.
  const std::string parallel = t + "parallel_block: true\n";
  EXPECT_NE(error_of(parallel).find("post_norms: expected false with parallel_block: true (no model combines them), "
                                    "found true"),
            std::string::npos)
      << error_of(parallel);
  EXPECT_NE(error_of(parallel).find("m.yaml:"), std::string::npos) << error_of(parallel);
}
