// Chrome trace-event writer; see trace_writer.h. Format reference: "Trace
// Event Format" (Google, docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU).
#include "sim/results/trace_writer.h"

#include <map>
#include <tuple>
#include <variant>

#include "arch/common/errors.h"
#include "sim/results/format.h"

namespace tpusim::sim {

TrackKey track_key(const arch::Instr& in, const arch::InstrRecord& rec) {
  switch (in.unit) {
    case arch::UnitKind::mxu: return {0, in.core, 0, rec.unit_index};
    case arch::UnitKind::vpu: return {0, in.core, 1, 0};
    case arch::UnitKind::xlu: return {0, in.core, 2, rec.unit_index};
    case arch::UnitKind::dma: return {1, 0, 0, rec.unit_index};
    case arch::UnitKind::ici: return {2, 0, 0, 0};
  }
  return {3, 0, 0, 0};
}

namespace {

struct ArgWriter {
  std::ostream& os;
  const arch::Program& prog;
  void operator()(const arch::MxuWork& w) const {
    os << ",\"m\":" << w.m << ",\"k\":" << w.k << ",\"n\":" << w.n
       << ",\"dtype\":" << json_string(std::string(arch::dtype_name(w.dtype)));
  }
  void operator()(const arch::VpuWork& w) const {
    os << ",\"elements\":" << w.elements << ",\"dtype\":" << json_string(std::string(arch::dtype_name(w.dtype)))
       << ",\"alu_ops\":" << format_real(w.alu_ops, 9)
       << ",\"transcendental_ops\":" << format_real(w.transcendental_ops, 9) << ",\"inputs\":" << w.inputs
       << ",\"outputs\":" << w.outputs;
  }
  void operator()(const arch::XluWork& w) const {
    const char* op = w.op == arch::XluOp::reduce ? "reduce" : w.op == arch::XluOp::transpose ? "transpose" : "permute";
    os << ",\"xlu_op\":\"" << op << "\",\"elements\":" << w.elements
       << ",\"dtype\":" << json_string(std::string(arch::dtype_name(w.dtype)));
  }
  void operator()(const arch::DmaWork& w) const {
    os << ",\"src\":\"" << arch::mem_space_name(w.src) << "\",\"dst\":\"" << arch::mem_space_name(w.dst)
       << "\",\"bytes\":" << w.bytes() << ",\"rows\":" << w.rows << ",\"row_bytes\":" << w.row_bytes;
  }
  void operator()(const arch::IciWork& w) const {
    std::string axes;
    for (const auto& a : prog.group(w).axes) axes += (axes.empty() ? "" : ",") + a;
    os << ",\"collective\":" << static_cast<int>(w.kind) << ",\"bytes\":" << w.bytes
       << ",\"axes\":" << json_string(axes);
  }
};

}  // namespace

std::string track_name(const arch::Instr& in, const arch::InstrRecord& rec) {
  const std::string tc = "tc" + std::to_string(in.core) + ".";
  switch (in.unit) {
    case arch::UnitKind::mxu: return tc + "mxu" + std::to_string(rec.unit_index);
    case arch::UnitKind::vpu: return tc + "vpu";
    case arch::UnitKind::xlu: return tc + "xlu" + std::to_string(rec.unit_index);
    case arch::UnitKind::dma: return "dma" + std::to_string(rec.unit_index);
    case arch::UnitKind::ici: return "ici";
  }
  return "?";
}

void write_chrome_trace(const RunReport& r, std::ostream& os, const EnergyMetrics* energy) {
  const arch::Program& prog = r.lowered.program;
  if (!(r.sim.clock_hz > 0)) throw arch::InternalError("RunReport: SimResult::clock_hz must be > 0");
  if (r.sim.records.size() != prog.instrs.size())
    throw arch::InternalError("RunReport: instruction records do not match the program");

  // Tracks in a fixed order so that tids do not depend on issue order.
  std::map<TrackKey, std::string> tracks;
  for (std::size_t id = 0; id < prog.instrs.size(); ++id)
    tracks.emplace(track_key(prog.instrs[id], r.sim.records[id]), track_name(prog.instrs[id], r.sim.records[id]));
  std::map<TrackKey, int> tid;
  int next = 1;
  for (const auto& t : tracks) tid[t.first] = next++;

  const double us_per_cycle = 1e6 / r.sim.clock_hz;
  os << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"arch\":" << json_string(r.arch_name)
     << ",\"workload\":" << json_string(r.workload_name) << ",\"clock_hz\":" << format_real(r.sim.clock_hz, 12)
     << ",\"tpusim_version\":" << json_string(r.version) << "},\n\"traceEvents\":[\n";
  os << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{\"name\":"
     << json_string("chip" + std::to_string(r.sim.slowest_chip) + " " + r.arch_name) << "}}";
  for (const auto& [key, name] : tracks) {
    const int t = tid[key];
    os << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":" << t
       << ",\"args\":{\"name\":" << json_string(name) << "}}";
    os << ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":" << t << ",\"args\":{\"sort_index\":" << t
       << "}}";
  }
  for (std::size_t id = 0; id < prog.instrs.size(); ++id) {
    const arch::Instr& in = prog.instrs[id];
    const arch::InstrRecord& rec = r.sim.records[id];
    std::string name;
    if (in.op < r.lowered.ops.size())
      name = r.lowered.ops[in.op].name;
    else if (in.op < prog.op_names.size())
      name = prog.op_names[in.op];
    else
      throw arch::InternalError("RunReport: instruction " + std::to_string(id) + " names op " + std::to_string(in.op) +
                                " which does not exist");
    if (rec.finish < rec.start)
      throw arch::InternalError("RunReport: instruction " + std::to_string(id) + " finishes before it starts");
    const double ts = static_cast<double>(rec.start) * us_per_cycle;
    const double dur = static_cast<double>(rec.finish - rec.start) * us_per_cycle;
    os << ",\n{\"name\":" << json_string(name) << ",\"cat\":\"" << arch::unit_kind_name(in.unit)
       << "\",\"ph\":\"X\",\"pid\":0,\"tid\":" << tid[track_key(in, rec)] << ",\"ts\":" << format_fixed(ts, 6)
       << ",\"dur\":" << format_fixed(dur, 6) << ",\"args\":{\"instr\":" << id << ",\"op\":" << in.op << ",\"kind\":\""
       << arch::unit_kind_name(in.unit) << "\"";
    std::visit(ArgWriter{os, prog}, in.work);
    os << ",\"issue_cycle\":" << rec.issue << ",\"start_cycle\":" << rec.start << ",\"finish_cycle\":" << rec.finish
       << "}}";
  }
  if (energy && !energy->profile.empty()) {
    // Counter samples hold until the next one: a last sample of zeros at
    // the end of the run closes the track.
    auto sample = [&](double start_s, const PowerBin* b) {
      os << ",\n{\"name\":\"power (W)\",\"ph\":\"C\",\"pid\":0,\"ts\":" << format_fixed(start_s * 1e6, 6)
         << ",\"args\":{";
      for (std::size_t p = 0; p < arch::kEnergyParts; ++p)
        os << (p ? "," : "") << "\"" << arch::energy_part_name(arch::kAllEnergyParts[p])
           << "\":" << format_real(b ? b->watts[p] : 0.0, 6);
      os << "}}";
    };
    for (const PowerBin& b : energy->profile) sample(b.start, &b);
    const PowerBin& last = energy->profile.back();
    sample(last.start + last.width, nullptr);
  }
  os << "\n]}\n";
}

}  // namespace tpusim::sim
