// The deployment of one serving replica, shared by `tpusim serve` and its
// step child `tpusim serve step`: the options naming it (arch, slice,
// mesh, model, dtype, LoRA), their parsing and checks, the step child
// itself, and the KV-cache pages the chips' HBM leaves.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <boost/program_options.hpp>

#include "arch/common/chip_config.h"
#include "models/lora.h"
#include "models/zoo.h"
#include "sim/cli/cli.h"
#include "sim/serve/step_runner.h"
#include "workloads/ir/mesh.h"

namespace tpusim::sim {

// The value `v` of the two-way option `flag` names: one of `names`, or a
// UsageError listing them.
template <typename T>
T choice(const std::string& flag, const std::string& v, const std::pair<const char*, T> (&names)[2]) {
  for (const auto& [name, value] : names)
    if (v == name) return value;
  throw UsageError("serve: --" + flag + " '" + v + "': expected " + names[0].first + " or " + names[1].first);
}

// Options shared by `serve` and `serve step`: the deployment of one replica.
void add_deployment_options(boost::program_options::options_description& opts);

struct Deployment {
  serve::StepSimSetup setup;
  arch::TpuConfig cfg;
  models::ModelSpec spec;
  workloads::MeshSpec mesh;
  arch::DType dtype = arch::DType::bf16;
  models::LoraOptions lora;  // rank and targets (adapters per step: the grid's)
  models::AttentionImpl attention_kernel = models::AttentionImpl::flash;  // setup.attention_kernel
};

Deployment load_deployment(const std::string& cmd, const boost::program_options::variables_map& vm,
                           CommandContext& ctx);

// `tpusim serve step`: simulates one step shape and prints its seconds.
int serve_step_cmd(const std::vector<std::string>& args, CommandContext& ctx);

// Bytes of KV cache per token and the pages a replica's chips hold: HBM
// minus the weights (the zoo's fit check, per chip) and the activations
// of the largest step, over the per-chip KV bytes of a token. `note`
// receives a line for the summary; `draft` (may be null) shares the chips.
std::int64_t kv_pages_from_hbm(const Deployment& d, std::int64_t max_tokens, std::int64_t max_context,
                               std::int64_t page_tokens, std::string* note, const models::ModelSpec* draft,
                               double reserved_bytes = 0);

}  // namespace tpusim::sim
