// The figures the result files report, derived from a RunReport by closed
// form: per-run totals (time, achieved FLOP/s, MXU and HBM utilization) and
// per-operator timing, bound classification and efficiency. The writers
// (CSV, text) only format these numbers, so every output agrees and tests
// can check the arithmetic without parsing files. docs/results.md gives
// every formula.
// Energy and power: energy.h, computed here with the rest.
// Leaves out: multi-chip figures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/results/energy.h"
#include "sim/results/run_report.h"
#include "sim/results/time_breakdown.h"

namespace tpusim::sim {

// Short operators whose measured time exceeds this multiple of their
// roofline are classified `latency` bound (see classify_bound).
inline constexpr double kLatencyBoundFactor = 4.0;
// ... if their roofline time is below this many seconds.
inline constexpr double kLatencyBoundMaxRoofline = 1e-6;

struct OpMetrics {
  std::size_t index = 0;
  bool fused = false;                       // executed inside another op's program (fused_into >= 0)
  bool has_instrs = false;                  // at least one instruction carries this op index
  std::uint64_t start_cycle = 0;            // min start over its instructions
  std::uint64_t end_cycle = 0;              // max finish over its instructions
  std::uint64_t cycles = 0;                 // end_cycle - start_cycle
  std::uint64_t roofline_cycles = 0;        // OpPlan::roofline_cycles rounded up
  double mxu_bound_cycles = 0;              // macs / chip peak MACs per cycle for the op's dtype
  double memory_bound_cycles = 0;           // OpPlan::memory_cycles: HBM (and CMEM) bytes over bandwidth
  std::string bound;                        // "compute" | "memory" | "latency" | "" (not timed)
  std::optional<double> mxu_utilization;    // macs / (cycles x peak MACs/cycle of the dtype the MXU ran)
  std::optional<double> padding_waste_pct;  // 100 x (1 - macs / padded_macs)
};

struct RunMetrics {
  std::uint64_t total_cycles = 0;  // SimResult::end_cycle
  double clock_hz = 0;
  double seconds = 0;             // total_cycles / clock_hz
  std::uint64_t total_flops = 0;  // sum of OpPlan::flops over all ops
  std::uint64_t total_macs = 0;   // sum of OpPlan::macs over all ops
  // Whole chip: tensorcores x mxu.count x rows x cols x throughput[bf16].
  double peak_macs_per_cycle = 0;
  double hbm_peak_bandwidth = 0;                    // bytes/s, arch::hbm_peak_bandwidth
  std::uint64_t hbm_bytes = 0;                      // DMA bytes per HBM end (HBM to HBM: twice)
  std::uint64_t vmem_peak_bytes = 0;                // max OpPlan::vmem_peak (bytes per core)
  std::uint64_t hbm_peak_bytes = 0;                 // HBM in use at the memory plan's peak (per chip)
  std::uint64_t hbm_capacity_bytes = 0;             // the chip's hbm.capacity
  std::optional<double> achieved_tflops;            // total_flops / seconds / 1e12
  // sum over ops of macs / (its MXU dtype's peak) / total_cycles
  std::optional<double> mxu_utilization;
  std::optional<double> hbm_bandwidth;              // bytes/s: hbm_bytes / seconds
  std::optional<double> hbm_bandwidth_utilization;  // hbm_bandwidth / hbm_peak_bandwidth
  // MXU FLOPs (2 x MACs) of the operators the model itself needs, and of
  // every operator the chip ran, rematerialized ones (is_recomputed_op)
  // included; their utilizations are over 2 x total_cycles x
  // peak_macs_per_cycle (MFU and hardware FLOP utilization, HFU).
  std::uint64_t model_flops = 0;
  std::uint64_t hardware_flops = 0;
  std::optional<double> mfu;
  std::optional<double> hfu;
  std::vector<OpMetrics> ops;                       // indexed like LoweredWorkload::ops
  std::optional<EnergyMetrics> energy;              // empty: the config has no energy model
  TimeBreakdown time;                               // compute / exposed ICI / exposed HBM (time_breakdown.h)
};

// Operators that recompute forward work for backward (remat): named
// `<...>.recompute.<...>` (layers.<i>.recompute.* from the model zoo, or a
// workload file written the same way, docs/remat.md).
bool is_recomputed_op(const std::string& name);

// Throws arch::InternalError when the report is inconsistent (no config,
// clock <= 0, records not matching the program, an instruction naming an
// op that does not exist or finishing before it starts): those are bugs in the code that built it.
RunMetrics compute_metrics(const RunReport& r);

// The bound rule (docs/results.md): `latency` if cycles > 4 x roofline and
// the roofline is under 1 us; otherwise `compute` if the MXU lower bound is
// positive and >= the memory lower bound; otherwise `memory`.
std::string classify_bound(std::uint64_t cycles, double roofline_cycles, double mxu_bound_cycles,
                           double memory_bound_cycles, double clock_hz);

}  // namespace tpusim::sim
