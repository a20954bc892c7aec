#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/engine/memory_system.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include <systemc>

#include "arch/hbm/hbm_model.h"

namespace tpusim::sim {

namespace {

using arch::Ps;

Ps now_ps() { return static_cast<Ps>(sc_core::sc_time_stamp().value()); }  // resolution is 1 ps

class MemorySystem : public arch::DmaBackend, public sc_core::sc_module {
 public:
  MemorySystem(sc_core::sc_module_name n, const arch::TpuConfig& cfg)
      : sc_core::sc_module(n), cfg_(cfg), hbm_(arch::make_hbm_model(cfg.hbm)),
        engines_(static_cast<std::size_t>(std::max(1, cfg.dma.engines))) {
    if (sc_core::sc_get_time_resolution() != sc_core::sc_time(1, sc_core::SC_PS))
      throw std::logic_error("memory system expects SystemC's 1 ps time resolution");
    sc_core::sc_spawn([this] { pump(); }, (std::string(basename()) + "_hbm_pump").c_str());
  }

  void start(const arch::DmaWork& w, int engine, std::function<void()> on_done) override {
    Engine& e = engines_.at(static_cast<std::size_t>(engine) % engines_.size());
    e.queue.push_back({w, std::move(on_done)});
    if (!e.busy) begin(e);
  }

  std::vector<std::pair<std::string, arch::StatList>> block_stats() const override {
    std::vector<std::pair<std::string, arch::StatList>> out;
    for (std::size_t i = 0; i < engines_.size(); ++i) {
      const Engine& e = engines_[i];
      out.push_back({"dma" + std::to_string(i),
                     {{"descriptors", double(e.descriptors), "count", "copies completed"},
                      {"bytes", double(e.bytes), "bytes", "bytes copied"},
                      {"busy_ps", double(e.busy_ps), "ps", "time with a copy in flight"}}});
    }
    out.push_back({"hbm", hbm_->stats()});
    return out;
  }

 private:
  struct Job {
    arch::DmaWork work;
    std::function<void()> done;
  };
  struct Engine {
    std::deque<Job> queue;
    bool busy = false;
    Ps began = 0;
    std::uint64_t descriptors = 0, bytes = 0;
    Ps busy_ps = 0;
  };

  void begin(Engine& e) {
    e.busy = true;
    e.began = now_ps();
    const Job& j = e.queue.front();
    const arch::DmaWork& w = j.work;
    const double clock = cfg_.chip.clock_hz;
    const Ps setup = static_cast<Ps>(static_cast<double>(cfg_.dma.setup_cycles) * 1e12 / clock);
    const bool hbm_side = w.src == arch::MemSpace::hbm || w.dst == arch::MemSpace::hbm;
    if (!hbm_side) {
      // On-chip copy: the slower of the two memories' bandwidth.
      auto bw = [&](arch::MemSpace s) {
        switch (s) {
          case arch::MemSpace::cmem: return cfg_.cmem.bandwidth;
          case arch::MemSpace::smem: return cfg_.smem.bandwidth;
          default: return cfg_.vmem.bandwidth;
        }
      };
      const double b = std::max(1.0, std::min(bw(w.src), bw(w.dst)));
      const Ps t = static_cast<Ps>(static_cast<double>(w.bytes()) / b * 1e12);
      Ps end = now_ps() + setup + t;
      // CMEM's bandwidth is shared by every engine (one server, first come
      // first served): copies on several engines cannot together exceed it.
      if (w.src == arch::MemSpace::cmem || w.dst == arch::MemSpace::cmem) {
        end = std::max(now_ps() + setup, cmem_free_) + t;
        cmem_free_ = end;
      }
      onchip_.push_back({end, &e});
      wake_.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    arch::HbmTransfer t;
    const bool write = w.dst == arch::MemSpace::hbm;
    t.write = write;
    t.base = write ? w.dst_addr : w.src_addr;
    t.row_bytes = w.row_bytes;
    t.rows = w.rows;
    t.stride = write ? w.dst_stride : w.src_stride;
    if (t.stride == 0) t.stride = t.row_bytes;
    t.atom_bytes = cfg_.dma.request_bytes;
    const std::uint64_t id = hbm_->submit(t, std::max(now_ps() + setup, hbm_limit_));
    inflight_[id] = &e;
    wake_.notify(sc_core::SC_ZERO_TIME);
  }

  void finish(Engine& e) {
    Job j = std::move(e.queue.front());
    e.queue.pop_front();
    e.busy = false;
    ++e.descriptors;
    e.bytes += j.work.bytes();
    e.busy_ps += now_ps() - e.began;
    j.done();
    if (!e.queue.empty()) begin(e);
  }

  // Advances the HBM model with simulated time and fires completions at
  // their exact times; sleeps until the model's next event or a new copy.
  void pump() {
    for (;;) {
      const Ps now = now_ps();
      hbm_limit_ = std::max(hbm_limit_, now);
      for (const auto& c : hbm_->run_until(now)) {
        auto it = inflight_.find(c.id);
        Engine* e = it->second;
        inflight_.erase(it);
        finish(*e);
      }
      // On-chip copies due now.
      for (std::size_t i = 0; i < onchip_.size();) {
        if (onchip_[i].first <= now) {
          Engine* e = onchip_[i].second;
          onchip_.erase(onchip_.begin() + static_cast<long>(i));
          finish(*e);
        } else {
          ++i;
        }
      }
      Ps next = hbm_->next_event_time();
      for (const auto& o : onchip_) next = std::min(next, o.first);
      if (next == arch::kNever) {
        sc_core::wait(wake_);
      } else {
        // At least 1 ps, so that a model whose next event is "now" cannot
        // stall the kernel in delta cycles.
        const Ps dt = std::max<Ps>(next - now, 1);
        sc_core::wait(sc_core::sc_time(static_cast<double>(dt), sc_core::SC_PS), wake_);
      }
    }
  }

  const arch::TpuConfig& cfg_;
  std::unique_ptr<arch::HbmModel> hbm_;
  std::vector<Engine> engines_;
  std::unordered_map<std::uint64_t, Engine*> inflight_;
  std::vector<std::pair<Ps, Engine*>> onchip_;
  Ps hbm_limit_ = 0;
  Ps cmem_free_ = 0;  // CMEM busy until (shared by the engines)
  sc_core::sc_event wake_;
};

}  // namespace

std::unique_ptr<arch::DmaBackend> make_memory_system(const arch::TpuConfig& cfg,
                                                     const std::string& name) {
  return std::make_unique<MemorySystem>(name.c_str(), cfg);
}

}  // namespace tpusim::sim
