// Energy, power profile and performance per watt of a run; see energy.h
// and docs/energy.md.
#include "sim/results/energy.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>
#include <variant>

#include "arch/common/derived.h"
#include "arch/common/errors.h"
#include "arch/mxu/systolic_timing.h"
#include "arch/vpu/vpu_timing.h"
#include "arch/vpu/vpu_unit_timing.h"
#include "arch/vpu/xlu_timing.h"

namespace tpusim::sim {

namespace {

using arch::EnergyPart;
constexpr std::size_t idx(EnergyPart p) { return static_cast<std::size_t>(p); }

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// The unit kind of a TensorCore block name "tc<N>.<unit><M>" ("" otherwise).
std::string core_unit(const std::string& block) {
  if (!starts_with(block, "tc")) return "";
  const std::size_t dot = block.find('.');
  if (dot == std::string::npos) return "";
  std::string u = block.substr(dot + 1);
  while (!u.empty() && std::isdigit(static_cast<unsigned char>(u.back()))) u.pop_back();
  return u;
}

double vreg_bytes(const arch::VpuConfig& v) { return static_cast<double>(v.sublanes) * v.lanes * 4.0; }

// What the blocks whose names start with `prefix` counted ("" = the one
// chip of a shared run, "chipN." = chip N of an --all-chips run). The ICI
// network is one block of the slice, whose link bytes are shared out
// evenly per chip.
arch::EnergyActivity chip_activity(const RunReport& r, double seconds, const std::string& prefix) {
  const arch::TpuConfig& cfg = *r.config;
  arch::EnergyActivity a;
  a.seconds = seconds;
  const double slots_per_vreg = static_cast<double>(cfg.vpu.sublanes) * cfg.vpu.lanes;
  for (const auto& [name, stats] : r.sim.block_stats) {
    if (name == "ici") {
      for (const arch::Stat& s : stats)
        if (s.name == "ici.link_bytes") a.ici_link_bytes += s.value / std::max(1, r.sim.chips);
      continue;
    }
    if (!starts_with(name, prefix)) continue;
    const std::string block = name.substr(prefix.size());
    const std::string unit = core_unit(block);
    for (const arch::Stat& s : stats) {
      if (unit == "mxu") {
        if (starts_with(s.name, "issued_mac_slots.")) {
          if (auto t = arch::parse_dtype(s.name.substr(17))) a.mac_slots[*t] += s.value;
        } else if (s.name == "vmem_operand_bytes") {
          a.vmem_bytes += s.value;
        }
      } else if (unit == "vpu") {
        if (s.name == "alu_element_ops" || s.name == "transcendental_element_ops") a.vpu_ops += s.value;
        if (s.name == "vreg_loads" || s.name == "vreg_stores") a.vmem_bytes += s.value * vreg_bytes(cfg.vpu);
      } else if (unit == "xlu") {
        if (s.name == "xlu_vregs") a.vpu_ops += s.value * slots_per_vreg;
      } else if (block == "dma") {
        if (s.name == "vmem_bytes") a.vmem_bytes += s.value;
        if (s.name == "cmem_bytes") a.cmem_bytes += s.value;
      } else if (block == "hbm") {
        if (s.name == "bytes_read" || s.name == "bytes_written") a.hbm_bytes += s.value;
        if (s.name == "activates") a.hbm_activates += s.value;
      }
    }
  }
  return a;
}

// The reported chip's activity. A shared run's one chip counts each
// collective's largest share of any chip (its reduction work and HBM
// copies); with --all-chips, where each chip counts its own, every count
// is the largest of any chip's, so both modes charge the same chip.
arch::EnergyActivity collect_activity(const RunReport& r, double seconds) {
  if (r.sim.chip_end_cycles.empty()) return chip_activity(r, seconds, "");
  arch::EnergyActivity a;
  for (std::size_t c = 0; c < r.sim.chip_end_cycles.size(); ++c) {
    const arch::EnergyActivity x = chip_activity(r, seconds, "chip" + std::to_string(c) + ".");
    for (const auto& [t, slots] : x.mac_slots) a.mac_slots[t] = std::max(a.mac_slots[t], slots);
    a.vpu_ops = std::max(a.vpu_ops, x.vpu_ops);
    a.vmem_bytes = std::max(a.vmem_bytes, x.vmem_bytes);
    a.cmem_bytes = std::max(a.cmem_bytes, x.cmem_bytes);
    a.hbm_bytes = std::max(a.hbm_bytes, x.hbm_bytes);
    a.hbm_activates = std::max(a.hbm_activates, x.hbm_activates);
    a.ici_link_bytes = x.ici_link_bytes;  // the slice's, shared out: the same for every chip
    a.seconds = x.seconds;
  }
  return a;
}

// Each instruction's share of the parts it causes, in the part's own unit
// (MAC-slot joules, element ops, bytes); scaled to the parts' totals later.
using Shares = std::array<double, arch::kEnergyParts>;

// `mxu`: the chip's MXU geometry, present whenever `in` is an MXU instruction.
Shares instruction_shares(const arch::TpuConfig& cfg, const arch::MxuGeometry* mxu, const arch::Instr& in) {
  Shares w{};
  if (const auto* m = std::get_if<arch::MxuWork>(&in.work)) {
    const arch::MxuOp op{m->m, m->k, m->n, m->dtype};
    const auto it = cfg.energy.mxu_mac.find(m->dtype);
    const double e_mac = it == cfg.energy.mxu_mac.end() ? 0.0 : it->second;
    w[idx(EnergyPart::mxu)] = static_cast<double>(mxu->issued_mac_slots(op)) * e_mac;
    w[idx(EnergyPart::vmem)] = static_cast<double>(arch::mxu_operand_bytes(cfg.mxu.cols, cfg.mxu.accumulator, op));
  } else if (const auto* v = std::get_if<arch::VpuWork>(&in.work)) {
    const arch::VpuCost c = arch::vpu_cost(cfg.vpu, arch::to_stream_op(*v));
    w[idx(EnergyPart::vpu)] = c.alu_element_ops + c.transcendental_element_ops;
    w[idx(EnergyPart::vmem)] = static_cast<double>(c.vreg_loads + c.vreg_stores) * vreg_bytes(cfg.vpu);
  } else if (const auto* x = std::get_if<arch::XluWork>(&in.work)) {
    const arch::XluCost c = arch::xlu_cost(cfg.xlu, cfg.vpu, arch::to_array_op(*x, cfg.vpu));
    w[idx(EnergyPart::vpu)] = static_cast<double>(c.xlu_vregs) * cfg.vpu.sublanes * cfg.vpu.lanes;
  } else if (const auto* d = std::get_if<arch::DmaWork>(&in.work)) {
    const double b = static_cast<double>(d->bytes());
    for (arch::MemSpace s : {d->src, d->dst}) {
      if (s == arch::MemSpace::vmem) w[idx(EnergyPart::vmem)] += b;
      if (s == arch::MemSpace::cmem) w[idx(EnergyPart::cmem)] += b;
      if (s == arch::MemSpace::hbm) w[idx(EnergyPart::hbm)] += b;
    }
  } else if (const auto* i = std::get_if<arch::IciWork>(&in.work)) {
    // A collective also reads and writes HBM and adds on the VPU.
    w[idx(EnergyPart::ici)] = static_cast<double>(i->bytes);
  }
  return w;
}

// Adds `joules` spread evenly over [t0, t1) seconds (a point when t1 ==
// t0) into the bins of `part`; rate_diff takes the bins fully covered.
struct Binner {
  double window;
  std::size_t bins;
  std::vector<Shares>& energy;     // per bin, joules
  std::vector<Shares>& rate_diff;  // per bin, watts starting at the bin (difference array)

  std::size_t bin_of(double t) const {
    const auto b = static_cast<std::size_t>(std::max(0.0, std::floor(t / window)));
    return std::min(b, bins - 1);
  }
  void add(std::size_t part, double t0, double t1, double joules) {
    if (joules == 0) return;
    const std::size_t b0 = bin_of(t0);
    if (!(t1 > t0)) {
      energy[b0][part] += joules;
      return;
    }
    const std::size_t b1 = bin_of(t1);
    const double p = joules / (t1 - t0);
    if (b0 == b1) {
      energy[b0][part] += joules;
      return;
    }
    energy[b0][part] += p * (static_cast<double>(b0 + 1) * window - t0);
    energy[b1][part] += p * (t1 - static_cast<double>(b1) * window);
    if (b1 > b0 + 1) {
      rate_diff[b0 + 1][part] += p;
      rate_diff[b1][part] -= p;
    }
  }
};

// The most power each part can draw: its block's peak rate times its
// energy per event (whole chip). The spread of a queued copy over its
// start..finish would put more than the memory can serve into its first
// windows; what exceeds this is carried forward (see compute_energy).
Shares part_caps(const arch::TpuConfig& cfg, const EnergyMetrics& e) {
  const arch::EnergyConfig& ec = cfg.energy;
  const double clock = cfg.chip.clock_hz, tcs = cfg.chip.tensorcores;
  Shares cap{};
  for (const auto& [t, joules] : ec.mxu_mac) {
    auto it = cfg.mxu.throughput.find(t);
    if (it == cfg.mxu.throughput.end()) continue;
    const double slots = tcs * cfg.mxu.count * cfg.mxu.rows * cfg.mxu.cols * it->second * clock;
    cap[idx(EnergyPart::mxu)] = std::max(cap[idx(EnergyPart::mxu)], slots * joules);
  }
  const double lanes = static_cast<double>(cfg.vpu.sublanes) * cfg.vpu.lanes;
  cap[idx(EnergyPart::vpu)] =
      tcs * lanes * (cfg.vpu.alus_per_lane + cfg.vpu.transcendental_rate + cfg.xlu.count * cfg.xlu.vregs_per_cycle) *
      clock * ec.vpu_op;
  cap[idx(EnergyPart::vmem)] = tcs * cfg.vmem.bandwidth * ec.vmem_byte;
  cap[idx(EnergyPart::cmem)] = cfg.cmem.bandwidth * ec.cmem_byte;
  const double hbm_bytes = e.activity.hbm_bytes;
  if (hbm_bytes > 0)
    cap[idx(EnergyPart::hbm)] = arch::hbm_peak_bandwidth(cfg.hbm) * e.joules[EnergyPart::hbm] / hbm_bytes;
  cap[idx(EnergyPart::ici)] = cfg.ici.ports * cfg.ici.link_bandwidth * 8.0 * ec.ici_bit;
  return cap;
}

}  // namespace

double PowerBin::total() const {
  double s = 0;
  for (double w : watts) s += w;
  return s;
}

std::optional<EnergyMetrics> compute_energy(const RunReport& r, double seconds, std::uint64_t total_flops) {
  if (!r.config) throw arch::InternalError("RunReport without a config");
  const arch::TpuConfig& cfg = *r.config;
  if (!cfg.energy.present) return std::nullopt;
  const arch::Program& prog = r.lowered.program;
  if (r.sim.records.size() != prog.instrs.size())
    throw arch::InternalError("RunReport: instruction records do not match the program");

  EnergyMetrics e;
  e.activity = collect_activity(r, seconds);
  e.joules = arch::energy_of(cfg.energy, e.activity);
  e.energy_j = e.joules.total();
  e.avg_power_w = seconds > 0 ? e.energy_j / seconds : cfg.energy.static_power;
  e.tdp_w = cfg.energy.tdp;
  e.over_tdp = e.tdp_w > 0 && e.avg_power_w > e.tdp_w;
  if (e.energy_j > 0) {
    e.flops_per_joule = static_cast<double>(total_flops) / e.energy_j;
    // The run's tokens are the whole mesh's: every chip of every slice.
    if (r.tokens > 0)
      e.tokens_per_joule =
          static_cast<double>(r.tokens) / (e.energy_j * std::max(1, r.sim.chips) * std::max(1, r.sim.num_slices));
  }

  // The profile.
  e.window_s = kPowerWindowSeconds;
  if (seconds / e.window_s > static_cast<double>(kMaxPowerBins)) e.window_s = seconds / kMaxPowerBins;
  const std::size_t bins =
      seconds > 0 ? std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(seconds / e.window_s - 1e-9))) : 0;
  if (bins == 0) {
    e.peak_power_w = e.avg_power_w;
    return e;
  }
  std::vector<Shares> energy(bins, Shares{}), rate_diff(bins, Shares{});
  Binner binner{e.window_s, bins, energy, rate_diff};
  // One pass over the instructions: each one's shares, unscaled, spread
  // over its start..finish (binning is linear in the energy); then each
  // part's bins scale to the part's joules. A part that no instruction
  // shows (or static power) spreads evenly over the run instead.
  Shares sum{};
  const double cycle_s = 1.0 / r.sim.clock_hz;
  // Built once, at the first MXU instruction (its checks cost more than an
  // instruction's shares; a program without one never builds it).
  std::optional<arch::MxuGeometry> mxu;
  for (std::size_t i = 0; i < prog.instrs.size(); ++i) {
    if (!mxu && std::holds_alternative<arch::MxuWork>(prog.instrs[i].work)) mxu.emplace(cfg.mxu);
    const Shares sh = instruction_shares(cfg, mxu ? &*mxu : nullptr, prog.instrs[i]);
    bool any = false;
    for (std::size_t p = 0; p < arch::kEnergyParts; ++p) {
      sum[p] += sh[p];
      any = any || sh[p] > 0;
    }
    if (!any) continue;
    const double t0 = static_cast<double>(r.sim.records[i].start) * cycle_s,
                 t1 = static_cast<double>(r.sim.records[i].finish) * cycle_s;
    for (std::size_t p = 0; p < arch::kEnergyParts; ++p)
      if (sh[p] > 0) binner.add(p, t0, t1, sh[p]);
  }
  for (std::size_t p = 0; p < arch::kEnergyParts; ++p) {
    const double total = e.joules.joules[p];
    const bool even = p == idx(EnergyPart::static_power) || !(sum[p] > 0);
    const double scale = even || total == 0 ? 0.0 : total / sum[p];
    for (std::size_t b = 0; b < bins; ++b) {
      energy[b][p] *= scale;
      rate_diff[b][p] *= scale;
    }
    if (even && total != 0) binner.add(p, 0, seconds, total);  // static power, or work no instruction shows
  }
  e.profile.resize(bins);
  Shares rate{};
  for (std::size_t b = 0; b < bins; ++b) {
    PowerBin& pb = e.profile[b];
    pb.start = static_cast<double>(b) * e.window_s;
    pb.width = std::min(e.window_s, seconds - pb.start);
    if (!(pb.width > 0)) pb.width = e.window_s;  // rounding left an empty last bin
    for (std::size_t p = 0; p < arch::kEnergyParts; ++p) {
      rate[p] += rate_diff[b][p];
      energy[b][p] += rate[p] * pb.width;
    }
  }
  // No part draws more than its peak power (never below its average, so
  // that the carry cannot grow without end): a window's excess moves to
  // the next windows, as a saturated memory serves queued copies later;
  // what is left at the end fills the last windows backwards. Joules are
  // conserved.
  const Shares cap = part_caps(cfg, e);
  for (std::size_t p = 0; p < arch::kEnergyParts; ++p) {
    if (p == idx(EnergyPart::static_power) || !(cap[p] > 0)) continue;
    const double watts = std::max(cap[p], e.joules.joules[p] / seconds);
    double carry = 0;
    for (std::size_t b = 0; b < bins; ++b) {
      const double room = watts * e.profile[b].width;
      const double j = energy[b][p] + carry;
      energy[b][p] = std::min(j, room);
      carry = j - energy[b][p];
    }
    for (std::size_t b = bins; b-- > 0 && carry > 0;) {
      const double add = std::min(carry, watts * e.profile[b].width - energy[b][p]);
      if (add > 0) {
        energy[b][p] += add;
        carry -= add;
      }
    }
    energy[bins - 1][p] += carry;  // only rounding is left here
  }
  for (std::size_t b = 0; b < bins; ++b) {
    PowerBin& pb = e.profile[b];
    for (std::size_t p = 0; p < arch::kEnergyParts; ++p) pb.watts[p] = energy[b][p] / pb.width;
    e.peak_power_w = std::max(e.peak_power_w, pb.total());
  }
  return e;
}

}  // namespace tpusim::sim
