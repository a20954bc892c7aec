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

std::string pct(const std::optional<double>& v) { return v ? fmt::format("{:.1f}%", *v * 100.0) : std::string("-"); }

}  // namespace

void write_summary_csv(const RunReport& r, const RunMetrics& m, std::ostream& os) {
  write_row(os, {"arch", "workload", "total_cycles", "clock_hz", "seconds", "total_flops", "achieved_tflops",
                 "mxu_utilization", "hbm_bytes", "hbm_bandwidth", "hbm_bandwidth_utilization", "vmem_peak_bytes",
                 "sim_wall_seconds", "tpusim_version", "config_hash"});
  write_row(os, {r.arch_name, r.workload_name, u64(m.total_cycles), format_real(m.clock_hz, 12),
                 format_real(m.seconds, 9), u64(m.total_flops), format_real(m.achieved_tflops),
                 format_real(m.mxu_utilization), u64(m.hbm_bytes), format_real(m.hbm_bandwidth, 9),
                 format_real(m.hbm_bandwidth_utilization), u64(m.vmem_peak_bytes), format_real(r.sim.wall_seconds),
                 r.version, r.config_hash.empty() ? config_hash(r.config_yaml) : r.config_hash});
}

namespace {
std::string ici_axes(const RunReport& r, const CollectiveRecord& c) {
  const auto& w = std::get<arch::IciWork>(r.lowered.program.instrs.at(c.instr).work);
  std::string out;
  for (const auto& a : w.axes) out += (out.empty() ? "" : "+") + a;
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

void write_results(const RunReport& r, const std::string& out_dir, const WriteOptions& o) {
  // Compute first: an inconsistent report must not leave half a directory.
  const RunMetrics m = compute_metrics(r);
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
    put("units.csv", [&](std::ostream& os) { write_units_csv(r, os); });
    put("config.effective.yaml", [&](std::ostream& os) { os << r.config_yaml; });
    if (o.trace) put("trace.json", [&](std::ostream& os) { write_chrome_trace(r, os); });
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

void print_summary(const RunReport& r, std::ostream& os, int top) {
  const RunMetrics m = compute_metrics(r);
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
  os << "  HBM         " << human_bytes(static_cast<double>(m.hbm_bytes)) << " moved, "
     << (m.hbm_bandwidth ? fmt::format("{:.1f} GB/s", *m.hbm_bandwidth / 1e9) : std::string("-")) << " = "
     << pct(m.hbm_bandwidth_utilization) << " of " << fmt::format("{:.1f} GB/s", m.hbm_peak_bandwidth / 1e9)
     << " peak\n";
  os << "  VMEM peak   " << human_bytes(static_cast<double>(m.vmem_peak_bytes)) << " per core\n";
}

}  // namespace tpusim::sim
