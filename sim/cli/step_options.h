// The options of a model step shared by `tpusim run`, `tpusim model
// export`, `tpusim shard-search` and its points:
// - --remat with a policy name or custom[:name=place,...]
//   (models::parse_remat_spec), and --recompute, the older spelling of
//   --remat full. Giving both is allowed only when they agree.
// - --fused-attention-backward (train): splash attention's fused backward
//   kernel (PhaseOptions::fused_attention_backward).
// - --attention-kernel flash|dense|batched: multi-head attention as one
//   fused kernel, as XLA's dense einsums, or as a fused kernel taking
//   several sequences a grid step (PhaseOptions::attention_kernel).
// - --moe-capacity-factor F: MaxText's dropping MoE
//   (PhaseOptions::moe_capacity_factor); its range and the model's
//   support are checked where the options are (models::check_options).
// - --optimizer-dtype f32|bf16 (train): Adam's state per parameter
//   (PhaseOptions::optimizer_dtype).
// - --attention-blocks SPEC: the flash kernels' fixed block sizes, as
//   MaxText's sa_block_* flags (PhaseOptions::attention_blocks).
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

inline void add_kernel_options(boost::program_options::options_description& opts) {
  namespace po = boost::program_options;
  opts.add_options()(
      "fused-attention-backward", po::bool_switch(),
      "--phase train: backward attention as splash attention's fused kernel (one pass) instead of its dQ and dK/dV "
      "kernels")("moe-capacity-factor", po::value<double>()->default_value(0.0, "0"),
                 "models with mixture-of-experts layers: MaxText's dropping MoE, C = ceil(seq x top_k / experts x F) "
                 "slots per expert and sequence, dispatch and combine as einsums (0: dropless)")(
      "attention-kernel", po::value<std::string>()->default_value("flash"),
      "transformers' multi-head attention: flash (one fused kernel, no scores in HBM), dense (XLA's einsums: f32 "
      "logits in HBM, softmax, PV matmul; MaxText dot_product, JetStream-PyTorch's dense_attention) or batched (flash "
      "with up to 16 sequences a grid step, tpu-inference's batched ragged paged attention: decode and serving steps)")(
      "attention-blocks", po::value<std::string>(),
      "flash attention's block sizes, fixed as MaxText's splash attention flags set them: Q,KV (every kernel) or "
      "q=..,kv=..[,q_dq=..,kv_dq=..,q_dkv=..,kv_dkv=..] (sa_block_q, sa_block_kv, ...; a backward key left out takes "
      "q's or kv's); the kernels then run one query head per grid step (default: blocks searched)")(
      "optimizer-dtype", po::value<std::string>()->default_value("f32"),
      "--phase train: Adam's state, f32 (f32 master weights, m and v: 12 B per parameter) or bf16 (MaxText's "
      "weight_dtype bfloat16: m and v bf16, weights updated in place: 4 B per parameter)");
}

// Reads add_kernel_options' options into `o`, whose phase is already set.
inline void kernel_options(const std::string& cmd, const boost::program_options::variables_map& vm,
                           models::PhaseOptions& o) {
  o.fused_attention_backward = vm["fused-attention-backward"].as<bool>();
  if (o.fused_attention_backward && o.phase != models::Phase::train)
    throw UsageError(cmd + ": --fused-attention-backward needs --phase train");
  o.moe_capacity_factor = vm["moe-capacity-factor"].as<double>();
  const std::string kernel = vm["attention-kernel"].as<std::string>();
  if (!models::parse_attention_impl(kernel, &o.attention_kernel))
    throw UsageError(cmd + ": --attention-kernel: expected flash, dense or batched, found '" + kernel + "'");
  if (vm.count("attention-blocks")) {
    const std::string text = vm["attention-blocks"].as<std::string>();
    const std::string err = models::parse_splash_blocks(text, &o.attention_blocks);
    if (!err.empty()) throw UsageError(cmd + ": --attention-blocks: expected " + err + ", found '" + text + "'");
  }
  const std::string opt = vm["optimizer-dtype"].as<std::string>();
  if (!models::parse_optimizer_dtype(opt, &o.optimizer_dtype))
    throw UsageError(cmd + ": --optimizer-dtype: expected f32 or bf16, found '" + opt + "'");
  if (o.optimizer_dtype != arch::DType::f32 && o.phase != models::Phase::train)
    throw UsageError(cmd + ": --optimizer-dtype " + opt + " needs --phase train");
}

}  // namespace tpusim::sim
