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
  for (const auto& a : axes) {
    s += (s.empty() ? "" : ",") + a.name + "=" + std::to_string(a.size);
    for (std::size_t i = 0; i < a.placement.size(); ++i) {
      const MeshPart& p = a.placement[i];
      s += (i == 0 ? "@" : "*") + p.axis;
      if (p.stride != 1) s += "/" + std::to_string(p.stride);
      if (p.length != 0) s += "%" + std::to_string(p.length);
    }
  }
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

// A count of at most 11 digits (no overflow, far beyond any slice), >= 1;
// 0 when malformed.
std::int64_t count(const std::string& num) {
  const bool digits = !num.empty() && num.size() < 12 && std::all_of(num.begin(), num.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
  return digits ? std::stoll(num) : 0;
}

// "x/2%4*y%2" -> parts; an empty optional naming the first bad part.
std::optional<std::vector<MeshPart>> parse_placement(const std::string& text, std::string& bad_part) {
  std::vector<MeshPart> parts;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t star = text.find('*', pos);
    if (star == std::string::npos) star = text.size();
    const std::string item = trim(text.substr(pos, star - pos));
    bad_part = item;
    const std::size_t mark = item.find_first_of("/%");
    MeshPart p;
    p.axis = trim(item.substr(0, mark));
    if (p.axis != "x" && p.axis != "y" && p.axis != "z" && p.axis != "dcn") return std::nullopt;
    std::string rest = mark == std::string::npos ? "" : item.substr(mark);
    if (!rest.empty() && rest[0] == '/') {
      const std::size_t pct = rest.find('%');
      p.stride = count(trim(rest.substr(1, pct == std::string::npos ? std::string::npos : pct - 1)));
      if (p.stride < 1) return std::nullopt;
      rest = pct == std::string::npos ? "" : rest.substr(pct);
    }
    if (!rest.empty()) {
      if (rest[0] != '%') return std::nullopt;
      p.length = count(trim(rest.substr(1)));
      if (p.length < 1) return std::nullopt;
    }
    parts.push_back(std::move(p));
    pos = star + 1;
  }
  return parts;
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
      std::string num = trim(item.substr(eq + 1));
      std::vector<MeshPart> placement;
      bool ok = true;
      if (const std::size_t at = num.find('@'); at != std::string::npos) {
        std::string bad_part;
        const auto parts = parse_placement(num.substr(at + 1), bad_part);
        num = trim(num.substr(0, at));
        if (!parts) {
          bad("mesh." + name,
              "a placement of parts joined by '*', each x, y, z or dcn with an optional /stride and %length "
              "(e.g. x%2*y/2)",
              "'" + bad_part + "'");
          ok = false;
        } else {
          placement = *parts;
        }
      }
      if (!axis_names.empty() && std::find(axis_names.begin(), axis_names.end(), name) == axis_names.end()) {
        bad("mesh", "an axis name among " + list(axis_names), "'" + name + "'", nearest_candidate(name, axis_names));
        ok = false;
      }
      if (mesh.find(name)) {
        bad("mesh." + name, "each axis once", "'" + name + "' given again");
        ok = false;
      }
      const std::int64_t size = count(num);
      if (size < 1) {
        bad("mesh." + name, "a size that is an integer >= 1", "'" + num + "'");
        ok = false;
      }
      std::int64_t given = 1;  // product of the lengths given; size + 1 once past the size
      for (const MeshPart& p : placement) {
        const std::int64_t len = std::max<std::int64_t>(p.length, 1);
        given = size < 1 || given > size / len ? size + 1 : given * len;
      }
      if (ok && given > size) {
        bad("mesh." + name, "parts whose lengths multiply to at most the size " + std::to_string(size),
            "'" + trim(item.substr(item.find('@') + 1)) + "'");
        ok = false;
      }
      if (ok) mesh.axes.push_back({name, size, std::move(placement)});
    }
    pos = comma + 1;
  }
  if (!errs.empty()) throw MeshError(std::move(errs));
  return mesh;
}

}  // namespace tpusim::workloads
