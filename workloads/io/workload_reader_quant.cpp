// A tensor's storage keys beyond its dtype: quantization scales
// (`scales: tensor|channel|block`, `group` for blocks, `scale_dtype`) and
// N:M structured sparsity (`sparsity: "2:4"`). See docs/workload-format.md.
#include <charconv>

#include "workloads/io/workload_reader.h"

namespace tpusim::workloads::detail {

void Reader::read_storage(const YAML::Node& n, const std::string& path, const std::string& suffix, Tensor& t) {
  if (auto v = n["scales"])
    if (auto k = get_enum<ScaleKind>(v, join(path, "scales") + suffix, "scale kind",
                                     {ScaleKind::none, ScaleKind::tensor, ScaleKind::channel, ScaleKind::block},
                                     parse_scale_kind, scale_kind_name))
      t.scales.kind = *k;
  if (auto v = n["group"]) {
    if (auto g = get_int(v, join(path, "group") + suffix)) {
      if (*g < 1 || *g > (std::int64_t{1} << 30))
        error(v, join(path, "group") + suffix, "expected a group size in [1, 2^30], found " + std::to_string(*g));
      else if (t.scales.kind != ScaleKind::block)
        error(v, join(path, "group") + suffix, "a group size needs 'scales: block'");
      else
        t.scales.group = *g;
    }
  } else if (t.scales.kind == ScaleKind::block) {
    error(n, join(path, "group") + suffix, "missing key ('scales: block' needs a group size, e.g. group: 128)");
  }
  if (auto v = n["scale_dtype"])
    if (auto d = get_dtype(v, join(path, "scale_dtype") + suffix)) {
      if (t.scales.kind == ScaleKind::none) error(v, join(path, "scale_dtype") + suffix, "needs 'scales'");
      t.scales.dtype = *d;
    }
  if (auto v = n["sparsity"]) {
    const std::string key = join(path, "sparsity") + suffix;
    if (auto s = get_str(v, key)) {
      const auto colon = s->find(':');
      int a = 0, b = 0;
      bool ok = colon != std::string::npos;
      if (ok) {
        const char* e1 = s->data() + colon;
        const char* e2 = s->data() + s->size();
        auto r1 = std::from_chars(s->data(), e1, a);
        auto r2 = std::from_chars(e1 + 1, e2, b);
        ok = r1.ec == std::errc{} && r1.ptr == e1 && r2.ec == std::errc{} && r2.ptr == e2;
      }
      if (!ok || a < 1 || b < 2 || a >= b || b > 64)
        error(v, key, "expected N:M with 1 <= N < M <= 64 (e.g. \"2:4\"), found '" + *s + "'");
      else if (t.shape.size() < 2)
        error(v, key, "N:M sparsity runs along the contracting (second-to-last) dim: needs a rank >= 2 tensor");
      else
        t.sparsity = {a, b};
    }
  }
}

}  // namespace tpusim::workloads::detail
