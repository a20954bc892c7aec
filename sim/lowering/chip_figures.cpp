#include "sim/lowering/chip_figures.h"

#include <algorithm>

#include "arch/common/derived.h"

namespace tpusim::sim::lowering {

double ChipFigures::throughput(arch::DType t) const {
  auto it = cfg->mxu.throughput.find(t);
  return it == cfg->mxu.throughput.end() ? 0.0 : it->second;
}

double ChipFigures::peak_macs(arch::DType t) const { return arch::peak_flops(*cfg, t) / 2.0 / clock_hz; }

ChipFigures chip_figures(const arch::TpuConfig& cfg, const LoweringOptions& opt) {
  ChipFigures f;
  f.cfg = &cfg;
  f.cores = std::max(1, cfg.chip.tensorcores);
  f.mxus = std::max(1, cfg.mxu.count);
  f.rows = cfg.mxu.rows;
  f.cols = cfg.mxu.cols;
  f.xlus = cfg.xlu.count;
  f.clock_hz = cfg.chip.clock_hz;
  f.hbm_bytes_per_cycle = arch::hbm_peak_bandwidth(cfg.hbm) / cfg.chip.clock_hz;
  if (cfg.cmem.present && cfg.cmem.size_bytes > 0) f.cmem_bytes_per_cycle = cfg.cmem.bandwidth / cfg.chip.clock_hz;
  const auto& h = cfg.hbm;
  f.block_latency = (h.controller_latency + h.t.tRCD + h.t.tCL) * cfg.chip.clock_hz + 16;
  f.step_overhead = cfg.kernel.step_overhead * cfg.chip.clock_hz;
  f.launch_overhead = cfg.kernel.launch_overhead * cfg.chip.clock_hz;
  std::uint64_t budget =
      cfg.kernel.scoped_vmem > 0 ? std::min(cfg.kernel.scoped_vmem, cfg.vmem.size_bytes) : cfg.vmem.size_bytes;
  if (opt.vmem_budget_fraction < 1.0)
    budget = std::min<std::uint64_t>(
        budget, static_cast<std::uint64_t>(static_cast<double>(cfg.vmem.size_bytes) * opt.vmem_budget_fraction));
  f.vmem_budget = budget;
  return f;
}

}  // namespace tpusim::sim::lowering
