// CSV/YAML/trace files and the stdout summary of a run; see
// results_writer.h and docs/results.md.
#include "sim/results/results_writer.h"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace tpusim::sim {

namespace {

namespace fs = std::filesystem;

void write_row(std::ostream& os, const std::vector<std::string>& fields) {
  for (std::size_t i = 0; i < fields.size(); ++i) os << (i ? "," : "") << csv_field(fields[i]);
  os << '\n';
}

// A row that goes on with more fields (summary.csv's energy and time
// breakdown columns).
void write_row(std::ostream& os, std::vector<std::string> fields, const std::vector<std::string>& more,
               const std::vector<std::string>& last = {}) {
  fields.insert(fields.end(), more.begin(), more.end());
  fields.insert(fields.end(), last.begin(), last.end());
  write_row(os, fields);
}

std::string u64(std::uint64_t v) { return std::to_string(v); }

// Opens, writes and closes one file, turning every stream failure into a
// ResultsError that names the path. Binary mode: no newline translation.
template <typename Fn>
void write_file(const fs::path& path, Fn&& fn) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw ResultsError("cannot create " + path.string() + ": " + std::strerror(errno));
  fn(f);
  f.close();  // flushes; a failure at close (a full disk) counts too
  if (!f) throw ResultsError("cannot write " + path.string() + ": " + std::strerror(errno));
}

std::string human_time(double seconds) {
  if (seconds < 1e-3) return format_real(seconds * 1e6, 6) + " us";
  if (seconds < 1) return format_real(seconds * 1e3, 6) + " ms";
  return format_real(seconds, 6) + " s";
}

std::string human_bytes(double b) {
  if (b >= 1ULL << 30) return fmt::format("{:.2f} GiB", b / (1ULL << 30));
  if (b >= 1ULL << 20) return fmt::format("{:.2f} MiB", b / (1ULL << 20));
  if (b >= 1ULL << 10) return fmt::format("{:.2f} KiB", b / (1ULL << 10));
  return fmt::format("{:.0f} B", b);
}

std::string human_energy(double j) {
  if (j < 1e-3) return format_real(j * 1e6, 6) + " uJ";
  if (j < 1) return format_real(j * 1e3, 6) + " mJ";
  return format_real(j, 6) + " J";
}

std::string pct(const std::optional<double>& v) { return v ? fmt::format("{:.1f}%", *v * 100.0) : std::string("-"); }

// The energy columns of summary.csv (docs/results.md); empty cells
// without an energy model.
std::vector<std::string> energy_header() {
  return {"energy_j", "avg_power_w", "peak_power_w",   "power_window_s",
          "tdp_w",    "over_tdp",    "flops_per_watt", "tokens_per_joule"};
}

std::vector<std::string> energy_cells(const RunMetrics& m) {
  if (!m.energy) return std::vector<std::string>(energy_header().size());
  const EnergyMetrics& e = *m.energy;
  return {format_real(e.energy_j, 9),
          format_real(e.avg_power_w),
          format_real(e.peak_power_w),
          format_real(e.window_s, 9),
          e.tdp_w > 0 ? format_real(e.tdp_w) : std::string(),
          e.over_tdp ? "1" : "0",
          format_real(e.flops_per_joule),
          format_real(e.tokens_per_joule)};
}

// Where the time went (time_breakdown.h), in seconds like `seconds`.
std::vector<std::string> time_header() {
  return {"compute_busy_seconds", "ici_busy_seconds", "ici_exposed_seconds", "hbm_exposed_seconds"};
}

std::vector<std::string> time_cells(const RunMetrics& m) {
  auto s = [&](std::uint64_t c) { return format_real(static_cast<double>(c) / m.clock_hz, 9); };
  return {s(m.time.compute_cycles), s(m.time.ici_cycles), s(m.time.ici_exposed_cycles), s(m.time.hbm_exposed_cycles)};
}

}  // namespace

void write_summary_csv(const RunReport& r, const RunMetrics& m, std::ostream& os) {
  write_row(os,
            {"arch", "workload", "total_cycles", "clock_hz", "seconds", "total_flops", "achieved_tflops",
             "mxu_utilization", "hbm_bytes", "hbm_bandwidth", "hbm_bandwidth_utilization", "vmem_peak_bytes",
             "hbm_peak_bytes", "sim_wall_seconds", "tpusim_version", "config_hash", "model_flops", "hardware_flops", "mfu", "hfu"},
            energy_header(), time_header());
  write_row(os,
            {r.arch_name, r.workload_name, u64(m.total_cycles), format_real(m.clock_hz, 12), format_real(m.seconds, 9),
             u64(m.total_flops), format_real(m.achieved_tflops), format_real(m.mxu_utilization), u64(m.hbm_bytes),
             format_real(m.hbm_bandwidth, 9), format_real(m.hbm_bandwidth_utilization), u64(m.vmem_peak_bytes),
             u64(m.hbm_peak_bytes), format_real(r.sim.wall_seconds), r.version,
             r.config_hash.empty() ? config_hash(r.config_yaml) : r.config_hash, u64(m.model_flops),
             u64(m.hardware_flops), format_real(m.mfu), format_real(m.hfu)},
            energy_cells(m), time_cells(m));
}

namespace {
std::string ici_axes(const RunReport& r, const CollectiveRecord& c) {
  const auto& w = std::get<arch::IciWork>(r.lowered.program.instrs.at(c.instr).work);
  std::string out;
  for (const auto& a : r.lowered.program.group(w).axes) out += (out.empty() ? "" : "+") + a;
  return out;
}
}  // namespace

void write_ops_csv(const RunReport& r, const RunMetrics& m, std::ostream& os) {
  write_row(os, {"index",
                 "name",
                 "kind",
                 "shapes",
                 "dtype",
                 "flops",
                 "hbm_bytes",
                 "dma_bytes",
                 "start_cycle",
                 "end_cycle",
                 "cycles",
                 "roofline_cycles",
                 "bound",
                 "mxu_utilization",
                 "padding_waste_pct",
                 "vmem_peak",
                 "blocking",
                 "fused_into",
                 "ici_algorithm",
                 "ici_axes",
                 "ici_bytes",
                 "ici_bandwidth",
                 "cmem_bytes",
                 "mxu_dtype",
                 "scale_bytes",
                 "sparsity_metadata_bytes",
                 "quant_vpu_cycles"});
  const auto& plans = r.lowered.ops;
  // Collectives as the ICI network ran them, by operator.
  std::vector<const CollectiveRecord*> coll(plans.size(), nullptr);
  for (const CollectiveRecord& c : r.sim.collectives) {
    const std::uint32_t op = r.lowered.program.instrs.at(c.instr).op;
    if (op < coll.size()) coll[op] = &c;
  }
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const OpPlan& p = plans[i];
    const OpMetrics& om = m.ops[i];
    // Fused ops and ops without instructions have no timing of their own:
    // their work is in the anchor's row.
    const bool timed = !om.fused && om.has_instrs;
    write_row(os, {u64(i),
                   p.name,
                   p.kind,
                   p.shapes,
                   p.dtype,
                   u64(p.flops),
                   u64(p.hbm_bytes),
                   u64(p.dma_bytes),
                   timed ? u64(om.start_cycle) : "",
                   timed ? u64(om.end_cycle) : "",
                   timed ? u64(om.cycles) : "",
                   om.fused ? "" : u64(om.roofline_cycles),
                   om.bound,
                   format_real(om.mxu_utilization),
                   format_real(om.padding_waste_pct),
                   u64(p.vmem_peak),
                   p.blocking,
                   om.fused ? plans[static_cast<std::size_t>(p.fused_into)].name : "",
                   coll[i] ? coll[i]->algorithm : "",
                   coll[i] ? ici_axes(r, *coll[i]) : "",
                   coll[i] ? u64(coll[i]->bytes) : "",
                   coll[i] ? format_real(coll[i]->achieved_bandwidth, 9) : "",
                   u64(p.cmem_bytes),
                   p.mxu_dtype,
                   u64(p.scale_bytes),
                   u64(p.metadata_bytes),
                   u64(p.quant_vpu_cycles)});
  }
}

void write_units_csv(const RunReport& r, std::ostream& os) {
  write_row(os, {"block", "stat", "value", "unit", "description"});
  for (const auto& [block, stats] : r.sim.block_stats)
    for (const arch::Stat& s : stats) write_row(os, {block, s.name, format_stat(s.value), s.unit, s.desc});
}

void write_energy_units(const RunMetrics& m, std::ostream& os) {
  if (!m.energy) return;
  const EnergyMetrics& e = *m.energy;
  auto row = [&](const std::string& stat, double v, const char* unit, const std::string& desc) {
    write_row(os, {"energy", stat, format_stat(v), unit, desc});
  };
  for (arch::EnergyPart p : arch::kAllEnergyParts) {
    const std::string n = arch::energy_part_name(p);
    row(n + "_energy", e.joules[p], "J",
        p == arch::EnergyPart::static_power ? "static power x run time" : "energy of the " + n + " (docs/energy.md)");
  }
  row("total_energy", e.energy_j, "J", "all parts together");
  row("avg_power", e.avg_power_w, "W", "total_energy / run time");
  row("peak_power", e.peak_power_w, "W", "highest power over one window of the profile");
  row("power_window", e.window_s, "s", "width of the power profile's windows");
  for (const auto& [t, slots] : e.activity.mac_slots)
    row("mxu_mac_slots." + std::string(arch::dtype_name(t)), slots, "MACs", "MXU MAC slots charged in this dtype");
  row("vpu_ops", e.activity.vpu_ops, "ops", "VPU element operations and XLU slot passes charged");
  row("vmem_bytes", e.activity.vmem_bytes, "bytes", "VMEM bytes charged (DMA, vregs, MXU operands)");
  row("cmem_bytes", e.activity.cmem_bytes, "bytes", "CMEM bytes charged");
  row("hbm_bytes", e.activity.hbm_bytes, "bytes", "HBM bytes charged (read + written)");
  row("hbm_activates", e.activity.hbm_activates, "count", "HBM row activations charged");
  row("ici_link_bytes", e.activity.ici_link_bytes, "bytes", "ICI link bytes charged to this chip (every hop)");
}

void write_results(const RunReport& r, const std::string& out_dir, const WriteOptions& o) {
  // Compute first: an inconsistent report must not leave half a directory.
  write_results(r, compute_metrics(r), out_dir, o);
}

void write_results(const RunReport& r, const RunMetrics& m, const std::string& out_dir, const WriteOptions& o) {
  const fs::path dir(out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ResultsError("cannot create directory " + out_dir + ": " + ec.message());
  if (!fs::is_directory(dir, ec)) throw ResultsError(out_dir + " is not a directory");
  // Every file is written into a staging folder first and moved into place
  // only when all of them were written: a failed write (a full disk) leaves
  // the previous run's files untouched, and a file this run does not write
  // (trace.json without --trace) is removed, so the folder holds the files
  // of exactly one run.
  const fs::path stage = dir / (".staging-" + std::to_string(::getpid()));
  fs::remove_all(stage, ec);
  fs::create_directory(stage, ec);
  if (ec) throw ResultsError("cannot create directory " + stage.string() + ": " + ec.message());
  std::vector<std::string> written;
  try {
    auto put = [&](const char* name, auto&& fn) {
      write_file(stage / name, fn);
      written.push_back(name);
    };
    put("summary.csv", [&](std::ostream& os) { write_summary_csv(r, m, os); });
    put("ops.csv", [&](std::ostream& os) { write_ops_csv(r, m, os); });
    put("units.csv", [&](std::ostream& os) {
      write_units_csv(r, os);
      write_energy_units(m, os);
    });
    put("config.effective.yaml", [&](std::ostream& os) { os << r.config_yaml; });
    if (o.trace)
      put("trace.json", [&](std::ostream& os) { write_chrome_trace(r, os, m.energy ? &*m.energy : nullptr); });
  } catch (...) {
    fs::remove_all(stage, ec);
    throw;
  }
  for (const char* name : {"summary.csv", "ops.csv", "units.csv", "config.effective.yaml", "trace.json"}) {
    if (std::find(written.begin(), written.end(), name) != written.end()) {
      fs::rename(stage / name, dir / name, ec);
      if (ec) throw ResultsError("cannot move " + (stage / name).string() + " into place: " + ec.message());
    } else {
      fs::remove(dir / name, ec);
    }
  }
  fs::remove(stage, ec);
}

void print_summary(const RunReport& r, std::ostream& os, int top) { print_summary(r, compute_metrics(r), os, top); }

void print_summary(const RunReport& r, const RunMetrics& m, std::ostream& os, int top) {
  const auto& plans = r.lowered.ops;

  os << "Workload " << r.workload_name << " on " << r.arch_name << ": " << m.total_cycles
     << " cycles = " << human_time(m.seconds) << " at " << format_real(m.clock_hz / 1e9, 6) << " GHz\n";

  std::vector<std::size_t> timed;
  for (const OpMetrics& om : m.ops)
    if (!om.fused && om.has_instrs) timed.push_back(om.index);
  std::stable_sort(timed.begin(), timed.end(),
                   [&](std::size_t a, std::size_t b) { return m.ops[a].cycles > m.ops[b].cycles; });
  const std::size_t shown = std::min(timed.size(), static_cast<std::size_t>(std::max(top, 0)));
  if (shown > 0) {
    constexpr std::size_t kMaxName = 40;
    std::size_t name_w = 4, kind_w = 4;
    auto clip = [&](const std::string& s) { return s.size() <= kMaxName ? s : s.substr(0, kMaxName - 3) + "..."; };
    for (std::size_t k = 0; k < shown; ++k) {
      name_w = std::max(name_w, clip(plans[timed[k]].name).size());
      kind_w = std::max(kind_w, plans[timed[k]].kind.size());
    }
    os << "\nTop " << shown << " of " << timed.size() << " operators by cycles:\n";
    os << fmt::format("  {:<{}}  {:<{}}  {:>12}  {:>7}  {:<8}  {:>8}\n", "name", name_w, "kind", kind_w, "cycles",
                      "% run", "bound", "MXU util");
    for (std::size_t k = 0; k < shown; ++k) {
      const OpMetrics& om = m.ops[timed[k]];
      const std::string share =
          m.total_cycles > 0
              ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(om.cycles) / static_cast<double>(m.total_cycles))
              : std::string("-");
      os << fmt::format("  {:<{}}  {:<{}}  {:>12}  {:>7}  {:<8}  {:>8}\n", clip(plans[timed[k]].name), name_w,
                        plans[timed[k]].kind, kind_w, om.cycles, share, om.bound, pct(om.mxu_utilization));
    }
    os << "  (operators overlap in time, so the shares may add up to more than 100%)\n";
  }

  os << "\n";
  os << "  Time        " << human_time(m.seconds) << " (" << m.total_cycles << " cycles)\n";
  os << "  Compute     " << (m.achieved_tflops ? fmt::format("{:.3f} TFLOP/s", *m.achieved_tflops) : std::string("-"))
     << ", MXU utilization " << pct(m.mxu_utilization) << "\n";
  os << "  MFU         " << pct(m.mfu) << " (model FLOPs), HFU " << pct(m.hfu)
     << " (hardware FLOPs, recomputation included)\n";
  os << "  HBM         " << human_bytes(static_cast<double>(m.hbm_bytes)) << " moved, "
     << (m.hbm_bandwidth ? fmt::format("{:.1f} GB/s", *m.hbm_bandwidth / 1e9) : std::string("-")) << " = "
     << pct(m.hbm_bandwidth_utilization) << " of " << fmt::format("{:.1f} GB/s", m.hbm_peak_bandwidth / 1e9)
     << " peak\n";
  os << "  VMEM peak   " << human_bytes(static_cast<double>(m.vmem_peak_bytes)) << " per core\n";
  os << "  HBM peak    " << human_bytes(static_cast<double>(m.hbm_peak_bytes)) << " in use";
  if (m.hbm_capacity_bytes > 0)
    os << " of " << human_bytes(static_cast<double>(m.hbm_capacity_bytes)) << " ("
       << fmt::format("{:.1f}%", 100.0 * static_cast<double>(m.hbm_peak_bytes) / static_cast<double>(m.hbm_capacity_bytes))
       << ")";
  os << " (memory plan: tensors placed by liveness)\n";
  if (m.energy) {
    const EnergyMetrics& e = *m.energy;
    std::string parts;
    for (arch::EnergyPart p : arch::kAllEnergyParts)
      if (e.joules[p] > 0 && e.energy_j > 0)
        parts += fmt::format("{}{} {:.1f}%", parts.empty() ? "" : ", ", arch::energy_part_name(p),
                             100.0 * e.joules[p] / e.energy_j);
    os << "  Energy      " << human_energy(e.energy_j) << " per chip (" << parts << ")\n";
    os << "  Power       "
       << fmt::format("{:.1f} W average, {:.1f} W peak over {} windows", e.avg_power_w, e.peak_power_w,
                      human_time(e.window_s))
       << (e.tdp_w > 0 ? fmt::format("; TDP {:.0f} W", e.tdp_w) : std::string()) << "\n";
    os << "  Perf/W      "
       << (e.flops_per_joule ? fmt::format("{:.3f} TFLOP/s per W", *e.flops_per_joule / 1e12) : std::string("-"))
       << (e.tokens_per_joule ? fmt::format(", {:.4g} tokens/J", *e.tokens_per_joule) : std::string()) << "\n";
    if (e.over_tdp)
      os << fmt::format("  WARNING: average power {:.1f} W exceeds the chip's TDP of {:.1f} W\n", e.avg_power_w,
                        e.tdp_w);
  }
}

}  // namespace tpusim::sim
