// The dtype and quantization options that `run`, `model show`, `model
// export` and sweeps share: --dtype (shorthand for all three), separate
// --weight-dtype --act-dtype --kv-dtype, and the model-wide quantization
// and sparsity of models/quantize.h (--weight-scales, --act-quant,
// --int8-training, --sparsity).
#pragma once

#include <boost/program_options.hpp>
#include <string>

#include "models/model_spec.h"

namespace tpusim::sim {

// --weight-dtype, --act-dtype, --kv-dtype (no defaults: they fall back to
// `shorthand`) and the quantization options.
void add_quant_options(boost::program_options::options_description& opts);

// Fills the dtypes and PhaseOptions::quant; the dtypes not given take
// `shorthand`. Throws UsageError naming `cmd` and the flag.
void read_quant_options(const boost::program_options::variables_map& vm, const std::string& cmd,
                        arch::DType shorthand, models::PhaseOptions& po);

// --phase, --batch, --seq, --context (and --image where the command has
// it) into `po`. Throws UsageError naming `cmd` on an unknown phase.
void read_phase_options(const boost::program_options::variables_map& vm, const std::string& cmd,
                        models::PhaseOptions& po);

// Whether any option beyond --dtype was given (they need --model).
bool quant_options_given(const boost::program_options::variables_map& vm);

}  // namespace tpusim::sim
