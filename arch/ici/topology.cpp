// See topology.h.
#include "arch/ici/topology.h"

#include <algorithm>
#include <sstream>

#include "arch/common/errors.h"

namespace tpusim::arch::ici {

namespace {

// Index of a chip's outgoing link along axis `a` in direction `dir` in the
// per-chip table of 2 x rank links (+ direction first).
std::size_t link_slot(int chip, int rank, int a, int dir) {
  return static_cast<std::size_t>(chip) * 2 * static_cast<std::size_t>(rank) + static_cast<std::size_t>(a) * 2 +
         (dir > 0 ? 0 : 1);
}

const char kAxisNames[] = "xyz";

[[noreturn]] void shape_error(const std::string& shape, const std::string& why) {
  throw ConfigError("ICI slice shape '" + shape + "': " + why);
}

bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace

std::vector<int> parse_shape(const std::string& shape) {
  std::vector<int> dims;
  std::string part;
  std::stringstream ss(shape);
  if (shape.empty()) shape_error(shape, "empty; expected axis lengths like 4x4 or 4x4x8");
  while (std::getline(ss, part, 'x')) {
    if (part.empty() || part.size() > 6 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
      shape_error(shape, "expected positive integers separated by 'x', like 4x4 or 4x4x8");
    const int v = std::stoi(part);
    if (v < 1) shape_error(shape, "axis lengths must be at least 1");
    dims.push_back(v);
  }
  if (shape.back() == 'x') shape_error(shape, "trailing 'x'");
  return dims;
}

std::string split_slices(const std::string& shape, int& num_slices) {
  num_slices = 1;
  const std::size_t star = shape.find('*');
  if (star == std::string::npos) return shape;
  const std::string n = shape.substr(0, star);
  if (n.empty() || n.size() > 5 || !std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }))
    shape_error(shape, "expected a slice count before '*', like 4*16x16 (4 slices of 16x16 joined by the DCN)");
  num_slices = std::stoi(n);
  if (num_slices < 1 || num_slices > kMaxSlices)
    shape_error(shape, "the slice count must be in [1, " + std::to_string(kMaxSlices) + "]");
  return shape.substr(star + 1);
}

bool axis_wraps(const std::string& rule, int length) {
  if (rule == "length16") return length == 16;          // scaling book: v5e/v6e wrap only at 16
  if (rule == "multiple_of_4") return length % 4 == 0;  // v4 docs: torus when a multiple of 4
  if (rule == "always") return length > 1;
  if (rule == "never") return false;
  throw ConfigError("ici.wraparound '" + rule + "': expected one of length16, multiple_of_4, always, never");
}

Slice::Slice(const IciConfig& config, const std::string& shape, bool twisted)
    : config_(config), shape_(shape), twisted_(twisted) {
  dims_ = parse_shape(split_slices(shape, num_slices_));
  if (num_slices_ > 1 && !(config.dcn_bandwidth > 0))
    shape_error(shape, std::to_string(num_slices_) +
                           " slices need the data-centre network between them, but dcn_bandwidth is 0 for this "
                           "generation");
  if (config.dcn_latency < 0) throw ConfigError("dcn_latency must not be negative");
  int want_rank = 0;
  if (config.topology == "torus2d")
    want_rank = 2;
  else if (config.topology == "torus3d")
    want_rank = 3;
  else
    throw ConfigError("ici.topology '" + config.topology + "': expected torus2d or torus3d");
  if (rank() != want_rank)
    shape_error(shape, "topology " + config.topology + " needs " + std::to_string(want_rank) + " axes, the shape has " +
                           std::to_string(rank()));
  if (config.ports < 2 * want_rank)
    throw ConfigError("ici.ports " + std::to_string(config.ports) + ": a " + config.topology + " chip needs at least " +
                      std::to_string(2 * want_rank) + " ports");
  if (!(config.link_bandwidth > 0)) throw ConfigError("ici.link_bandwidth must be positive to build a slice");
  if (config.hop_latency < 0) throw ConfigError("ici.hop_latency must not be negative");
  if (!(config.link_efficiency > 0 && config.link_efficiency <= 1))
    throw ConfigError("ici.link_efficiency must be in (0, 1], the usable fraction of ici.link_bandwidth");
  if (config.collective_latency < 0) throw ConfigError("ici.collective_latency must not be negative");
  if (config.axis_split != "tori" && config.axis_split != "always" && config.axis_split != "never")
    throw ConfigError("ici.axis_split '" + config.axis_split + "': expected one of tori, always, never");
  std::int64_t chips = 1;
  for (int d : dims_) chips *= d;
  if (chips > config.max_chips)
    shape_error(shape, std::to_string(chips) + " chips exceed ici.max_chips " + std::to_string(config.max_chips));
  num_chips_ = static_cast<int>(chips);
  for (std::size_t a = 0, step = 1; a < dims_.size(); step *= static_cast<std::size_t>(dims_[a]), ++a)
    stride_.push_back(static_cast<int>(step));
  for (int d : dims_) {
    if (config.wraparound == "length16" && (!is_pow2(d) || d > 16))
      shape_error(shape, "axis length " + std::to_string(d) + " not allowed by rule length16 (powers of two up to 16)");
    if (config.wraparound == "multiple_of_4" && d > 2 && d % 4 != 0)
      shape_error(shape,
                  "axis length " + std::to_string(d) + " not allowed by rule multiple_of_4 (1, 2 or a multiple of 4)");
    wraps_.push_back(axis_wraps(config.wraparound, d));
  }

  const int r = rank();
  twist_.assign(static_cast<std::size_t>(r), std::vector<int>(static_cast<std::size_t>(r), 0));
  if (twisted_) {
    if (!config.twisted_torus)
      shape_error(shape, "a twisted torus was requested but this generation has none (ici.twisted_torus false)");
    std::vector<int> s = dims_;
    std::sort(s.begin(), s.end());
    const bool ok_rank = r == 3;
    const bool all_wrap = std::all_of(wraps_.begin(), wraps_.end(), [](bool w) { return w; });
    // v4 docs: twisted tori for 2A=B=C and 2A=2B=C.
    const bool form = ok_rank && ((2 * s[0] == s[1] && s[1] == s[2]) || (s[0] == s[1] && 2 * s[1] == s[2]));
    if (!form || !all_wrap)
      shape_error(shape, "a twisted torus needs a 3D torus of shape 2A=B=C or 2A=2B=C (e.g. 4x8x8, 4x4x8)");
    for (int a = 0; a < r; ++a)
      if (dims_[static_cast<std::size_t>(a)] == s[0])
        for (int b = 0; b < r; ++b)
          if (dims_[static_cast<std::size_t>(b)] == 2 * s[0])
            twist_[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] = dims_[static_cast<std::size_t>(b)] / 2;
  }

  out_.assign(static_cast<std::size_t>(num_chips_) * 2 * static_cast<std::size_t>(r), -1);
  for (int c = 0; c < num_chips_; ++c) {
    const std::vector<int> xc = coords(c);
    for (int a = 0; a < r; ++a) {
      const int len = dims_[static_cast<std::size_t>(a)];
      for (int dir : {+1, -1}) {
        std::vector<int> n = xc;
        int& x = n[static_cast<std::size_t>(a)];
        x += dir;
        bool wrap = false;
        if (x < 0 || x >= len) {
          if (!wraps_[static_cast<std::size_t>(a)]) continue;
          wrap = true;
          x = (x + len) % len;
          for (int b = 0; b < r; ++b) {
            const int off = twist_[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)];
            if (off == 0) continue;
            const int lb = dims_[static_cast<std::size_t>(b)];
            int& y = n[static_cast<std::size_t>(b)];
            y = ((y + dir * off) % lb + lb) % lb;
          }
        }
        if (len == 1) continue;
        out_[link_slot(c, r, a, dir)] = num_links();
        links_.push_back(Link{c, chip_at(n), a, dir, wrap});
      }
    }
  }

  // Hosts: factors of two handed out to the axes in turn (capped by the
  // axis length), which gives v5e's 4x2 host of 8 chips and v4's 2x2x1 of 4.
  host_block_.assign(static_cast<std::size_t>(r), 1);
  int left = std::max(1, config.chips_per_host);
  for (int guard = 0; left > 1 && guard < 64; ++guard) {
    const int a = guard % r;
    if (host_block_[static_cast<std::size_t>(a)] * 2 <= dims_[static_cast<std::size_t>(a)] && left % 2 == 0) {
      host_block_[static_cast<std::size_t>(a)] *= 2;
      left /= 2;
    }
  }
}

std::vector<int> Slice::coords(int chip) const {
  std::vector<int> x(dims_.size());
  for (std::size_t a = 0; a < dims_.size(); ++a) {
    x[a] = chip % dims_[a];
    chip /= dims_[a];
  }
  return x;
}

int Slice::chip_at(const std::vector<int>& x) const {
  int c = 0;
  for (std::size_t a = dims_.size(); a-- > 0;) c = c * dims_[a] + x[a];
  return c;
}

std::string Slice::chip_name(int chip) const {
  std::string s = "(";
  const std::vector<int> x = coords(chip);
  for (std::size_t a = 0; a < x.size(); ++a) s += (a ? "," : "") + std::to_string(x[a]);
  return s + ")";
}

std::string Slice::link_name(int id) const {
  const Link& l = link(id);
  return chip_name(l.src) + (l.dir > 0 ? "+" : "-") + kAxisNames[l.axis];
}

int Slice::out_link(int chip, int axis, int dir) const {
  if (chip < 0 || chip >= num_chips_ || axis < 0 || axis >= rank())
    throw InternalError("Slice::out_link: chip or axis out of range");
  return out_[link_slot(chip, rank(), axis, dir)];
}

std::vector<int> Slice::neighbours(int chip) const {
  std::vector<int> n;
  for (int a = 0; a < rank(); ++a)
    for (int dir : {+1, -1}) {
      const int l = out_link(chip, a, dir);
      if (l >= 0) n.push_back(link(l).dst);
    }
  return n;
}

std::vector<int> Slice::route(int src, int dst) const {
  std::vector<int> path;
  route_into(src, dst, path);
  return path;
}

void Slice::route_into(int src, int dst, std::vector<int>& path) const {
  if (src < 0 || src >= num_chips_ || dst < 0 || dst >= num_chips_)
    throw InternalError("Slice::route: chip out of range");
  path.clear();
  int cur = src;
  // A twisted wrap shifts other coordinates, so passes repeat until the
  // destination is reached; each pass fixes at least the axes after the
  // last twisted one, so a few passes suffice.
  for (int pass = 0; cur != dst; ++pass) {
    if (pass > 4 * rank() + 4) throw InternalError("Slice::route: no route found");
    for (int a = 0; a < rank(); ++a) {
      const std::size_t ua = static_cast<std::size_t>(a);
      const int len = dims_[ua];
      const int target = coord(dst, a);
      int dir = 0;
      const int start = coord(cur, a);
      if (start == target) continue;
      if (wraps_[ua]) {
        const int fwd = ((target - start) % len + len) % len;
        const int back = len - fwd;
        dir = fwd < back ? +1 : back < fwd ? -1 : (start % 2 == 0 ? +1 : -1);
      } else {
        dir = target > start ? +1 : -1;
      }
      for (int guard = 0; coord(cur, a) != target; ++guard) {
        if (guard > len) throw InternalError("Slice::route: axis walk did not converge");
        const int l = out_[link_slot(cur, rank(), a, dir)];
        if (l < 0) throw InternalError("Slice::route: missing link");
        path.push_back(l);
        cur = links_[static_cast<std::size_t>(l)].dst;
      }
    }
  }
}

int Slice::host_of(int chip) const {
  const std::vector<int> x = coords(chip);
  int h = 0;
  for (std::size_t a = dims_.size(); a-- > 0;) {
    const int per = (dims_[a] + host_block_[a] - 1) / host_block_[a];
    h = h * per + x[a] / host_block_[a];
  }
  return h;
}

int Slice::num_hosts() const {
  int n = 1;
  for (std::size_t a = 0; a < dims_.size(); ++a) n *= (dims_[a] + host_block_[a] - 1) / host_block_[a];
  return n;
}

}  // namespace tpusim::arch::ici
