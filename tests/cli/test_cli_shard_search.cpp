// `tpusim shard-search` end to end, against the rules of thumb of the JAX
// scaling book, "How to Scale Your Model", part 5 "How to Parallelize a
// Transformer for Training" (https://jax-ml.github.io/scaling-book/training/):
//  - FSDP all-gathers every weight in forward and backward and
//    reduce-scatters its gradient, a cost that does not shrink with the
//    batch, while compute grows with the tokens per chip; it is
//    communication-bound below a per-chip batch of about alpha = C / W_ici
//    tokens (C the chip's peak FLOP/s, W_ici the bidirectional ICI
//    bandwidth of the axis);
//  - tensor (Megatron) parallelism of degree Y over one axis moves
//    activations in proportion to the tokens, and its compute per token
//    shrinks as F / Y; it stops paying once Y > F / alpha.
// Each test derives alpha from the shipped v5p config, builds a small
// decoder (2 layers, hidden 1024) and searches a 4-chip line (4x1x1, one
// wrapping axis) at a batch or d_ff a factor 4 on either side of the
// threshold, then checks the simulated bottleneck and ranking flip there.
// The simulated crossovers sit inside the factor-4 margin, not at alpha
// exactly (docs/codesign.md gives them): the rules count MXU FLOPs at peak.
// Also: enumeration without duplicates, meshes the model cannot shard or
// that do not fit, and the layer-sampling error bound.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "../unit/sim/config_test_util.h"
#include "arch/common/derived.h"
#include "cli_test_util.h"
#include "csv_rows.h"
#include "sim/config/config_loader.h"

namespace {

using tpusim::sim::testing::TempDir;
using Rows = std::vector<std::map<std::string, std::string>>;

std::string decoder(std::int64_t ffn, std::int64_t layers = 2, std::int64_t kv_heads = 8) {
  return "name: small\nfamily: decoder\nhidden: 1024\nlayers: " + std::to_string(layers) +
         "\nvocab: 1024\nmax_context: 65536\nnorm: rmsnorm\nposition: rotary\ntied_embeddings: false\n"
         "attention: {heads: 8, kv_heads: " +
         std::to_string(kv_heads) +
         ", head_dim: 128}\n"
         "ffn: {kind: swiglu, size: " +
         std::to_string(ffn) + "}\n";
}

// alpha = C / W_ici on v5p: bf16 peak over both directions of one link
// (a ring over one wrapping axis sends each way at once).
double alpha() {
  const auto cfg = tpusim::sim::load_tpu_config("v5p");
  return tpusim::arch::peak_flops(cfg, tpusim::arch::DType::bf16) /
         (2 * cfg.ici.link_bandwidth * cfg.ici.link_efficiency);
}

Rows search(const TempDir& t, const std::string& model, const std::string& args) {
  const std::string m = t.write("m.yaml", model);
  const auto r =
      tpusim::test::run_tpusim_in(t.path(), "shard-search --model " + m + " --arch v5p --phase train " + args +
                                                " --set hbm.model=calibrated --out " + t.path() + "/out");
  EXPECT_EQ(r.rc, 0) << r.err << r.out;
  return tpusim::test::rows_of(t.path() + "/out/shard_search.csv");
}

const std::map<std::string, std::string>& row(const Rows& rows, const std::string& mesh, bool sp = false) {
  for (const auto& r : rows)
    if (r.at("mesh") == mesh && r.at("sequence_parallel") == (sp ? "1" : "0")) return r;
  throw std::runtime_error("no row for mesh " + mesh);
}

int rank_of(const Rows& rows, const std::string& mesh) { return std::stoi(row(rows, mesh).at("rank")); }

// Without --phase the search trains, but a model that does not train (a
// ResNet) is searched in infer rather than refused for the default it was
// never asked for; a phase it lacks, said, is still refused.
TEST(CliShardSearch, ModelWithoutTrainDefaultsToInfer) {
  TempDir t;
  const auto r = tpusim::test::run_tpusim_in(
      t.path(), "shard-search --model resnet50 --arch v5e --slice 2x2 --batch 8 --out " + t.path() + "/out");
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("resnet50 infer batch 8"), std::string::npos) << r.out;
  const Rows rows = tpusim::test::rows_of(t.path() + "/out/shard_search.csv");
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].at("mesh"), "data=4");
  const auto train = tpusim::test::run_tpusim_in(
      t.path(), "shard-search --model resnet50 --arch v5e --slice 2x2 --phase train --out " + t.path() + "/o2");
  EXPECT_NE(train.rc, 0);
  EXPECT_NE(train.err.find("train"), std::string::npos) << train.err;
}

TEST(CliShardSearch, FsdpIsIciBoundBelowPeakOverIciTokensPerChip) {
  const double a = alpha();  // 458.752e12 / (2 x 0.959 x 90e9) = 2658 tokens
  ASSERT_GT(a, 1000);
  // fsdp=4 with batch 4: one sequence per chip, so the tokens per chip are --seq.
  const auto lo = static_cast<std::int64_t>(std::round(a / 4)), hi = static_cast<std::int64_t>(std::round(4 * a));
  TempDir t1, t2;
  const Rows below = search(t1, decoder(4096), "--slice 4x1x1 --batch 4 --seq " + std::to_string(lo));
  const Rows above = search(t2, decoder(4096), "--slice 4x1x1 --batch 4 --seq " + std::to_string(hi));
  const auto& fb = row(below, "fsdp=4");
  const auto& fa = row(above, "fsdp=4");
  EXPECT_EQ(fb.at("bottleneck"), "ici");
  EXPECT_GT(std::stod(fb.at("ici_exposed_seconds")), std::stod(fb.at("compute_busy_seconds")));
  EXPECT_EQ(fa.at("bottleneck"), "compute");
  EXPECT_LT(std::stod(fa.at("ici_exposed_seconds")), 0.25 * std::stod(fa.at("compute_busy_seconds")));
  // The ranking flips with it. Below alpha, tensor parallelism whose own
  // traffic is hidden (F / Y = 10240 above alpha: compute-bound, the next
  // test) beats FSDP; above, FSDP is the best mesh. (With this model's
  // F / Y = 1024 below alpha, tensor=4 is ICI-bound too and the two come
  // within a few percent: the book ranks neither there.)
  TempDir t3, t4;
  const Rows wide_below = search(t3, decoder(40960), "--slice 4x1x1 --batch 4 --seq " + std::to_string(lo));
  const Rows wide_above = search(t4, decoder(40960), "--slice 4x1x1 --batch 4 --seq " + std::to_string(hi));
  EXPECT_EQ(row(wide_below, "tensor=4").at("bottleneck"), "compute");
  EXPECT_EQ(row(wide_below, "fsdp=4").at("bottleneck"), "ici");
  EXPECT_LT(rank_of(wide_below, "tensor=4"), rank_of(wide_below, "fsdp=4"));
  EXPECT_EQ(rank_of(wide_above, "fsdp=4"), 1);
  EXPECT_LT(rank_of(wide_above, "fsdp=4"), rank_of(wide_above, "tensor=4"));
  EXPECT_EQ(rank_of(above, "fsdp=4"), 1);
  EXPECT_LT(rank_of(above, "fsdp=4"), rank_of(above, "tensor=4"));
}

TEST(CliShardSearch, TensorParallelismStopsPayingBeyondFOverAlpha) {
  const double a = alpha();
  const int y = 4;  // tensor=4 over the one axis of 4x1x1
  // d_ff a factor 4 below and above Y x alpha, rounded up to a multiple of
  // 128 (the tensor split and the MXU tile divide it).
  auto round128 = [](double f) { return static_cast<std::int64_t>(std::ceil(f / 128) * 128); };
  const std::int64_t f_lo = round128(y * a / 4), f_hi = round128(4 * y * a);
  TempDir t1, t2;
  const Rows small = search(t1, decoder(f_lo), "--slice 4x1x1 --batch 4 --seq 1024");
  const Rows large = search(t2, decoder(f_hi), "--slice 4x1x1 --batch 4 --seq 1024");
  EXPECT_EQ(row(small, "tensor=4").at("bottleneck"), "ici");
  EXPECT_EQ(row(large, "tensor=4").at("bottleneck"), "compute");
  // Y > F / alpha: tensor=4 loses to the batch-split meshes; Y < F / alpha: it wins.
  EXPECT_GT(rank_of(small, "tensor=4"), rank_of(small, "fsdp=4"));
  EXPECT_GT(rank_of(small, "tensor=4"), rank_of(small, "data=4"));
  EXPECT_EQ(rank_of(large, "tensor=4"), 1);
}

TEST(CliShardSearch, EnumeratesEachMeshOnceAndSaysWhyOthersAreDropped) {
  TempDir t;
  // v5p 2x2x1: two non-wrapping axes of length 2 (x and y alike) and one of
  // length 1 (no axis). With data, fsdp, tensor and sequence: one axis over
  // both dims (4 meshes) or two distinct axes, one per dim (4 x 3 ordered
  // pairs, halved since x and y are alike: 6), 10 meshes; the 4 with
  // tensor > 1 again with sequence parallelism: 14 rows. An FFN of 4098
  // cannot split 4 ways: tensor=4 (with and without +sp) cannot shard
  // (2 KV heads would be replicated on 2 ranks each: not a reason).
  const Rows rows = search(t, decoder(4098, 2, 2), "--slice 2x2x1 --batch 4 --seq 256");
  ASSERT_EQ(rows.size(), 14u);
  std::set<std::string> seen;
  int cannot = 0;
  for (const auto& r : rows) {
    EXPECT_TRUE(seen.insert(r.at("mesh") + r.at("sequence_parallel")).second) << r.at("mesh");
    if (r.at("status") == "cannot_shard") {
      ++cannot;
      EXPECT_EQ(r.at("mesh"), "tensor=4");
      EXPECT_NE(r.at("reason").find("ffn.size"), std::string::npos) << r.at("reason");
    } else {
      EXPECT_EQ(r.at("status"), "ok") << r.at("reason");
    }
  }
  EXPECT_EQ(cannot, 2);
  EXPECT_EQ(row(rows, "fsdp=2,tensor=2").at("mesh"), "fsdp=2,tensor=2");  // axes in data, fsdp, tensor order

  // With 400 MB of HBM the replicated meshes (some 36 M parameters with
  // their gradients and Adam state, over 0.5 GB) do not fit while fsdp=4
  // does; each no_fit row carries the fit check's message.
  TempDir t2;
  const std::string m = t2.write("m.yaml", decoder(4096, 2, 8));
  const auto r =
      tpusim::test::run_tpusim_in(t2.path(), "shard-search --model " + m +
                                                 " --arch v5p --slice 2x2x1 --phase train --batch 4 --seq 256 "
                                                 "--set hbm.model=calibrated --set hbm.capacity=400MB --out " +
                                                 t2.path() + "/out");
  ASSERT_EQ(r.rc, 0) << r.err;
  const Rows fit = tpusim::test::rows_of(t2.path() + "/out/shard_search.csv");
  const auto& d = row(fit, "data=4");
  EXPECT_EQ(d.at("status"), "no_fit");
  EXPECT_NE(d.at("reason").find("does not fit"), std::string::npos) << d.at("reason");
  EXPECT_EQ(row(fit, "fsdp=4").at("status"), "ok");
  EXPECT_NE(r.out.find("no_fit: data=4"), std::string::npos) << r.out;
}

TEST(CliShardSearch, LayerSamplingMatchesTheFullRun) {
  // 12 layers simulated in full, and as 2 and 4 layers extrapolated to 12.
  // Every layer lowers to the same instructions, but where one layer's
  // tail overlaps the next one's head differs a little between 2, 4 and 12
  // layers: measured up to 2.0% on this small model (tensor=4 +sp), 2e-6%
  // on llama3-70b (docs/codesign.md); 2.5% bounds it, and the ranking must
  // not change.
  TempDir t1, t2;
  const Rows full = search(t1, decoder(4096, 12), "--slice 4x1x1 --batch 4 --seq 512");
  const Rows sampled = search(t2, decoder(4096, 12), "--slice 4x1x1 --batch 4 --seq 512 --sample-layers 2");
  ASSERT_EQ(full.size(), sampled.size());
  for (const auto& f : full) {
    if (f.at("status") != "ok") continue;
    const auto& s = row(sampled, f.at("mesh"), f.at("sequence_parallel") == "1");
    EXPECT_EQ(s.at("sampled_layers"), "2");
    for (const char* k : {"seconds", "compute_busy_seconds", "ici_busy_seconds", "mfu"})
      EXPECT_NEAR(std::stod(s.at(k)), std::stod(f.at(k)), 0.025 * std::stod(f.at(k))) << f.at("mesh") << " " << k;
    EXPECT_EQ(s.at("rank"), f.at("rank")) << f.at("mesh");
  }
}

// Local and global attention in a cycle of 3 layers (window 128, the third
// layer global) at seq 2048: --sample-layers 2 is taken as 3 (whole
// cycles), 3 and 6 of the 12 layers are simulated and extrapolated, within
// the same bound as a uniform model; 2 and 4 layers would have taken 1.5
// and 2 global layers where 12 have 4.
TEST(CliShardSearch, LayerSamplingTakesWholeCyclesOfLocalAndGlobalLayers) {
  TempDir t1, t2;
  std::string cyc = decoder(4096, 12);
  cyc.replace(cyc.find("head_dim: 128}"), 14, "head_dim: 128, sliding_window: 128, global_attention_every: 3}");
  const Rows full = search(t1, cyc, "--slice 4x1x1 --batch 4 --seq 2048 --no-sequence-parallel");
  const std::string m = t2.write("m.yaml", cyc);
  const auto r = tpusim::test::run_tpusim_in(t2.path(), "shard-search --model " + m +
                                                            " --arch v5p --phase train --slice 4x1x1 --batch 4 --seq "
                                                            "2048 --no-sequence-parallel --sample-layers 2 --set "
                                                            "hbm.model=calibrated --out " +
                                                            t2.path() + "/out");
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("layer sampling: 3 and 6 of 12 layers simulated, extrapolated linearly; --sample-layers 2 "
                       "taken as 3, whole periods of the model's 3-layer pattern"),
            std::string::npos)
      << r.out;
  const Rows sampled = tpusim::test::rows_of(t2.path() + "/out/shard_search.csv");
  for (const auto& f : full) {
    if (f.at("status") != "ok") continue;
    const auto& s = row(sampled, f.at("mesh"), f.at("sequence_parallel") == "1");
    EXPECT_EQ(s.at("sampled_layers"), "3");
    for (const char* k : {"seconds", "mfu"})
      EXPECT_NEAR(std::stod(s.at(k)), std::stod(f.at(k)), 0.025 * std::stod(f.at(k))) << f.at("mesh") << " " << k;
  }
}

// A model whose first layer is dense and the rest MoE keeps that layer in
// both sampled runs: 1 + 2 and 1 + 4 of its 10 layers, extrapolated from
// there. FLOPs are linear in the MoE layers, so each mesh's extrapolated
// model FLOPs (mfu x seconds) are the full run's; sampling 2 and 4 layers
// instead would miss by the dense layer's difference from an MoE one.
// (Times on a model this small also depend on how layers overlap: up to
// 4.7% here, under expert=4.)
TEST(CliShardSearch, LayerSamplingKeepsTheLeadingDenseLayers) {
  TempDir t1, t2;
  const std::string moe =
      decoder(4096, 10) + "moe: {experts: 4, top_k: 2, expert_ffn_size: 512, dense_layers_first: 1}\n";
  const Rows full = search(t1, moe, "--slice 4x1x1 --batch 4 --seq 512 --no-sequence-parallel");
  const std::string m = t2.write("m.yaml", moe);
  const auto r =
      tpusim::test::run_tpusim_in(t2.path(), "shard-search --model " + m +
                                                 " --arch v5p --phase train --slice 4x1x1 --batch 4 --seq 512 "
                                                 "--no-sequence-parallel --sample-layers 2 --set "
                                                 "hbm.model=calibrated --out " +
                                                 t2.path() + "/out");
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("layer sampling: 3 and 5 of 10 layers simulated (the first 1 in both)"), std::string::npos)
      << r.out;
  const Rows sampled = tpusim::test::rows_of(t2.path() + "/out/shard_search.csv");
  ASSERT_EQ(full.size(), sampled.size());
  int compared = 0;
  for (const auto& f : full) {
    if (f.at("status") != "ok") continue;
    const auto& s = row(sampled, f.at("mesh"));
    EXPECT_EQ(s.at("sampled_layers"), "2");
    const double model_s = std::stod(s.at("mfu")) * std::stod(s.at("seconds"));
    const double model_f = std::stod(f.at("mfu")) * std::stod(f.at("seconds"));
    EXPECT_NEAR(model_s, model_f, 1e-6 * model_f) << f.at("mesh");  // the CSV's 9 digits aside
    ++compared;
  }
  EXPECT_GE(compared, 2);
}

// --remat takes the named policies and MaxText's custom policy (a
// repeated option, since its entries are comma separated), and
// --fused-attention-backward reaches every simulation: each mesh is
// simulated once per policy; the custom policy that keeps q, k and v on
// the device recomputes less than full remat, which rebuilds the whole
// layer; the fused backward kernel (5 matmuls per score against 7) does
// fewer hardware FLOPs than the same search without it.
TEST(CliShardSearch, TakesCustomRematAndKernelOptions) {
  TempDir t1, t2;
  const std::string custom = "custom:decoder_layer_input=offload,query_proj=device,key_proj=device,value_proj=device";
  const std::string policies =
      "--slice 4x1x1 --batch 4 --seq 512 --no-sequence-parallel --remat full,qkv_proj_offloaded "
      "--remat custom:decoder_layer_input=offload,qkv_proj=device";
  const Rows fused = search(t1, decoder(4096), policies + " --fused-attention-backward");
  const Rows split = search(t2, decoder(4096), policies);
  std::map<std::string, std::set<std::string>> remats;  // mesh -> policies simulated
  for (const auto& r : fused) {
    ASSERT_EQ(r.at("status"), "ok") << r.at("mesh") << " " << r.at("reason");
    EXPECT_TRUE(remats[r.at("mesh")].insert(r.at("remat")).second) << r.at("mesh") << " " << r.at("remat");
  }
  ASSERT_FALSE(remats.empty());
  for (const auto& [mesh, set] : remats)
    EXPECT_EQ(set, (std::set<std::string>{"full", "qkv_proj_offloaded", custom})) << mesh;
  // hfu x seconds: the hardware FLOPs over the chip's peak.
  auto hw = [](const Rows& rows, const std::string& mesh, const std::string& remat) {
    for (const auto& r : rows)
      if (r.at("mesh") == mesh && r.at("remat") == remat) return std::stod(r.at("hfu")) * std::stod(r.at("seconds"));
    throw std::runtime_error("no row " + mesh + " " + remat);
  };
  for (const auto& [mesh, set] : remats) {
    EXPECT_LT(hw(fused, mesh, custom), hw(fused, mesh, "full")) << mesh;
    EXPECT_LT(hw(fused, mesh, "full"), hw(split, mesh, "full")) << mesh;
  }

  // MaxText's dropping MoE reaches every point, expert parallelism
  // included (its slots exchanged all_to_all): the same model FLOPs on
  // each mesh (mfu x seconds).
  TempDir t3;
  const Rows moe = search(t3, decoder(4096) + "moe: {experts: 4, top_k: 2, expert_ffn_size: 512}\n",
                          "--slice 4x1x1 --batch 4 --seq 512 --no-sequence-parallel --moe-capacity-factor 1.25");
  const auto& ep = row(moe, "expert=4");
  const auto& fs = row(moe, "fsdp=4");
  ASSERT_EQ(ep.at("status"), "ok") << ep.at("reason");
  ASSERT_EQ(fs.at("status"), "ok") << fs.at("reason");
  const double ep_model = std::stod(ep.at("mfu")) * std::stod(ep.at("seconds"));
  const double fs_model = std::stod(fs.at("mfu")) * std::stod(fs.at("seconds"));
  EXPECT_NEAR(ep_model, fs_model, 1e-3 * fs_model);

  // Dense attention reaches every point: each mesh does the same model
  // FLOPs as with the fused kernel (mfu x seconds; the CSV's rounding
  // aside). Its hardware FLOPs: every (query, key) pair, forward and two
  // gradient matmuls each (6 per pair and head dim), against the causal
  // pairs only but S and dP recomputed by the backward kernels (9): more
  // where a chip's queries see about half the pairs (512 positions, and
  // under sequence=4 too, whose balanced rank sees half the keys).
  TempDir t4, t5;
  const std::string plain = "--slice 4x1x1 --batch 4 --seq 512 --no-sequence-parallel";
  const Rows dense = search(t4, decoder(4096), plain + " --attention-kernel dense");
  const Rows flash = search(t5, decoder(4096), plain);
  int compared = 0;
  for (const auto& d : dense) {
    if (d.at("status") != "ok") continue;
    const auto& f = row(flash, d.at("mesh"));
    ASSERT_EQ(f.at("status"), "ok") << d.at("mesh");
    auto times = [](const std::map<std::string, std::string>& r, const char* k) {
      return std::stod(r.at(k)) * std::stod(r.at("seconds"));
    };
    EXPECT_GT(times(d, "hfu"), times(f, "hfu")) << d.at("mesh");
    EXPECT_NEAR(times(d, "mfu") / times(f, "mfu"), 1.0, 1e-3) << d.at("mesh");
    ++compared;
  }
  EXPECT_GE(compared, 2);

  // bf16 Adam state reaches every point: each mesh needs less memory per
  // chip (4 B of state per parameter instead of 12) for the same model
  // FLOPs.
  TempDir t6;
  const Rows bf16 = search(t6, decoder(4096), plain + " --optimizer-dtype bf16");
  int lighter = 0;
  for (const auto& b : bf16) {
    if (b.at("status") != "ok") continue;
    const auto& f = row(flash, b.at("mesh"));
    ASSERT_EQ(f.at("status"), "ok") << b.at("mesh");
    EXPECT_LT(std::stod(b.at("memory_per_chip_bytes")), std::stod(f.at("memory_per_chip_bytes"))) << b.at("mesh");
    EXPECT_NEAR(std::stod(b.at("mfu")) * std::stod(b.at("seconds")),
                std::stod(f.at("mfu")) * std::stod(f.at("seconds")),
                1e-3 * std::stod(f.at("mfu")) * std::stod(f.at("seconds")))
        << b.at("mesh");
    ++lighter;
  }
  EXPECT_GE(lighter, 2);
}

TEST(CliShardSearch, SplitDimsAddsMeshesOverPartsOfADimension) {
  // 4x1x1 (one wrapping axis of 4): whole, it carries one axis of 4 (data,
  // fsdp, tensor or sequence: 4 meshes). --split-dims adds the axis split
  // 2 x 2: its top part (chips 2 apart, a ring through the wraparound) to
  // one axis and its neighbours to the next, every ordered pair of
  // distinct axes: 12 more, each its own placement.
  TempDir t1, t2;
  const std::string args = "--slice 4x1x1 --batch 4 --seq 1024 --no-sequence-parallel";
  const Rows whole = search(t1, decoder(4096), args);
  const Rows split = search(t2, decoder(4096), args + " --split-dims");
  EXPECT_EQ(whole.size(), 4u);
  ASSERT_EQ(split.size(), 16u);
  std::set<std::string> meshes;
  for (const auto& r : split) {
    EXPECT_TRUE(meshes.insert(r.at("mesh")).second) << r.at("mesh");
    EXPECT_EQ(r.at("status"), "ok") << r.at("mesh") << ": " << r.at("reason");
  }
  for (const auto& r : whole) EXPECT_EQ(meshes.count(r.at("mesh")), 1u) << r.at("mesh");
  // The two orders place tensor differently (on neighbours, or on chips
  // two apart), so they are different simulations.
  EXPECT_NE(row(split, "fsdp=2,tensor=2").at("ici_busy_seconds"), row(split, "tensor=2,fsdp=2").at("ici_busy_seconds"));

  // On 4x4x1 (two rings of 4) the block variant adds meshes whose last
  // axis is a 2x2 block of neighbours and the others every second chip
  // along x and y, written with explicit parts: MaxText's hybrid ring.
  // Its row is what `run --mesh` with that text simulates.
  TempDir t3;
  const Rows block =
      search(t3, decoder(4096), "--slice 4x4x1 --batch 16 --seq 512 --no-sequence-parallel --split-dims");
  const std::string hybrid = "fsdp=4@x/2*y/2,tensor=4@x%2*y%2";
  const auto& h = row(block, hybrid);
  ASSERT_EQ(h.at("status"), "ok") << h.at("reason");
  const std::string m = t3.write("m2.yaml", decoder(4096));
  const auto r =
      tpusim::test::run_tpusim_in(t3.path(), "run --model " + m + " --arch v5p --slice 4x4x1 --mesh '" + hybrid +
                                                 "' --phase train --batch 16 --seq 512 "
                                                 "--set hbm.model=calibrated --quiet --out " +
                                                 t3.path() + "/run");
  ASSERT_EQ(r.rc, 0) << r.err;
  const Rows run = tpusim::test::rows_of(t3.path() + "/run/summary.csv");
  ASSERT_EQ(run.size(), 1u);
  EXPECT_EQ(run[0].at("seconds"), h.at("seconds"));
  // Every mesh text is distinct, and the default rule's meshes are there too.
  std::set<std::string> texts;
  for (const auto& b : block) EXPECT_TRUE(texts.insert(b.at("mesh")).second) << b.at("mesh");
  EXPECT_EQ(texts.count("fsdp=8,tensor=2"), 1u);
}

TEST(CliShardSearch, BadInputIsAUsageError) {
  TempDir t;
  auto rc = [&](const std::string& a) { return tpusim::test::run_tpusim_in(t.path(), "shard-search " + a).rc; };
  EXPECT_EQ(rc("--model llama3-8b --arch v5p --slice 4x4x4 --remat sometimes --out " + t.path() + "/o"), 2);
  EXPECT_EQ(rc("--model llama3-8b --arch v5p --slice 3x5x7 --out " + t.path() + "/o"), 2);
  EXPECT_EQ(rc("--model llama3-8b --arch v5p --slice 4x4x4 --phase decode --remat full --out " + t.path() + "/o"), 2);
  EXPECT_EQ(rc("--model llama3-8b --arch v5e --slice 1x1 --out " + t.path() + "/o"), 2);  // one chip: no mesh
  EXPECT_EQ(rc("--model llama3-8b --arch v5p --slice 4x4x4 --remat custom:query_proj=host --out " + t.path() + "/o"),
            2);
  EXPECT_EQ(rc("--model llama3-8b --arch v5p --slice 4x4x4 --phase prefill --fused-attention-backward --out " +
               t.path() + "/o"),
            2);
  EXPECT_EQ(
      rc("--model llama3-8b --arch v5p --slice 4x4x4 --phase prefill --optimizer-dtype bf16 --out " + t.path() + "/o"),
      2);
  // A dense model has no experts to drop tokens from: a model error.
  EXPECT_EQ(rc("--model llama3-8b --arch v5p --slice 4x4x4 --moe-capacity-factor 1.25 --out " + t.path() + "/o"), 2);
}

}  // namespace
