// The rematerialization options shared by `tpusim run` and `tpusim model
// export`: --remat none|minimal|selective|full|qkv_proj_offloaded|minimal_offloaded, and --recompute, the older spelling
// of --remat full. Giving both is allowed only when they agree.
#pragma once

#include <boost/program_options.hpp>
#include <string>

#include "models/model_spec.h"
#include "sim/cli/cli.h"

namespace tpusim::sim {

inline models::RematPolicy remat_option(const std::string& cmd, const boost::program_options::variables_map& vm) {
  models::RematPolicy r = models::RematPolicy::none;
  const bool recompute = vm.count("recompute") && vm["recompute"].as<bool>();
  if (vm.count("remat")) {
    const std::string text = vm["remat"].as<std::string>();
    if (!models::parse_remat(text, &r))
      throw UsageError(cmd + ": --remat expects none, minimal, selective, full, qkv_proj_offloaded or minimal_offloaded, found '" + text + "'");
    if (recompute && r != models::RematPolicy::full)
      throw UsageError(cmd + ": --recompute means --remat full, but --remat " + text + " is given too");
  } else if (recompute) {
    r = models::RematPolicy::full;
  }
  return r;
}

}  // namespace tpusim::sim
