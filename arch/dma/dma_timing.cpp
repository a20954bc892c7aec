// See dma_timing.h.
#include "arch/dma/dma_timing.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "arch/common/errors.h"
#include "arch/common/rounding.h"
#include "arch/hbm/dram_timing.h"

namespace tpusim::arch {

Ps hbm_unloaded_latency(const HbmConfig& hbm, std::uint64_t bytes) {
  const DramTiming t(hbm);
  const std::uint64_t bursts = std::max<std::uint64_t>(1, (bytes + t.burst_bytes - 1) / t.burst_bytes);
  return t.controller + t.RCD + t.CL + static_cast<Ps>(bursts - 1) * t.CCD_L + t.burst;
}

DmaEngineTiming::DmaEngineTiming(const DmaConfig& dma, const HbmConfig& hbm, double clock_hz) : dma_(dma) {
  if (!(clock_hz > 0)) throw ConfigError("dma: the engine clock must be positive");
  if (dma.issue_per_cycle <= 0 || dma.max_outstanding <= 0 || dma.request_bytes == 0 || dma.setup_cycles < 0 ||
      dma.engines <= 0)
    throw ConfigError(
        "dma: engines, issue_per_cycle, max_outstanding and request_bytes must be positive, setup_cycles >= 0");
  const double cycle_ps = 1e12 / clock_hz;
  const double by_issue = cycle_ps / dma.issue_per_cycle;
  const double by_window = static_cast<double>(hbm_unloaded_latency(hbm, dma.request_bytes)) / dma.max_outstanding;
  interval_ps_ = std::max(by_issue, by_window);
  setup_ps_ = static_cast<Ps>(std::llround(dma.setup_cycles * cycle_ps));
}

namespace {

// The HBM side of a descriptor as 2-D slabs: rows of shape[0] bytes,
// shape[1] of them `stride[1]` apart, repeated over dims 2 and 3.
void slabs(const DmaDescriptor& d, std::uint64_t base, const std::array<std::uint64_t, 4>& stride, bool write,
           std::uint64_t atom, std::vector<HbmTransfer>& out) {
  const std::uint64_t n2 = d.dims > 2 ? d.shape[2] : 1, n3 = d.dims > 3 ? d.shape[3] : 1;
  const std::uint64_t rows = d.dims > 1 ? d.shape[1] : 1;
  for (std::uint64_t i3 = 0; i3 < n3; ++i3)
    for (std::uint64_t i2 = 0; i2 < n2; ++i2) {
      HbmTransfer t;
      t.base = base + i3 * stride[3] + i2 * stride[2];
      t.row_bytes = d.shape[0];
      t.rows = rows;
      t.stride = rows > 1 ? stride[1] : 0;
      if (t.contiguous()) {  // one run: fold rows into bytes
        t.row_bytes *= rows;
        t.rows = 1;
        t.stride = 0;
      }
      t.write = write;
      t.atom_bytes = atom;
      out.push_back(t);
    }
}

std::uint64_t atoms_of(const HbmTransfer& t) {
  return (t.row_bytes + t.atom_bytes - 1) / t.atom_bytes * std::max<std::uint64_t>(t.rows, 1);
}

}  // namespace

DmaPlan DmaEngineTiming::plan(const DmaDescriptor& d, Ps now) {
  DmaPlan p;
  plan(d, now, p);
  return p;
}

void DmaEngineTiming::plan(const DmaDescriptor& d, Ps now, DmaPlan& p) {
  if (d.dims < 1 || d.dims > 4) throw ConfigError("dma descriptor: dims must be 1..4, got " + std::to_string(d.dims));
  // HBM <-> ICI: a collective's own traffic, timed on the HBM side only
  // (the network side is the ICI model's); ICI to on-chip memory is not
  // modelled.
  const bool ici_src = d.src == MemSpace::ici, ici_dst = d.dst == MemSpace::ici;
  if ((ici_src && d.dst != MemSpace::hbm) || (ici_dst && d.src != MemSpace::hbm))
    throw ConfigError("dma descriptor: ICI transfers go to or from HBM only");
  for (int k = 1; k < d.dims; ++k) {
    const auto kk = static_cast<std::size_t>(k);
    if (d.shape[kk] > 1 && d.src == MemSpace::hbm && d.src_stride[kk] == 0)
      throw ConfigError("dma descriptor: source stride of dim " + std::to_string(k) + " is 0");
    if (d.shape[kk] > 1 && d.dst == MemSpace::hbm && d.dst_stride[kk] == 0)
      throw ConfigError("dma descriptor: destination stride of dim " + std::to_string(k) + " is 0");
  }
  p.interval_ps = interval_ps_;
  p.issue_start = std::max(now, free_at_) + setup_ps_;
  p.hbm.clear();
  std::vector<HbmTransfer>& rd = rd_;
  std::vector<HbmTransfer>& wr = wr_;
  rd.clear();
  wr.clear();
  if (d.src == MemSpace::hbm) slabs(d, d.src_addr, d.src_stride, false, dma_.request_bytes, rd);
  if (d.dst == MemSpace::hbm) slabs(d, d.dst_addr, d.dst_stride, true, dma_.request_bytes, wr);
  auto schedule = [&](std::vector<HbmTransfer>& v) {
    std::uint64_t before = 0;
    for (HbmTransfer& t : v) {
      t.atom_interval_ps = interval_ps_;
      p.hbm.push_back({t, p.issue_start + static_cast<Ps>(round_half_up(static_cast<double>(before) * interval_ps_))});
      before += atoms_of(t);
    }
    return before;
  };
  // A copy's requests are paced by whichever side is HBM; HBM to HBM reads
  // and writes go out side by side.
  const std::uint64_t n = std::max(schedule(rd), schedule(wr));
  p.requests = n != 0 ? n : (d.bytes() + dma_.request_bytes - 1) / dma_.request_bytes;
  p.issue_end = p.issue_start + static_cast<Ps>(round_half_up(static_cast<double>(p.requests) * interval_ps_));
  free_at_ = p.issue_end;
}

}  // namespace tpusim::arch
