// See hbm_calibration_cache.h.
#include "arch/hbm/hbm_calibration_cache.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "arch/hbm/hbm_model_hash.h"  // generated: TPUSIM_HBM_MODEL_HASH

namespace tpusim::arch {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

std::string header_line() {
  return "tpusim-hbm-calibration " + std::to_string(kHbmCalibrationFormat) + " " + TPUSIM_HBM_MODEL_HASH;
}

// Whole-token parsers: false on anything but exactly one number.
bool parse(const std::string& tok, std::uint64_t& v) {
  if (tok.empty() || tok[0] == '-') return false;
  char* end = nullptr;
  errno = 0;
  v = std::strtoull(tok.c_str(), &end, 10);
  return errno == 0 && *end == '\0';
}
bool parse(const std::string& tok, Ps& v) {
  if (tok.empty()) return false;
  char* end = nullptr;
  errno = 0;
  v = std::strtoll(tok.c_str(), &end, 10);
  return errno == 0 && *end == '\0';
}
bool parse(const std::string& tok, double& v) {  // hex float, exact
  if (tok.empty()) return false;
  char* end = nullptr;
  errno = 0;
  v = std::strtod(tok.c_str(), &end);
  return errno == 0 && *end == '\0';
}
bool parse(const std::string& tok, bool& v) {
  if (tok != "0" && tok != "1") return false;
  v = tok == "1";
  return true;
}

bool parse_pattern(const std::vector<std::string>& f, std::size_t at, HbmPattern& k) {
  return parse(f[at], std::get<0>(k)) && parse(f[at + 1], std::get<1>(k)) && parse(f[at + 2], std::get<2>(k)) &&
         parse(f[at + 3], std::get<3>(k)) && parse(f[at + 4], std::get<4>(k));
}

std::string pattern_text(const HbmPattern& k) {
  return std::to_string(std::get<0>(k)) + " " + std::to_string(std::get<1>(k)) + " " + std::to_string(std::get<2>(k)) +
         " " + std::to_string(std::get<3>(k)) + " " + std::to_string(std::get<4>(k));
}

std::string hexfloat(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

// The file's figures, or false when it is not a whole, matching file.
bool read_file(const std::string& path, const std::string& key, HbmCalibrationTables& out) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  if (!std::getline(in, line) || line != header_line()) return false;
  if (!std::getline(in, line) || line != "key " + hex(key)) return false;
  std::size_t entries = 0;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<std::string> f;
    for (std::string tok; ls >> tok;) f.push_back(tok);
    if (f.empty()) return false;
    if (f[0] == "end") {
      std::uint64_t n = 0;
      std::string rest;
      return f.size() == 2 && parse(f[1], n) && n == entries && !std::getline(in, rest);
    }
    ++entries;
    if (f[0] == "exact" && f.size() == 9) {
      HbmPattern k;
      std::uint64_t n = 0;
      bool refresh = false;
      Ps v = 0;
      if (!parse_pattern(f, 1, k) || !parse(f[6], n) || !parse(f[7], refresh) || !parse(f[8], v)) return false;
      out.exact.emplace(std::make_tuple(k, n, refresh), HbmCalibrationTables::Entry<Ps>{v, false});
    } else if (f[0] == "slope" && f.size() == 7) {
      HbmPattern k;
      double v = 0;
      if (!parse_pattern(f, 1, k) || !parse(f[6], v)) return false;
      out.slopes.emplace(k, HbmCalibrationTables::Entry<double>{v, false});
    } else if (f[0] == "rw" && f.size() == 4) {
      std::uint64_t atom = 0, bytes = 0;
      Ps v = 0;
      if (!parse(f[1], atom) || !parse(f[2], bytes) || !parse(f[3], v)) return false;
      out.read_write.emplace(std::make_pair(atom, bytes), HbmCalibrationTables::Entry<Ps>{v, false});
    } else {
      return false;
    }
  }
  return false;  // no end line: truncated
}

template <class Map>
void merge(Map& into, const Map& from) {
  for (const auto& [k, e] : from) into.emplace(k, typename Map::mapped_type{e.v, false});
}

}  // namespace

std::string hbm_calibration_cache_dir() {
  const std::string off = env("TPUSIM_NO_CACHE");
  if (!off.empty() && off != "0") return "";
  if (const std::string d = env("TPUSIM_CACHE_DIR"); !d.empty()) return d;
  if (const std::string x = env("XDG_CACHE_HOME"); !x.empty()) return x + "/tpusim";
  if (const std::string h = env("HOME"); !h.empty()) return h + "/.cache/tpusim";
  return "";
}

std::string hbm_calibration_cache_path(const std::string& key) {
  const std::string dir = hbm_calibration_cache_dir();
  if (dir.empty()) return "";
  char name[64];
  std::snprintf(name, sizeof name, "/hbm-calibration-%016llx.txt",
                static_cast<unsigned long long>(fnv1a(header_line() + "\n" + key)));
  return dir + name;
}

bool load_hbm_calibration(const std::string& path, const std::string& key, HbmCalibrationTables& t) {
  HbmCalibrationTables file;
  if (!read_file(path, key, file)) return false;
  merge(t.exact, file.exact);
  merge(t.slopes, file.slopes);
  merge(t.read_write, file.read_write);
  return true;
}

bool save_hbm_calibration(const std::string& path, const std::string& key, const HbmCalibrationTables& t) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  fs::create_directories(target.parent_path(), ec);
  HbmCalibrationTables all;
  merge(all.exact, t.exact);
  merge(all.slopes, t.slopes);
  merge(all.read_write, t.read_write);
  load_hbm_calibration(path, key, all);  // figures other processes saved meanwhile
  std::ostringstream o;
  o << header_line() << "\nkey " << hex(key) << "\n";
  for (const auto& [k, e] : all.exact)
    o << "exact " << pattern_text(std::get<0>(k)) << " " << std::get<1>(k) << " " << std::get<2>(k) << " " << e.v
      << "\n";
  for (const auto& [k, e] : all.slopes) o << "slope " << pattern_text(k) << " " << hexfloat(e.v) << "\n";
  for (const auto& [k, e] : all.read_write) o << "rw " << k.first << " " << k.second << " " << e.v << "\n";
  o << "end " << all.exact.size() + all.slopes.size() + all.read_write.size() << "\n";
  // A name no other process uses, in the same folder (rename is atomic
  // within one file system).
  const fs::path tmp = target.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << o.str();
    out.flush();
    if (!out) {
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

}  // namespace tpusim::arch
