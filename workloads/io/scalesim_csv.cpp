// SCALE-Sim topology CSV reader (see scalesim_csv.h for the mapping).
#include "workloads/io/scalesim_csv.h"
#include "workloads/io/input_file.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "workloads/ir/shape_inference.h"

namespace tpusim::workloads {

namespace {

std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Splits on commas; SCALE-Sim rows end with a trailing comma, which gives an
// empty last field that is dropped.
std::vector<std::string> split_row(const std::string& line) {
  std::vector<std::string> f;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      f.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  f.push_back(trim(cur));
  while (!f.empty() && f.back().empty()) f.pop_back();
  return f;
}

const std::vector<std::string> kConvCols = {"Layer name",   "IFMAP Height", "IFMAP Width", "Filter Height",
                                            "Filter Width", "Channels",     "Num Filter",  "Strides"};
const std::vector<std::string> kGemmCols = {"Layer", "M", "N", "K"};

}  // namespace

ScaleSimForm detect_scalesim_form(const std::string& header_line, const std::string& filename) {
  auto f = split_row(header_line);
  std::vector<std::string> l;
  for (const auto& x : f) l.push_back(lower(x));
  if (l.size() >= 4 && l[1] == "m" && l[2] == "n" && l[3] == "k") return ScaleSimForm::gemm;
  if (l.size() >= 8 && l[1] == "ifmap height") return ScaleSimForm::conv;
  throw WorkloadError(SourceLoc{filename, 1, 0}, "header",
                      "expected a SCALE-Sim header, either \"Layer name, IFMAP Height, IFMAP Width, "
                      "Filter Height, Filter Width, Channels, Num Filter, Strides,\" or \"Layer, M, N, "
                      "K,\"; found \"" +
                          trim(header_line) + "\"");
}

Workload read_scalesim_csv_string(const std::string& text, const std::string& filename, const ScaleSimOptions& opts) {
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  std::vector<Diagnostic> diags;
  // Header: the first non-empty line.
  std::string header;
  while (std::getline(in, line)) {
    ++lineno;
    if (!trim(line).empty()) {
      header = line;
      break;
    }
  }
  if (header.empty()) throw WorkloadError(SourceLoc{filename, 0, 0}, "", "empty SCALE-Sim topology file");
  ScaleSimForm form = detect_scalesim_form(header, filename);
  const auto& cols = form == ScaleSimForm::conv ? kConvCols : kGemmCols;
  std::size_t max_cols = form == ScaleSimForm::conv ? 9 : 4;  // conv: optional stride width
  std::size_t header_cols = split_row(header).size();
  if (header_cols > max_cols)
    diags.push_back({SourceLoc{filename, lineno, 0}, "header",
                     "expected at most " + std::to_string(max_cols) + " columns, found " + std::to_string(header_cols) +
                         " (unsupported extra columns)"});

  Workload wl;
  wl.name = opts.name;
  if (wl.name.empty()) wl.name = std::filesystem::path(filename).stem().string();
  if (wl.name.empty()) wl.name = "scalesim";
  wl.description = std::string("imported from SCALE-Sim ") + (form == ScaleSimForm::conv ? "conv" : "GEMM") +
                   " topology " + filename;
  wl.loc = {filename, 0, 0};
  std::set<std::string> layers;

  while (std::getline(in, line)) {
    ++lineno;
    if (trim(line).empty()) continue;
    SourceLoc loc{filename, lineno, 0};
    auto f = split_row(line);
    std::string layer = f.empty() ? "" : f[0];
    std::string where = "row '" + layer + "'";
    if (f.size() < cols.size() || f.size() > max_cols) {
      diags.push_back({loc, where,
                       "expected " + std::to_string(cols.size()) +
                           (max_cols > cols.size() ? " or " + std::to_string(max_cols) : "") + " columns, found " +
                           std::to_string(f.size())});
      continue;
    }
    if (layer.empty()) {
      diags.push_back({loc, "column '" + cols[0] + "'", "expected a layer name, found an empty field"});
      continue;
    }
    if (!layers.insert(layer).second) {
      diags.push_back({loc, where, "layer name '" + layer + "' used twice"});
      continue;
    }
    std::vector<std::int64_t> v(f.size(), 0);
    bool ok = true;
    for (std::size_t i = 1; i < f.size(); ++i) {
      errno = 0;
      char* end = nullptr;
      long long x = std::strtoll(f[i].c_str(), &end, 10);
      std::string col = i < cols.size() ? cols[i] : std::string("Stride Width");
      if (f[i].empty() || *end != '\0' || errno == ERANGE || x < 1) {
        diags.push_back({loc, where + ", column '" + col + "'", "expected a positive integer, found '" + f[i] + "'"});
        ok = false;
      }
      v[i] = x;
    }
    if (!ok) continue;
    Op op;
    op.name = layer;
    op.loc = loc;
    op.outputs = {layer};
    if (form == ScaleSimForm::conv) {
      std::int64_t H = v[1], W = v[2], FH = v[3], FW = v[4], C = v[5], NF = v[6], S = v[7];
      std::int64_t SW = f.size() > 8 ? v[8] : S;
      if (FH > H || FW > W) {
        diags.push_back({loc, where + ", column '" + std::string(FH > H ? "Filter Height" : "Filter Width") + "'",
                         "filter " + std::to_string(FH) + "x" + std::to_string(FW) + " larger than IFMAP " +
                             std::to_string(H) + "x" + std::to_string(W)});
        continue;
      }
      wl.tensors.push_back({layer + ".ifmap", {1, H, W, C}, opts.dtype, MemSpace::hbm, TensorKind::input, loc, {}, {}});
      wl.tensors.push_back(
          {layer + ".filter", {FH, FW, C, NF}, opts.dtype, MemSpace::hbm, TensorKind::weight, loc, {}, {}});
      Conv2dAttrs a;
      a.stride_h = S;
      a.stride_w = SW;
      a.padding = PaddingMode::valid;
      op.kind = OpKind::conv2d;
      op.inputs = {layer + ".ifmap", layer + ".filter"};
      op.attrs = a;
      auto g = conv2d_geometry(a, H, W, FH, FW);
      wl.tensors.push_back(
          {layer, {1, g.out_h, g.out_w, NF}, opts.dtype, MemSpace::hbm, TensorKind::output, loc, {}, {}});
    } else {
      std::int64_t M = v[1], N = v[2], K = v[3];
      wl.tensors.push_back({layer + ".a", {M, K}, opts.dtype, MemSpace::hbm, TensorKind::input, loc, {}, {}});
      wl.tensors.push_back({layer + ".b", {K, N}, opts.dtype, MemSpace::hbm, TensorKind::weight, loc, {}, {}});
      op.kind = OpKind::matmul;
      op.inputs = {layer + ".a", layer + ".b"};
      MatmulAttrs mm;
      mm.equation = "mk,kn->mn";
      op.attrs = mm;
      wl.tensors.push_back({layer, {M, N}, opts.dtype, MemSpace::hbm, TensorKind::output, loc, {}, {}});
    }
    wl.ops.push_back(std::move(op));
  }
  if (diags.empty() && wl.ops.empty())
    diags.push_back({SourceLoc{filename, 0, 0}, "", "no layer rows after the header"});
  if (!diags.empty()) throw WorkloadError(std::move(diags));
  wl.validate();  // tensor names such as "<layer>.a" could clash with another layer's
  return wl;
}

bool is_scalesim_path(const std::string& path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
}

Workload read_scalesim_csv(const std::string& path, const ScaleSimOptions& opts) {
  if (auto why = input_file_problem(path); !why.empty())
    throw WorkloadError(SourceLoc{path, 0, 0}, "", "cannot read SCALE-Sim topology file: " + why);
  std::ifstream in(path);
  if (!in) throw WorkloadError(SourceLoc{path, 0, 0}, "", "cannot open SCALE-Sim topology file");
  std::stringstream ss;
  ss << in.rdbuf();
  return read_scalesim_csv_string(ss.str(), path, opts);
}

}  // namespace tpusim::workloads
