// The ICI network of a slice: directed links (IciConfig::link_bandwidth
// bytes/s each way, IciConfig::hop_latency per hop), dimension-order
// routes from Slice::route, and a queue per directed link so that messages
// sharing a link wait for each other. Two fidelities that agree:
//
// - aggregated: whole messages, hop by hop. A message's head reaches link
//   j of its route one first-packet tx + hop latency after the message
//   started on link j-1 and joins that link's FIFO (busy-until per
//   directed link); the link carries one message at a time, from its start
//   until max(start + tx(message), end on link j-1 + hop latency + tx of
//   the last packet): virtual cut-through at packet granularity, i.e. the
//   packet model's closed form when messages do not interleave. Delivery =
//   end on the last link + hop latency. A few events per message hop.
// - packet: messages cut into packets of NetworkOptions::packet_bytes; each
//   packet is store-and-forwarded hop by hop, each link a FIFO of packets
//   in arrival order (a packet arriving at an intermediate chip queues
//   behind packets already there), one event per packet transmission and
//   one per intermediate arrival. Packets of concurrent messages interleave
//   on shared links, which the aggregated model does not do.
//
// Time is integer picoseconds; tx(b) = round(b * 1e12 / (link_bandwidth x
// link_efficiency)) per packet, so both models add up the same per-packet
// rounding. IciConfig::link_efficiency is the usable fraction of the
// nominal rate (headers, flow control, coding) as measured on real chips.
// Leaves out: credit-based flow control and finite buffers (queues are
// unbounded), virtual channels and deadlock, adaptive routing, link-level
// retries (all only as their average cost in link_efficiency),
// per-message DMA setup.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "arch/common/stats.h"
#include "arch/ici/topology.h"

namespace tpusim::arch::ici {

enum class Fidelity { aggregated, packet };
const char* to_string(Fidelity f);
Fidelity parse_fidelity(const std::string& s);  // ConfigError when unknown

struct NetworkOptions {
  Fidelity fidelity = Fidelity::aggregated;
  // Packet size; the aggregated model uses it for the head and tail of
  // cut-through pipelining so that both fidelities agree exactly on an
  // uncontended message.
  std::uint64_t packet_bytes = 4096;
};

struct Delivery {
  std::uint64_t msg = 0;  // id returned by Network::send
  Ps time = 0;            // last byte arrived at the destination
  std::uint64_t tag = 0;  // the sender's tag (send)
};

struct LinkStats {
  std::uint64_t bytes_sent = 0;      // entered the link (transmission started)
  std::uint64_t bytes_received = 0;  // arrived at the far chip
  std::uint64_t messages = 0;        // messages whose route uses the link
  std::uint64_t packets = 0;         // packets transmitted (packet model only)
  Ps busy = 0;                       // total transmission time
};

class Network {
 public:
  Network(const Slice& slice, const NetworkOptions& options);
  virtual ~Network() = default;
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  // Sends `bytes` (> 0) from src to dst (src != dst) along `route` (link
  // ids from Slice::route(src, dst)), entering the first link's queue at
  // `at` >= now(). Returns the message id (0, 1, 2, ... in send order).
  // The route is copied into a recycled message slot.
  // `tag` is the caller's own, handed back in the Delivery (so callers
  // need no table indexed by message id).
  std::uint64_t send(int src, int dst, std::uint64_t bytes, Ps at, const std::vector<int>& route,
                     std::uint64_t tag = 0);
  std::uint64_t send(int src, int dst, std::uint64_t bytes, Ps at, const int* route, std::size_t hops,
                     std::uint64_t tag);
  std::uint64_t send(int src, int dst, std::uint64_t bytes, Ps at);

  // Earliest pending event, kNeverPs when nothing is in flight.
  virtual Ps next_event_time() const = 0;
  // Processes every event at time <= t (in time order, ties in creation
  // order), appends deliveries in the order they happen; now() becomes t.
  virtual void advance_to(Ps t, std::vector<Delivery>& out) = 0;
  Ps now() const { return now_; }

  const Slice& slice() const { return slice_; }
  const NetworkOptions& options() const { return options_; }
  Fidelity fidelity() const { return options_.fidelity; }
  const LinkStats& link_stats(int link) const { return links_[static_cast<std::size_t>(link)]; }
  std::uint64_t chip_bytes_sent(int chip) const { return chip_sent_[static_cast<std::size_t>(chip)]; }
  std::uint64_t chip_bytes_received(int chip) const { return chip_recv_[static_cast<std::size_t>(chip)]; }
  std::uint64_t messages_sent() const { return next_id_; }
  std::uint64_t messages_in_flight() const { return in_flight_; }
  std::uint64_t events_processed() const { return events_; }
  std::uint64_t packets_transmitted() const { return packets_; }  // packet hops

  Ps tx_ps(std::uint64_t bytes) const;  // transmission time of one packet or message piece
  Ps hop_ps() const { return hop_ps_; }
  // Per-link statistics (bytes each way, busy time, utilization over
  // `elapsed`), named "link.<chip><dir><axis>.<what>".
  StatList stats(Ps elapsed) const;

 protected:
  // A message in flight, in a slot that is recycled once it is delivered
  // (events name the slot; the id goes back to the caller), so that long
  // runs keep no per-message memory and allocate nothing once warm.
  struct Msg {
    std::uint64_t id = 0;
    std::uint64_t tag = 0;
    int src = 0;
    int dst = 0;
    std::uint64_t bytes = 0;
    std::uint64_t packets = 0;  // packet count
    std::uint32_t hops = 0;     // route length; the links are route(slot)
  };
  virtual void on_send(std::uint32_t slot, Ps at) = 0;
  // Reports the message and frees its slot: no event may name it after.
  void delivered(std::uint32_t slot, Ps t, std::vector<Delivery>& out);
  const Msg& msg(std::uint32_t slot) const { return msgs_[slot]; }
  const int* route(std::uint32_t slot) const { return route_pool_.data() + std::size_t{slot} * route_stride_; }
  std::uint64_t packet_size(const Msg& m, std::uint64_t index) const;
  // Transmission time of the whole message: the sum over its packets.
  Ps message_tx(const Msg& m) const;

  const Slice& slice_;
  NetworkOptions options_;
  double ps_per_byte_ = 0;
  Ps hop_ps_ = 0;
  Ps now_ = 0;
  std::vector<Msg> msgs_;            // slots
  std::vector<std::uint32_t> free_;  // slots of delivered messages
  std::vector<int> route_scratch_;   // send() without a route
  // Routes of all slots in one array, route_stride_ ints per slot: reading
  // a route at delivery was a cache miss per message with a vector each.
  std::vector<int> route_pool_;
  std::size_t route_stride_ = 0;
  std::vector<LinkStats> links_;
  std::vector<std::uint64_t> chip_sent_, chip_recv_;
  std::uint64_t next_id_ = 0;
  std::uint64_t in_flight_ = 0;
  std::uint64_t events_ = 0;
  std::uint64_t packets_ = 0;
};

// The network keeps a reference to `slice`, which must outlive it.
std::unique_ptr<Network> make_network(const Slice& slice, const NetworkOptions& options);

}  // namespace tpusim::arch::ici
