// See collectives.h.
#include "arch/ici/collectives.h"

#include <algorithm>
#include <cmath>
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
Mesh::Mesh(const Slice& slice, std::vector<std::pair<std::string, std::vector<int>>> axes) : axes_(std::move(axes)) {
  std::vector<bool> used(static_cast<std::size_t>(slice.rank()), false);
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    const auto& [name, dims] = axes_[i];
    if (name.empty()) throw ConfigError("mesh axis with an empty name");
    for (std::size_t j = 0; j < i; ++j)
      if (axes_[j].first == name) throw ConfigError("mesh axis '" + name + "' named twice");
    if (dims.empty()) throw ConfigError("mesh axis '" + name + "' maps to no slice axis");
    for (int d : dims) {
      if (d < 0 || d >= slice.rank())
        throw ConfigError("mesh axis '" + name + "': slice axis " + std::to_string(d) + " does not exist in shape " +
                          slice.shape());
      if (used[static_cast<std::size_t>(d)])
        throw ConfigError("mesh axis '" + name + "': slice axis " + std::to_string(d) + " already used by another mesh axis");
      used[static_cast<std::size_t>(d)] = true;
    }
  }
}

Mesh Mesh::physical(const Slice& slice) {
  std::vector<std::pair<std::string, std::vector<int>>> axes;
  for (int a = 0; a < slice.rank(); ++a) axes.push_back({std::string(1, "xyz"[a]), {a}});
  return Mesh(slice, std::move(axes));
}

std::vector<int> Mesh::slice_axes(const std::vector<std::string>& names) const {
  if (names.empty()) throw ConfigError("a collective needs at least one mesh axis");
  std::vector<int> out;
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

  std::uint32_t msg(int src, int dst, std::uint64_t bytes, std::uint64_t reduce) {
    PlanNode n;
    n.src = src;
    n.dst = dst;
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

  // Chips along `axis` through every chip whose coordinate on it is 0.
  std::vector<std::vector<int>> lines(int axis) const {
    std::vector<std::vector<int>> out;
    for (int c = 0; c < slice_.num_chips(); ++c) {
      std::vector<int> x = slice_.coords(c);
      if (x[static_cast<std::size_t>(axis)] != 0) continue;
      std::vector<int> line;
      for (int p = 0; p < slice_.dim(axis); ++p) {
        x[static_cast<std::size_t>(axis)] = p;
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
  void ring_stage(int axis, bool reduce, std::uint64_t s, const std::vector<std::int64_t>& ready,
                  std::vector<std::vector<std::uint32_t>>& arrivals) {
    const int n = slice_.dim(axis);
    const bool wrap = slice_.wraps(axis);
    const int sp = n / 2, sm = n - 1 - n / 2;  // hops one way and the other on a ring
    for (const std::vector<int>& line : lines(axis)) {
      for (int j = 0; j < n; ++j) {
        for (int dir : {+1, -1}) {
          // AG: the shard of position j travels away from j; RS: the
          // partial sum for position j travels toward j.
          const int steps = wrap ? (dir > 0 ? sp : sm) : reduce ? (dir > 0 ? j : n - 1 - j) : (dir > 0 ? n - 1 - j : j);
          int pos = reduce ? ((j - dir * steps) % n + n) % n : j;
          std::int64_t prev = reduce ? kStart : ready[static_cast<std::size_t>(line[static_cast<std::size_t>(j)])];
          for (int k = 0; k < steps; ++k) {
            const int nxt = ((pos + dir) % n + n) % n;
            const int from = line[static_cast<std::size_t>(pos)], to = line[static_cast<std::size_t>(nxt)];
            const std::uint32_t m = msg(from, to, s, reduce ? s : 0);
            dep(prev, m);
            if (reduce) dep(ready[static_cast<std::size_t>(from)], m);  // its own contribution
            arrivals[static_cast<std::size_t>(to)].push_back(m);
            prev = m;
            pos = nxt;
          }
        }
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

std::string axes_text(const Slice& s, const std::vector<int>& axes) {
  std::string t;
  for (int a : axes) t += std::string(t.empty() ? "" : ",") + "xyz"[a];
  return t;
}

std::string ring_text(const Slice& s, const std::vector<int>& axes) {
  std::string t;
  for (int a : axes)
    t += std::string(t.empty() ? "" : " ") + (s.wraps(a) ? "ring_bidir(" : "line_bidir(") + "xyz"[a] + "=" +
         std::to_string(s.dim(a)) + ")";
  return t;
}

void plan_rings(Builder& b, const Slice& s, const CollectiveRequest& req, const std::vector<int>& active) {
  const std::size_t k = active.size();
  b.plan.algorithm = std::string(to_string(req.kind)) + ": " + std::to_string(k) + "-way split over " +
                     axes_text(s, active) + "; " + ring_text(s, active);
  for (std::size_t p = 0; p < k; ++p) {
    const std::uint64_t vp = req.bytes / k + (p < req.bytes % k ? 1 : 0);
    if (vp == 0) continue;
    std::vector<int> order;
    for (std::size_t i = 0; i < k; ++i) order.push_back(active[(p + i) % k]);
    std::vector<std::int64_t> ready(static_cast<std::size_t>(s.num_chips()), kStart);
    auto stage = [&](int axis, bool reduce, std::uint64_t shard) {
      std::vector<std::vector<std::uint32_t>> arr(static_cast<std::size_t>(s.num_chips()));
      b.ring_stage(axis, reduce, shard, ready, arr);
      ready = b.next_ready(ready, arr);
    };
    if (req.kind == CollectiveKind::all_gather) {
      std::uint64_t n_all = 1;
      for (int a : order) n_all *= static_cast<std::uint64_t>(s.dim(a));
      std::uint64_t shard = ceil_div(vp, n_all);
      for (int a : order) {
        stage(a, false, shard);
        shard *= static_cast<std::uint64_t>(s.dim(a));
      }
    } else {
      std::uint64_t x = vp;
      for (int a : order) {
        x = ceil_div(x, static_cast<std::uint64_t>(s.dim(a)));
        stage(a, true, x);
      }
      if (req.kind == CollectiveKind::all_reduce) {
        for (auto it = order.rbegin(); it != order.rend(); ++it) {
          stage(*it, false, x);
          x *= static_cast<std::uint64_t>(s.dim(*it));
        }
      }
    }
  }
}

}  // namespace

CollectivePlan plan_collective(const Slice& s, const Mesh& mesh, const CollectiveRequest& req) {
  const std::vector<int> axes = mesh.slice_axes(req.axes);
  if (req.bytes == 0) throw ConfigError(std::string(to_string(req.kind)) + ": a collective needs bytes > 0");
  std::vector<int> active;
  int group = 1;
  for (int a : axes) {
    group *= s.dim(a);
    if (s.dim(a) > 1) active.push_back(a);
  }
  Builder b(s);
  b.plan.group_size = group;
  if (active.empty()) {
    b.plan.algorithm = std::string(to_string(req.kind)) + ": group of one chip, no messages";
    return std::move(b.plan);
  }

  // Members of each group in rank order (first named axis fastest).
  std::vector<std::vector<int>> groups;
  for (int c = 0; c < s.num_chips(); ++c) {
    const std::vector<int> x = s.coords(c);
    if (std::any_of(axes.begin(), axes.end(), [&](int a) { return x[static_cast<std::size_t>(a)] != 0; })) continue;
    std::vector<int> members;
    for (int r = 0; r < group; ++r) {
      std::vector<int> y = x;
      int rest = r;
      for (int a : axes) {
        y[static_cast<std::size_t>(a)] = rest % s.dim(a);
        rest /= s.dim(a);
      }
      members.push_back(s.chip_at(y));
    }
    groups.push_back(std::move(members));
  }

  switch (req.kind) {
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_reduce:
      plan_rings(b, s, req, active);
      break;
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
      std::vector<std::pair<int, int>> pairs = req.pairs;
      if (pairs.empty())
        for (int r = 0; r < group; ++r) pairs.push_back({r, (r + 1) % group});
      std::vector<bool> seen_src(static_cast<std::size_t>(group), false), seen_dst(static_cast<std::size_t>(group), false);
      for (const auto& [a, d] : pairs) {
        if (a < 0 || a >= group || d < 0 || d >= group)
          throw ConfigError("collective_permute: pair (" + std::to_string(a) + "," + std::to_string(d) +
                            ") outside group ranks 0.." + std::to_string(group - 1));
        if (seen_src[static_cast<std::size_t>(a)] || seen_dst[static_cast<std::size_t>(d)])
          throw ConfigError("collective_permute: rank used twice as source or destination");
        seen_src[static_cast<std::size_t>(a)] = seen_dst[static_cast<std::size_t>(d)] = true;
      }
      for (const auto& g : groups)
        for (const auto& [a, d] : pairs)
          if (a != d) b.msg(g[static_cast<std::size_t>(a)], g[static_cast<std::size_t>(d)], req.bytes, 0);
      break;
    }
    case CollectiveKind::broadcast: {
      if (req.root < 0 || req.root >= group)
        throw ConfigError("broadcast: root rank " + std::to_string(req.root) + " outside 0.." + std::to_string(group - 1));
      // Pieces of at least 16 KiB, at most 256, so the pipeline fill (n-1
      // pieces) stays a small part of the time for big buffers.
      const std::uint64_t k = std::clamp<std::uint64_t>(ceil_div(req.bytes, 16384), 1, 256);
      b.plan.algorithm = "broadcast: " + std::to_string(k) + " pipelined pieces, axis by axis over " +
                         axes_text(s, active) + "; " + ring_text(s, active);
      constexpr std::int64_t kNone = -2;
      const std::size_t kk = static_cast<std::size_t>(k);
      std::vector<std::int64_t> have(static_cast<std::size_t>(s.num_chips()) * kk, kNone);
      for (const auto& g : groups)
        for (std::size_t q = 0; q < kk; ++q) have[static_cast<std::size_t>(g[static_cast<std::size_t>(req.root)]) * kk + q] = kStart;
      for (int axis : active) {
        const int n = s.dim(axis);
        for (const std::vector<int>& line : b.lines(axis)) {
          int r = -1;
          for (int p = 0; p < n; ++p)
            if (have[static_cast<std::size_t>(line[static_cast<std::size_t>(p)]) * kk] != kNone) r = p;
          if (r < 0) continue;
          for (std::size_t q = 0; q < kk; ++q) {
            const std::uint64_t size = req.bytes / k + (q < req.bytes % k ? 1 : 0);
            if (size == 0) continue;
            std::vector<std::pair<int, int>> chains;  // (dir, steps)
            if (s.wraps(axis)) chains.push_back({q % 2 == 0 ? +1 : -1, n - 1});
            else chains = {{+1, n - 1 - r}, {-1, r}};
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

// -------------------------------------------------------------- simulator
// A plan and what every collective of that plan starts from. Training
// steps repeat the same few collectives thousands of times, and planning
// a 256-chip collective allocates one successor list per node: planning
// once per distinct request took most of the allocator time of a run.
// Nodes are kept flat (successors in one array) because following
// per-node successor vectors was a cache miss per completed message.
struct IciSimulator::PlanInfo {
  struct Node {
    int src, dst;
    std::uint64_t bytes, reduce_bytes;
  };
  std::string algorithm;
  int group_size = 1;
  std::vector<Node> nodes;
  std::vector<std::uint32_t> succ_begin;  // node i's successors: succ[succ_begin[i] .. succ_begin[i+1])
  std::vector<std::uint32_t> succ;
  std::vector<std::uint32_t> deps;       // predecessors per node
  std::vector<std::uint32_t> roots;      // nodes without predecessors
  std::vector<std::uint32_t> chip_left;  // see Active
  std::vector<std::uint8_t> by_incoming;
  std::vector<std::uint64_t> planned_reduce;
  std::vector<std::uint64_t> planned_sent, planned_received;  // bytes per chip
  bool has_messages = false;  // a group of one chip sends nothing: no start-up
};

bool IciSimulator::PlanKey::operator<(const PlanKey& o) const {
  return std::tie(kind, bytes, axes, root, pairs) < std::tie(o.kind, o.bytes, o.axes, o.root, o.pairs);
}

struct IciSimulator::Active {
  std::shared_ptr<const PlanInfo> info;  // released when the collective completes

  CollectiveResult res;
  std::vector<std::uint32_t> waiting;  // unmet predecessors per node
  std::uint64_t left = 0;              // nodes not yet complete
  bool initialized = false;            // waiting/left set up (first activation)
  // Per chip: messages still to land before the chip's part is complete
  // (its incoming ones; for a chip that receives nothing, its outgoing
  // ones), and whether that count is of incoming messages.
  std::vector<std::uint32_t> chip_left;
  std::vector<std::uint8_t> by_incoming;
  std::vector<std::uint64_t> planned_reduce;  // bytes each chip adds
  // Deferred start (chip_start): group of each chip, roots of each group,
  // chips of each group not yet started, groups not yet activated.
  bool deferred = false;
  std::vector<int> group_of;
  std::vector<std::vector<std::uint32_t>> group_roots;
  std::vector<int> group_waiting;
  std::vector<std::uint8_t> chip_started;
  std::size_t groups_left = 0;
};

IciSimulator::IciSimulator(const Slice& slice, const Mesh& mesh, const NetworkOptions& options)
    : slice_(slice),
      mesh_(mesh),
      net_(make_network(slice_, options)),
      startup_ps_(static_cast<Ps>(std::llround(slice_.config().collective_latency * 1e12))) {}

Ps IciSimulator::startup(std::size_t coll) const { return colls_[coll]->info->has_messages ? startup_ps_ : 0; }

IciSimulator::~IciSimulator() = default;

std::shared_ptr<const IciSimulator::PlanInfo> IciSimulator::plan_info(const CollectiveRequest& req) {
  PlanKey key{req.kind, req.bytes, req.axes, req.root, req.pairs};
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  auto info = std::make_shared<PlanInfo>();
  const CollectivePlan plan = plan_collective(slice_, mesh_, req);
  const std::vector<PlanNode>& nodes = plan.nodes;
  info->algorithm = plan.algorithm;
  info->group_size = plan.group_size;
  info->nodes.reserve(nodes.size());
  info->succ_begin.reserve(nodes.size() + 1);
  for (const PlanNode& n : nodes) {
    info->nodes.push_back({n.src, n.dst, n.bytes, n.reduce_bytes});
    info->succ_begin.push_back(static_cast<std::uint32_t>(info->succ.size()));
    info->succ.insert(info->succ.end(), n.succ.begin(), n.succ.end());
  }
  info->succ_begin.push_back(static_cast<std::uint32_t>(info->succ.size()));
  const std::size_t chips = static_cast<std::size_t>(slice_.num_chips());
  std::vector<std::uint32_t> in(chips, 0), out(chips, 0);
  info->planned_reduce.assign(chips, 0);
  info->planned_sent.assign(chips, 0);
  info->planned_received.assign(chips, 0);
  info->deps.resize(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const PlanNode& n = nodes[i];
    info->deps[i] = n.deps;
    if (n.deps == 0) info->roots.push_back(static_cast<std::uint32_t>(i));
    if (n.bytes == 0) continue;
    info->has_messages = true;
    ++in[static_cast<std::size_t>(n.dst)];
    ++out[static_cast<std::size_t>(n.src)];
    info->planned_reduce[static_cast<std::size_t>(n.dst)] += n.reduce_bytes;
    info->planned_sent[static_cast<std::size_t>(n.src)] += n.bytes;
    info->planned_received[static_cast<std::size_t>(n.dst)] += n.bytes;
  }
  info->by_incoming.assign(chips, 0);
  info->chip_left.assign(chips, 0);
  for (std::size_t c = 0; c < chips; ++c) {
    info->by_incoming[c] = in[c] > 0;
    info->chip_left[c] = in[c] > 0 ? in[c] : out[c];
  }
  // Bounded memory: forget every cached plan once they hold many nodes
  // (running collectives keep theirs alive).
  plan_nodes_cached_ += nodes.size();
  if (plan_nodes_cached_ > kPlanCacheNodes) {
    plans_.clear();
    plan_nodes_cached_ = nodes.size();
  }
  plans_.emplace(std::move(key), info);
  return info;
}

std::size_t IciSimulator::plan_new(const CollectiveRequest& req, Ps at) {
  auto a = std::make_unique<Active>();
  a->info = plan_info(req);
  const PlanInfo& info = *a->info;
  CollectiveResult& r = a->res;
  r.id = colls_.size();
  r.label = req.label;
  r.kind = req.kind;
  r.algorithm = info.algorithm;
  r.bytes = req.bytes;
  r.group_size = info.group_size;
  r.start = at;
  const std::size_t chips = static_cast<std::size_t>(slice_.num_chips());
  r.sent_per_chip.assign(chips, 0);
  r.received_per_chip.assign(chips, 0);
  r.reduce_bytes_per_chip.assign(chips, 0);
  r.end_per_chip.assign(chips, at);
  r.bytes_per_link.assign(static_cast<std::size_t>(slice_.num_links()), 0);
  a->planned_reduce = info.planned_reduce;
  a->by_incoming = info.by_incoming;
  a->chip_left = info.chip_left;
  colls_.push_back(std::move(a));
  return colls_.size() - 1;
}

void IciSimulator::schedule(Ps at, std::size_t coll, int group) {
  pending_.push(PendingStart{at, pending_seq_++, coll, group});
}

std::uint64_t IciSimulator::start(const CollectiveRequest& req, Ps at) {
  if (at < now_) throw InternalError("IciSimulator::start: start time in the past");
  const std::size_t idx = plan_new(req, at);
  schedule(at + startup(idx), idx, -1);
  return colls_[idx]->res.id;
}

std::uint64_t IciSimulator::start_deferred(const CollectiveRequest& req) {
  const std::size_t idx = plan_new(req, kNeverPs);
  Active& a = *colls_[idx];
  a.deferred = true;
  a.res.start = kNeverPs;  // the first chip's start, when it comes
  // Groups: chips that agree on every slice axis outside the collective.
  const std::vector<int> axes = mesh_.slice_axes(req.axes);
  const std::size_t chips = static_cast<std::size_t>(slice_.num_chips());
  std::vector<int> index_of_key(chips, -1);
  a.group_of.assign(chips, 0);
  for (int c = 0; c < slice_.num_chips(); ++c) {
    std::vector<int> x = slice_.coords(c);
    for (int ax : axes) x[static_cast<std::size_t>(ax)] = 0;
    const std::size_t key = static_cast<std::size_t>(slice_.chip_at(x));
    if (index_of_key[key] < 0) {
      index_of_key[key] = static_cast<int>(a.group_waiting.size());
      a.group_waiting.push_back(0);
    }
    a.group_of[static_cast<std::size_t>(c)] = index_of_key[key];
    ++a.group_waiting[static_cast<std::size_t>(index_of_key[key])];
  }
  a.group_roots.resize(a.group_waiting.size());
  for (std::uint32_t i : a.info->roots)
    a.group_roots[static_cast<std::size_t>(a.group_of[static_cast<std::size_t>(a.info->nodes[i].src)])].push_back(i);
  a.groups_left = a.group_waiting.size();
  a.chip_started.assign(chips, 0);
  return a.res.id;
}

void IciSimulator::chip_start(std::uint64_t id, int chip, Ps at) {
  if (id >= colls_.size() || !colls_[id]->deferred)
    throw InternalError("IciSimulator::chip_start: collective " + std::to_string(id) + " was not started deferred");
  if (chip < 0 || chip >= slice_.num_chips()) throw InternalError("IciSimulator::chip_start: no chip " + std::to_string(chip));
  if (at < now_) throw InternalError("IciSimulator::chip_start: start time in the past");
  Active& a = *colls_[id];
  const std::size_t c = static_cast<std::size_t>(chip);
  if (a.chip_started[c]) throw InternalError("IciSimulator::chip_start: chip " + std::to_string(chip) + " started twice");
  a.chip_started[c] = 1;
  a.res.start = std::min(a.res.start, at);
  a.res.end_per_chip[c] = at;
  const std::size_t g = static_cast<std::size_t>(a.group_of[c]);
  if (--a.group_waiting[g] == 0) schedule(at + startup(static_cast<std::size_t>(id)), static_cast<std::size_t>(id), static_cast<int>(g));
}

std::uint64_t IciSimulator::planned_reduce_bytes(std::uint64_t id, int chip) const {
  if (id >= colls_.size() || chip < 0 || chip >= slice_.num_chips())
    throw InternalError("IciSimulator::planned_reduce_bytes: no such collective or chip");
  return colls_[id]->planned_reduce[static_cast<std::size_t>(chip)];
}

std::pair<std::uint64_t, std::uint64_t> IciSimulator::planned_traffic(std::uint64_t id, int chip) const {
  if (id >= colls_.size() || chip < 0 || chip >= slice_.num_chips() || !colls_[id]->info)
    throw InternalError("IciSimulator::planned_traffic: no such running collective or chip");
  const PlanInfo& info = *colls_[id]->info;
  const std::size_t c = static_cast<std::size_t>(chip);
  return {info.planned_sent[c], info.planned_received[c]};
}

std::vector<IciSimulator::ChipDone> IciSimulator::take_chip_completions() {
  std::vector<ChipDone> out;
  out.swap(chip_done_);
  return out;
}

Ps IciSimulator::next_event_time() const {
  Ps t = net_->next_event_time();
  if (!pending_.empty()) t = std::min(t, pending_.top().at);
  return t;
}

void IciSimulator::chip_done(std::size_t coll, int chip, Ps t) {
  Active& a = *colls_[coll];
  a.res.end_per_chip[static_cast<std::size_t>(chip)] = t;
  if (a.deferred) chip_done_.push_back(ChipDone{a.res.id, chip, t});
}

void IciSimulator::maybe_finish(std::size_t coll, Ps t, std::vector<CollectiveResult>& done) {
  Active& a = *colls_[coll];
  if (a.left != 0 || a.groups_left != 0) return;
  a.res.end = t;
  --active_;
  ++completed_;
  // Nothing reads the result, plan or per-chip counts of a finished
  // collective again (planned_reduce stays for planned_reduce_bytes).
  done.push_back(std::move(a.res));
  a.res = CollectiveResult{};
  a.res.id = done.back().id;
  a.info.reset();
  std::vector<std::uint32_t>().swap(a.waiting);
  std::vector<std::uint32_t>().swap(a.chip_left);
  std::vector<std::uint8_t>().swap(a.by_incoming);
  std::vector<std::vector<std::uint32_t>>().swap(a.group_roots);
}

void IciSimulator::activate(std::size_t index, int group, Ps t, std::vector<CollectiveResult>& done) {
  Active& a = *colls_[index];
  if (!a.initialized) {
    a.initialized = true;
    ++active_;
    a.left = a.info->nodes.size();
    a.waiting = a.info->deps;
  }
  // Chips with no message to wait for are done as soon as they start.
  for (int c = 0; c < slice_.num_chips(); ++c)
    if ((group < 0 || a.group_of[static_cast<std::size_t>(c)] == group) && a.chip_left[static_cast<std::size_t>(c)] == 0)
      chip_done(index, c, t);
  if (group < 0) {
    for (std::uint32_t i : a.info->roots) release(index, i, t, done);
  } else {
    --a.groups_left;
    for (std::uint32_t i : a.group_roots[static_cast<std::size_t>(group)]) release(index, i, t, done);
  }
  maybe_finish(index, t, done);
}

void IciSimulator::release(std::size_t coll, std::uint32_t node, Ps t, std::vector<CollectiveResult>& done) {
  Active& a = *colls_[coll];
  const PlanInfo::Node& n = a.info->nodes[node];
  if (n.bytes == 0) {
    complete_node(coll, node, t, done);
    return;
  }
  std::size_t hops = 0;
  const int* route = route_of(n.src, n.dst, hops);
  for (std::size_t h = 0; h < hops; ++h) a.res.bytes_per_link[static_cast<std::size_t>(route[h])] += n.bytes;
  a.res.sent_per_chip[static_cast<std::size_t>(n.src)] += n.bytes;
  a.res.messages += 1;
  if (coll > UINT32_MAX) throw InternalError("IciSimulator: too many collectives for a message tag");
  net_->send(n.src, n.dst, n.bytes, t, route, hops, static_cast<std::uint64_t>(coll) << 32 | node);
}

const int* IciSimulator::route_of(int src, int dst, std::size_t& hops) {
  const int chips = slice_.num_chips();
  if (chips > kRouteCacheChips) {
    slice_.route_into(src, dst, route_);
    hops = route_.size();
    return route_.data();
  }
  if (route_index_.empty()) route_index_.assign(static_cast<std::size_t>(chips) * static_cast<std::size_t>(chips), {0, 0});
  auto& e = route_index_[static_cast<std::size_t>(src) * static_cast<std::size_t>(chips) + static_cast<std::size_t>(dst)];
  if (e.second == 0) {  // src != dst, so a cached route has hops
    slice_.route_into(src, dst, route_);
    e = {static_cast<std::uint32_t>(route_cache_.size()), static_cast<std::uint32_t>(route_.size())};
    route_cache_.insert(route_cache_.end(), route_.begin(), route_.end());
  }
  hops = e.second;
  return route_cache_.data() + e.first;
}

void IciSimulator::complete_node(std::size_t coll, std::uint32_t node, Ps t, std::vector<CollectiveResult>& done) {
  Active& a = *colls_[coll];
  const PlanInfo& info = *a.info;
  for (std::uint32_t i = info.succ_begin[node]; i < info.succ_begin[node + 1]; ++i)
    if (--a.waiting[info.succ[i]] == 0) release(coll, info.succ[i], t, done);
  --a.left;
  maybe_finish(coll, t, done);
}

std::vector<CollectiveResult> IciSimulator::run_until(Ps t) {
  std::vector<CollectiveResult> done;
  std::vector<Delivery>& del = deliveries_;
  for (;;) {
    const Ps tn = net_->next_event_time();
    const Ps ts = pending_.empty() ? kNeverPs : pending_.top().at;
    const Ps next = std::min(tn, ts);
    if (next == kNeverPs || next > t) break;
    if (ts <= tn) {
      const PendingStart p = pending_.top();
      pending_.pop();
      now_ = std::max(now_, ts);
      activate(p.coll, p.group, ts, done);
      continue;
    }
    del.clear();
    net_->advance_to(tn, del);
    now_ = std::max(now_, tn);
    for (const Delivery& d : del) {
      const std::size_t coll = static_cast<std::size_t>(d.tag >> 32);
      const std::uint32_t node = static_cast<std::uint32_t>(d.tag);
      Active& a = *colls_[coll];
      const PlanInfo::Node& n = a.info->nodes[node];
      const std::size_t dst = static_cast<std::size_t>(n.dst), src = static_cast<std::size_t>(n.src);
      a.res.received_per_chip[dst] += n.bytes;
      a.res.reduce_bytes_per_chip[dst] += n.reduce_bytes;
      if (a.by_incoming[dst] && --a.chip_left[dst] == 0) chip_done(coll, n.dst, d.time);
      if (!a.by_incoming[src] && --a.chip_left[src] == 0) chip_done(coll, n.src, d.time);
      complete_node(coll, node, d.time, done);
    }
  }
  if (t != kNeverPs) {
    now_ = std::max(now_, t);
    if (net_->now() < t) {
      del.clear();
      net_->advance_to(t, del);  // nothing pending <= t: only moves the clock
    }
  }
  return done;
}

std::vector<CollectiveResult> IciSimulator::run_all() { return run_until(kNeverPs); }

StatList IciSimulator::stats() const {
  StatList s = net_->stats(now_);
  for (Stat& x : s) x.name = "ici." + x.name;
  std::uint64_t bytes = 0;
  for (int c = 0; c < slice_.num_chips(); ++c) bytes += net_->chip_bytes_sent(c);
  s.push_back({"ici.collectives_completed", static_cast<double>(completed_), "count", "collectives finished"});
  s.push_back({"ici.messages", static_cast<double>(net_->messages_sent()), "count", "messages sent on the ICI network"});
  s.push_back({"ici.bytes_sent", static_cast<double>(bytes), "bytes", "bytes injected by all chips"});
  s.push_back({"ici.packet_hops", static_cast<double>(net_->packets_transmitted()), "count",
               "packet transmissions (packet fidelity only)"});
  return s;
}

CollectiveResult run_collective(const Slice& slice, const Mesh& mesh, const CollectiveRequest& req,
                                const NetworkOptions& options) {
  IciSimulator sim(slice, mesh, options);
  sim.start(req, 0);
  std::vector<CollectiveResult> r = sim.run_all();
  if (r.size() != 1) throw InternalError("run_collective: the collective did not complete");
  return r.front();
}

}  // namespace tpusim::arch::ici
