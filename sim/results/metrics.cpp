// Closed-form run and operator figures; see metrics.h and docs/results.md.
#include "sim/results/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <variant>

#include "arch/common/derived.h"
#include "arch/common/errors.h"

namespace tpusim::sim {

namespace {

double mxu_throughput(const arch::TpuConfig& c, arch::DType t) {
  auto it = c.mxu.throughput.find(t);
  return it == c.mxu.throughput.end() ? 0.0 : it->second;
}

// Whole-chip MXU MACs per TensorCore cycle at a dtype's throughput.
double chip_macs_per_cycle(const arch::TpuConfig& c, arch::DType t) {
  return static_cast<double>(c.chip.tensorcores) * c.mxu.count * c.mxu.rows * c.mxu.cols * mxu_throughput(c, t);
}

std::optional<double> ratio(double num, double den) {
  if (!(den > 0)) return std::nullopt;
  return num / den;
}

}  // namespace

std::string classify_bound(std::uint64_t cycles, double roofline_cycles, double mxu_bound_cycles,
                           double memory_bound_cycles, double clock_hz) {
  const double c = static_cast<double>(cycles);
  if (c > kLatencyBoundFactor * roofline_cycles && roofline_cycles < kLatencyBoundMaxRoofline * clock_hz)
    return "latency";
  if (mxu_bound_cycles > 0 && mxu_bound_cycles >= memory_bound_cycles) return "compute";
  return "memory";
}

bool is_recomputed_op(const std::string& name) { return name.find(".recompute.") != std::string::npos; }

RunMetrics compute_metrics(const RunReport& r) {
  if (!r.config) throw arch::InternalError("RunReport without a config");
  const arch::TpuConfig& cfg = *r.config;
  const arch::Program& prog = r.lowered.program;
  const std::vector<OpPlan>& plans = r.lowered.ops;
  if (!(r.sim.clock_hz > 0)) throw arch::InternalError("RunReport: SimResult::clock_hz must be > 0");
  if (r.sim.records.size() != prog.instrs.size())
    throw arch::InternalError("RunReport: " + std::to_string(r.sim.records.size()) + " instruction records for " +
                              std::to_string(prog.instrs.size()) + " instructions");

  RunMetrics m;
  m.total_cycles = r.sim.end_cycle;
  m.clock_hz = r.sim.clock_hz;
  m.hbm_peak_bytes = r.lowered.hbm_peak_bytes;
  m.hbm_capacity_bytes = cfg.hbm.capacity_bytes;
  m.seconds = static_cast<double>(m.total_cycles) / m.clock_hz;
  m.peak_macs_per_cycle = chip_macs_per_cycle(cfg, arch::DType::bf16);
  m.hbm_peak_bandwidth = arch::hbm_peak_bandwidth(cfg.hbm);

  m.ops.resize(plans.size());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    m.ops[i].index = i;
    m.ops[i].fused = plans[i].fused_into >= 0;
    if (plans[i].fused_into >= static_cast<int>(plans.size()))
      throw arch::InternalError("RunReport: op '" + plans[i].name + "' fused into op index " +
                                std::to_string(plans[i].fused_into) + " of " + std::to_string(plans.size()));
  }

  for (std::size_t id = 0; id < prog.instrs.size(); ++id) {
    const arch::Instr& in = prog.instrs[id];
    const arch::InstrRecord& rec = r.sim.records[id];
    if (in.op >= plans.size())
      throw arch::InternalError("RunReport: instruction " + std::to_string(id) + " names op " + std::to_string(in.op) +
                                " of " + std::to_string(plans.size()));
    if (rec.finish < rec.start)
      throw arch::InternalError("RunReport: instruction " + std::to_string(id) + " finishes before it starts");
    OpMetrics& om = m.ops[in.op];
    if (!om.has_instrs) {
      om.has_instrs = true;
      om.start_cycle = rec.start;
      om.end_cycle = rec.finish;
    } else {
      om.start_cycle = std::min(om.start_cycle, rec.start);
      om.end_cycle = std::max(om.end_cycle, rec.finish);
    }
    if (const auto* d = std::get_if<arch::DmaWork>(&in.work)) m.hbm_bytes += d->hbm_bytes();
  }

  m.time = time_breakdown(prog, r.sim.records);

  // Collectives move their own bytes through HBM (the DMA reads of what a
  // chip sends and writes of what it receives); the sequencer counts them
  // per core ("tcN.sequencer"). With --all-chips ("chipM.tcN.sequencer")
  // the busiest chip's count, which is what the shared mode's one chip
  // does (it stands for the busiest).
  std::map<std::string, std::uint64_t> collective_hbm;  // per chip prefix
  for (const auto& [block, stats] : r.sim.block_stats) {
    const std::string suffix = ".sequencer";
    const std::size_t tc = block.rfind("tc", block.size() - 1);
    if (tc == std::string::npos || (tc != 0 && block[tc - 1] != '.') || block.size() <= suffix.size() ||
        block.compare(block.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    for (const arch::Stat& st : stats)
      if (st.name == "collective_hbm_bytes")
        collective_hbm[block.substr(0, tc)] += static_cast<std::uint64_t>(st.value);
  }
  std::uint64_t busiest = 0;
  for (const auto& [chip, bytes] : collective_hbm) busiest = std::max(busiest, bytes);
  m.hbm_bytes += busiest;

  double bf16_equiv_macs = 0, peak_cycles = 0;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const OpPlan& p = plans[i];
    OpMetrics& om = m.ops[i];
    m.total_flops += p.flops;
    m.total_macs += p.macs;
    // Model FLOPs: the useful work, without what a kernel recomputes or a
    // causal mask discards.
    if (!is_recomputed_op(p.name)) m.model_flops += 2 * (p.macs - p.recompute_macs - p.masked_macs);
    m.vmem_peak_bytes = std::max(m.vmem_peak_bytes, p.vmem_peak);
    om.roofline_cycles = static_cast<std::uint64_t>(std::ceil(std::max(0.0, p.roofline_cycles)));
    // The dtype the MXU ran sets its rate (int8 runs faster than bf16 on
    // some generations; an fp8 op on a chip without fp8 ran converted, at
    // the rate of the dtype it was converted to); an N:M sparse MXU does
    // m/n times the dense MACs per cycle. A dtype the MXU lacks falls back
    // to bf16.
    auto t = arch::parse_dtype(p.mxu_dtype.empty() ? p.dtype : p.mxu_dtype);
    double peak = t ? chip_macs_per_cycle(cfg, *t) : 0.0;
    if (!(peak > 0)) peak = m.peak_macs_per_cycle;
    if (p.mxu_k_fraction > 0 && p.mxu_k_fraction < 1) peak /= p.mxu_k_fraction;
    om.mxu_bound_cycles = peak > 0 ? static_cast<double>(p.macs) / peak : 0.0;
    // The op's MACs in bf16-peak units: a bf16 op's own count (ratio 1).
    bf16_equiv_macs += peak > 0 ? static_cast<double>(p.macs) * (m.peak_macs_per_cycle / peak) : 0.0;
    peak_cycles += peak > 0 ? static_cast<double>(p.macs) / peak : 0.0;
    om.memory_bound_cycles = p.memory_cycles;
    if (p.padded_macs > 0)
      om.padding_waste_pct = 100.0 * (1.0 - static_cast<double>(p.macs) / static_cast<double>(p.padded_macs));
    if (om.fused || !om.has_instrs) continue;
    om.cycles = om.end_cycle - om.start_cycle;
    // Collectives are bound by the inter-chip network, whatever their time.
    om.bound =
        p.kind.find("all_") == 0 || p.kind == "reduce_scatter" || p.kind == "collective_permute" ||
                p.kind == "broadcast"
            ? "ici"
            : classify_bound(om.cycles, p.roofline_cycles, om.mxu_bound_cycles, om.memory_bound_cycles, m.clock_hz);
    om.mxu_utilization = ratio(static_cast<double>(p.macs), static_cast<double>(om.cycles) * peak);
  }

  m.achieved_tflops = ratio(static_cast<double>(m.total_flops) / 1e12, m.seconds);
  // Against each op's own peak: the MXU-busy fraction had every op run at
  // the peak of the dtype its MXU ran (chips without bf16, v1: the cycles
  // the MXUs needed at their peak over the run's cycles).
  m.mxu_utilization = m.peak_macs_per_cycle > 0
                          ? ratio(bf16_equiv_macs, static_cast<double>(m.total_cycles) * m.peak_macs_per_cycle)
                          : ratio(peak_cycles, static_cast<double>(m.total_cycles));
  m.hardware_flops = 2 * m.total_macs;
  const double peak_flops_in_run = 2.0 * static_cast<double>(m.total_cycles) * m.peak_macs_per_cycle;
  m.mfu = ratio(static_cast<double>(m.model_flops), peak_flops_in_run);
  m.hfu = ratio(static_cast<double>(m.hardware_flops), peak_flops_in_run);
  m.hbm_bandwidth = ratio(static_cast<double>(m.hbm_bytes), m.seconds);
  if (m.hbm_bandwidth) m.hbm_bandwidth_utilization = ratio(*m.hbm_bandwidth, m.hbm_peak_bandwidth);
  m.energy = compute_energy(r, m.seconds, m.total_flops);
  return m;
}

}  // namespace tpusim::sim
