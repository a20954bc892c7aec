// The LoRA options shared by `tpusim run` and `tpusim serve`:
// --lora-rank R (0: off) and --lora-targets q,v (models/lora_spec.h).
#pragma once

#include <boost/program_options.hpp>
#include <string>

#include "models/lora_spec.h"
#include "sim/cli/cli.h"

namespace tpusim::sim {

inline void add_lora_options(boost::program_options::options_description& opts) {
  namespace po = boost::program_options;
  opts.add_options()("lora-rank", po::value<std::int64_t>()->default_value(0),
                     "--model: LoRA adapters of this rank (0: none); with --phase train only the adapters train")(
      "lora-targets", po::value<std::string>()->default_value("q,v"),
      "projections with an adapter: q,k,v,o,gate,up,down or all");
}

// Throws UsageError naming `cmd` and the flag.
inline models::LoraOptions read_lora_options(const boost::program_options::variables_map& vm, const std::string& cmd) {
  models::LoraOptions l;
  l.rank = vm["lora-rank"].as<std::int64_t>();
  if (l.rank < 0 || l.rank > 65536)
    throw UsageError(cmd + ": --lora-rank must be in [0, 65536], found " + std::to_string(l.rank));
  const std::string t = vm["lora-targets"].as<std::string>();
  std::string bad;
  if (!models::parse_lora_targets(t, &l.targets, &bad))
    throw UsageError(cmd + ": --lora-targets '" + t + "': expected a list of q,k,v,o,gate,up,down (or all), found '" +
                     bad + "'");
  if (l.rank == 0 && !vm["lora-targets"].defaulted())
    throw UsageError(cmd + ": --lora-targets needs --lora-rank (adapters of rank 0 are none)");
  if (l.rank == 0) l.targets = 0;
  return l;
}

}  // namespace tpusim::sim
