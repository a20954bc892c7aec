// A gather's chunks fit the kernel's VMEM budget (sim/lowering/
// lower_memory_ops.cpp, lower_gather): a MoE dispatch moves every token's
// row once per chosen expert, gigabytes a layer, and eight chunks a core
// made each chunk a block of hundreds of MiB (DeepSeek-V3's training step
// on v7 reported a VMEM peak of 448 MiB on a 64 MiB core). A small lookup
// keeps its eight chunks a core.
#include <gtest/gtest.h>

#include <string>

#include "sim/config/config_loader.h"
#include "sim/lowering/lowering.h"
#include "workloads/ir/builder.h"

using namespace tpusim;

namespace {

// Scoped VMEM of the config (both configs below set it under 3/4 of VMEM,
// the lowering's other limit).
std::uint64_t budget(const arch::TpuConfig& cfg) { return cfg.kernel.scoped_vmem; }

sim::OpPlan gather_plan(const std::string& arch, std::int64_t vocab, std::int64_t width, std::int64_t lookups) {
  workloads::WorkloadBuilder b("gather");
  auto table = b.input("table", {vocab, width}, arch::DType::bf16);
  auto idx = b.input("idx", {lookups}, arch::DType::f32);
  b.mark_output(b.gather("g", table, idx));
  const auto lowered = sim::lower(b.build(), sim::load_tpu_config(arch));
  for (const auto& p : lowered.ops)
    if (p.name == "g") return p;
  ADD_FAILURE() << "no plan for the gather";
  return {};
}

}  // namespace

// DeepSeek-V3's dispatch on one v7 chip: 65,536 tokens x 8 experts rows of
// 7168 bf16 (14 KiB), 7.5 GB.
TEST(GatherBlocks, LargeDispatchFitsTheVmemBudget) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v7");
  ASSERT_GT(budget(cfg), 0u);
  const sim::OpPlan p = gather_plan("v7", 65536, 7168, 65536 * 8);
  EXPECT_GT(p.vmem_peak, budget(cfg) / 2);  // blocks as large as fit
  EXPECT_LE(p.vmem_peak, budget(cfg));
}

TEST(GatherBlocks, SmallLookupKeepsEightChunksACore) {
  const arch::TpuConfig cfg = sim::load_tpu_config("v5e");
  const std::int64_t lookups = 4096;
  const sim::OpPlan p = gather_plan("v5e", 32000, 4096, lookups);
  const int cores = cfg.sparsecores > 0 ? cfg.sparsecores : cfg.chip.tensorcores;
  const std::uint64_t row = 4096 * 2;
  EXPECT_EQ(p.vmem_peak, 2 * row * static_cast<std::uint64_t>(lookups / (cores * 8)));
  EXPECT_LE(p.vmem_peak, budget(cfg));
}
