// SystemC shell around an HBM timing model (detailed, channel or
// calibrated, as HbmConfig::model says). Clients submit transfers with a
// callback (or an HbmWaiter and a tag, which costs no allocation); one
// thread advances the model to the current time and sleeps until the
// model's next event or a new submission, so no clock is ticked.
// Callbacks run in that thread at the transfer's exact completion time.
// Leaves out: TLM sockets (callers hold a reference), backpressure to the
// caller (the model's queues absorb everything submitted).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <systemc>

#include "arch/common/stats.h"
#include "arch/common/time.h"
#include "arch/hbm/hbm_model.h"

namespace tpusim::arch {

// Told when a transfer it submitted completes; `tag` is what it passed.
class HbmWaiter {
 public:
  virtual void hbm_done(std::uint64_t tag, Ps done) = 0;

 protected:
  ~HbmWaiter() = default;
};

class HbmModule : public sc_core::sc_module {
 public:
  using Callback = std::function<void(Ps done)>;

  HbmModule(sc_core::sc_module_name name, const HbmConfig& config);

  // Arrival must be >= the current simulation time.
  void submit(const HbmTransfer& t, Ps arrival, Callback on_done);
  void submit(const HbmTransfer& t, Ps arrival, HbmWaiter& waiter, std::uint64_t tag);
  HbmModel& model() { return *model_; }
  StatList stats() const { return model_->stats(); }

  static Ps now_ps() { return static_cast<Ps>(now_ps_value()); }

 private:
  void run();
  // Transfers in flight by model id: slot id & mask, grown (doubling) when
  // two in flight would share one. Ids are handed out in order, so the
  // table only needs to span the ids in flight.
  struct Waiting {
    std::uint64_t id = 0;  // 0: free
    HbmWaiter* waiter = nullptr;
    std::uint64_t tag = 0;
    Callback cb;  // when no waiter
  };
  Waiting& slot_for(std::uint64_t id);
  void grow();

  std::unique_ptr<HbmModel> model_;
  std::vector<Waiting> waiting_;
  std::vector<HbmCompletion> done_;  // run()'s buffer
  sc_core::sc_event wake_;
};

}  // namespace tpusim::arch
