// Collective planning (rings, messages and their order per algorithm),
// the mesh and results; see collectives.h. The simulator that times plans
// is in ici_simulator.cpp.
#include "arch/ici/collectives.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <tuple>

#include "arch/common/errors.h"

namespace tpusim::arch::ici {

const char* to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_gather: return "all_gather";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::all_to_all: return "all_to_all";
    case CollectiveKind::collective_permute: return "collective_permute";
    case CollectiveKind::broadcast: return "broadcast";
  }
  return "?";
}

CollectiveKind parse_collective_kind(const std::string& s) {
  for (CollectiveKind k : {CollectiveKind::all_gather, CollectiveKind::reduce_scatter, CollectiveKind::all_reduce,
                           CollectiveKind::all_to_all, CollectiveKind::collective_permute, CollectiveKind::broadcast})
    if (s == to_string(k)) return k;
  throw ConfigError("collective '" + s +
                    "': expected all_gather, reduce_scatter, all_reduce, all_to_all, collective_permute or broadcast");
}

// ---------------------------------------------------------------------- Mesh
bool is_whole(const Slice& s, const SubAxis& a) { return a.stride == 1 && a.length == s.axis_length(a.axis); }

std::string sub_axis_name(const Slice& s, const SubAxis& a) {
  const std::string base = s.is_dcn(a.axis) ? std::string("dcn") : std::string(1, "xyz"[a.axis]);
  if (is_whole(s, a)) return base;
  std::string t = base;
  if (a.stride > 1) t += "/" + std::to_string(a.stride);
  if (a.stride * a.length != s.axis_length(a.axis)) t += "%" + std::to_string(a.length);
  return t;
}

int sub_position(const Slice& s, int chip, const SubAxis& a) {
  if (s.is_dcn(a.axis)) return 0;
  return (s.coord(chip, a.axis) / a.stride) % a.length;
}

bool sub_wraps(const Slice& s, const SubAxis& a) {
  return !s.is_dcn(a.axis) && s.wraps(a.axis) && a.stride * a.length == s.dim(a.axis);
}

Mesh::Mesh(const Slice& slice, std::vector<std::pair<std::string, std::vector<int>>> axes) {
  const int mesh_dims = slice.rank() + (slice.num_slices() > 1 ? 1 : 0);
  for (auto& [name, dims] : axes) {
    std::vector<SubAxis> parts;
    for (int d : dims) {
      if (d < 0 || d >= mesh_dims)
        throw ConfigError("mesh axis '" + name + "': slice axis " + std::to_string(d) + " does not exist in shape " +
                          slice.shape());
      parts.push_back({d, 1, slice.axis_length(d)});
    }
    axes_.emplace_back(std::move(name), std::move(parts));
  }
  check(slice);
}

Mesh Mesh::split(const Slice& slice, std::vector<std::pair<std::string, std::vector<SubAxis>>> axes) {
  Mesh m;
  m.axes_ = std::move(axes);
  m.check(slice);
  return m;
}

void Mesh::check(const Slice& slice) {
  // Slice axes 0..rank-1, and the DCN dimension (rank) on a multislice.
  const int mesh_dims = slice.rank() + (slice.num_slices() > 1 ? 1 : 0);
  std::vector<std::vector<std::pair<SubAxis, std::string>>> parts(static_cast<std::size_t>(mesh_dims));
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    const auto& [name, subs] = axes_[i];
    if (name.empty()) throw ConfigError("mesh axis with an empty name");
    for (std::size_t j = 0; j < i; ++j)
      if (axes_[j].first == name) throw ConfigError("mesh axis '" + name + "' named twice");
    for (const SubAxis& a : subs) {
      if (a.axis < 0 || a.axis >= mesh_dims)
        throw ConfigError("mesh axis '" + name + "': slice axis " + std::to_string(a.axis) +
                          " does not exist in shape " + slice.shape());
      if (a.stride < 1 || a.length < 1)
        throw ConfigError("mesh axis '" + name + "': a part of slice axis " + std::to_string(a.axis) +
                          " needs a stride and a length of at least 1");
      if (slice.is_dcn(a.axis) && !is_whole(slice, a))
        throw ConfigError("mesh axis '" + name + "': the DCN dimension (the slice count) cannot be split");
      for (const auto& [other, owner] : parts[static_cast<std::size_t>(a.axis)])
        if (other == a || is_whole(slice, other) || is_whole(slice, a))
          throw ConfigError("mesh axis '" + name + "': slice axis " + std::to_string(a.axis) +
                            " already used by another mesh axis ('" + owner + "')");
      parts[static_cast<std::size_t>(a.axis)].emplace_back(a, name);
    }
  }
  // The parts of one slice axis are separate digits of its coordinate:
  // each part's stride a multiple of the stride x length of the part
  // below it, the top one's stride x length dividing the axis's length
  // (positions no part takes are, like an unnamed axis, never collective
  // axes).
  for (int d = 0; d < mesh_dims; ++d) {
    auto ps = parts[static_cast<std::size_t>(d)];
    std::sort(ps.begin(), ps.end(), [](const auto& x, const auto& y) { return x.first.stride < y.first.stride; });
    std::int64_t below = 1;
    for (const auto& [a, owner] : ps) {
      if (a.stride % below != 0)
        throw ConfigError("mesh axis '" + owner + "': part " + sub_axis_name(slice, a) + " of slice axis " +
                          std::to_string(d) + " overlaps a part below it (stride " + std::to_string(a.stride) +
                          " is not a multiple of " + std::to_string(below) + ")");
      below = static_cast<std::int64_t>(a.stride) * a.length;
      if (slice.axis_length(d) % below != 0)
        throw ConfigError("mesh axis '" + owner + "': part " + sub_axis_name(slice, a) + " of slice axis " +
                          std::to_string(d) + " (stride " + std::to_string(a.stride) + ", length " +
                          std::to_string(a.length) + ") does not fit its length " +
                          std::to_string(slice.axis_length(d)));
      if (!is_whole(slice, a)) splits_ = true;
    }
  }
}

Mesh Mesh::physical(const Slice& slice) {
  std::vector<std::pair<std::string, std::vector<int>>> axes;
  if (slice.num_slices() > 1) axes.push_back({"dcn", {slice.dcn_axis()}});
  for (int a = 0; a < slice.rank(); ++a) axes.push_back({std::string(1, "xyz"[a]), {a}});
  return Mesh(slice, std::move(axes));
}

std::vector<SubAxis> Mesh::sub_axes(const std::vector<std::string>& names) const {
  if (names.empty()) throw ConfigError("a collective needs at least one mesh axis");
  std::vector<SubAxis> out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j)
      if (names[j] == names[i]) throw ConfigError("mesh axis '" + names[i] + "' named twice in a collective");
    auto it = std::find_if(axes_.begin(), axes_.end(), [&](const auto& a) { return a.first == names[i]; });
    if (it == axes_.end()) {
      std::string known;
      for (const auto& a : axes_) known += (known.empty() ? "" : ", ") + a.first;
      throw ConfigError("unknown mesh axis '" + names[i] + "' (mesh axes: " + known + ")");
    }
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return out;
}

// ------------------------------------------------------------------ planning
std::uint64_t CollectivePlan::messages() const {
  return static_cast<std::uint64_t>(
      std::count_if(nodes.begin(), nodes.end(), [](const PlanNode& n) { return n.bytes > 0; }));
}

namespace {

constexpr std::int64_t kStart = -1;  // "ready when the collective starts"

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

class Builder {
 public:
  explicit Builder(const Slice& s) : slice_(s) {}
  CollectivePlan plan;

  std::uint32_t msg(int src, int dst, std::uint64_t bytes, std::uint64_t reduce, bool dcn = false) {
    PlanNode n;
    n.src = src;
    n.dst = dst;
    n.dcn = dcn;
    n.bytes = bytes;
    n.reduce_bytes = reduce;
    plan.nodes.push_back(std::move(n));
    return static_cast<std::uint32_t>(plan.nodes.size() - 1);
  }
  std::uint32_t join(int chip) { return msg(chip, chip, 0, 0); }
  void dep(std::int64_t before, std::uint32_t after) {
    if (before < 0) return;
    plan.nodes[static_cast<std::size_t>(before)].succ.push_back(after);
    plan.nodes[after].deps += 1;
  }

  // Chips along the part `a` of an axis through every chip whose position
  // on it is 0, in position order.
  std::vector<std::vector<int>> lines(const SubAxis& a) const {
    std::vector<std::vector<int>> out;
    for (int c = 0; c < slice_.num_chips(); ++c) {
      if (sub_position(slice_, c, a) != 0) continue;
      std::vector<int> x = slice_.coords(c);
      const int base = x[static_cast<std::size_t>(a.axis)];
      std::vector<int> line;
      for (int p = 0; p < a.length; ++p) {
        x[static_cast<std::size_t>(a.axis)] = base + p * a.stride;
        line.push_back(slice_.chip_at(x));
      }
      out.push_back(std::move(line));
    }
    return out;
  }

  // One bidirectional ring (or line) stage on `axis`: all-gather of a
  // per-chip shard of `s` bytes, or (reduce) reduce-scatter producing a
  // shard of `s` bytes per chip. ready[c]: node after which chip c may
  // start. Messages delivered to c are appended to arrivals[c].
  void ring_stage(const SubAxis& axis, bool reduce, std::uint64_t s, const std::vector<std::int64_t>& ready,
                  std::vector<std::vector<std::uint32_t>>& arrivals) {
    const int n = axis.length;
    const bool wrap = sub_wraps(slice_, axis);
    const int sp = n / 2, sm = n - 1 - n / 2;  // hops one way and the other on a ring
    // An even ring's antipode is as far both ways: its shard goes half
    // each way (the - chain takes the extra hop with the other half), so
    // both directions carry (n - 1) / 2 shards, the book's bidirectional
    // ring, where the + way alone would carry n / 2 (n / (n - 1) the time:
    // 1.33x on a ring of 4).
    const bool balance = wrap && n % 2 == 0 && n > 2;
    // AG: the shard of position j travels away from j; RS: the partial
    // sum for position j travels toward j.
    auto steps_of = [&](int j, int dir) {
      return wrap ? (dir > 0 || balance ? sp : sm) : reduce ? (dir > 0 ? j : n - 1 - j) : (dir > 0 ? n - 1 - j : j);
    };
    // The order chains are created in is the order their first messages
    // queue on a link (links are FIFO). A line's reduce-scatter starts
    // every chain of a direction at the same end chip: the longest chain
    // goes first, so each later hop finds its link free and the stage
    // takes n - 1 message times as the mirrored all-gather does (nearest
    // first would hold the far partial sums back: 2n - 3).
    std::vector<std::pair<int, int>> chains;
    for (int j = 0; j < n; ++j)
      for (int dir : {+1, -1}) chains.emplace_back(j, dir);
    if (reduce && !wrap)
      std::stable_sort(chains.begin(), chains.end(), [&](const auto& a, const auto& b) {
        return steps_of(a.first, a.second) > steps_of(b.first, b.second);
      });
    for (const std::vector<int>& line : lines(axis)) {
      for (const auto& [j, dir] : chains) {
        const int steps = steps_of(j, dir);
        int pos = reduce ? ((j - dir * steps) % n + n) % n : j;
        std::int64_t prev = reduce ? kStart : ready[static_cast<std::size_t>(line[static_cast<std::size_t>(j)])];
        for (int k = 0; k < steps; ++k) {
          const int nxt = ((pos + dir) % n + n) % n;
          const int from = line[static_cast<std::size_t>(pos)], to = line[static_cast<std::size_t>(nxt)];
          // The antipode's hop: the last of an all-gather chain, the first
          // of a reduce-scatter chain; half of the shard each way.
          const bool half = balance && (reduce ? k == 0 : k == steps - 1);
          const std::uint64_t bytes = half ? (dir > 0 ? s - s / 2 : s / 2) : s;
          if (bytes == 0) {  // a one-byte shard: nothing to send this way
            pos = nxt;
            continue;
          }
          const std::uint32_t m = msg(from, to, bytes, reduce ? bytes : 0);
          dep(prev, m);
          if (reduce) dep(ready[static_cast<std::size_t>(from)], m);  // its own contribution
          arrivals[static_cast<std::size_t>(to)].push_back(m);
          prev = m;
          pos = nxt;
        }
      }
    }
  }

  // One ring stage over the DCN's N slices (unidirectional: both ways
  // would leave through the same NIC): N - 1 steps of a shard of `s`
  // bytes, each a message from chip c to chip c of the next slice after
  // the previous step's arrived (by symmetry, when c's own previous
  // message did). reduce: each step's partial sum is added on arrival.
  void dcn_stage(bool reduce, std::uint64_t s, const std::vector<std::int64_t>& ready,
                 std::vector<std::vector<std::uint32_t>>& arrivals) {
    for (int c = 0; c < slice_.num_chips(); ++c) {
      std::int64_t prev = ready[static_cast<std::size_t>(c)];
      for (int k = 0; k + 1 < slice_.num_slices(); ++k) {
        const std::uint32_t m = msg(c, c, s, reduce ? s : 0, true);
        dep(prev, m);
        arrivals[static_cast<std::size_t>(c)].push_back(m);
        prev = m;
      }
    }
  }

  // After a stage: chip c may start the next one when everything sent to
  // it has arrived (and it had started this one).
  std::vector<std::int64_t> next_ready(const std::vector<std::int64_t>& ready,
                                       const std::vector<std::vector<std::uint32_t>>& arrivals) {
    std::vector<std::int64_t> out = ready;
    for (int c = 0; c < slice_.num_chips(); ++c) {
      const auto& arr = arrivals[static_cast<std::size_t>(c)];
      if (arr.empty()) continue;
      const std::uint32_t j = join(c);
      dep(ready[static_cast<std::size_t>(c)], j);
      for (std::uint32_t m : arr) dep(m, j);
      out[static_cast<std::size_t>(c)] = j;
    }
    return out;
  }

  const Slice& slice_;
};

std::string axes_text(const Slice& s, const std::vector<SubAxis>& axes) {
  std::string t;
  for (const SubAxis& a : axes) t += (t.empty() ? "" : ",") + sub_axis_name(s, a);
  return t;
}

std::string ring_text(const Slice& s, const std::vector<SubAxis>& axes) {
  std::string t;
  for (const SubAxis& a : axes) {
    const char* kind = s.is_dcn(a.axis) ? "dcn_ring(" : sub_wraps(s, a) ? "ring_bidir(" : "line_bidir(";
    t += (t.empty() ? "" : " ") + std::string(kind) + sub_axis_name(s, a) + "=" + std::to_string(a.length) + ")";
  }
  return t;
}

// Parts a collective over the `active` ICI axes splits its data into
// (IciConfig::axis_split): one per axis, all at once, on a group whose
// axes all wrap ("tori") or on every group ("always"); otherwise one part
// that visits the axes one after another.
std::size_t split_parts(const Slice& s, const std::vector<SubAxis>& active) {
  const std::string& rule = s.config().axis_split;
  const bool tori = std::all_of(active.begin(), active.end(), [&](const SubAxis& a) { return sub_wraps(s, a); });
  const bool split = rule == "always" || (rule == "tori" && tori);
  return split ? std::max<std::size_t>(active.size(), 1) : 1;
}

// Rings over the `active` ICI axes, split into split_parts() parts, part p
// visiting the axes rotated by p, and over the DCN when `dcn`: all-gather
// crosses the DCN first (with the smallest shard), reduce-scatter last,
// all-reduce in the middle.
void plan_rings(Builder& b, const Slice& s, const CollectiveRequest& req, const std::vector<SubAxis>& active,
                bool dcn) {
  const std::size_t k = split_parts(s, active);
  const SubAxis dcn_axis{s.dcn_axis(), 1, s.num_slices()};
  std::vector<SubAxis> named = active;
  if (dcn) named.push_back(dcn_axis);
  b.plan.algorithm = std::string(to_string(req.kind)) + ": " +
                     (active.empty() ? std::string()
                                     : (k > 1 || active.size() == 1 ? std::to_string(k) + "-way split over "
                                                                    : std::string("one axis after another over ")) +
                                           axes_text(s, active) + (dcn ? ", hierarchical over the dcn" : "") + "; ") +
                     ring_text(s, named);
  for (std::size_t p = 0; p < k; ++p) {
    const std::uint64_t vp = req.bytes / k + (p < req.bytes % k ? 1 : 0);
    if (vp == 0) continue;
    std::vector<SubAxis> order;
    for (std::size_t i = 0; i < active.size(); ++i) order.push_back(active[(p + i) % active.size()]);
    if (dcn) {
      if (req.kind == CollectiveKind::all_gather)
        order.insert(order.begin(), dcn_axis);
      else
        order.push_back(dcn_axis);
    }
    std::vector<std::int64_t> ready(static_cast<std::size_t>(s.num_chips()), kStart);
    auto stage = [&](const SubAxis& axis, bool reduce, std::uint64_t shard) {
      std::vector<std::vector<std::uint32_t>> arr(static_cast<std::size_t>(s.num_chips()));
      if (s.is_dcn(axis.axis))
        b.dcn_stage(reduce, shard, ready, arr);
      else
        b.ring_stage(axis, reduce, shard, ready, arr);
      ready = b.next_ready(ready, arr);
    };
    auto len = [&](const SubAxis& a) { return static_cast<std::uint64_t>(a.length); };
    if (req.kind == CollectiveKind::all_gather) {
      std::uint64_t n_all = 1;
      for (const SubAxis& a : order) n_all *= len(a);
      std::uint64_t shard = ceil_div(vp, n_all);
      for (const SubAxis& a : order) {
        stage(a, false, shard);
        shard *= len(a);
      }
    } else {
      std::uint64_t x = vp;
      for (const SubAxis& a : order) {
        x = ceil_div(x, len(a));
        stage(a, true, x);
      }
      if (req.kind == CollectiveKind::all_reduce) {
        for (auto it = order.rbegin(); it != order.rend(); ++it) {
          stage(*it, false, x);
          x *= len(*it);
        }
      }
    }
  }
}

// A permute's (source, destination) rank pairs within a group of n: the
// request's, or every rank to the next (cyclic). ConfigError for a rank
// outside the group or used twice on one side.
std::vector<std::pair<int, int>> permute_pairs(const CollectiveRequest& req, int n) {
  std::vector<std::pair<int, int>> pairs = req.pairs;
  if (pairs.empty())
    for (int r = 0; r < n; ++r) pairs.push_back({r, (r + 1) % n});
  std::vector<bool> seen_src(static_cast<std::size_t>(n), false), seen_dst(static_cast<std::size_t>(n), false);
  for (const auto& [a, d] : pairs) {
    if (a < 0 || a >= n || d < 0 || d >= n)
      throw ConfigError("collective_permute: pair (" + std::to_string(a) + "," + std::to_string(d) +
                        ") outside group ranks 0.." + std::to_string(n - 1));
    if (seen_src[static_cast<std::size_t>(a)] || seen_dst[static_cast<std::size_t>(d)])
      throw ConfigError("collective_permute: rank used twice as source or destination");
    seen_src[static_cast<std::size_t>(a)] = seen_dst[static_cast<std::size_t>(d)] = true;
  }
  return pairs;
}

// A collective over the DCN alone that is not a ring: every chip's
// messages to its peers in the other slices leave through its NIC share.
void plan_dcn_direct(Builder& b, const Slice& s, const CollectiveRequest& req) {
  const int n = s.num_slices();
  if (req.kind == CollectiveKind::all_to_all) {
    b.plan.algorithm = "all_to_all: direct over the dcn (" + std::to_string(n) + " slices)";
    const std::uint64_t piece = ceil_div(req.bytes, static_cast<std::uint64_t>(n));
    for (int c = 0; c < s.num_chips(); ++c)
      for (int k = 0; k + 1 < n; ++k) b.msg(c, c, piece, 0, true);
    return;
  }
  // collective_permute: a slice's view that sends (the slowest one).
  const std::vector<std::pair<int, int>> pairs = permute_pairs(req, n);
  const bool moves = std::any_of(pairs.begin(), pairs.end(), [](const auto& p) { return p.first != p.second; });
  b.plan.algorithm = "collective_permute: direct over the dcn (" + std::to_string(n) + " slices)";
  if (moves)
    for (int c = 0; c < s.num_chips(); ++c) b.msg(c, c, req.bytes, 0, true);
}

}  // namespace

CollectivePlan plan_collective(const Slice& s, const Mesh& mesh, const CollectiveRequest& req) {
  const std::vector<SubAxis> axes = mesh.sub_axes(req.axes);
  if (req.bytes == 0) throw ConfigError(std::string(to_string(req.kind)) + ": a collective needs bytes > 0");
  std::vector<SubAxis> active;  // ICI axes (or parts) longer than one chip
  bool dcn = false;             // over the DCN of more than one slice
  std::int64_t group = 1;
  for (const SubAxis& a : axes) {
    group *= a.length;
    if (s.is_dcn(a.axis))
      dcn = s.num_slices() > 1;
    else if (a.length > 1)
      active.push_back(a);
  }
  if (group > INT32_MAX) throw ConfigError(std::string(to_string(req.kind)) + ": group of more than 2^31 chips");
  Builder b(s);
  b.plan.group_size = static_cast<int>(group);
  if (active.empty() && !dcn) {
    b.plan.algorithm = std::string(to_string(req.kind)) + ": group of one chip, no messages";
    return std::move(b.plan);
  }
  if (dcn) {
    const bool ring = req.kind == CollectiveKind::all_gather || req.kind == CollectiveKind::reduce_scatter ||
                      req.kind == CollectiveKind::all_reduce;
    if (ring) {
      plan_rings(b, s, req, active, true);
      return std::move(b.plan);
    }
    if (req.kind == CollectiveKind::broadcast || !active.empty())
      throw ConfigError(std::string(to_string(req.kind)) + " over the DCN" +
                        (active.empty() ? "" : " and ICI axes together") +
                        " is not modelled (only all_gather, reduce_scatter and all_reduce are; all_to_all and "
                        "collective_permute over the DCN alone)");
    plan_dcn_direct(b, s, req);
    return std::move(b.plan);
  }

  // Members of each group in rank order (first named axis fastest).
  std::vector<std::vector<int>> groups;
  for (int c = 0; c < s.num_chips(); ++c) {
    if (std::any_of(axes.begin(), axes.end(), [&](const SubAxis& a) { return sub_position(s, c, a) != 0; })) continue;
    const std::vector<int> x = s.coords(c);
    std::vector<int> members;
    for (int r = 0; r < group; ++r) {
      std::vector<int> y = x;
      int rest = r;
      for (const SubAxis& a : axes) {
        y[static_cast<std::size_t>(a.axis)] += (rest % a.length) * a.stride;
        rest /= a.length;
      }
      members.push_back(s.chip_at(y));
    }
    groups.push_back(std::move(members));
  }

  switch (req.kind) {
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_reduce: plan_rings(b, s, req, active, false); break;
    case CollectiveKind::all_to_all: {
      b.plan.algorithm = "all_to_all: direct, dimension-order routed over " + axes_text(s, active);
      const std::uint64_t piece = ceil_div(req.bytes, static_cast<std::uint64_t>(group));
      for (const auto& g : groups)
        for (int src : g)
          for (int dst : g)
            if (src != dst) b.msg(src, dst, piece, 0);
      break;
    }
    case CollectiveKind::collective_permute: {
      b.plan.algorithm = "collective_permute: direct, dimension-order routed over " + axes_text(s, active);
      const std::vector<std::pair<int, int>> pairs = permute_pairs(req, static_cast<int>(group));
      for (const auto& g : groups)
        for (const auto& [a, d] : pairs)
          if (a != d) b.msg(g[static_cast<std::size_t>(a)], g[static_cast<std::size_t>(d)], req.bytes, 0);
      break;
    }
    case CollectiveKind::broadcast: {
      if (req.root < 0 || req.root >= group)
        throw ConfigError("broadcast: root rank " + std::to_string(req.root) + " outside 0.." +
                          std::to_string(group - 1));
      // Pieces of at least 16 KiB, at most 256, so the pipeline fill (n-1
      // pieces) stays a small part of the time for big buffers.
      const std::uint64_t k = std::clamp<std::uint64_t>(ceil_div(req.bytes, 16384), 1, 256);
      b.plan.algorithm = "broadcast: " + std::to_string(k) + " pipelined pieces, axis by axis over " +
                         axes_text(s, active) + "; " + ring_text(s, active);
      constexpr std::int64_t kNone = -2;
      const std::size_t kk = static_cast<std::size_t>(k);
      std::vector<std::int64_t> have(static_cast<std::size_t>(s.num_chips()) * kk, kNone);
      for (const auto& g : groups)
        for (std::size_t q = 0; q < kk; ++q)
          have[static_cast<std::size_t>(g[static_cast<std::size_t>(req.root)]) * kk + q] = kStart;
      for (const SubAxis& axis : active) {
        const int n = axis.length;
        for (const std::vector<int>& line : b.lines(axis)) {
          int r = -1;
          for (int p = 0; p < n; ++p)
            if (have[static_cast<std::size_t>(line[static_cast<std::size_t>(p)]) * kk] != kNone) r = p;
          if (r < 0) continue;
          for (std::size_t q = 0; q < kk; ++q) {
            const std::uint64_t size = req.bytes / k + (q < req.bytes % k ? 1 : 0);
            if (size == 0) continue;
            std::vector<std::pair<int, int>> chains;  // (dir, steps)
            if (sub_wraps(s, axis))
              chains.push_back({q % 2 == 0 ? +1 : -1, n - 1});
            else
              chains = {{+1, n - 1 - r}, {-1, r}};
            for (const auto& [dir, steps] : chains) {
              int pos = r;
              std::int64_t prev = have[static_cast<std::size_t>(line[static_cast<std::size_t>(r)]) * kk + q];
              for (int st = 0; st < steps; ++st) {
                const int nxt = ((pos + dir) % n + n) % n;
                const int to = line[static_cast<std::size_t>(nxt)];
                const std::uint32_t m = b.msg(line[static_cast<std::size_t>(pos)], to, size, 0);
                b.dep(prev, m);
                have[static_cast<std::size_t>(to) * kk + q] = m;
                prev = m;
                pos = nxt;
              }
            }
          }
        }
      }
      break;
    }
  }
  return std::move(b.plan);
}

// ---------------------------------------------------------------- results
double CollectiveResult::achieved_bandwidth() const {
  const double s = seconds();
  return s > 0 ? static_cast<double>(bytes) / s : 0.0;
}
std::uint64_t CollectiveResult::total_sent() const {
  return std::accumulate(sent_per_chip.begin(), sent_per_chip.end(), std::uint64_t{0});
}
std::uint64_t CollectiveResult::total_received() const {
  return std::accumulate(received_per_chip.begin(), received_per_chip.end(), std::uint64_t{0});
}
std::uint64_t CollectiveResult::total_reduce_bytes() const {
  return std::accumulate(reduce_bytes_per_chip.begin(), reduce_bytes_per_chip.end(), std::uint64_t{0});
}

}  // namespace tpusim::arch::ici
