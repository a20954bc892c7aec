// See hbm_module.h.
#include "arch/hbm/hbm_module.h"

#include <algorithm>

#include "arch/common/errors.h"
#include "arch/common/time.h"

namespace tpusim::arch {

HbmModule::HbmModule(sc_core::sc_module_name name, const HbmConfig& config)
    : sc_core::sc_module(name), model_(make_hbm_model(config)) {
  SC_HAS_PROCESS(HbmModule);
  SC_THREAD(run);
}

void HbmModule::submit(const HbmTransfer& t, Ps arrival, Callback on_done) {
  if (arrival < now_ps()) throw InternalError("HbmModule::submit: arrival in the past");
  const std::uint64_t id = model_->submit(t, arrival);
  waiting_.emplace(id, std::move(on_done));
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void HbmModule::run() {
  for (;;) {
    const Ps now = now_ps();
    for (const HbmCompletion& c : model_->run_until(now)) {
      auto it = waiting_.find(c.id);
      if (it == waiting_.end()) continue;
      Callback cb = std::move(it->second);
      waiting_.erase(it);
      cb(c.time);
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
