// Model-wide quantization and sparsity (PhaseOptions::quant) applied to a
// generated workload: scales and N:M sparsity on the weights of matmuls
// and convolutions, and the dynamic quantization of matmuls (w8a8 serving,
// quantized training). The lowering prices what this sets
// (sim/lowering/gemm_quant.h). Leaves out: embedding tables and norms
// (left as generated), KV-cache scales.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "models/model_spec.h"
#include "workloads/ir/workload.h"

namespace tpusim::models {

// The scales weights of dtype `t` get when none are asked for: none for
// 16/32-bit weights, per channel for 8-bit ones, per block of 128 for int4.
workloads::QuantScales default_weight_scales(DType t);

// Throws ModelError for options that contradict each other (quantized
// training outside train, dynamic activations without narrow weights, a bad N:M).
void check_quant_options(const PhaseOptions& o);

void apply_quantization(workloads::Workload& wl, const PhaseOptions& o);

// Stored bytes of `params` weights of the options' dtype with their scales
// and N:M compression, for the fit check; `k` is the typical contracting
// extent (the hidden size) that per-channel scales divide over.
std::uint64_t stored_weight_bytes(const PhaseOptions& o, std::uint64_t params, std::int64_t k);

// "int8", "block:128", "2:4" parsers for the CLI and sweeps; false when
// the text is not one.
bool parse_scales(const std::string& text, workloads::QuantScales* out);
// Quantized training's dtype: "int8" or "fp8" (fp8_e4m3), or "none"
// (unset).
bool parse_training_quant(const std::string& text, std::optional<DType>* out);
bool parse_sparsity(const std::string& text, workloads::NmSparsity* out);

}  // namespace tpusim::models
