#include "workloads/ir/mesh.h"

#include <algorithm>
#include <cctype>

#include "workloads/io/suggest.h"

namespace tpusim::workloads {

std::optional<std::int64_t> MeshSpec::find(const std::string& axis) const {
  for (const auto& a : axes)
    if (a.name == axis) return a.size;
  return std::nullopt;
}

std::int64_t MeshSpec::chips() const {
  std::int64_t n = 1;
  for (const auto& a : axes) n *= a.size;
  return n;
}

std::string MeshSpec::str() const {
  std::string s;
  for (const auto& a : axes) s += (s.empty() ? "" : ",") + a.name + "=" + std::to_string(a.size);
  return s;
}

MeshError::MeshError(std::vector<arch::Diagnostic> d)
    : std::invalid_argument(arch::render_all(d)), diags_(std::move(d)) {}

namespace {

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(s.begin());
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::string list(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

MeshSpec parse_mesh(const std::string& text, const std::vector<std::string>& axis_names) {
  MeshSpec mesh;
  std::vector<arch::Diagnostic> errs;
  if (trim(text).empty()) return mesh;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = trim(text.substr(pos, comma - pos));
    const int col = static_cast<int>(pos) + 1;
    auto bad = [&](const std::string& key, const std::string& expected, const std::string& found,
                   const std::string& suggestion = "") {
      errs.push_back({"--mesh '" + text + "'", 1, col, key, expected, found, suggestion});
    };
    const std::size_t eq = item.find('=');
    const std::string name = eq == std::string::npos ? "" : trim(item.substr(0, eq));
    if (name.empty()) {
      bad("mesh", "an item name=size (e.g. tensor=4)", "'" + item + "'");
    } else {
      const std::string num = trim(item.substr(eq + 1));
      bool ok = true;
      if (!axis_names.empty() && std::find(axis_names.begin(), axis_names.end(), name) == axis_names.end()) {
        bad("mesh", "an axis name among " + list(axis_names), "'" + name + "'", nearest_candidate(name, axis_names));
        ok = false;
      }
      if (mesh.find(name)) {
        bad("mesh." + name, "each axis once", "'" + name + "' given again");
        ok = false;
      }
      // At most 11 digits: no overflow, and far beyond any slice.
      const bool digits = !num.empty() && num.size() < 12 && std::all_of(num.begin(), num.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      });
      const std::int64_t size = digits ? std::stoll(num) : 0;
      if (size < 1) {
        bad("mesh." + name, "a size that is an integer >= 1", "'" + num + "'");
        ok = false;
      }
      if (ok) mesh.axes.push_back({name, size});
    }
    pos = comma + 1;
  }
  if (!errs.empty()) throw MeshError(std::move(errs));
  return mesh;
}

}  // namespace tpusim::workloads
