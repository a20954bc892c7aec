// IciSimulator: the aggregated message model that times collective plans
// on a slice (see collectives.h); planning is in collectives.cpp.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "arch/common/errors.h"
#include "arch/ici/collectives.h"

namespace tpusim::arch::ici {

// A plan and what every collective of that plan starts from. Training
// steps repeat the same few collectives thousands of times, and planning
// a 256-chip collective allocates one successor list per node: planning
// once per distinct request took most of the allocator time of a run.
// Nodes are kept flat (successors in one array) because following
// per-node successor vectors was a cache miss per completed message.
struct IciSimulator::PlanInfo {
  struct Node {
    int src, dst;
    bool dcn;
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
  bool has_messages = false;                                  // a group of one chip sends nothing: no start-up
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
  std::vector<std::uint8_t> watched;  // per chip, empty = none (watch)
};

IciSimulator::IciSimulator(const Slice& slice, const Mesh& mesh, const NetworkOptions& options)
    : slice_(slice),
      mesh_(mesh),
      net_(make_network(slice_, options)),
      startup_ps_(static_cast<Ps>(std::llround(slice_.config().collective_latency * 1e12))) {
  if (slice_.num_slices() > 1) {
    nic_free_.assign(static_cast<std::size_t>(slice_.num_chips()), 0);
    dcn_ps_per_byte_ = 1e12 / slice_.config().dcn_bandwidth;  // > 0: Slice checks
    dcn_latency_ps_ = static_cast<Ps>(std::llround(slice_.config().dcn_latency * 1e12));
  }
}

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
    info->nodes.push_back({n.src, n.dst, n.dcn, n.bytes, n.reduce_bytes});
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
  // Groups: chips that agree on every slice axis (or part) outside the
  // collective.
  const std::vector<SubAxis> axes = mesh_.sub_axes(req.axes);
  const std::size_t chips = static_cast<std::size_t>(slice_.num_chips());
  std::vector<int> index_of_key(chips, -1);
  a.group_of.assign(chips, 0);
  for (int c = 0; c < slice_.num_chips(); ++c) {
    std::vector<int> x = slice_.coords(c);
    for (const SubAxis& ax : axes)
      if (!slice_.is_dcn(ax.axis)) x[static_cast<std::size_t>(ax.axis)] -= sub_position(slice_, c, ax) * ax.stride;
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
  if (chip < 0 || chip >= slice_.num_chips())
    throw InternalError("IciSimulator::chip_start: no chip " + std::to_string(chip));
  if (at < now_) throw InternalError("IciSimulator::chip_start: start time in the past");
  Active& a = *colls_[id];
  const std::size_t c = static_cast<std::size_t>(chip);
  if (a.chip_started[c])
    throw InternalError("IciSimulator::chip_start: chip " + std::to_string(chip) + " started twice");
  a.chip_started[c] = 1;
  a.res.start = std::min(a.res.start, at);
  a.res.end_per_chip[c] = at;
  const std::size_t g = static_cast<std::size_t>(a.group_of[c]);
  if (--a.group_waiting[g] == 0)
    schedule(at + startup(static_cast<std::size_t>(id)), static_cast<std::size_t>(id), static_cast<int>(g));
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

void IciSimulator::watch(std::uint64_t id, int chip) {
  if (id >= colls_.size() || chip < 0 || chip >= slice_.num_chips() || !colls_[id]->info)
    throw InternalError("IciSimulator::watch: no such running collective or chip");
  Active& a = *colls_[id];
  if (a.watched.empty()) a.watched.assign(static_cast<std::size_t>(slice_.num_chips()), 0);
  a.watched[static_cast<std::size_t>(chip)] = 1;
}

std::vector<IciSimulator::ChipProgress> IciSimulator::take_progress() {
  std::vector<ChipProgress> out;
  out.swap(progress_);
  return out;
}

std::vector<IciSimulator::ChipDone> IciSimulator::take_chip_completions() {
  std::vector<ChipDone> out;
  out.swap(chip_done_);
  return out;
}

Ps IciSimulator::next_event_time() const {
  Ps t = net_->next_event_time();
  if (!pending_.empty()) t = std::min(t, pending_.top().at);
  if (!dcn_.empty()) t = std::min(t, dcn_.top().at);
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
  std::vector<std::uint8_t>().swap(a.watched);
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
    if ((group < 0 || a.group_of[static_cast<std::size_t>(c)] == group) &&
        a.chip_left[static_cast<std::size_t>(c)] == 0)
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
  const int* route = n.dcn ? nullptr : route_of(n.src, n.dst, hops);
  for (std::size_t h = 0; h < hops; ++h) a.res.bytes_per_link[static_cast<std::size_t>(route[h])] += n.bytes;
  a.res.sent_per_chip[static_cast<std::size_t>(n.src)] += n.bytes;
  a.res.messages += 1;
  // Both ends stream the message as it moves: the sender's DMA reads it
  // from HBM and the receiver's writes it there (adding what it reduces)
  // from the moment it starts.
  if (!a.watched.empty()) {
    if (a.watched[static_cast<std::size_t>(n.src)]) {
      ChipProgress p{a.res.id, n.src, t, {}};
      p.step.sent = n.bytes;
      progress_.push_back(p);
    }
    if (a.watched[static_cast<std::size_t>(n.dst)]) {
      ChipProgress p{a.res.id, n.dst, t, {}};
      p.step.received = n.bytes;
      p.step.reduce = n.reduce_bytes;
      progress_.push_back(p);
    }
  }
  if (coll > UINT32_MAX) throw InternalError("IciSimulator: too many collectives for a message tag");
  const std::uint64_t tag = static_cast<std::uint64_t>(coll) << 32 | node;
  if (n.dcn) {
    // Out through the sender's NIC share, in the order sent; lands one
    // DCN latency after its last byte left.
    Ps& free = nic_free_[static_cast<std::size_t>(n.src)];
    const Ps begin = std::max(free, t);
    const Ps tx = static_cast<Ps>(std::llround(static_cast<double>(n.bytes) * dcn_ps_per_byte_));
    free = begin + tx;
    dcn_busy_ += tx;
    dcn_bytes_ += n.bytes;
    dcn_messages_ += 1;
    dcn_.push(DcnLanding{free + dcn_latency_ps_, dcn_seq_++, tag});
    return;
  }
  net_->send(n.src, n.dst, n.bytes, t, route, hops, tag);
}

const int* IciSimulator::route_of(int src, int dst, std::size_t& hops) {
  const int chips = slice_.num_chips();
  if (chips > kRouteCacheChips) {
    slice_.route_into(src, dst, route_);
    hops = route_.size();
    return route_.data();
  }
  if (route_index_.empty())
    route_index_.assign(static_cast<std::size_t>(chips) * static_cast<std::size_t>(chips), {0, 0});
  auto& e =
      route_index_[static_cast<std::size_t>(src) * static_cast<std::size_t>(chips) + static_cast<std::size_t>(dst)];
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

void IciSimulator::deliver(std::uint64_t tag, Ps t, std::vector<CollectiveResult>& done) {
  const std::size_t coll = static_cast<std::size_t>(tag >> 32);
  const std::uint32_t node = static_cast<std::uint32_t>(tag);
  Active& a = *colls_[coll];
  const PlanInfo::Node& n = a.info->nodes[node];
  const std::size_t dst = static_cast<std::size_t>(n.dst), src = static_cast<std::size_t>(n.src);
  a.res.received_per_chip[dst] += n.bytes;
  a.res.reduce_bytes_per_chip[dst] += n.reduce_bytes;
  if (a.by_incoming[dst] && --a.chip_left[dst] == 0) chip_done(coll, n.dst, t);
  if (!a.by_incoming[src] && --a.chip_left[src] == 0) chip_done(coll, n.src, t);
  complete_node(coll, node, t, done);
}

std::vector<CollectiveResult> IciSimulator::run_until(Ps t) {
  std::vector<CollectiveResult> done;
  std::vector<Delivery>& del = deliveries_;
  for (;;) {
    const Ps tn = net_->next_event_time();
    const Ps ts = pending_.empty() ? kNeverPs : pending_.top().at;
    const Ps td = dcn_.empty() ? kNeverPs : dcn_.top().at;
    const Ps next = std::min({tn, ts, td});
    if (next == kNeverPs || next > t) break;
    if (ts == next) {
      const PendingStart p = pending_.top();
      pending_.pop();
      now_ = std::max(now_, ts);
      activate(p.coll, p.group, ts, done);
      continue;
    }
    if (td == next) {
      const DcnLanding l = dcn_.top();
      dcn_.pop();
      now_ = std::max(now_, td);
      deliver(l.tag, td, done);
      continue;
    }
    del.clear();
    net_->advance_to(tn, del);
    now_ = std::max(now_, tn);
    for (const Delivery& d : del) deliver(d.tag, d.time, done);
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
  s.push_back(
      {"ici.messages", static_cast<double>(net_->messages_sent()), "count", "messages sent on the ICI network"});
  s.push_back({"ici.bytes_sent", static_cast<double>(bytes), "bytes", "bytes injected by all chips"});
  std::uint64_t link_bytes = 0;
  for (int l = 0; l < slice_.num_links(); ++l) link_bytes += net_->link_stats(l).bytes_sent;
  s.push_back({"ici.link_bytes", static_cast<double>(link_bytes), "bytes",
               "bytes sent over links, every hop counted, all chips (the energy model charges them)"});
  s.push_back({"ici.packet_hops", static_cast<double>(net_->packets_transmitted()), "count",
               "packet transmissions (packet fidelity only)"});
  if (slice_.num_slices() > 1) {
    const double el = static_cast<double>(now_) * 1e-12;
    const double busy = static_cast<double>(dcn_busy_) * 1e-12;
    s.push_back({"dcn.messages", static_cast<double>(dcn_messages_), "count",
                 "messages sent to other slices over the data-centre network, by the simulated slice's chips"});
    s.push_back({"dcn.bytes_sent", static_cast<double>(dcn_bytes_), "bytes",
                 "bytes the simulated slice's chips sent over the data-centre network"});
    s.push_back({"dcn.utilization", el > 0 ? busy / (el * slice_.num_chips()) : 0.0, "ratio",
                 "mean busy fraction of the chips' NIC shares (dcn_bandwidth each)"});
  }
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
