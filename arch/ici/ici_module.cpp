// See ici_module.h.
#include "arch/ici/ici_module.h"

#include <algorithm>
#include <climits>

#include "arch/common/errors.h"

namespace tpusim::arch::ici {

Ps IciModule::now_ps() {
  return static_cast<Ps>(sc_core::sc_time_stamp().value() / sc_core::sc_time(1, sc_core::SC_PS).value());
}

IciModule::IciModule(sc_core::sc_module_name name, const Slice& slice, const Mesh& mesh, const NetworkOptions& options)
    : sc_core::sc_module(name), sim_(slice, mesh, options) {
  if (sc_core::sc_get_time_resolution() > sc_core::sc_time(1, sc_core::SC_PS))
    throw InternalError("IciModule needs a SystemC time resolution of 1 ps or finer");
  SC_HAS_PROCESS(IciModule);
  SC_THREAD(run);
}

std::uint64_t IciModule::start_collective(const CollectiveRequest& req, std::function<void()> on_done) {
  return start_collective_with_result(req, [cb = std::move(on_done)](const CollectiveResult&) {
    if (cb) cb();
  });
}

std::uint64_t IciModule::start_collective_with_result(const CollectiveRequest& req, ResultCallback on_done) {
  const std::uint64_t id = sim_.start(req, now_ps());
  waiting_.emplace(id, std::move(on_done));
  // Before sc_start the thread's first pass picks the request up anyway.
  if (sc_core::sc_is_running()) wake_.notify(sc_core::SC_ZERO_TIME);
  return id;
}

std::uint64_t IciModule::start_deferred(const CollectiveRequest& req, ResultCallback on_all_done) {
  const std::uint64_t id = sim_.start_deferred(req);
  waiting_.emplace(id, std::move(on_all_done));
  return id;
}

void IciModule::chip_start(std::uint64_t id, int chip, std::function<void()> on_chip_done) {
  sim_.chip_start(id, chip, now_ps());
  chip_waiting_.emplace(std::make_pair(id, chip), std::move(on_chip_done));
  if (sc_core::sc_is_running()) wake_.notify(sc_core::SC_ZERO_TIME);
}

void IciModule::watch(std::uint64_t id, int chip, ProgressCallback on_progress) {
  sim_.watch(id, chip);
  watchers_[{id, chip}] = std::move(on_progress);
}

void IciModule::run() {
  for (;;) {
    const Ps now = now_ps();
    deliver(sim_.run_until(now));
    const Ps next = sim_.next_event_time();
    // No heap-owning local may live across wait(): SystemC never unwinds a
    // thread's stack at the end of the simulation, so whatever it holds
    // there leaks (LeakSanitizer saw the last results vector).
    if (next == kNeverPs) {
      sc_core::wait(wake_);
    } else {
      const Ps dt = std::max<Ps>(next - now, 1);
      sc_core::wait(sc_core::sc_time(static_cast<double>(dt), sc_core::SC_PS), wake_);
    }
  }
}

void IciModule::deliver(std::vector<CollectiveResult> finished) {
  for (const IciSimulator::ChipProgress& p : sim_.take_progress()) {
    auto it = watchers_.find({p.id, p.chip});
    if (it != watchers_.end() && it->second) it->second(p);
  }
  for (const IciSimulator::ChipDone& d : sim_.take_chip_completions()) {
    auto it = chip_waiting_.find({d.id, d.chip});
    if (it == chip_waiting_.end()) continue;
    std::function<void()> cb = std::move(it->second);
    chip_waiting_.erase(it);
    if (cb) cb();
  }
  for (const CollectiveResult& r : finished) {
    auto it = waiting_.find(r.id);
    if (it == waiting_.end()) continue;
    ResultCallback cb = std::move(it->second);
    waiting_.erase(it);
    watchers_.erase(watchers_.lower_bound({r.id, INT_MIN}), watchers_.lower_bound({r.id + 1, INT_MIN}));
    if (cb) cb(r);
  }
}

}  // namespace tpusim::arch::ici
