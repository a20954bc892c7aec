// See work_estimate.h.
#include "sim/engine/work_estimate.h"

#include <limits>
#include <variant>

#include "arch/common/derived.h"

namespace tpusim::sim {

namespace {
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) { return a > kMax - b ? kMax : a + b; }
std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) { return b != 0 && a > kMax / b ? kMax : a * b; }
std::uint64_t div_up(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }
}  // namespace

WorkEstimate estimate_work(const arch::TpuConfig& cfg, const arch::Program& program, int chips) {
  WorkEstimate e;
  const std::uint64_t atom = cfg.dma.request_bytes > 0 ? cfg.dma.request_bytes : 1;
  const double hbm_bw = arch::hbm_peak_bandwidth(cfg.hbm);
  double macs_seconds = 0, hbm_bytes = 0;
  std::uint64_t requests = 0, transfers = 0;
  for (const arch::Instr& in : program.instrs) {
    if (const auto* m = std::get_if<arch::MxuWork>(&in.work)) {
      const double peak_macs = arch::peak_flops(cfg, m->dtype) / 2;
      if (peak_macs > 0)
        macs_seconds += static_cast<double>(m->m) * static_cast<double>(m->k) * static_cast<double>(m->n) / peak_macs;
    } else if (const auto* d = std::get_if<arch::DmaWork>(&in.work)) {
      // As DmaEngineTiming plans it: an HBM side moves each row in whole
      // requests; an on-chip copy is paced in requests of its bytes.
      const bool hbm_side = d->src == arch::MemSpace::hbm || d->dst == arch::MemSpace::hbm;
      const std::uint64_t n = hbm_side ? sat_mul(div_up(d->row_bytes, atom), d->rows) : div_up(d->bytes(), atom);
      requests = sat_add(requests, n);
      ++transfers;
      hbm_bytes += static_cast<double>(d->hbm_bytes());
    }
  }
  const auto c = static_cast<std::uint64_t>(chips > 0 ? chips : 1);
  e.instructions = sat_mul(program.instrs.size(), c);
  e.dma_requests = sat_mul(requests, c);
  e.dma_transfers = sat_mul(transfers, c);
  e.per_request = cfg.hbm.model != "calibrated";
  e.mxu_seconds = macs_seconds;
  e.hbm_seconds = hbm_bw > 0 ? hbm_bytes / hbm_bw : 0;
  return e;
}

}  // namespace tpusim::sim
