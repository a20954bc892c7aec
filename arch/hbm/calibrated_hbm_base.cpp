// See calibrated_hbm_base.h.
#include "arch/hbm/calibrated_hbm_base.h"

#include <algorithm>
#include <string>

#include "arch/common/errors.h"
#include "arch/hbm/detailed_dram.h"

namespace tpusim::arch {

CalibratedHbmBase::CalibratedHbmBase(const HbmConfig& config, const char* name, const char* busy)
    : cfg_(config),
      peak_(hbm_peak_bandwidth(config)),
      calib_(config),
      map_(config),
      tm_(config),
      name_(name),
      busy_(busy) {
  cfg_.model = "detailed";
  DetailedDram probe(cfg_);  // validates the config now rather than at first use
  interleave_ = map_.interleave_bytes();
  sweep_bytes_ = interleave_ * map_.pseudo_channels_total();
  pcs_total_ = map_.pseudo_channels_total();
}

double CalibratedHbmBase::mixed_capacity(std::uint64_t atom_bytes) {
  // Asked on every share change, nearly always for the same atom size.
  if (atom_bytes == last_mixed_atom_) return last_mixed_;
  auto it = mixed_.find(atom_bytes);
  if (it != mixed_.end()) {
    last_mixed_atom_ = atom_bytes;
    last_mixed_ = it->second;
    return it->second;
  }
  const Ps last = calib_.read_write_time(atom_bytes, kMixBytes);
  HbmTransfer r;
  r.atom_bytes = atom_bytes;
  r.row_bytes = kMixBytes;
  HbmTransfer w = r;
  w.write = true;
  const double need = static_cast<double>(kMixBytes) * (slope0(class_of(r)) + slope0(class_of(w)));
  const double lat = static_cast<double>(std::max(atom_latency(r), atom_latency(w)));
  const double v = std::clamp(need / (static_cast<double>(last) - lat), 0.05, 1.0);
  mixed_.emplace(atom_bytes, v);
  return v;
}

std::uint64_t CalibratedHbmBase::accept(const HbmTransfer& t, Ps arrival) {
  if (arrival < limit_) throw InternalError(std::string(name_) + "::submit: arrival before the time already simulated");
  if (t.atom_bytes == 0) throw ConfigError("hbm transfer: atom_bytes must be positive");
  const std::uint64_t id = next_id_++;
  ++transfers_;
  (t.write ? bytes_written_ : bytes_read_) += t.bytes();
  // Row activations, estimated for the energy model (these models time
  // transfers, not commands): a contiguous transfer opens each DRAM row it
  // covers once, a strided one at least one row per piece (open page, no
  // row reuse between transfers). The detailed model counts real ACTs.
  const std::uint64_t row = std::max<std::uint64_t>(cfg_.row_bytes, 1);
  activates_ += t.contiguous() ? (t.bytes() + row - 1) / row : t.rows * ((t.row_bytes + row - 1) / row);
  if (t.bytes() == 0) done_.push(arrival, id);
  return id;
}

std::vector<HbmCompletion> CalibratedHbmBase::run_until(Ps limit) {
  std::vector<HbmCompletion> out;
  collect_until(limit, out);
  return out;
}

void CalibratedHbmBase::collect_until(Ps limit, std::vector<HbmCompletion>& out) {
  if (limit < limit_) limit = limit_;
  advance(limit);
  limit_ = limit;
  done_.take_until(limit, out);
}

StatList CalibratedHbmBase::stats() const {
  StatList s{
      {"transfers", static_cast<double>(transfers_), "count", "transfers submitted"},
      {"bytes_read", static_cast<double>(bytes_read_), "bytes", "bytes read"},
      {"bytes_written", static_cast<double>(bytes_written_), "bytes", "bytes written"},
      {"busy_time", busy_ps_ * 1e-12, "s", busy_},
      {"activates", static_cast<double>(activates_), "count",
       "DRAM row activations, estimated: each row a transfer covers opened once"},
  };
  model_stats(s);
  s.push_back({"calibration_runs", static_cast<double>(detailed_runs()), "count",
               "detailed-model runs made to calibrate pattern classes"});
  return s;
}

}  // namespace tpusim::arch
