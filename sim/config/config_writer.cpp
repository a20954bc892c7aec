// Resolved-config writer; see config_writer.h.
#include "sim/config/config_writer.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <vector>

#include "arch/common/derived.h"
#include "sim/config/schema.h"
#include "sim/config/units.h"

namespace tpusim::sim {
namespace {

// An ordered tree of printed values; both formats walk it.
struct Tree {
  std::string key;
  std::string scalar;   // leaf text, if no children
  bool number = false;  // JSON: print unquoted
  std::vector<Tree> kids;

  Tree& child(const std::string& k) {
    for (Tree& t : kids)
      if (t.key == k) return t;
    kids.push_back(Tree{k, "", false, {}});
    return kids.back();
  }
  void put(const std::string& dotted, const std::string& text, bool is_number) {
    size_t dot = dotted.find('.');
    if (dot == std::string::npos) {
      Tree& t = child(dotted);
      t.scalar = text;
      t.number = is_number;
    } else {
      child(dotted.substr(0, dot)).put(dotted.substr(dot + 1), text, is_number);
    }
  }
};

Tree build_tree(const arch::TpuConfig& c) {
  Tree root;
  for (const FieldSpec& f : schema()) {
    if (!f.present(c)) continue;
    FieldValue v = f.get(c);
    if (f.type == FieldType::dtype_map) {
      Tree& m = root;
      std::string base = f.path;
      const auto& map = std::get<std::map<arch::DType, double>>(v);
      if (map.empty()) continue;  // published.peak_tflops may be empty
      for (const auto& [t, x] : map)
        m.put(base + "." + std::string(arch::dtype_name(t)), format_scaled(x, f.scale, 1), true);
      continue;
    }
    bool number = f.type == FieldType::integer || f.type == FieldType::real || f.type == FieldType::boolean;
    root.put(f.path, format_field(f, v), number);
  }
  const arch::DerivedFigures d = arch::derive(c);
  for (const auto& [t, x] : d.peak_flops)
    root.put("derived.peak_tflops." + std::string(arch::dtype_name(t)), format_scaled(x, 1e12, 1), true);
  root.put("derived.hbm_bandwidth", format_quantity(d.hbm_bandwidth, UnitKind::bandwidth), false);
  root.put("derived.hbm_capacity", format_quantity(static_cast<double>(d.hbm_capacity), UnitKind::size), false);
  root.put("derived.ici_link_bandwidth", format_quantity(d.ici_link_bandwidth, UnitKind::bandwidth), false);
  root.put("derived.ici_chip_bandwidth", format_quantity(d.ici_chip_bandwidth, UnitKind::bandwidth), false);
  for (const auto& [t, x] : d.ridge_point) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", x);
    root.put("derived.ridge_flops_per_byte." + std::string(arch::dtype_name(t)), buf, true);
  }
  return root;
}

void emit_yaml(YAML::Emitter& e, const Tree& t) {
  e << YAML::BeginMap;
  for (const Tree& k : t.kids) {
    e << YAML::Key << k.key << YAML::Value;
    if (k.kids.empty())
      e << k.scalar;
    else
      emit_yaml(e, k);
  }
  e << YAML::EndMap;
}

std::string json_escape(const std::string& s) {
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    o += ch;
  }
  return o + "\"";
}

void emit_json(std::string& out, const Tree& t, int indent) {
  out += "{\n";
  for (size_t i = 0; i < t.kids.size(); ++i) {
    const Tree& k = t.kids[i];
    out += std::string(indent + 2, ' ') + json_escape(k.key) + ": ";
    if (!k.kids.empty())
      emit_json(out, k, indent + 2);
    else
      out += k.number ? k.scalar : json_escape(k.scalar);
    out += i + 1 < t.kids.size() ? ",\n" : "\n";
  }
  out += std::string(indent, ' ') + "}";
}

}  // namespace

std::string write_config(const arch::TpuConfig& c, ConfigFormat format) {
  Tree t = build_tree(c);
  if (format == ConfigFormat::json) {
    std::string out;
    emit_json(out, t, 0);
    return out + "\n";
  }
  YAML::Emitter e;
  emit_yaml(e, t);
  return std::string(e.c_str()) + "\n";
}

}  // namespace tpusim::sim
