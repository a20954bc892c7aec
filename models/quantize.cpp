#include "models/quantize.h"

#include <charconv>
#include <cmath>
#include <unordered_map>

namespace tpusim::models {

using workloads::OpKind;
using workloads::ScaleKind;
using workloads::TensorKind;

workloads::QuantScales default_weight_scales(DType t) {
  workloads::QuantScales s;
  if (arch::dtype_bits(t) > 8) return s;
  s.kind = t == DType::int4 ? ScaleKind::block : ScaleKind::channel;
  if (t == DType::int4) s.group = 128;
  return s;
}

void check_quant_options(const PhaseOptions& o) {
  const QuantOptions& q = o.quant;
  if (q.training_quant && o.phase != Phase::train)
    throw ModelError(Diagnostic{"", 0, 0, "training-quant", "phase train", phase_name(o.phase), ""});
  if (q.training_quant && *q.training_quant != DType::int8 && *q.training_quant != DType::fp8_e4m3)
    throw ModelError(
        Diagnostic{"", 0, 0, "training-quant", "int8 or fp8", std::string(arch::dtype_name(*q.training_quant)), ""});
  if (q.dynamic_activations && arch::dtype_bits(o.weight_dtype) > 8)
    throw ModelError(Diagnostic{"", 0, 0, "act-quant", "weights of 8 bits or fewer (--weight-dtype int8, fp8, int4)",
                                std::string(arch::dtype_name(o.weight_dtype)), ""});
  const auto& sp = q.weight_sparsity;
  if (sp.n != 0 && (sp.n < 1 || sp.m <= sp.n || sp.m > 64))
    throw ModelError(Diagnostic{"", 0, 0, "sparsity", "N:M with 1 <= N < M <= 64",
                                std::to_string(sp.n) + ":" + std::to_string(sp.m), ""});
}

void apply_quantization(workloads::Workload& wl, const PhaseOptions& o) {
  check_quant_options(o);
  const QuantOptions& q = o.quant;
  // Nothing to mark: wide weights, dense, no dynamic quantization.
  if (arch::dtype_bits(o.weight_dtype) > 8 && q.weight_sparsity.dense() && !q.dynamic_activations && !q.training_quant)
    return;
  std::vector<bool> is_weight_operand(wl.tensors.size(), false);
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < wl.tensors.size(); ++i) index.emplace(wl.tensors[i].name, i);
  auto index_of = [&](const std::string& name) -> std::size_t {
    auto it = index.find(name);
    return it == index.end() ? wl.tensors.size() : it->second;
  };
  for (auto& op : wl.ops) {
    if (op.kind != OpKind::matmul && op.kind != OpKind::conv2d) continue;
    if (op.inputs.size() < 2) continue;
    const std::size_t wi = index_of(op.inputs[1]);
    const bool weight = wi < wl.tensors.size() && wl.tensors[wi].kind == TensorKind::weight;
    if (weight) is_weight_operand[wi] = true;
    if (op.kind != OpKind::matmul) continue;
    auto& attrs = op.as<workloads::MatmulAttrs>();
    if (q.training_quant) {
      attrs.quantize = *q.training_quant;
    } else if (q.dynamic_activations && weight) {
      const std::size_t ai = index_of(op.inputs[0]);
      if (ai < wl.tensors.size() && arch::dtype_bits(wl.tensors[ai].dtype) > arch::dtype_bits(o.weight_dtype))
        attrs.quantize = o.weight_dtype;
    }
  }
  for (std::size_t i = 0; i < wl.tensors.size(); ++i) {
    if (!is_weight_operand[i]) continue;
    workloads::Tensor& t = wl.tensors[i];
    if (t.rank() < 2) continue;
    if (arch::dtype_bits(t.dtype) <= 8) t.scales = q.weight_scales.value_or(default_weight_scales(t.dtype));
    if (!q.weight_sparsity.dense()) t.sparsity = q.weight_sparsity;
  }
}

std::uint64_t stored_weight_bytes(const PhaseOptions& o, std::uint64_t params, std::int64_t k) {
  const QuantOptions& q = o.quant;
  const double keep = q.weight_sparsity.dense() ? 1.0 : static_cast<double>(q.weight_sparsity.n) / q.weight_sparsity.m;
  double bits = arch::dtype_bits(o.weight_dtype) * keep + q.weight_sparsity.metadata_bits() * keep;
  const workloads::QuantScales s = arch::dtype_bits(o.weight_dtype) <= 8
                                       ? q.weight_scales.value_or(default_weight_scales(o.weight_dtype))
                                       : workloads::QuantScales{};
  const double sb = arch::dtype_bits(s.dtype);
  if (s.kind == ScaleKind::channel && k > 0) bits += sb / static_cast<double>(k);
  if (s.kind == ScaleKind::block && s.group > 0) bits += sb / static_cast<double>(s.group);
  return static_cast<std::uint64_t>(std::ceil(static_cast<double>(params) * bits / 8.0));
}

bool parse_scales(const std::string& text, workloads::QuantScales* out) {
  workloads::QuantScales s;
  const auto colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  auto k = workloads::parse_scale_kind(kind);
  if (!k) return false;
  s.kind = *k;
  if (s.kind == ScaleKind::block) {
    if (colon == std::string::npos) return false;
    const char* b = text.data() + colon + 1;
    const char* e = text.data() + text.size();
    auto r = std::from_chars(b, e, s.group);
    if (r.ec != std::errc{} || r.ptr != e || s.group < 1 || s.group > (std::int64_t{1} << 30)) return false;
  } else if (colon != std::string::npos) {
    return false;
  }
  *out = s;
  return true;
}

bool parse_training_quant(const std::string& text, std::optional<DType>* out) {
  if (text == "none") {
    *out = std::nullopt;
    return true;
  }
  if (text == "int8") {
    *out = DType::int8;
    return true;
  }
  if (text == "fp8" || text == "fp8_e4m3") {
    *out = DType::fp8_e4m3;
    return true;
  }
  return false;
}

bool parse_sparsity(const std::string& text, workloads::NmSparsity* out) {
  if (text == "dense" || text == "none") {
    *out = {};
    return true;
  }
  const auto colon = text.find(':');
  if (colon == std::string::npos) return false;
  int n = 0, m = 0;
  const char* e1 = text.data() + colon;
  const char* e2 = text.data() + text.size();
  auto r1 = std::from_chars(text.data(), e1, n);
  auto r2 = std::from_chars(e1 + 1, e2, m);
  if (r1.ec != std::errc{} || r1.ptr != e1 || r2.ec != std::errc{} || r2.ptr != e2) return false;
  if (n < 1 || m <= n || m > 64) return false;
  *out = {n, m};
  return true;
}

}  // namespace tpusim::models
