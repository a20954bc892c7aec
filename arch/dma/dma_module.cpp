// See dma_module.h.
#include "arch/dma/dma_module.h"

#include <algorithm>
#include <memory>
#include <string>

#include "arch/common/errors.h"
#include "arch/common/time.h"

namespace tpusim::arch {

DmaModule::DmaModule(sc_core::sc_module_name name, const DmaConfig& dma, const HbmConfig& hbm_config, double clock_hz,
                     HbmModule& hbm, OnChipBandwidth on_chip, int ici_engines)
    : sc_core::sc_module(name), hbm_(hbm), on_chip_(on_chip) {
  if (dma.engines <= 0) throw ConfigError("dma.engines must be positive");
  core_engines_ = static_cast<std::size_t>(dma.engines);
  for (int i = 0; i < dma.engines + std::max(0, ici_engines); ++i) engines_.emplace_back(dma, hbm_config, clock_hz);
  per_engine_.resize(engines_.size());
  if (on_chip.host > 0) host_ = std::make_unique<HostLinkTiming>(on_chip.host);
  SC_HAS_PROCESS(DmaModule);
  SC_THREAD(timers);
}

void DmaModule::at(Ps t, std::function<void()> fn) {
  timers_.push({t, timer_seq_++, std::move(fn)});
  timer_wake_.notify(sc_core::SC_ZERO_TIME);
}

void DmaModule::timers() {
  for (;;) {
    const Ps now = HbmModule::now_ps();
    while (!timers_.empty() && timers_.top().at <= now) {
      // Moved out before the pop (the heap orders by time and sequence only).
      std::function<void()> fn = std::move(const_cast<Timer&>(timers_.top()).fn);
      timers_.pop();
      fn();
    }
    if (timers_.empty())
      sc_core::wait(timer_wake_);
    else
      sc_core::wait(ps_to_time(static_cast<std::uint64_t>(timers_.top().at - now)), timer_wake_);
  }
}

void DmaModule::start(const DmaDescriptor& d, int engine, std::function<void()> on_done) {
  if (engine >= static_cast<int>(engines_.size()))
    throw InternalError("DmaModule::start: engine " + std::to_string(engine) + " of " +
                        std::to_string(engines_.size()));
  if (engine < 0) {
    engine = static_cast<int>(next_engine_);
    next_engine_ = (next_engine_ + 1) % core_engines_;
  }
  const bool to_host = d.src == MemSpace::host || d.dst == MemSpace::host;
  if (to_host && !(d.src == MemSpace::hbm || d.dst == MemSpace::hbm))
    throw ConfigError("dma descriptor: host transfers go to or from HBM only");
  if (to_host && !host_)
    throw ConfigError("dma descriptor: a copy to or from host memory needs the chip's pcie_bandwidth");
  const Ps now = HbmModule::now_ps();
  DmaEngineTiming& eng = engines_[static_cast<std::size_t>(engine)];
  DmaPlan& p = plan_;
  eng.plan(d, now, p);
  if (p.hbm.empty()) {
    // On-chip copy: the engine moves the data itself, at the slower
    // memory's bandwidth, and is busy until it is done.
    p.issue_end = on_chip_end(d, p);
    eng.occupy_until(p.issue_end);
  }
  ++descriptors_;
  bytes_ += d.bytes();
  // On-chip ends, for the energy model: each end in VMEM or CMEM is one
  // access of the copy's bytes there.
  for (MemSpace s : {d.src, d.dst}) {
    if (s == MemSpace::vmem) vmem_bytes_ += d.bytes();
    if (s == MemSpace::cmem) cmem_bytes_ += d.bytes();
  }
  requests_ += p.requests;
  EngineStats& es = per_engine_[static_cast<std::size_t>(engine)];
  ++es.descriptors;
  es.bytes += d.bytes();
  es.issue_ps += p.issue_end - p.issue_start;
  // Completion: all HBM transfers done, and never before the last request
  // has been issued (on-chip copies take the issue time only).
  Ps floor = p.issue_end;
  if (!p.hbm.empty() && on_chip_.vmem > 0 && (d.src == MemSpace::vmem || d.dst == MemSpace::vmem)) {
    // The VMEM side of an HBM copy: whole granules at VMEM's bandwidth.
    const std::uint64_t g = on_chip_.vmem_granule > 0 ? on_chip_.vmem_granule : 1;
    std::uint64_t rows = 1;
    for (int k = 1; k < d.dims; ++k) rows *= d.shape[static_cast<std::size_t>(k)];
    const std::uint64_t row_bytes = (d.shape[0] + g - 1) / g * g;  // whole granules
    const double bytes = static_cast<double>(rows) * static_cast<double>(row_bytes);
    floor = std::max(floor, p.issue_start + static_cast<Ps>(bytes / on_chip_.vmem * 1e12));
  }
  const bool link = to_host && d.bytes() > 0;
  const std::uint32_t j = new_join(p.hbm.size() + 1 + (link ? 1 : 0), floor, now, std::move(on_done));
  for (auto& [t, arrival] : p.hbm) {
    hbm_bytes_ += t.bytes();
    hbm_.submit(t, arrival, *this, j);
  }
  // The link side: the data crosses the host link from when the engine
  // starts issuing (the HBM side streams at HBM's rate alongside).
  if (link) {
    host_bytes_ += d.bytes();
    const std::uint64_t bytes = d.bytes();
    at(p.issue_start,
       [this, bytes, j] { host_transfer(HbmModule::now_ps(), bytes, [this, j](Ps t) { part_done(j, t); }); });
  }
  part_done(j, floor);
}

std::uint32_t DmaModule::new_join(std::size_t parts, Ps floor, Ps now, std::function<void()> fn) {
  std::uint32_t slot;
  if (!free_joins_.empty()) {
    slot = free_joins_.back();
    free_joins_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(joins_.size());
    joins_.emplace_back();
  }
  Join& j = joins_[slot];
  j.left = parts;
  j.done = floor;
  j.started = now;
  j.fn = std::move(fn);
  return slot;
}

void DmaModule::part_done(std::uint32_t slot, Ps t) {
  Join& j = joins_[slot];
  j.done = std::max(j.done, t);
  if (--j.left > 0) return;
  ++completed_;
  latency_sum_ += static_cast<double>(j.done - j.started);
  const Ps done = j.done;
  std::function<void()> fn = std::move(j.fn);
  j.fn = nullptr;
  free_joins_.push_back(slot);
  at(done, std::move(fn));  // done >= the start time: runs at that exact time
}

void DmaModule::host_transfer(Ps t, std::uint64_t bytes, std::function<void(Ps)> fn) {
  for (std::uint64_t id : host_->advance(t)) {  // finished exactly now
    auto f = std::move(host_done_.at(id));
    host_done_.erase(id);
    f(t);
  }
  host_done_[host_->add(t, bytes)] = std::move(fn);
  host_wake();
}

// (Re)arms the timer of the link's next completion; a timer armed before
// the last change to the link is stale and does nothing.
void DmaModule::host_wake() {
  const Ps next = host_->next_completion();
  if (next == HostLinkTiming::kNever) return;
  const std::uint64_t gen = ++host_wake_gen_;
  at(next, [this, gen, next] {
    if (gen != host_wake_gen_) return;
    for (std::uint64_t id : host_->advance(next)) {
      auto f = std::move(host_done_.at(id));
      host_done_.erase(id);
      f(next);
    }
    host_wake();
  });
}

Ps DmaModule::on_chip_end(const DmaDescriptor& d, const DmaPlan& p) {
  auto bw = [&](MemSpace s) {
    switch (s) {
      case MemSpace::cmem: return on_chip_.cmem;
      case MemSpace::smem: return on_chip_.smem;
      // The HBM and ICI ends are timed by their own models; the on-chip
      // side of such a copy is VMEM's.
      case MemSpace::vmem:
      case MemSpace::host:
      case MemSpace::hbm:
      case MemSpace::ici: return on_chip_.vmem;
    }
    return on_chip_.vmem;
  };
  const double b = std::min(bw(d.src), bw(d.dst));
  if (!(b > 0)) return p.issue_end;
  const Ps t = static_cast<Ps>(static_cast<double>(d.bytes()) / b * 1e12);
  Ps begin = p.issue_start;
  // CMEM's bandwidth is shared by every engine (one server, first come
  // first served): copies on several engines cannot together exceed it.
  if (d.src == MemSpace::cmem || d.dst == MemSpace::cmem) {
    begin = std::max(begin, cmem_free_);
    cmem_free_ = begin + t;
  }
  return std::max(p.issue_end, begin + t);
}

void DmaModule::start(const DmaDescriptor& d, sc_core::sc_event& done, int engine) {
  start(d, engine, [&done] { done.notify(sc_core::SC_ZERO_TIME); });
}

void DmaModule::start(const DmaWork& work, int engine, std::function<void()> on_done) {
  // The sequencer names engines of the program's config; fold any extra.
  if (engine >= 0) engine %= static_cast<int>(core_engines_);
  start(DmaDescriptor::from_work(work), engine, std::move(on_done));
}

void DmaModule::start_collective(const DmaWork& work, int engine, std::function<void()> on_done) {
  const std::size_t ici = engines_.size() - core_engines_;
  if (ici == 0) return start(work, engine, std::move(on_done));
  const std::size_t e = core_engines_ + static_cast<std::size_t>(std::max(0, engine)) % ici;
  start(DmaDescriptor::from_work(work), static_cast<int>(e), std::move(on_done));
}

StatList DmaModule::stats() const {
  return {
      {"descriptors", static_cast<double>(descriptors_), "count", "descriptors started"},
      {"completed", static_cast<double>(completed_), "count", "descriptors completed"},
      {"bytes", static_cast<double>(bytes_), "bytes", "bytes copied"},
      {"hbm_bytes", static_cast<double>(hbm_bytes_), "bytes", "bytes moved to or from HBM"},
      {"vmem_bytes", static_cast<double>(vmem_bytes_), "bytes", "bytes read from or written to VMEM"},
      {"cmem_bytes", static_cast<double>(cmem_bytes_), "bytes", "bytes read from or written to CMEM"},
      {"requests", static_cast<double>(requests_), "count", "memory requests issued"},
      {"host_bytes", static_cast<double>(host_bytes_), "bytes", "bytes moved to or from host memory over the host link"},
      {"host_link_busy", host_ ? ps_to_seconds(host_->busy_ps()) : 0.0, "s",
       "time the host link carried at least one transfer"},
      {"avg_latency", completed_ ? latency_sum_ / completed_ * 1e-12 : 0, "s",
       "start to completion, mean per descriptor"},
  };
}

std::vector<std::pair<std::string, StatList>> DmaModule::block_stats() const {
  std::vector<std::pair<std::string, StatList>> out;
  for (std::size_t i = 0; i < per_engine_.size(); ++i) {
    const EngineStats& e = per_engine_[i];
    out.push_back({i < core_engines_ ? "dma" + std::to_string(i) : "ici_dma" + std::to_string(i - core_engines_),
                   {{"descriptors", static_cast<double>(e.descriptors), "count", "descriptors started"},
                    {"bytes", static_cast<double>(e.bytes), "bytes", "bytes copied"},
                    {"issue_time", ps_to_seconds(e.issue_ps), "s",
                     "time spent issuing requests (on-chip copies: moving the data)"}}});
  }
  out.push_back({"dma", stats()});
  out.push_back({"hbm", hbm_.stats()});
  return out;
}

}  // namespace tpusim::arch
