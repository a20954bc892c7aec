#include "sim/cli/quant_options.h"

#include "models/quantize.h"
#include "sim/cli/cli.h"

namespace tpusim::sim {

namespace po = boost::program_options;

namespace {
const char* const kFlags[] = {"weight-dtype", "act-dtype", "kv-dtype", "weight-scales", "act-quant", "sparsity"};
}

void add_quant_options(po::options_description& opts) {
  opts.add_options()("weight-dtype", po::value<std::string>(), "--model: weight dtype (default: --dtype)")(
      "act-dtype", po::value<std::string>(), "--model: activation dtype (default: --dtype)")(
      "kv-dtype", po::value<std::string>(), "--model: KV-cache dtype (default: --dtype)")(
      "weight-scales", po::value<std::string>(),
      "--model: scales of <= 8-bit weights: none, tensor, channel or block:G (default: channel for 8-bit, "
      "block:128 for int4)")("act-quant", po::value<std::string>(),
                             "--model: static (default) or dynamic: matmuls quantize activations to the weight "
                             "dtype with a max-abs reduction")(
      "int8-training", po::bool_switch(),
      "--model train: int8 matmuls forward and backward (AQT recipe); "
      "the same as --training-quant int8")(
      "training-quant", po::value<std::string>(),
      "--model train: every matmul, forward and backward, quantizes its operands to int8 or fp8 (fp8_e4m3, "
      "MaxText's quantization=fp8_full); none (default)")(
      "sparsity", po::value<std::string>(), "--model: N:M sparsity of every matmul weight, e.g. 2:4 (default dense)");
}

bool quant_options_given(const po::variables_map& vm) {
  for (const char* f : kFlags)
    if (vm.count(f)) return true;
  return vm.count("training-quant") || (vm.count("int8-training") && vm["int8-training"].as<bool>());
}

void read_quant_options(const po::variables_map& vm, const std::string& cmd, arch::DType shorthand,
                        models::PhaseOptions& p) {
  auto dtype = [&](const char* key) {
    if (!vm.count(key)) return shorthand;
    const std::string s = vm[key].as<std::string>();
    auto d = arch::parse_dtype(s);
    if (!d)
      throw UsageError(cmd + ": --" + key + ": expected one of f32, bf16, fp8_e4m3, fp8_e5m2, int8, int4, found '" +
                       s + "'");
    return *d;
  };
  p.weight_dtype = dtype("weight-dtype");
  p.activation_dtype = dtype("act-dtype");
  p.kv_dtype = dtype("kv-dtype");
  if (vm.count("weight-scales")) {
    workloads::QuantScales s;
    const std::string t = vm["weight-scales"].as<std::string>();
    if (!models::parse_scales(t, &s))
      throw UsageError(cmd + ": --weight-scales: expected none, tensor, channel or block:G (G >= 1), found '" + t +
                       "'");
    p.quant.weight_scales = s;
  }
  if (vm.count("act-quant")) {
    const std::string t = vm["act-quant"].as<std::string>();
    if (t != "static" && t != "dynamic")
      throw UsageError(cmd + ": --act-quant: expected static or dynamic, found '" + t + "'");
    p.quant.dynamic_activations = t == "dynamic";
  }
  const bool int8_flag = vm.count("int8-training") && vm["int8-training"].as<bool>();
  if (vm.count("training-quant")) {
    const std::string t = vm["training-quant"].as<std::string>();
    if (!models::parse_training_quant(t, &p.quant.training_quant))
      throw UsageError(cmd + ": --training-quant: expected int8, fp8 or none, found '" + t + "'");
    if (int8_flag && p.quant.training_quant != arch::DType::int8)
      throw UsageError(cmd + ": --int8-training and --training-quant " + t + " contradict each other");
  } else if (int8_flag) {
    p.quant.training_quant = arch::DType::int8;
  }
  if (vm.count("sparsity")) {
    const std::string t = vm["sparsity"].as<std::string>();
    if (!models::parse_sparsity(t, &p.quant.weight_sparsity))
      throw UsageError(cmd + ": --sparsity: expected N:M with 1 <= N < M <= 64 (e.g. 2:4) or dense, found '" + t +
                       "'");
  }
  if (p.quant.training_quant && p.phase != models::Phase::train) {
    const std::string flag =
        vm.count("training-quant") ? "--training-quant " + vm["training-quant"].as<std::string>() : "--int8-training";
    throw UsageError(cmd + ": " + flag + " needs --phase train");
  }
  if (p.quant.dynamic_activations && arch::dtype_bits(p.weight_dtype) > 8)
    throw UsageError(cmd + ": --act-quant dynamic needs weights of 8 bits or fewer (--weight-dtype int8, fp8 or int4)");
}

void read_phase_options(const po::variables_map& vm, const std::string& cmd, models::PhaseOptions& p) {
  if (!models::parse_phase(vm["phase"].as<std::string>(), &p.phase))
    throw UsageError(cmd + ": unknown --phase '" + vm["phase"].as<std::string>() + "'");
  p.batch = vm["batch"].as<std::int64_t>();
  p.seq_len = vm["seq"].as<std::int64_t>();
  p.context = vm["context"].as<std::int64_t>();
  if (vm.count("image")) p.image_size = vm["image"].as<std::int64_t>();
}

}  // namespace tpusim::sim
