// See hbm_model.h.
#include "arch/hbm/hbm_model.h"

#include <string>

#include "arch/common/errors.h"
#include "arch/hbm/calibrated_hbm.h"
#include "arch/hbm/channel_hbm.h"
#include "arch/hbm/detailed_dram.h"

namespace tpusim::arch {

Ps HbmModel::transfer(const HbmTransfer& t, Ps arrival) {
  const std::uint64_t id = submit(t, arrival);
  for (;;) {
    const Ps next = next_event_time();
    if (next == kNever) throw InternalError("HbmModel::transfer: model went idle before the transfer completed");
    // Event by event, so the model stops exactly at the completion and later
    // submissions may arrive any time after it.
    for (const HbmCompletion& c : run_until(next))
      if (c.id == id) return c.time;
  }
}

std::unique_ptr<HbmModel> make_hbm_model(const HbmConfig& config) {
  if (config.model == "detailed") return std::make_unique<DetailedDram>(config);
  if (config.model == "calibrated") return std::make_unique<CalibratedHbm>(config);
  if (config.model == "channel") return std::make_unique<ChannelHbm>(config);
  throw ConfigError("hbm.model must be 'detailed', 'channel' or 'calibrated', got '" + config.model + "'");
}

}  // namespace tpusim::arch
