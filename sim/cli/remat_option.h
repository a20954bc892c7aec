// The rematerialization options shared by `tpusim run`, `tpusim model
// export` and `tpusim shard-search point`: --remat with a policy name or
// custom[:name=place,...] (models::parse_remat_spec), and --recompute, the
// older spelling of --remat full. Giving both is allowed only when they
// agree.
#pragma once

#include <boost/program_options.hpp>
#include <string>

#include "models/model_spec.h"
#include "sim/cli/cli.h"

namespace tpusim::sim {

inline void remat_option(const std::string& cmd, const boost::program_options::variables_map& vm,
                         models::PhaseOptions& o) {
  o.remat = models::RematPolicy::none;
  o.remat_custom = {};
  const bool recompute = vm.count("recompute") && vm["recompute"].as<bool>();
  if (vm.count("remat")) {
    const std::string text = vm["remat"].as<std::string>();
    const std::string err = models::parse_remat_spec(text, &o.remat, &o.remat_custom);
    if (!err.empty()) throw UsageError(cmd + ": --remat: expected " + err + ", found '" + text + "'");
    if (recompute && o.remat != models::RematPolicy::full)
      throw UsageError(cmd + ": --recompute means --remat full, but --remat " + text + " is given too");
  } else if (recompute) {
    o.remat = models::RematPolicy::full;
  }
}

}  // namespace tpusim::sim
