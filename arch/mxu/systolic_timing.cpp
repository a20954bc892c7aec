// Closed-form MXU timing; the recurrence and its solution are derived in
// systolic_timing.h and docs/mxu.md.
#include "arch/mxu/systolic_timing.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "arch/common/errors.h"

namespace tpusim::arch {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// T * B*p * R*C: every PE lane of every beat of every weight tile, for an
// op already checked (rate `r` of its dtype, dims >= 1).
std::uint64_t mac_slots(std::int64_t rows, std::int64_t cols, const MxuRate& r, const MxuOp& op) {
  using U = std::uint64_t;
  const U p = static_cast<U>(r.rows_per_beat);
  const U T = static_cast<U>(ceil_div(op.k, rows) * ceil_div(op.n, cols));
  const U B = (static_cast<U>(op.m) + p - 1) / p;
  return T * B * p * static_cast<U>(rows) * static_cast<U>(cols);
}

void check_dims(const MxuOp& op) {
  if (op.m < 1 || op.k < 1 || op.n < 1)
    throw ConfigError("MXU op A[" + std::to_string(op.m) + "," + std::to_string(op.k) + "] @ B[" +
                      std::to_string(op.k) + "," + std::to_string(op.n) + "]: every dimension must be >= 1");
}

MxuRate rate_from_throughput(DType t, double f) {
  const std::string where = "mxu.throughput." + std::string(dtype_name(t));
  if (!std::isfinite(f) || f <= 0)
    throw ConfigError(where + ": expected a positive number, found " + std::to_string(f));
  MxuRate r;
  r.supported = true;
  // Only integer or 1/integer rates have a cycle-exact meaning (p rows per
  // beat, or one row every q cycles); anything else would need a fractional
  // beat the hardware cannot issue.
  if (f >= 1) {
    const double p = std::round(f);
    if (std::fabs(f - p) > 1e-9 * p)
      throw ConfigError(where + ": a rate above 1 must be an integer (rows per beat), found " + std::to_string(f));
    r.rows_per_beat = static_cast<std::int64_t>(p);
  } else {
    const double q = std::round(1.0 / f);
    if (std::fabs(1.0 / f - q) > 1e-9 * q)
      throw ConfigError(where + ": a rate below 1 must be 1/integer (cycles per row), found " + std::to_string(f));
    r.cycles_per_beat = static_cast<std::int64_t>(q);
  }
  return r;
}

}  // namespace

MxuGeometry::MxuGeometry(const MxuConfig& cfg)
    : rows(cfg.rows),
      cols(cfg.cols),
      load_cycles(cfg.weight_load_cycles == 0 ? cfg.rows : cfg.weight_load_cycles),
      double_buffer(cfg.weight_double_buffer),
      input_latency(cfg.input_latency),
      output_latency(cfg.output_latency) {
  if (cfg.rows < 1) throw ConfigError("mxu.rows: expected >= 1, found " + std::to_string(cfg.rows));
  if (cfg.cols < 1) throw ConfigError("mxu.cols: expected >= 1, found " + std::to_string(cfg.cols));
  if (cfg.weight_load_cycles < 0)
    throw ConfigError("mxu.weight_load_cycles: expected >= 0 (0 = rows), found " +
                      std::to_string(cfg.weight_load_cycles));
  if (cfg.input_latency < 0)
    throw ConfigError("mxu.input_latency: expected >= 0, found " + std::to_string(cfg.input_latency));
  if (cfg.output_latency < 0)
    throw ConfigError("mxu.output_latency: expected >= 0, found " + std::to_string(cfg.output_latency));
  for (const auto& [t, f] : cfg.throughput) rate.at(static_cast<std::size_t>(t)) = rate_from_throughput(t, f);
  const MxuSparsityConfig& sp = cfg.sparsity;
  if (sp.n < 0 || sp.m < 0 || (sp.n > 0 && sp.m <= sp.n))
    throw ConfigError("mxu.sparsity: expected 0 < n < m (or n = 0 for no sparse mode), found n = " +
                      std::to_string(sp.n) + ", m = " + std::to_string(sp.m));
  if (!(sp.metadata_bytes_per_cycle >= 0))
    throw ConfigError("mxu.sparsity.metadata_bandwidth: expected >= 0 bytes per cycle, found " +
                      std::to_string(sp.metadata_bytes_per_cycle));
  sparse_load_cycles = load_cycles;
  if (sp.n > 0 && sp.metadata_bytes_per_cycle > 0) {
    const double meta = static_cast<double>(rows * cols * sp.metadata_bits()) / 8.0;
    sparse_load_cycles =
        std::max(load_cycles, static_cast<std::int64_t>(std::ceil(meta / sp.metadata_bytes_per_cycle)));
  }
}

const MxuRate& MxuGeometry::rate_of(DType t) const {
  const MxuRate& r = rate[static_cast<std::size_t>(t)];
  if (!r.supported) {
    std::string have;
    for (DType d : kAllDTypes)
      if (rate[static_cast<std::size_t>(d)].supported) have += (have.empty() ? "" : ", ") + std::string(dtype_name(d));
    throw ConfigError("MXU does not support dtype " + std::string(dtype_name(t)) +
                      " (mxu.throughput lists: " + (have.empty() ? "none" : have) + ")");
  }
  return r;
}

double MxuGeometry::peak_macs_per_cycle(DType t) const {
  const MxuRate& r = rate_of(t);
  return static_cast<double>(rows * cols) * static_cast<double>(r.rows_per_beat) /
         static_cast<double>(r.cycles_per_beat);
}

std::uint64_t MxuGeometry::issued_mac_slots(const MxuOp& op) const {
  const MxuRate& r = rate_of(op.dtype);
  check_dims(op);
  return mac_slots(rows, cols, r, op);
}

MxuTimer::MxuTimer(const MxuConfig& cfg) : g_(cfg), accumulator_(cfg.accumulator) {}

void MxuTimer::reset() {
  load_free_ = stream_free_ = drain_free_ = 0;
  tot_ = Totals{};
}

MxuOpTiming MxuTimer::issue(const MxuOp& op, MxuCycles ready) {
  const MxuRate& r = g_.rate_of(op.dtype);
  check_dims(op);
  using U = MxuCycles;
  const U R = static_cast<U>(g_.rows), C = static_cast<U>(g_.cols);
  const U L = static_cast<U>(op.sparse ? g_.sparse_load_cycles : g_.load_cycles);
  const U p = static_cast<U>(r.rows_per_beat), q = static_cast<U>(r.cycles_per_beat);
  const U T = static_cast<U>(ceil_div(op.k, g_.rows) * ceil_div(op.n, g_.cols));
  const U B = (static_cast<U>(op.m) + p - 1) / p;
  const U Bq = B * q;

  // Tile 0 from the recurrence against the state left by earlier ops.
  const U l0 = std::max(ready, load_free_);
  const U stream_floor = std::max(ready + static_cast<U>(g_.input_latency), stream_free_);
  const U s0 = std::max(stream_floor, l0 + L);
  // Tiles 1..T-1 are periodic (derivation in the header).
  const U P = g_.double_buffer ? std::max(Bq, L) : (B - 1) * q + std::max(q, L);
  const U s_last = s0 + (T - 1) * P;
  const U last_beat = s_last + (B - 1) * q;
  const U finish = last_beat + R + C - 1 + static_cast<U>(g_.output_latency);

  MxuOpTiming o;
  o.ready = ready;
  o.start = l0;
  o.stream_start = s0;
  o.finish = finish;
  o.cycles = finish - ready;
  o.useful_macs =
      static_cast<std::uint64_t>(op.m) * static_cast<std::uint64_t>(op.k) * static_cast<std::uint64_t>(op.n);
  o.issued_mac_slots = mac_slots(g_.rows, g_.cols, r, op);  // checked above
  o.wasted_macs = o.issued_mac_slots - o.useful_macs;
  o.weight_tiles = T;
  o.weight_load_cycles = T * L;
  o.weight_load_exposed = (s0 - stream_floor) + (T - 1) * (P - Bq);
  o.weight_load_hidden = o.weight_load_cycles - o.weight_load_exposed;
  o.stream_cycles = T * Bq;
  o.fill_drain_cycles = R + C - 2 + static_cast<U>(g_.output_latency);

  // The last load started at l_{T-1} (= s_{T-2} or s_{T-2} + (B-1)q), so the
  // path is free at l_{T-1} + L <= s_last; the binding constraint for the
  // next load is the weight register of the last tile.
  const U l_last = T == 1 ? l0 : (s_last - P) + (g_.double_buffer ? 0 : (B - 1) * q);
  load_free_ = std::max(l_last + L, g_.double_buffer ? s_last : last_beat);
  stream_free_ = s_last + Bq;
  drain_free_ = std::max(drain_free_, finish);

  ++tot_.ops;
  tot_.tiles += T;
  tot_.useful_macs += o.useful_macs;
  tot_.issued_mac_slots += o.issued_mac_slots;
  tot_.mac_slots_by_dtype[static_cast<std::size_t>(op.dtype)] += o.issued_mac_slots;
  tot_.operand_bytes += mxu_operand_bytes(g_.cols, accumulator_, op);
  tot_.stream_cycles += o.stream_cycles;
  tot_.weight_load_cycles += o.weight_load_cycles;
  tot_.weight_load_exposed += o.weight_load_exposed;
  tot_.last_finish = drain_free_;
  return o;
}

StatList MxuTimer::stats() const {
  const auto d = [](auto v) { return static_cast<double>(v); };
  StatList s{
      {"ops", d(tot_.ops), "count", "matmul blocks issued"},
      {"weight_tiles", d(tot_.tiles), "count", "R x C weight tiles loaded"},
      {"useful_macs", d(tot_.useful_macs), "MACs", "m*k*n summed over ops"},
      {"issued_mac_slots", d(tot_.issued_mac_slots), "MACs", "PE MAC slots used incl. padding"},
      {"wasted_macs", d(tot_.issued_mac_slots - tot_.useful_macs), "MACs",
       "MAC slots spent on padding of partial tiles and beats"},
      {"stream_cycles", d(tot_.stream_cycles), "cycles", "cycles the array input streamed LHS beats"},
      {"weight_load_cycles", d(tot_.weight_load_cycles), "cycles", "weight-path cycles loading tiles"},
      {"weight_load_exposed", d(tot_.weight_load_exposed), "cycles", "cycles weight loads delayed the LHS stream"},
      {"last_finish", d(tot_.last_finish), "cycles", "cycle the last result landed"},
      {"vmem_operand_bytes", d(tot_.operand_bytes), "bytes",
       "LHS, weight and result bytes moved between VMEM and the array"},
  };
  for (DType t : kAllDTypes)
    if (const std::uint64_t n = tot_.mac_slots_by_dtype[static_cast<std::size_t>(t)])
      s.push_back({"issued_mac_slots." + std::string(dtype_name(t)), d(n), "MACs",
                   "issued_mac_slots of ops run in " + std::string(dtype_name(t))});
  return s;
}

std::uint64_t mxu_operand_bytes(std::int64_t cols, DType accumulator, const MxuOp& op) {
  const auto m = static_cast<std::uint64_t>(op.m), k = static_cast<std::uint64_t>(op.k),
             n = static_cast<std::uint64_t>(op.n);
  const std::uint64_t col_tiles = static_cast<std::uint64_t>(ceil_div(op.n, std::max<std::int64_t>(cols, 1)));
  return col_tiles * dtype_bytes(op.dtype, m * k) + dtype_bytes(op.dtype, k * n) + dtype_bytes(accumulator, m * n);
}

MxuOpTiming mxu_block_timing(const MxuConfig& cfg, const MxuOp& op) {
  MxuTimer t(cfg);
  return t.issue(op, 0);
}

}  // namespace tpusim::arch
