// SystemC shell around an HBM timing model (detailed, channel or
// calibrated, as HbmConfig::model says). Clients submit transfers with a
// callback; one thread advances the model to the current time and sleeps
// until the model's next event or a new submission, so no clock is ticked.
// Callbacks run in that thread at the transfer's exact completion time.
// Leaves out: TLM sockets (callers hold a reference), backpressure to the
// caller (the model's queues absorb everything submitted).
#pragma once

#include <functional>
#include <memory>
#include <unordered_map>

#include <systemc>

#include "arch/common/stats.h"
#include "arch/common/time.h"
#include "arch/hbm/hbm_model.h"

namespace tpusim::arch {

class HbmModule : public sc_core::sc_module {
 public:
  using Callback = std::function<void(Ps done)>;

  HbmModule(sc_core::sc_module_name name, const HbmConfig& config);

  // Arrival must be >= the current simulation time.
  void submit(const HbmTransfer& t, Ps arrival, Callback on_done);
  HbmModel& model() { return *model_; }
  StatList stats() const { return model_->stats(); }

  static Ps now_ps() { return static_cast<Ps>(now_ps_value()); }

 private:
  void run();

  std::unique_ptr<HbmModel> model_;
  std::unordered_map<std::uint64_t, Callback> waiting_;
  sc_core::sc_event wake_;
};

}  // namespace tpusim::arch
