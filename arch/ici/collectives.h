// Collectives over named mesh axes of a slice, executed on the ICI network
// model as their real messages (ring steps, direct sends), so time comes
// from the network (contention, hop latency), not from a formula.
//
// A collective is planned into a DAG of messages and local joins
// (plan_collective); IciSimulator sends each message when its predecessors
// have arrived, on one shared Network, so concurrent collectives contend.
//
// Sizes (CollectiveRequest::bytes), per chip, the larger side:
//   all_gather          bytes = gathered output; each chip's input is bytes/N
//   reduce_scatter      bytes = input; each chip's output is bytes/N
//   all_reduce          bytes = the buffer reduced
//   all_to_all          bytes = each chip's buffer; bytes/N goes to each peer
//                       (the scaling book's V for all-to-all is N x bytes)
//   collective_permute  bytes = the buffer each chip sends
//   broadcast           bytes = the buffer, from the root to every chip
// N = product of the lengths of the slice axes (or parts, SubAxis) the
// named mesh axes map to.
// Shards are rounded up to whole bytes.
//
// Algorithms (docs/ici.md):
// - Ring stage on one axis, bidirectional: on a wrapping axis of length n
//   each shard travels ceil((n-1)/2) hops one way and the rest the other
//   way (the scaling book's bidirectional ring: |X|/2 hops, V/W time); on
//   an axis without wraparound each shard travels to both ends of the line
//   (n-1 steps, about twice as long). Reduce-scatter is the mirror: the
//   partial sum for chip j is accumulated along the chain toward j. On a
//   part of an axis (SubAxis) of stride s, each ring step is a message s
//   chips along, routed over the links between (which the parts at the
//   other offsets share).
// - Over k > 1 axes the data is split in k parts that run concurrently,
//   part p visiting the axes rotated by p (part 0: x,y; part 1: y,x), so
//   every axis's links carry a part in the big stage: about k times faster
//   than one axis. all_reduce = reduce_scatter over the rotated order then
//   all_gather in reverse. A stage starts at a chip when the previous
//   stage's messages to that chip have arrived.
// - Over the DCN of a multislice (the mesh dimension of the slice count):
//   a unidirectional ring over the slices through each chip's NIC share
//   (a bidirectional one gains nothing: both directions leave through the
//   same NIC). Only one slice's chips are simulated; the others do the
//   same at the same time, so chip c's ring step is a message from c to
//   chip c of the next slice, and what c receives from the previous slice
//   arrives when that message does. A collective over DCN and ICI axes
//   together is hierarchical: reduce-scatter over ICI first, so that only
//   a 1/N_ici shard crosses the DCN, all-gather over ICI last.
// - all_to_all and collective_permute: direct messages, dimension-order
//   routed; over the DCN alone, each chip's N-1 pieces (all_to_all) or
//   its one buffer (permute) leave through its NIC share. broadcast: the buffer cut into pieces pipelined from the root
//   axis by axis; on a wrapping axis even pieces go + and odd pieces go -.
// Reduction arithmetic is not timed here: reduce_bytes_per_chip tells the
// engine how many bytes each chip adds (one element-wise add per received
// partial shard), to charge on the VPU (planned_reduce_bytes gives it at
// start).
// Per chip: each chip's completion (end_per_chip), and collectives whose
// chips start one by one (start_deferred / chip_start) for runs that
// simulate every chip.
//
// Start-up: a collective with messages releases its first messages
// IciConfig::collective_latency after its group is ready (the start time,
// or the last chip_start of the group): the synchronisation and handshake
// before data moves, once per collective.
// Leaves out: reduction compute time (the engine's VPU charge), in-network
// reduction, non-uniform shard
// sizes, per-message DMA setup; all_to_all, collective_permute and
// broadcast over DCN and ICI axes together, and broadcast over the DCN
// (ConfigError).
// DCN messages: each chip's NIC share is a FIFO at
// IciConfig::dcn_bandwidth; a message lands IciConfig::dcn_latency after
// its last byte left (the same for both network fidelities).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "arch/common/collective_progress.h"
#include "arch/common/stats.h"
#include "arch/ici/network.h"
#include "arch/ici/topology.h"

namespace tpusim::arch::ici {

enum class CollectiveKind { all_gather, reduce_scatter, all_reduce, all_to_all, collective_permute, broadcast };
const char* to_string(CollectiveKind k);
CollectiveKind parse_collective_kind(const std::string& s);  // ConfigError when unknown

// A part of one slice axis: the chips whose coordinate on `axis` differ
// by multiples of `stride`, `length` of them; a chip's position on it is
// (coordinate / stride) % length. A whole axis is {axis, 1, dim(axis)}.
// Splitting a torus dimension of 16 into x%4 ({x, 1, 4}: four neighbours)
// and x/4 ({x, 4, 4}: every fourth chip) gives two mesh axes on one
// physical axis, as JAX's allow_split_physical_axes does. A part wraps
// (rings back through the wraparound link) only when the axis wraps and
// stride x length covers it; else it is a line. The DCN dimension is
// never split.
struct SubAxis {
  int axis = 0;
  int stride = 1;
  int length = 1;
  bool operator==(const SubAxis& o) const { return axis == o.axis && stride == o.stride && length == o.length; }
};
// Whether `a` covers its whole slice axis (or the DCN dimension).
bool is_whole(const Slice& s, const SubAxis& a);
// "x" for a whole axis, else "x%4" (stride 1), "x/4" (the top part) or
// "x/2%4"; "dcn" for the DCN dimension.
std::string sub_axis_name(const Slice& s, const SubAxis& a);
// A chip's position on `a` (0 for the DCN: every slice's chip c is chip c).
int sub_position(const Slice& s, int chip, const SubAxis& a);
// Whether `a` is a ring (see SubAxis), for an ICI part.
bool sub_wraps(const Slice& s, const SubAxis& a);

// Named mesh axes, each mapped to slice axes (0 = x, 1 = y, 2 = z) or
// parts of them. A slice axis, or each part of it, belongs to at most one
// mesh axis; slice axes not named by any mesh axis are simply never
// collective axes, and a mesh axis mapped to none is a group of one chip.
class Mesh {
 public:
  // Whole slice axes.
  Mesh(const Slice& slice, std::vector<std::pair<std::string, std::vector<int>>> axes);
  // Parts of slice axes. ConfigError unless the parts of each slice axis
  // are separate digits of its coordinate (each stride a multiple of the
  // stride x length below it, the top one's dividing the axis's length).
  static Mesh split(const Slice& slice, std::vector<std::pair<std::string, std::vector<SubAxis>>> axes);
  // "x", "y" (and "z") mapped to slice axes 0, 1 (and 2).
  static Mesh physical(const Slice& slice);
  // Slice axes of the named mesh axes, in the order named. ConfigError for
  // an unknown or repeated name.
  std::vector<SubAxis> sub_axes(const std::vector<std::string>& names) const;
  // Each mesh axis's parts of slice axes, in the order given.
  const std::vector<std::pair<std::string, std::vector<SubAxis>>>& axes() const { return axes_; }
  // Whether some mesh axis takes a part of a slice axis.
  bool splits() const { return splits_; }

 private:
  Mesh() = default;
  void check(const Slice& slice);
  std::vector<std::pair<std::string, std::vector<SubAxis>>> axes_;
  bool splits_ = false;
};

struct CollectiveRequest {
  CollectiveKind kind = CollectiveKind::all_reduce;
  std::uint64_t bytes = 0;
  std::vector<std::string> axes;  // mesh axis names
  int root = 0;                   // broadcast: root's rank in its group
  // collective_permute: (source rank, destination rank) pairs within each
  // group; empty = every rank sends to rank + 1 (cyclic).
  std::vector<std::pair<int, int>> pairs;
  std::string label;  // free text, copied to the result
};

// One node of a planned collective: a message src -> dst, or (src == dst,
// bytes == 0) a local join that completes when its predecessors have.
struct PlanNode {
  int src = 0;
  int dst = 0;
  // A message over the DCN to the chip `dst` of another slice (src == dst
  // for a ring over the slices), out through src's NIC share, not routed
  // over ICI links.
  bool dcn = false;
  std::uint64_t bytes = 0;
  std::uint64_t reduce_bytes = 0;  // added at dst on arrival
  std::uint32_t deps = 0;          // predecessors
  std::vector<std::uint32_t> succ;
};

struct CollectivePlan {
  std::string algorithm;  // e.g. "all_reduce: 2-way split over x,y; ring_bidir(x) ring_bidir(y)"
  int group_size = 1;     // N
  std::vector<PlanNode> nodes;
  std::uint64_t messages() const;
};

CollectivePlan plan_collective(const Slice& slice, const Mesh& mesh, const CollectiveRequest& req);

struct CollectiveResult {
  std::uint64_t id = 0;
  std::string label;
  CollectiveKind kind = CollectiveKind::all_reduce;
  std::string algorithm;
  std::uint64_t bytes = 0;
  int group_size = 1;
  Ps start = 0;
  Ps end = 0;
  std::uint64_t messages = 0;
  std::vector<std::uint64_t> sent_per_chip;          // bytes injected by each chip
  std::vector<std::uint64_t> received_per_chip;      // bytes delivered to each chip
  std::vector<std::uint64_t> reduce_bytes_per_chip;  // VPU work: bytes added on each chip
  std::vector<std::uint64_t> bytes_per_link;         // by link id, every link of the route
  // When each chip's part completed: its last incoming message landed (a
  // chip that receives nothing: its last outgoing one landed; one with no
  // message at all: when it started). end = the latest of them.
  std::vector<Ps> end_per_chip;
  double seconds() const { return static_cast<double>(end - start) * 1e-12; }
  // bytes / seconds: the rate at which the collective's buffer was served.
  double achieved_bandwidth() const;
  std::uint64_t total_sent() const;
  std::uint64_t total_received() const;
  std::uint64_t total_reduce_bytes() const;
};

// Runs collectives on one network; usable standalone (run_until /
// run_all) or driven by a SystemC module (IciModule).
class IciSimulator {
 public:
  IciSimulator(const Slice& slice, const Mesh& mesh, const NetworkOptions& options = {});
  ~IciSimulator();
  IciSimulator(const IciSimulator&) = delete;
  IciSimulator& operator=(const IciSimulator&) = delete;

  // Plans and schedules a collective starting at `at` >= now(). Returns its
  // id (0, 1, ...). Throws ConfigError for a request that does not fit.
  std::uint64_t start(const CollectiveRequest& req, Ps at);
  // A collective that the chips start one by one (chip_start), as when
  // every chip's program is simulated and each reaches the collective at
  // its own time. Synchronisation: the traffic of a group (the chips that
  // take part in one instance) starts when all of its chips have started,
  // because a ring step or a direct send needs the peer's data and the
  // peer's receive buffer; groups are independent of each other. Each
  // chip's part completes on its own (CollectiveResult::end_per_chip,
  // take_chip_completions). Returns the id; throws like start().
  std::uint64_t start_deferred(const CollectiveRequest& req);
  // Chip `chip` reaches collective `id` (from start_deferred) at `at` >=
  // now(). InternalError for an unknown id or chip, or a second start.
  void chip_start(std::uint64_t id, int chip, Ps at);
  // Bytes chip `chip` adds on arrival in collective `id`, from its plan,
  // so known as soon as the collective is started.
  std::uint64_t planned_reduce_bytes(std::uint64_t id, int chip) const;
  // Bytes chip `chip` sends and receives in collective `id`, from its
  // plan (what its DMA engines read from and write to HBM). Only while the
  // collective has not completed (InternalError after).
  std::pair<std::uint64_t, std::uint64_t> planned_traffic(std::uint64_t id, int chip) const;
  // Chips whose part of a deferred collective completed, since the last
  // call, in completion order.
  struct ChipDone {
    std::uint64_t id;
    int chip;
    Ps time;
  };
  std::vector<ChipDone> take_chip_completions();
  // Progress of one chip in a collective, reported as each of its messages
  // starts to move (arch::CollectiveProgress).
  struct ChipProgress {
    std::uint64_t id;
    int chip;
    Ps time;
    CollectiveProgress step;
  };
  // Reports chip `chip`'s progress in collective `id` (take_progress) from
  // now on: call before the collective's traffic starts (right after
  // start(), or before the chip's chip_start()).
  void watch(std::uint64_t id, int chip);
  // Progress of watched chips since the last call, in time order.
  std::vector<ChipProgress> take_progress();
  // Processes everything up to and including time t; returns the
  // collectives that completed (in completion order). now() becomes t.
  std::vector<CollectiveResult> run_until(Ps t);
  // Runs until nothing is pending.
  std::vector<CollectiveResult> run_all();
  Ps next_event_time() const;  // kNeverPs when idle
  Ps now() const { return now_; }
  bool idle() const { return active_ == 0 && pending_.empty(); }

  const Slice& slice() const { return slice_; }
  const Mesh& mesh() const { return mesh_; }
  Network& network() { return *net_; }
  const Network& network() const { return *net_; }
  // Per-link statistics over [0, now()] plus totals ("ici." prefix).
  StatList stats() const;

 private:
  struct Active;
  struct PlanInfo;
  struct PlanKey {  // the request without its label
    CollectiveKind kind;
    std::uint64_t bytes;
    std::vector<std::string> axes;
    int root;
    std::vector<std::pair<int, int>> pairs;
    bool operator<(const PlanKey& o) const;
  };
  static constexpr std::size_t kPlanCacheNodes = std::size_t{1} << 22;
  std::shared_ptr<const PlanInfo> plan_info(const CollectiveRequest& req);
  struct PendingStart {
    Ps at;
    std::uint64_t seq;  // equal times activate in the order scheduled
    std::size_t coll;
    int group;  // -1: every group (start()); else one group (chip_start())
    bool operator>(const PendingStart& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  std::size_t plan_new(const CollectiveRequest& req, Ps at);
  // IciConfig::collective_latency for a collective with messages, else 0.
  Ps startup(std::size_t coll) const;
  void schedule(Ps at, std::size_t coll, int group);
  void activate(std::size_t index, int group, Ps t, std::vector<CollectiveResult>& done);
  void chip_done(std::size_t coll, int chip, Ps t);
  void maybe_finish(std::size_t coll, Ps t, std::vector<CollectiveResult>& done);
  void complete_node(std::size_t coll, std::uint32_t node, Ps t, std::vector<CollectiveResult>& done);
  void release(std::size_t coll, std::uint32_t node, Ps t, std::vector<CollectiveResult>& done);
  // A message (tag: collective << 32 | node) landed at `t`.
  void deliver(std::uint64_t tag, Ps t, std::vector<CollectiveResult>& done);
  std::vector<ChipProgress> progress_;

  // The DCN: per chip, when its NIC share is free; messages in flight as
  // (landing time, order sent, tag).
  struct DcnLanding {
    Ps at;
    std::uint64_t seq;
    std::uint64_t tag;
    bool operator>(const DcnLanding& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  std::vector<Ps> nic_free_;
  std::priority_queue<DcnLanding, std::vector<DcnLanding>, std::greater<DcnLanding>> dcn_;
  std::uint64_t dcn_seq_ = 0;
  double dcn_ps_per_byte_ = 0;
  Ps dcn_latency_ps_ = 0;
  std::uint64_t dcn_bytes_ = 0, dcn_messages_ = 0;
  Ps dcn_busy_ = 0;  // NIC transmission time summed over chips

  Slice slice_;
  Mesh mesh_;
  std::unique_ptr<Network> net_;
  Ps startup_ps_ = 0;  // IciConfig::collective_latency
  Ps now_ = 0;
  std::vector<std::unique_ptr<Active>> colls_;
  // Activations not yet done: a min-heap on (time, seq).
  std::priority_queue<PendingStart, std::vector<PendingStart>, std::greater<PendingStart>> pending_;
  std::uint64_t pending_seq_ = 0;
  // Route of a message, from a per-(src, dst) cache on slices of up to
  // kRouteCacheChips chips (routing was a tenth of a 256-chip run).
  const int* route_of(int src, int dst, std::size_t& hops);
  static constexpr int kRouteCacheChips = 1024;
  std::vector<int> route_;                                            // scratch for route_of() without the cache
  std::vector<std::pair<std::uint32_t, std::uint32_t>> route_index_;  // src * chips + dst -> (offset, hops)
  std::vector<int> route_cache_;
  std::vector<Delivery> deliveries_;                          // scratch for run_until()
  std::map<PlanKey, std::shared_ptr<const PlanInfo>> plans_;  // plan cache
  std::size_t plan_nodes_cached_ = 0;
  std::vector<ChipDone> chip_done_;
  std::uint64_t active_ = 0;
  std::uint64_t completed_ = 0;
};

// One collective alone on an idle slice, started at time 0.
CollectiveResult run_collective(const Slice& slice, const Mesh& mesh, const CollectiveRequest& req,
                                const NetworkOptions& options = {});

}  // namespace tpusim::arch::ici
