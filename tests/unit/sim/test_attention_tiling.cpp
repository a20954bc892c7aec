// The attention block search with blocks an op fixes (splash attention's
// block_q and block_kv, AttentionAttrs::blocks): one query head per step
// and exactly the fixed blocks (clamped to the sequence), nothing when
// they exceed the VMEM budget, and never an estimate below the searched
// kernel's, whose candidates include the fixed ones; and a batched
// kernel's sequences per step (AttentionAttrs::max_step_seqs).
#include <gtest/gtest.h>

#include "sim/config/config_loader.h"
#include "sim/lowering/attention_tiling.h"

using namespace tpusim;
using sim::lowering::AttentionShape;
using sim::lowering::choose_attention_tiling;

namespace {

sim::lowering::ChipFigures figures(const arch::TpuConfig& cfg) {
  sim::LoweringOptions opt;
  return sim::lowering::chip_figures(cfg, opt);
}

AttentionShape mha(std::int64_t len, std::int64_t heads) {
  AttentionShape a;
  a.q_len = a.kv_len = len;
  a.heads = a.kv_heads = heads;
  a.causal = true;
  return a;
}

}  // namespace

TEST(AttentionTiling, FixedBlocksAreTakenWithOneHeadPerStep) {
  for (const char* arch_name : {"v5e", "v5p", "v6e"}) {
    const arch::TpuConfig cfg = sim::load_tpu_config(arch_name);
    const auto f = figures(cfg);
    AttentionShape a = mha(8192, 8);
    a.blocks = {512, 1024};
    const auto t = choose_attention_tiling(a, f, f.cores);
    ASSERT_TRUE(t) << arch_name;
    EXPECT_EQ(t->hb, 1) << arch_name;
    EXPECT_EQ(t->bp, 512) << arch_name;
    EXPECT_EQ(t->bkv, 1024) << arch_name;
    EXPECT_LE(t->vmem, f.vmem_budget) << arch_name;
    // Causal: query block i (of 16) visits the key blocks of 1024 up to its
    // diagonal, i / 2 + 1 of them; 8 heads.
    std::int64_t pairs = 0;
    for (std::int64_t i = 0; i < 16; ++i) pairs += i / 2 + 1;
    EXPECT_EQ(t->steps, 8 * pairs) << arch_name;
    // Blocks longer than the sequence are clamped to it.
    AttentionShape s = mha(100, 2);
    s.blocks = {512, 512};
    const auto ts = choose_attention_tiling(s, f, f.cores);
    ASSERT_TRUE(ts) << arch_name;
    EXPECT_EQ(ts->bp, 100) << arch_name;
    EXPECT_EQ(ts->bkv, 128 > f.cols ? 128 : f.cols) << arch_name;
  }
}

TEST(AttentionTiling, FixedBlocksBeyondTheBudgetAreRefused) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  const auto f = figures(cfg);
  AttentionShape a = mha(65536, 1);
  a.blocks = {65536, 65536};  // f32 scores of 65536 x 128 x 3 alone: 96 MiB
  EXPECT_FALSE(choose_attention_tiling(a, f, f.cores));
}

TEST(AttentionTiling, SearchedBlocksNeverEstimateSlowerThanFixedOnes) {
  for (const char* arch_name : {"v5e", "v5p", "v6e"}) {
    const arch::TpuConfig cfg = sim::load_tpu_config(arch_name);
    const auto f = figures(cfg);
    for (std::int64_t b : {512, 1024, 2048}) {
      AttentionShape fixed = mha(8192, 8);
      fixed.blocks = {b, b};
      const auto tf = choose_attention_tiling(fixed, f, f.cores);
      const auto ts = choose_attention_tiling(mha(8192, 8), f, f.cores);
      ASSERT_TRUE(tf && ts) << arch_name << " " << b;
      EXPECT_LE(ts->est_cycles, tf->est_cycles) << arch_name << " " << b;
    }
  }
}

// A batched kernel (max_step_seqs > 1): decode's many short sequences take
// several a step, never more than the bound or the batch, each step's
// blocks of all of them within the VMEM budget, one step per (batch
// block, head group, key block); its estimate is never above the
// one-sequence kernel's, whose candidates it includes; fixed blocks stay
// one sequence a step.
TEST(AttentionTiling, BatchedKernelTakesSeveralSequencesAStep) {
  for (const char* arch_name : {"v5e", "v6e", "v7"}) {
    const arch::TpuConfig cfg = sim::load_tpu_config(arch_name);
    const auto f = figures(cfg);
    for (std::int64_t batch : {5, 64, 256}) {
      AttentionShape a;
      a.batch = batch;
      a.q_len = 1;
      a.heads = 32;
      a.kv_heads = 8;
      a.kv_len = 256;
      const auto one = choose_attention_tiling(a, f, f.cores);
      a.max_step_seqs = 16;
      const auto t = choose_attention_tiling(a, f, f.cores);
      ASSERT_TRUE(one && t) << arch_name << " " << batch;
      EXPECT_EQ(one->sb, 1);
      EXPECT_GT(t->sb, 1) << arch_name << " " << batch;
      EXPECT_LE(t->sb, std::min<std::int64_t>(16, batch)) << arch_name << " " << batch;
      EXPECT_LE(t->vmem, f.vmem_budget) << arch_name << " " << batch;
      EXPECT_LE(t->est_cycles, one->est_cycles) << arch_name << " " << batch;
      const std::int64_t key_blocks = (a.kv_len + t->bkv - 1) / t->bkv;
      EXPECT_EQ(t->steps, (batch + t->sb - 1) / t->sb * (a.kv_heads / t->hb) * key_blocks) << arch_name;
    }
    AttentionShape fixed = mha(1024, 8);
    fixed.batch = 8;
    fixed.blocks = {512, 512};
    fixed.max_step_seqs = 16;
    const auto tf = choose_attention_tiling(fixed, f, f.cores);
    ASSERT_TRUE(tf) << arch_name;
    EXPECT_EQ(tf->sb, 1) << arch_name;
  }
}
