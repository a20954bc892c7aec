// The closed-form half of `tpusim check` (sim/codesign/model_check.h,
// candidates.h) on the custom model of models/examples/custom-3000.yaml
// (hidden 3000, 30 heads of head_dim 100, 6 KV heads, d_ff 8000, 24
// layers, vocab 32000): layer types from operator names, MXU shapes and
// padding from the model's dimensions, KV bytes per token, divisibility,
// slice shapes, the candidate list and its checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "arch/common/derived.h"
#include "models/analysis.h"
#include "models/zoo.h"
#include "sim/codesign/candidates.h"
#include "sim/codesign/model_check.h"
#include "sim/config/config_loader.h"
#include "sim/report/svg.h"
#include "workloads/ir/cost.h"

namespace tpusim::sim::codesign {
namespace {

models::ModelSpec custom() { return models::load_model(TPUSIM_SOURCE_DIR "/models/examples/custom-3000.yaml"); }

models::PhaseOptions decode8() {
  models::PhaseOptions o;
  o.phase = models::Phase::decode;
  o.batch = 8;
  o.context = 2048;
  return o;
}

// What applying one --change to m says: its error, or "(no error)".
std::string error_of(const models::ModelSpec& m, const std::string& change) {
  try {
    apply_changes(m, {parse_change(change)});
  } catch (const models::ModelError& e) {
    return std::string(e.what());
  }
  return "(no error)";
}

TEST(CodesignLayerType, NamesFromTheGenerator) {
  EXPECT_EQ(layer_type("layers.3.attn.q_proj"), "q_proj");
  EXPECT_EQ(layer_type("layers.12.attn.o_proj"), "o_proj");
  EXPECT_EQ(layer_type("layers.0.attn.core"), "attention");
  EXPECT_EQ(layer_type("layers.0.mlp.down_proj"), "mlp.down_proj");
  EXPECT_EQ(layer_type("layers.0.mlp.down_proj.grad_lhs"), "mlp.down_proj");  // backward
  EXPECT_EQ(layer_type("layers.1.mlp.router"), "moe.router");
  EXPECT_EQ(layer_type("layers.1.mlp.experts.g0.up_proj"), "moe.experts.up_proj");
  EXPECT_EQ(layer_type("lm_head"), "lm_head");
  EXPECT_EQ(layer_type("embed"), "embed");
  EXPECT_EQ(layer_type("layers.0.attn_norm"), "");
  EXPECT_EQ(layer_type("layers.0.attn.q_rope"), "");
  EXPECT_EQ(layer_type("stages.2.blocks.3.2.conv"), "stages.2.2.conv");  // ResNet
  EXPECT_EQ(layer_type("stem.conv"), "stem.conv");
}

// SDXL's UNet: one type per role over levels and blocks, and the widths
// and head_dim that do not fill each generation's MXU.
TEST(CodesignLayerType, UnetRolesAndDimensions) {
  EXPECT_EQ(layer_type("down_blocks.1.layers.0.attention.blocks.3.attn1.to_q"), "attn1.to_q");
  EXPECT_EQ(layer_type("up_blocks.0.layers.2.attention.blocks.9.attn1.core"), "attn1");
  EXPECT_EQ(layer_type("mid_block.attention.blocks.0.attn2.core"), "attn2");
  EXPECT_EQ(layer_type("up_blocks.1.layers.0.attention.blocks.1.ff.proj_gate"), "ff.proj_gate");
  EXPECT_EQ(layer_type("up_blocks.2.layers.1.resnet.conv1"), "resnet.conv1");
  EXPECT_EQ(layer_type("mid_block.resnet_1.conv2"), "resnet.conv2");
  EXPECT_EQ(layer_type("down_blocks.2.layers.0.attention.proj_in"), "proj_in");
  EXPECT_EQ(layer_type("down_blocks.0.downsample"), "downsample");
  EXPECT_EQ(layer_type("up_blocks.0.upsample.conv"), "upsample.conv");
  EXPECT_EQ(layer_type("conv_in"), "conv_in");
  const auto m = models::load_model("sdxl-unet");
  auto keys = [](const std::vector<DimFinding>& d) {
    std::vector<std::string> k;
    for (const auto& f : d) k.push_back(f.key + " " + std::to_string(f.value) + "->" + std::to_string(f.rounded));
    return k;
  };
  EXPECT_EQ(keys(misaligned_dims(m, 256)),
            (std::vector<std::string>{"channels[0] 320->512", "channels[1] 640->768", "head_dim 64->256"}));
  EXPECT_EQ(keys(misaligned_dims(m, 128)), (std::vector<std::string>{"channels[0] 320->384", "head_dim 64->128"}));
  EXPECT_TRUE(divisibility(m).empty());  // data parallel only
}

TEST(CodesignPadding, PerDimension) {
  EXPECT_EQ(round_up(100, 128), 128);
  EXPECT_EQ(round_up(8000, 256), 8192);
  EXPECT_DOUBLE_EQ(pad_waste(100, 128), 1 - 100.0 / 128);
  EXPECT_DOUBLE_EQ(pad_waste(8000, 256), 1 - 8000.0 / 8192);
  EXPECT_DOUBLE_EQ(pad_waste(4096, 256), 0);
}

TEST(CodesignLayers, CustomModelOnV6e) {
  const auto cfg = load_tpu_config("v6e");
  const auto wl = models::generate(custom(), decode8());
  const auto layers = check_layers(wl, cfg);
  auto find = [&](const std::string& t) {
    auto it = std::find_if(layers.begin(), layers.end(), [&](const LayerTypeCheck& l) { return l.type == t; });
    EXPECT_NE(it, layers.end()) << t;
    return *it;
  };
  // q_proj: 8 tokens x hidden 3000 x (30 heads x 100) on a 256x256 array.
  const auto q = find("q_proj");
  EXPECT_EQ(q.ops, 24);
  EXPECT_EQ(q.shape.m, 8);
  EXPECT_EQ(q.shape.k, 3000);
  EXPECT_EQ(q.shape.n, 3000);
  EXPECT_EQ(q.k_padded, 3072);
  EXPECT_DOUBLE_EQ(q.total_waste, 1 - (3000.0 * 3000) / (3072.0 * 3072));
  // k_proj: N = 6 KV heads x 100 = 600 -> 768.
  EXPECT_EQ(find("k_proj").n_padded, 768);
  // Attention scores per (sequence, head): 1 query x head_dim 100 x 2048 keys.
  const auto at = find("attention");
  EXPECT_EQ(at.shape.batch, 8 * 30);
  EXPECT_EQ(at.shape.k, 100);
  EXPECT_EQ(at.shape.n, 2048);
  EXPECT_EQ(at.k_padded, 256);
  const auto up = find("mlp.up_proj");
  EXPECT_EQ(up.shape.n, 8000);
  EXPECT_EQ(up.n_padded, 8192);
  // Decode at batch 8 is far below the ridge: q_proj does 2x8x3000x3000
  // FLOPs on a 3000x3000 bf16 weight (18 MB) plus small activations.
  const double ridge = arch::derive(cfg).ridge_point.at(arch::DType::bf16);
  EXPECT_DOUBLE_EQ(q.ridge, ridge);
  EXPECT_NEAR(q.intensity, 2.0 * 8 * 3000 * 3000 / (2.0 * (3000 * 3000 + 2 * 8 * 3000)), 1e-9);
  EXPECT_FALSE(q.compute_bound());
}

TEST(CodesignLayers, ResNetConvAsIm2col) {
  // The stem: 7x7 conv, stride 2, 3 -> 64 channels on 224x224: output
  // 112x112, so M = batch x 112 x 112, K = 7 x 7 x 3 = 147 (pads to 256 on
  // a 128-row array), N = 64 (pads to 128).
  models::PhaseOptions o;
  o.phase = models::Phase::infer;
  o.batch = 2;
  const auto wl = models::generate(models::load_model("resnet50"), o);
  const auto layers = check_layers(wl, load_tpu_config("v5e"));
  ASSERT_FALSE(layers.empty());
  EXPECT_EQ(layers[0].type, "stem.conv");
  EXPECT_EQ(layers[0].shape.m, 2 * 112 * 112);
  EXPECT_EQ(layers[0].shape.k, 147);
  EXPECT_EQ(layers[0].shape.n, 64);
  EXPECT_EQ(layers[0].k_padded, 256);
  EXPECT_EQ(layers[0].n_padded, 128);
}

TEST(CodesignModel, DimsDivisibilityKv) {
  const auto m = custom();
  auto dims = misaligned_dims(m, 256);
  std::vector<std::string> keys;
  for (const auto& d : dims) keys.push_back(d.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"hidden", "attention.head_dim", "ffn.size"}));  // vocab 32000 = 125 x 256
  EXPECT_EQ(misaligned_dims(m, 128).size(), 3u);  // 3000, 100 and 8000 are no multiples of 128 either
  const auto div = divisibility(m);
  ASSERT_GE(div.size(), 2u);
  EXPECT_EQ(div[0].key, "attention.heads");
  EXPECT_EQ(div[0].divides, (std::vector<int>{2}));
  EXPECT_EQ(div[1].key, "attention.kv_heads");
  EXPECT_EQ(div[1].divides, (std::vector<int>{2}));
  // K and V, 6 KV heads of 100, bf16, 24 layers.
  const auto cfg = load_tpu_config("v6e");
  const KvFit kv = kv_fit(m, decode8(), cfg);
  EXPECT_EQ(kv.bytes_per_token, 2u * 6 * 100 * 2 * 24);
  const auto weights = models::memory_footprint(m, decode8()).weights;
  EXPECT_EQ(kv.max_batch, static_cast<std::int64_t>((cfg.hbm.capacity_bytes - weights) / (kv.bytes_per_token * 2048)));
}

TEST(CodesignModel, SliceShapes) {
  const auto v5e = load_tpu_config("v5e");
  const auto v5p = load_tpu_config("v5p");
  EXPECT_EQ(slice_shape(1, v5e), "1x1");
  EXPECT_EQ(slice_shape(8, v5e), "2x4");
  EXPECT_EQ(slice_shape(16, v5e), "4x4");
  EXPECT_EQ(slice_shape(64, v5p), "4x4x4");
  EXPECT_EQ(slice_shape(32, v5p), "2x4x4");
}

TEST(CodesignCandidates, CustomModel) {
  const auto c = candidates(custom(), 256);
  std::vector<std::string> ids;
  for (const auto& x : c) ids.push_back(x.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"hidden=3072", "ffn.size=8192", "attention.head_dim=128",
                                           "attention.kv_heads=2", "attention.kv_heads=3", "weights=int8"}));
  // On a 128-wide MXU d_ff rounds to 8064.
  const auto c128 = candidates(custom(), 128);
  EXPECT_EQ(c128[1].id, "ffn.size=8064");
  // Every candidate builds a valid model.
  for (const auto& x : c) EXPECT_NO_THROW(models::generate(apply_changes(custom(), x.changes), decode8())) << x.id;
}

TEST(CodesignCandidates, AlignedModelHasNoShapeChange) {
  // 4096, 128, 14336 = 56 x 256, 128256 = 501 x 256: nothing to round; 8
  // KV heads are a power of two; halving them (GQA group 4 -> 8) remains.
  const auto c = candidates(models::load_model("llama3-8b"), 256);
  ASSERT_EQ(c.size(), 3u);
  // head_dim 128 half fills a 256-wide MXU: 16 heads of 256 over 4 KV
  // heads keep the model's widths, parameters and KV cache.
  EXPECT_EQ(c[0].id, "attention.head_dim=256,heads=16");
  const models::ModelSpec base = models::load_model("llama3-8b"), wide = apply_changes(base, c[0].changes);
  EXPECT_EQ(wide.transformer.attention.heads, 16);
  EXPECT_EQ(wide.transformer.attention.kv_heads, 4);
  EXPECT_EQ(models::count_params(wide).total, models::count_params(base).total);
  EXPECT_EQ(models::kv_cache_bytes_per_token(wide, arch::DType::bf16),
            models::kv_cache_bytes_per_token(base, arch::DType::bf16));
  models::PhaseOptions prefill;
  prefill.phase = models::Phase::prefill;
  prefill.seq_len = 4096;
  // The MXU's multiply-adds are the same (the softmax's work per score
  // halves with the scores).
  auto macs = [&](const models::ModelSpec& m) {
    const workloads::Workload w = models::generate(m, prefill);
    std::uint64_t n = 0;
    for (const auto& op : w.ops) n += workloads::op_cost(w, op).macs;
    return n;
  };
  EXPECT_EQ(macs(wide), macs(base));
  EXPECT_NO_THROW(models::generate(wide, decode8()));
  EXPECT_EQ(c[1].id, "attention.kv_heads=4");
  EXPECT_EQ(c[2].id, "weights=int8");
  // On a 128-wide MXU head_dim 128 already fills it.
  for (const auto& x : candidates(base, 128)) EXPECT_EQ(x.id.find("attention.head_dim=256"), std::string::npos);
}

TEST(CodesignCandidates, NarrowHeadsFillTheMxu) {
  // BERT-base: 12 heads of 64. On a 128-wide MXU: 6 heads of 128 (beside
  // the head_dim 128 that keeps 12 heads); on a 256-wide one, 3 of 256.
  // Either keeps the parameters and builds a valid model.
  const models::ModelSpec bert = models::load_model("bert-base");
  auto find = [](const std::vector<Candidate>& c, const std::string& id) {
    const auto it = std::find_if(c.begin(), c.end(), [&](const Candidate& x) { return x.id == id; });
    return it == c.end() ? nullptr : &*it;
  };
  const auto c128 = candidates(bert, 128), c256 = candidates(bert, 256);
  // Checking generations of both widths lists one per width, each marked
  // for the generations it is simulated on; alone, for every generation.
  const auto both = candidates(bert, 256, {256, 128, 256});
  ASSERT_NE(find(both, "attention.head_dim=128,heads=6"), nullptr);
  ASSERT_NE(find(both, "attention.head_dim=256,heads=3"), nullptr);
  EXPECT_EQ(find(both, "attention.head_dim=128,heads=6")->mxu, 128);
  EXPECT_EQ(find(both, "attention.head_dim=256,heads=3")->mxu, 256);
  EXPECT_EQ(find(c256, "attention.head_dim=256,heads=3")->mxu, 0);
  EXPECT_EQ(find(c256, "attention.head_dim=128,heads=6"), nullptr);
  ASSERT_NE(find(c128, "attention.head_dim=128"), nullptr);
  for (const auto* x : {find(c128, "attention.head_dim=128,heads=6"), find(c256, "attention.head_dim=256,heads=3")}) {
    ASSERT_NE(x, nullptr);
    const models::ModelSpec wide = apply_changes(bert, x->changes);
    EXPECT_EQ(wide.transformer.attention.heads * wide.transformer.attention.head_dim, 768) << x->id;
    EXPECT_EQ(wide.transformer.attention.kv_heads, wide.transformer.attention.heads) << x->id;
    EXPECT_EQ(models::count_params(wide).total, models::count_params(bert).total) << x->id;
    models::PhaseOptions o;
    o.phase = models::Phase::infer;
    o.batch = 2;
    o.seq_len = 128;
    EXPECT_NO_THROW(models::generate(wide, o)) << x->id;
  }
}

TEST(CodesignCandidates, BadChanges) {
  EXPECT_THROW(parse_change("ffn.size"), models::ModelError);
  EXPECT_THROW(parse_change("ffn.size=-3"), models::ModelError);
  try {
    apply_changes(custom(), {parse_change("ffn.sise=8192")});
    FAIL();
  } catch (const models::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("ffn.size"), std::string::npos) << e.what();  // suggestion
  }
  try {
    apply_changes(custom(), {parse_change("attention.kv_heads=4")});
    FAIL();
  } catch (const models::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("divisor of attention.heads (30)"), std::string::npos) << e.what();
  }
}

// SDXL's heads of 64: head_dim 128 (half the heads) is offered where every
// attention width (640, 1280) divides; 256 is not (640 / 256); the change
// keeps every parameter, and a head_dim that does not divide a width, or a
// transformer key, is refused by name.
TEST(CodesignCandidates, UnetHeadDimFillsTheMxu) {
  const auto m = models::load_model("sdxl-unet");
  const auto c = candidates(m, 256, {128, 256});
  std::vector<std::string> ids;
  for (const auto& x : c) ids.push_back(x.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"head_dim=128", "channels[0]=384", "channels[0]=256", "channels[0]=512",
                                           "channels[0]=256", "channels[1]=768", "channels[1]=512", "weights=int8"}));
  ASSERT_EQ(c[0].changes.size(), 1u);
  EXPECT_EQ(c[0].changes[0].key, "head_dim");
  EXPECT_EQ(c[0].changes[0].value, 128);
  EXPECT_EQ(c[0].title, "head_dim 64 -> 128, heads / 2 (fills MXU 128)");
  const auto changed = apply_changes(m, c[0].changes);
  EXPECT_EQ(changed.unet.head_dim, 128);
  EXPECT_EQ(models::count_params(changed).total, models::count_params(m).total);
  EXPECT_NE(error_of(m, "head_dim=256").find("a divisor of every attention level's width (640)"), std::string::npos);
  EXPECT_NE(error_of(m, "hidden=4096").find("a UNet key: head_dim or channels[i], i < 3"), std::string::npos);
}

// A UNet level whose width is no MXU multiple is offered rounded up, per
// MXU width (SDXL's 320 -> 384 for 128, 512 for 256; 640 -> 768 for 256
// only; 1280 is a multiple of both), marked with the width it fills; the
// change widens that level's parameters and keeps the others' shapes;
// widths that break the model's rules (norm groups, head_dim) or index no
// level are refused by name.
TEST(CodesignCandidates, UnetLevelWidthsRoundToTheMxu) {
  const auto m = models::load_model("sdxl-unet");
  const auto c = candidates(m, 256, {128, 256});
  std::map<std::string, int> mxu;
  for (const auto& x : c) mxu[x.id] = x.mxu;
  EXPECT_EQ(mxu.at("channels[0]=384"), 128);
  EXPECT_EQ(mxu.at("channels[0]=512"), 256);
  EXPECT_EQ(mxu.at("channels[1]=768"), 256);
  EXPECT_EQ(mxu.count("channels[1]=640"), 0u);
  EXPECT_EQ(mxu.count("channels[2]=1280"), 0u);
  const auto it = std::find_if(c.begin(), c.end(), [](const Candidate& x) { return x.id == "channels[1]=768"; });
  ASSERT_NE(it, c.end());
  EXPECT_EQ(it->title, "channels[1] 640 -> 768 (multiple of MXU 256)");
  const auto wider = apply_changes(m, it->changes);
  EXPECT_EQ(wider.unet.channels, (std::vector<std::int64_t>{320, 768, 1280}));
  EXPECT_GT(models::count_params(wider).total, models::count_params(m).total);
  // The changed model builds: its level-1 attention splits 768 into 12 heads of 64.
  models::PhaseOptions o;
  o.phase = models::Phase::infer;
  o.batch = 1;
  o.image_size = 256;
  const auto w = models::generate(wider, o);
  bool twelve_heads = false;
  for (const auto& op : w.ops)
    if (op.kind == workloads::OpKind::attention && w.find_tensor(op.inputs[0])->shape[2] == 12) twelve_heads = true;
  EXPECT_TRUE(twelve_heads);
  EXPECT_NE(error_of(m, "channels[0]=330").find("a multiple of norm_groups 32"), std::string::npos);
  EXPECT_NE(
      error_of(m, "channels[1]=672").find("channels[1]: expected a multiple of head_dim 64 (the level has attention)"),
      std::string::npos);
  EXPECT_EQ(error_of(m, "channels[0]=330").find("did you mean"), std::string::npos);  // the key is right
  EXPECT_NE(error_of(m, "channels[3]=512").find("a UNet key"), std::string::npos);
  EXPECT_NE(error_of(m, "channels[x]=512").find("a UNet key"), std::string::npos);
  EXPECT_EQ(error_of(m, "channels[0]=256"), "(no error)");
}

TEST(ReportSvg, ScalesAndBars) {
  report::Scale lin = report::nice_scale(0, 9.3, 100, 200, false);
  EXPECT_DOUBLE_EQ(lin.lo, 0);
  EXPECT_GE(lin.hi, 9.3);
  EXPECT_DOUBLE_EQ(lin(lin.lo), 100);
  EXPECT_DOUBLE_EQ(lin(lin.hi), 200);
  report::Scale lg = report::nice_scale(3, 4000, 0, 100, true);
  EXPECT_DOUBLE_EQ(lg.lo, 1);
  EXPECT_DOUBLE_EQ(lg.hi, 1e4);
  EXPECT_DOUBLE_EQ(lg(100), 50);
  EXPECT_EQ(lg.ticks(), (std::vector<double>{1, 10, 100, 1000, 10000}));
  const std::string svg = report::bar_chart("t", {"a<b", "c"}, {{"s", "#000", {1.5, 3}}}, "ms");
  EXPECT_NE(svg.find("data-category=\"a&lt;b\" data-value=\"1.5\""), std::string::npos);
  EXPECT_NE(svg.find("data-value=\"3\""), std::string::npos);
  EXPECT_EQ(report::xml_escape("<&\">"), "&lt;&amp;&quot;&gt;");
}

}  // namespace
}  // namespace tpusim::sim::codesign
