// Config validation: the schema walk over a resolved document (unknown
// keys, types, units, choices) and the checks across keys (memories, HBM
// structure sizes, the hardware models' own checks, published peaks),
// filling arch::TpuConfig; see config_loader.h. Resolution is in
// config_resolve.cpp.
#include "sim/config/config_loader.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>

#include "arch/common/derived.h"
#include "arch/common/errors.h"
#include "arch/dma/dma_timing.h"
#include "arch/hbm/address_mapping.h"
#include "arch/hbm/detailed_dram.h"
#include "arch/hbm/dram_timing.h"
#include "arch/memory/port_timing.h"
#include "arch/mxu/systolic_timing.h"
#include "arch/vpu/vpu_timing.h"
#include "arch/vpu/xlu_timing.h"
#include "sim/config/config_resolve.h"
#include "sim/config/schema.h"
#include "sim/config/units.h"

namespace tpusim::sim {
namespace {

using config_detail::describe;
using config_detail::file_diag;
using config_detail::join;
using config_detail::lower;
using config_detail::Origin;
using config_detail::Resolved;

// Schema validation of a resolved document: collects every diagnostic.
class Validator {
 public:
  explicit Validator(const Resolved& r) : r_(r) {}

  Diagnostic at(const std::string& path, bool key_pos, std::string expected, std::string found) {
    std::string p = path;
    while (!p.empty() && !r_.origins.count(p)) {
      size_t dot = p.rfind('.');
      p = dot == std::string::npos ? "" : p.substr(0, dot);
    }
    if (p.empty()) return file_diag(r_.file, YAML::Mark::null_mark(), path, std::move(expected), std::move(found));
    const Origin& o = r_.origins.at(p);
    // A missing key is reported at its section's key, an existing one at
    // its value (or its key for unknown keys).
    YAML::Mark m = (key_pos || p != path) ? o.key : o.value;
    if (o.is_override) m = YAML::Mark::null_mark();
    return file_diag(o.file, m, path, std::move(expected), std::move(found));
  }

  void error(const std::string& path, bool key_pos, std::string expected, std::string found,
             std::string suggestion = "") {
    Diagnostic d = at(path, key_pos, std::move(expected), std::move(found));
    d.suggestion = std::move(suggestion);
    diags.push_back(d);
  }

  void walk(const YAML::Node& map, const std::string& prefix) {
    for (const auto& kv : map) {
      const std::string key = kv.first.Scalar();
      const std::string path = join(prefix, key);
      // Written configs carry a derived: section; it is output only, so
      // it is recomputed on every load rather than trusted.
      if (prefix.empty() && key == "derived") continue;
      if (const FieldSpec* f = find_field(path)) {
        field(*f, kv.second, path);
      } else if (is_section(path)) {
        if (!kv.second.IsMap())
          error(path, false, "a map of " + path + " keys (" + keys_of(path) + ")", describe(kv.second));
        else
          walk(kv.second, path);
      } else {
        error(path, true,
              "a key of " + (prefix.empty() ? std::string("the top level") : prefix) + " (" + keys_of(prefix) + ")",
              "unknown key '" + key + "'", suggest(prefix, key));
      }
    }
  }

  std::map<std::string, FieldValue> values;
  std::vector<Diagnostic> diags;

 private:
  static std::string keys_of(const std::string& section) {
    std::string s;
    for (const auto& k : section_children(section)) s += (s.empty() ? "" : ", ") + k;
    return s;
  }

  static std::string suggest(const std::string& prefix, const std::string& key) {
    std::string s = nearest_word(key, section_children(prefix));
    if (!s.empty()) return s;
    // The key exists in another section: suggest its full path.
    std::vector<std::string> all;
    for (const FieldSpec& f : schema()) all.push_back(f.path);
    for (const auto& sec : schema_sections()) all.push_back(sec);
    for (const auto& p : all) {
      size_t dot = p.rfind('.');
      std::string last = dot == std::string::npos ? p : p.substr(dot + 1);
      if (last == key) return p;
    }
    return "";
  }

  bool check_min(const FieldSpec& f, double v) { return (f.min_exclusive ? v > f.min : v >= f.min) && v <= f.max; }

  void field(const FieldSpec& f, const YAML::Node& n, const std::string& path) {
    if (f.type == FieldType::dtype_map) {
      dtype_map(f, n, path);
      return;
    }
    if (!n.IsScalar()) {
      error(path, false, f.expected(), describe(n));
      return;
    }
    const std::string& text = n.Scalar();
    const std::string found = "'" + text + "'";
    switch (f.type) {
      case FieldType::integer: {
        errno = 0;
        char* end = nullptr;
        long long v = std::strtoll(text.c_str(), &end, 10);
        // Every integer key lands in an `int`.
        if (text.empty() || *end != '\0') {
          error(path, false, f.expected(), found);
        } else if (errno == ERANGE || v > std::numeric_limits<int>::max() || v < std::numeric_limits<int>::min()) {
          error(path, false, f.expected() + " and <= " + std::to_string(std::numeric_limits<int>::max()), found);
        } else if (!check_min(f, static_cast<double>(v))) {
          error(path, false, f.expected(), found);
        } else {
          values[path] = static_cast<double>(v);
        }
        break;
      }
      case FieldType::real: {
        char* end = nullptr;
        double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v) || !check_min(f, v))
          error(path, false, f.expected(), found);
        else
          values[path] = v;
        break;
      }
      case FieldType::boolean: {
        std::string l = lower(text);
        if (l == "true" || l == "yes")
          values[path] = true;
        else if (l == "false" || l == "no")
          values[path] = false;
        else
          error(path, false, f.expected(), found);
        break;
      }
      case FieldType::string:
      case FieldType::dtype: {
        bool ok = f.choices.empty() || std::find(f.choices.begin(), f.choices.end(), text) != f.choices.end();
        if (f.type == FieldType::dtype) ok = arch::parse_dtype(text).has_value();
        if (!ok)
          error(path, false, f.expected(), found, nearest_word(text, f.choices));
        else
          values[path] = f.type == FieldType::dtype ? std::string(arch::dtype_name(*arch::parse_dtype(text))) : text;
        break;
      }
      case FieldType::quantity: {
        double v = 0;
        try {
          v = parse_quantity(text, f.unit);
        } catch (const UnitError& e) {
          error(path, false, e.expected(), e.found());
          break;
        }
        std::string noun = unit_kind_description(f.unit);
        if (!check_min(f, v)) {
          std::string range = f.min_exclusive ? ", greater than " + format_quantity(f.min, f.unit)
                                              : ", at least " + format_quantity(f.min, f.unit);
          if (f.max != std::numeric_limits<double>::infinity())
            range += " and at most " + format_quantity(f.max, f.unit);
          error(path, false, noun + range, found);
        } else if (f.unit == UnitKind::size && std::floor(v) != v) {
          error(path, false, "a whole number of bytes", found);
        } else if (f.unit == UnitKind::size && v > 9007199254740992.0) {
          error(path, false, "a size of at most 8 PiB (2^53 bytes)", found);
        } else {
          values[path] = v;
        }
        break;
      }
      case FieldType::dtype_map: break;
    }
  }

  void dtype_map(const FieldSpec& f, const YAML::Node& n, const std::string& path) {
    if (!n.IsMap() || n.size() == 0) {
      error(path, false, f.expected(), n.IsMap() ? "an empty map" : describe(n));
      return;
    }
    std::vector<std::string> names;
    for (arch::DType t : arch::kAllDTypes) names.emplace_back(arch::dtype_name(t));
    std::map<arch::DType, double> m;
    bool ok = true;
    for (const auto& kv : n) {
      const std::string k = kv.first.Scalar();
      const std::string p = join(path, k);
      auto t = arch::parse_dtype(k);
      if (!t) {
        error(p, true, "a dtype (one of " + keys_list(names) + ")", "unknown dtype '" + k + "'",
              nearest_word(k, names));
        ok = false;
        continue;
      }
      char* end = nullptr;
      const std::string text = kv.second.IsScalar() ? kv.second.Scalar() : "";
      double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= 0) {
        error(p, false, "a number > 0", describe(kv.second));
        ok = false;
        continue;
      }
      m[*t] = v * f.scale;
    }
    if (ok) values[path] = m;
  }

  static std::string keys_list(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& k : v) s += (s.empty() ? "" : ", ") + k;
    return s;
  }

  const Resolved& r_;
};

bool valid_address_mapping(const std::string& s) {
  std::vector<std::string> need{"Ro", "Ba", "Bg", "Ch", "Pc", "Co"};
  if (s.size() != 12) return false;
  std::set<std::string> seen;
  for (size_t i = 0; i < s.size(); i += 2) {
    std::string tok = s.substr(i, 2);
    if (std::find(need.begin(), need.end(), tok) == need.end() || !seen.insert(tok).second) return false;
  }
  return true;
}

std::string fmt_num(double v) {
  std::ostringstream os;
  os.precision(4);
  os << v;
  return os.str();
}

arch::TpuConfig build(const Resolved& r) {
  Validator v(r);
  v.walk(r.root, "");
  arch::TpuConfig c;
  for (const auto& sec : schema_sections())
    if (is_presence_section(sec) && r.root[sec] && r.root[sec].IsMap())
      find_field(sec + ".present")->set(c, FieldValue(true));
  for (const FieldSpec& f : schema()) {
    auto it = v.values.find(f.path);
    if (it != v.values.end()) {
      f.set(c, it->second);
    } else if (f.required) {
      size_t dot = f.path.rfind('.');
      std::string sec = dot == std::string::npos ? "" : f.path.substr(0, dot);
      // Invalid values were already reported; only truly absent keys here.
      bool reported = false;
      for (const auto& d : v.diags) reported |= d.key == f.path;
      if (!reported) v.error(f.path, true, f.expected() + " (required)", "no value");
    }
  }
  if (!v.values.count("chip.name")) c.chip.name = r.name;

  auto mem_check = [&](const std::string& n, const arch::MemoryConfig& m) {
    for (const auto& d : v.diags)
      if (d.key == n + ".size") return;  // an invalid size was reported already
    if (m.present && m.size_bytes == 0 && !v.values.count(n + ".size"))
      v.error(n + ".size", true, "a size > 0 for a present " + n + " (required)", "no value");
    else if (m.present && m.size_bytes == 0)
      v.error(n + ".size", false, "a size > 0 for a present " + n, "'0 B'");
  };
  mem_check("vmem", c.vmem);
  mem_check("smem", c.smem);
  mem_check("cmem", c.cmem);
  if (c.ici.ports > 0 && c.ici.link_bandwidth <= 0)
    v.error("ici.link_bandwidth", !v.values.count("ici.link_bandwidth"),
            "a bandwidth > 0 when ici.ports is " + std::to_string(c.ici.ports),
            v.values.count("ici.link_bandwidth") ? "'0'" : "no value");
  if (v.values.count("ici.link_efficiency") && c.ici.link_efficiency > 1)
    v.error("ici.link_efficiency", false, "a fraction in (0, 1] of ici.link_bandwidth",
            "'" + fmt_num(c.ici.link_efficiency) + "'");
  if (v.values.count("hbm.address_mapping") && !valid_address_mapping(c.hbm.address_mapping))
    v.error("hbm.address_mapping", false, "a permutation of the fields Ro Ba Bg Ch Pc Co, e.g. RoBaBgChPcCo",
            "'" + c.hbm.address_mapping + "'");

  // Structure sizes that each key allows but whose product would ask for
  // millions of simulated banks or cores.
  if (v.diags.empty()) {
    const double pcs = static_cast<double>(c.hbm.stacks) * c.hbm.channels * c.hbm.pseudo_channels;
    const double banks = pcs * c.hbm.bank_groups * c.hbm.banks_per_group;
    if (pcs > 4096)
      v.error("hbm.stacks", false, "at most 4096 pseudo-channels in all (stacks x channels x pseudo_channels)",
              fmt_num(pcs));
    else if (banks > 262144)
      v.error("hbm.banks_per_group", false,
              "at most 262144 banks in all (stacks x channels x pseudo_channels x bank_groups x banks_per_group)",
              fmt_num(banks));
    for (const auto& [n, m] :
         {std::pair<const char*, const arch::MemoryConfig*>{"vmem", &c.vmem}, {"smem", &c.smem}, {"cmem", &c.cmem}})
      if (m->present && m->granule_bytes > m->size_bytes)
        v.error(std::string(n) + ".granule", false, "a granule no larger than " + std::string(n) + ".size",
                "'" + format_quantity(static_cast<double>(m->granule_bytes), UnitKind::size) + "'");
  }
  // Every check the hardware models make when a run builds them, made here
  // too, so that `config check` accepts exactly what `run` accepts and the
  // message points at the key's line (the models know no files).
  if (v.diags.empty()) {
    auto model_check = [&](auto&& construct) {
      try {
        construct();
      } catch (const arch::ConfigError& e) {
        const std::string msg = e.what();
        const std::size_t end = msg.find_first_of(" :'");
        std::string key = msg.substr(0, end);
        if (!key.empty() && key.back() == '.') key.pop_back();
        // "mxu.throughput.int8: ..." belongs to the key mxu.throughput.
        while (!key.empty() && !find_field(key) && !is_section(key)) {
          const std::size_t dot = key.rfind('.');
          key = dot == std::string::npos ? "" : key.substr(0, dot);
        }
        const FieldSpec* f = find_field(key);
        std::string found = f ? "'" + format_field(*f, f->get(c)) + "'" : "this config";
        // Several models share a check (DramTiming is built by three).
        for (const auto& d : v.diags)
          if (d.expected == msg) return;
        v.error(f || is_section(key) ? key : "", false, msg, found);
      }
    };
    model_check([&] { arch::DramTiming t(c.hbm); });
    model_check([&] { arch::AddressMapping m(c.hbm); });
    model_check([&] { arch::DetailedDram d(c.hbm); });
    model_check([&] { arch::MxuTimer t(c.mxu); });
    model_check([&] { arch::VpuTimer t(c.vpu); });
    if (c.xlu.count > 0) model_check([&] { arch::XluTimer t(c.xlu, c.vpu); });
    model_check([&] { arch::DmaEngineTiming t(c.dma, c.hbm, c.chip.clock_hz); });
    for (const auto& [n, m] :
         {std::pair<const char*, const arch::MemoryConfig*>{"vmem", &c.vmem}, {"smem", &c.smem}, {"cmem", &c.cmem}})
      if (m->present) {
        const std::string name = n;  // C++17: structured bindings cannot be captured
        const arch::MemoryConfig& mem = *m;
        model_check([&] { arch::MemoryPorts p(name, mem, c.chip.clock_hz); });
      }
  }
  // Derived figures are only meaningful for an otherwise valid config.
  if (v.diags.empty()) {
    for (const auto& m : arch::check_published(c)) {
      bool peak = m.key.rfind("published.peak_tflops", 0) == 0;
      double scale = peak ? 1e12 : 1e9;
      const char* unit = peak ? " TFLOP/s" : " GB/s";
      double pct = m.published > 0 ? 100.0 * (m.derived - m.published) / m.published : 0;
      v.error(m.key, false, "within 3% of the derived " + fmt_num(m.derived / scale) + unit + " (" + m.how + ")",
              fmt_num(m.published / scale) + unit + " (derived is " + fmt_num(std::fabs(pct)) +
                  (pct < 0 ? "% below)" : "% above)"));
    }
  }
  if (!v.diags.empty()) {
    // Reading order: by file, then position; keyless (missing) ones last.
    std::stable_sort(v.diags.begin(), v.diags.end(), [](const Diagnostic& a, const Diagnostic& b) {
      auto rank = [](const Diagnostic& d) { return d.line == 0 ? 1 << 30 : d.line; };
      if (a.file != b.file) return a.file < b.file;
      if (rank(a) != rank(b)) return rank(a) < rank(b);
      return a.column < b.column;
    });
    throw ConfigError(v.diags);
  }
  return c;
}

}  // namespace

arch::TpuConfig load_tpu_config(const std::string& name_or_path, const std::vector<std::string>& overrides,
                                const ConfigSearchPath& path) {
  return build(config_detail::resolve(name_or_path, overrides, path));
}

}  // namespace tpusim::sim
