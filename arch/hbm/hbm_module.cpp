// See hbm_module.h.
#include "arch/hbm/hbm_module.h"

#include <algorithm>

#include "arch/common/errors.h"
#include "arch/common/time.h"

namespace tpusim::arch {

HbmModule::HbmModule(sc_core::sc_module_name name, const HbmConfig& config)
    : sc_core::sc_module(name), model_(make_hbm_model(config)), waiting_(64) {
  SC_HAS_PROCESS(HbmModule);
  SC_THREAD(run);
}

HbmModule::Waiting& HbmModule::slot_for(std::uint64_t id) {
  if (id == 0) throw InternalError("HbmModule: the model returned transfer id 0");
  while (waiting_[id & (waiting_.size() - 1)].id != 0) grow();
  return waiting_[id & (waiting_.size() - 1)];
}

void HbmModule::grow() {
  std::vector<Waiting> old = std::move(waiting_);
  waiting_.assign(old.size() * 2, Waiting{});
  for (Waiting& w : old)
    if (w.id != 0) slot_for(w.id) = std::move(w);
}

void HbmModule::submit(const HbmTransfer& t, Ps arrival, Callback on_done) {
  if (arrival < now_ps()) throw InternalError("HbmModule::submit: arrival in the past");
  const std::uint64_t id = model_->submit(t, arrival);
  Waiting& w = slot_for(id);
  w.id = id;
  w.cb = std::move(on_done);
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void HbmModule::submit(const HbmTransfer& t, Ps arrival, HbmWaiter& waiter, std::uint64_t tag) {
  if (arrival < now_ps()) throw InternalError("HbmModule::submit: arrival in the past");
  const std::uint64_t id = model_->submit(t, arrival);
  Waiting& w = slot_for(id);
  w.id = id;
  w.waiter = &waiter;
  w.tag = tag;
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void HbmModule::run() {
  for (;;) {
    const Ps now = now_ps();
    done_.clear();
    model_->collect_until(now, done_);
    // Callbacks may submit (growing waiting_), never run the model.
    for (const HbmCompletion& c : done_) {
      Waiting& slot = waiting_[c.id & (waiting_.size() - 1)];
      if (slot.id != c.id) continue;
      slot.id = 0;
      if (slot.waiter) {
        HbmWaiter* w = slot.waiter;
        const std::uint64_t tag = slot.tag;
        slot.waiter = nullptr;
        w->hbm_done(tag, c.time);
      } else {
        Callback cb = std::move(slot.cb);
        slot.cb = nullptr;
        cb(c.time);
      }
    }
    const Ps next = model_->next_event_time();
    if (next == kNever) {
      sc_core::wait(wake_);
    } else {
      const Ps dt = std::max<Ps>(next - now, 1);
      sc_core::wait(ps_to_time(static_cast<std::uint64_t>(dt)), wake_);
    }
  }
}

}  // namespace tpusim::arch
