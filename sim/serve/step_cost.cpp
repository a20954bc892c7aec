// The step-cost grid, its interpolation and its cache file (see
// step_cost.h).
#include "sim/serve/step_cost.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "sim/cli/cli.h"

namespace tpusim::sim::serve {

namespace {

std::vector<std::int64_t> geometric(std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> v;
  for (std::int64_t x = first; x < last; x *= 4) v.push_back(x);
  v.push_back(last);
  return v;
}

struct Bracket {
  std::size_t i0 = 0, i1 = 0;
  double w1 = 0;  // weight of i1; 1 - w1 of i0
};

// The cell of x on an ascending axis; outside it, the end cell
// extrapolated (above) or the first point (below).
Bracket bracket(const std::vector<std::int64_t>& axis, double x) {
  Bracket b;
  if (axis.size() == 1 || x <= static_cast<double>(axis.front())) return b;
  std::size_t i = 1;
  while (i + 1 < axis.size() && static_cast<double>(axis[i]) < x) ++i;
  b.i0 = i - 1;
  b.i1 = i;
  b.w1 = (x - static_cast<double>(axis[i - 1])) / static_cast<double>(axis[i] - axis[i - 1]);
  if (b.w1 == 1.0) b = Bracket{i, i, 0};
  return b;
}

// The cell of n chunks on an ascending axis, weighted linearly in 1 / n;
// beyond the axis its last point (a step never has more chunks than the
// grid's most).
Bracket bracket_reciprocal(const std::vector<std::int64_t>& axis, double n) {
  Bracket b;
  if (axis.size() == 1 || n <= static_cast<double>(axis.front())) return b;
  if (n >= static_cast<double>(axis.back())) return Bracket{axis.size() - 1, axis.size() - 1, 0};
  std::size_t i = 1;
  while (static_cast<double>(axis[i]) < n) ++i;
  const double u0 = 1.0 / static_cast<double>(axis[i - 1]), u1 = 1.0 / static_cast<double>(axis[i]);
  b.i0 = i - 1;
  b.i1 = i;
  b.w1 = (u0 - 1.0 / n) / (u0 - u1);
  if (b.w1 == 1.0) b = Bracket{i, i, 0};
  return b;
}

}  // namespace

std::string digest(const std::string& text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

StepGrid make_grid(std::int64_t max_tokens, std::int64_t max_batch, std::int64_t max_context, std::int64_t max_prefix,
                   std::int64_t max_chunks) {
  StepGrid g;
  g.prefill = {0};
  if (max_tokens > 0)
    for (auto x : max_tokens > 16 ? geometric(16, max_tokens) : std::vector<std::int64_t>{max_tokens})
      g.prefill.push_back(x);
  g.decode = {0};
  for (auto x : geometric(1, std::max<std::int64_t>(1, max_batch))) g.decode.push_back(x);
  for (std::int64_t c = 64; c < max_context; c *= 4) g.context.push_back(c);
  g.context.push_back(std::max<std::int64_t>(1, max_context));
  // A step's time is close to linear in the prefix (its attention work
  // and K/V reads are), so the axis is sparse: x8 steps from 1024.
  if (max_tokens > 0 && max_prefix > 0) {
    for (std::int64_t x = 1024; x < max_prefix; x *= 8) g.prefix.push_back(x);
    g.prefix.push_back(max_prefix);
  }
  max_chunks = std::min(max_chunks, max_tokens);
  if (max_chunks > 1) {
    for (std::int64_t n = 4; n < max_chunks; n *= 4) g.chunks.push_back(n);
    g.chunks.push_back(max_chunks);
  }
  return g;
}

std::vector<std::int64_t> lora_adapter_axis(std::int64_t most) {
  std::vector<std::int64_t> v = {0};
  for (std::int64_t x = 1; x < most; x *= 2) v.push_back(x);
  v.push_back(std::max<std::int64_t>(1, most));
  return v;
}

StepCostModel::StepCostModel(StepGrid grid, std::string key) : grid_(std::move(grid)), key_(std::move(key)) {}

namespace {

// Calls fn(point, weight) for each corner of s's cell with a non-zero
// weight (a point of decode == 0 has context 0, one of prefill == 0 prefix
// 0; the empty step is skipped). The prompts' count n is separable: the
// corners of (P, B, C, A, X) are taken at one chunk, and what n chunks add
// (their causal attention and last-token logits) comes from the corners
// of (P, X) alone, without decodes or adapters: the chunks' cost at n
// (interpolated in 1 / n) minus their cost at 1, so those corners also
// carry negative weights (fn's third argument is true for those terms).
template <typename Fn>
void for_each_corner(const StepGrid& g, const StepShape& s, Fn fn) {
  const Bracket bp = bracket(g.prefill, static_cast<double>(s.prefill));
  const Bracket bd = bracket(g.decode, static_cast<double>(s.decode));
  const Bracket bc = bracket(g.context, s.context);
  const Bracket bx = bracket(g.prefix, s.prefix);
  for (int a = 0; a < 2; ++a) {
    const double wp = a ? bp.w1 : 1 - bp.w1;
    if (wp == 0) continue;
    const std::int64_t P = g.prefill[a ? bp.i1 : bp.i0];
    if (P > 0 && s.chunks > 1) {
      // A corner of P prefill tokens holds at most P chunks: its chunks
      // axis ends at P.
      std::vector<std::int64_t> chunk_axis;
      for (auto n : g.chunks)
        if (n < P) chunk_axis.push_back(n);
      const std::int64_t most = std::min(P, g.chunks.back());
      if (chunk_axis.empty() || chunk_axis.back() != most) chunk_axis.push_back(most);
      const Bracket bk = bracket_reciprocal(chunk_axis, s.chunks);
      for (int x = 0; x < 2; ++x) {
        const double wx = wp * (x ? bx.w1 : 1 - bx.w1);
        if (wx == 0) continue;
        const std::int64_t X = g.prefix[x ? bx.i1 : bx.i0];
        for (int k = 0; k < 2; ++k) {
          const double w = wx * (k ? bk.w1 : 1 - bk.w1);
          const std::int64_t n = chunk_axis[k ? bk.i1 : bk.i0];
          if (w == 0 || n == 1) continue;
          fn(GridPoint{P, 0, 0, 0, X, n}, w, true);
          fn(GridPoint{P, 0, 0, 0, X, 1}, -w, true);
        }
      }
    }
    for (int b = 0; b < 2; ++b) {
      const std::int64_t B = g.decode[b ? bd.i1 : bd.i0];
      // A step has at most one adapter per sequence row (R = P + B), so at
      // a corner of fewer rows than the shape's adapters the adapters axis
      // ends at R and the cost is extrapolated linearly in the adapters
      // from its last two points (clamped at R when those are 0 and 1,
      // where the step of 1 adapter adds the LoRA matmuls themselves).
      std::vector<std::int64_t> axis;
      const std::int64_t R = P + B;
      if (g.adapters.back() <= R) {
        axis = g.adapters;
      } else {
        for (auto x : g.adapters)
          if (x < R) axis.push_back(x);
        axis.push_back(R);
      }
      Bracket bn = bracket(axis, static_cast<double>(s.adapters));
      if (static_cast<double>(s.adapters) > static_cast<double>(axis.back()) && axis.size() >= 2 &&
          axis[axis.size() - 2] == 0)
        bn = Bracket{axis.size() - 1, axis.size() - 1, 0};
      for (int c = 0; c < 2; ++c)
        for (int n = 0; n < 2; ++n)
          for (int x = 0; x < 2; ++x) {
            const double w = wp * (b ? bd.w1 : 1 - bd.w1) * (c ? bc.w1 : 1 - bc.w1) * (n ? bn.w1 : 1 - bn.w1) *
                             (x ? bx.w1 : 1 - bx.w1);
            if (w == 0) continue;
            GridPoint p{P, B, 0, axis[n ? bn.i1 : bn.i0]};
            if (p.decode > 0) p.context = g.context[c ? bc.i1 : bc.i0];
            if (p.prefill > 0) p.prefix = g.prefix[x ? bx.i1 : bx.i0];
            if (p.prefill > 0 || p.decode > 0) fn(p, w, false);
          }
    }
  }
}

}  // namespace

std::vector<GridPoint> StepCostModel::corners(const StepShape& s) const {
  std::vector<GridPoint> out;
  for_each_corner(grid_, s, [&](const GridPoint& p, double, bool) {
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  });
  return out;
}

double StepCostModel::cost(const StepShape& s) {
  double base = 0, chunks = 0;
  for_each_corner(grid_, s, [&](const GridPoint& p, double w, bool chunk_term) {
    auto it = known_.find(p);
    double v = 0;
    if (it != known_.end()) {
      v = it->second;
    } else {
      missing_.insert(p);
      v = nearest(p);
    }
    (chunk_term ? chunks : base) += w * v;
  });
  // What the chunks save is less than the step at one chunk on simulated
  // corners; a stand-in for a missing one (or a cache file edited by
  // hand) can make it more, and then the step keeps its one-chunk cost.
  return base + chunks > 0 ? base + chunks : base;
}

double StepCostModel::nearest(const GridPoint& p) const {
  // Distance in grid steps (log scale); a stand-in only while discovering.
  auto idx = [](const std::vector<std::int64_t>& axis, std::int64_t x) {
    return static_cast<double>(std::lower_bound(axis.begin(), axis.end(), x) - axis.begin());
  };
  double best = std::numeric_limits<double>::infinity(), value = 1e-3;
  for (const auto& [q, v] : known_) {
    const double d = std::abs(idx(grid_.prefill, q.prefill) - idx(grid_.prefill, p.prefill)) +
                     std::abs(idx(grid_.decode, q.decode) - idx(grid_.decode, p.decode)) +
                     std::abs(idx(grid_.context, q.context) - idx(grid_.context, p.context)) +
                     std::abs(idx(grid_.adapters, q.adapters) - idx(grid_.adapters, p.adapters)) +
                     std::abs(idx(grid_.prefix, q.prefix) - idx(grid_.prefix, p.prefix)) +
                     std::abs(idx(grid_.chunks, q.chunks) - idx(grid_.chunks, p.chunks));
    if (d < best) {
      best = d;
      value = v;
    }
  }
  return value;
}

void StepCostModel::add(const GridPoint& p, double seconds) { known_[p] = seconds; }

// A cached step's seconds are at most 10^6 (no engine step of a serving
// simulation takes days; larger values could only overflow the
// interpolation).
constexpr double kMaxStepSeconds = 1e6;

void StepCostModel::load(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return;
  check_input_file("serve: --step-cache", path);
  std::ifstream in(path);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string key;
    GridPoint p;
    double sec = 0;
    bool ok = static_cast<bool>(ls >> key >> p.prefill >> p.decode >> p.context >> sec);
    // Optional fields: ADAPTERS (LoRA), PREFIX (the chunks' cached
    // prefix), CHUNKS (prefill sequences); the last one written is the
    // point's own (adapters > 0, prefix > 0, chunks > 1), those before it
    // may be 0, and PREFIX and CHUNKS need prefill > 0.
    std::vector<std::int64_t> extra;
    for (std::string word; ok && ls >> word;) {
      std::istringstream ws(word);
      std::int64_t v = 0;
      std::string rest;
      ok = (ws >> v) && !(ws >> rest) && v >= 0;
      extra.push_back(v);
    }
    ok = ok && extra.size() <= 3;
    if (ok && !extra.empty()) {
      p.adapters = extra[0];
      if (extra.size() > 1) p.prefix = extra[1];
      if (extra.size() > 2) p.chunks = extra[2];
      const std::int64_t last = extra.back();
      ok = (extra.size() == 3 ? last > 1 : last > 0) && (extra.size() == 1 || p.prefill > 0) &&
           p.chunks <= std::max<std::int64_t>(1, p.prefill);
    }
    if (!ok || key.size() != 16 || p.prefill < 0 || p.decode < 0 || p.context < 0 || !(sec > 0) ||
        !(sec <= kMaxStepSeconds))
      throw UsageError(
          path + ":" + std::to_string(n) +
          ": expected 'KEY PREFILL DECODE CONTEXT SECONDS [ADAPTERS [PREFIX [CHUNKS]]]' (16 hex digits, "
          "counts >= 0, seconds in (0, 1e6]; the last optional field the point's own: adapters > 0, prefix > 0 "
          "or chunks > 1, at most prefill; a prefix or chunks only with prefill > 0), found '" +
          line + "'");
    if (key == key_) known_[p] = sec;
  }
}

void StepCostModel::save(const std::string& path, const std::string& description) const {
  // Other keys' lines as the file holds them now (another model of the
  // same run may have added some since this one loaded it).
  std::vector<std::string> others;
  {
    std::ifstream in(path);
    std::string line;
    bool first = true;
    while (std::getline(in, line)) {
      if (first && line.rfind("# tpusim serve", 0) == 0) {
        first = false;
        continue;
      }
      first = false;
      const std::string k = line.rfind("# ", 0) == 0 ? line.substr(2, 16) : line.substr(0, 16);
      if (!line.empty() && k != key_) others.push_back(line);
    }
  }
  // A temporary file of this process's own, renamed over the cache: the
  // serve points of a sweep share one cache from parallel processes, and a
  // common temporary name would interleave their writes. A concurrent
  // writer's points may be lost (simulated again later), never garbled.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    if (!out) throw UsageError("serve: --step-cache '" + path + "': cannot write " + tmp);
    out << "# tpusim serve step-cost cache: KEY PREFILL DECODE CONTEXT SECONDS [ADAPTERS [PREFIX [CHUNKS]]], one "
           "simulated step per line\n";
    for (const auto& l : others) out << l << "\n";
    out << "# " << key_ << " " << description << "\n";
    char buf[64];
    for (const auto& [p, v] : known_) {
      std::snprintf(buf, sizeof buf, "%.9g", v);
      out << key_ << " " << p.prefill << " " << p.decode << " " << p.context << " " << buf;
      if (p.adapters > 0 || p.prefix > 0 || p.chunks > 1) out << " " << p.adapters;
      if (p.prefix > 0 || p.chunks > 1) out << " " << p.prefix;
      if (p.chunks > 1) out << " " << p.chunks;
      out << "\n";
    }
    if (!out) throw UsageError("serve: --step-cache '" + path + "': write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw UsageError("serve: --step-cache '" + path + "': " + ec.message());
}

}  // namespace tpusim::sim::serve
