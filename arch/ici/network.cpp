// See network.h.
#include "arch/ici/network.h"

#include <algorithm>
#include <cmath>
#include <queue>

#include "arch/common/errors.h"
#include "arch/common/rounding.h"

namespace tpusim::arch::ici {

const char* to_string(Fidelity f) { return f == Fidelity::packet ? "packet" : "aggregated"; }

Fidelity parse_fidelity(const std::string& s) {
  if (s == "aggregated") return Fidelity::aggregated;
  if (s == "packet") return Fidelity::packet;
  throw ConfigError("ICI fidelity '" + s + "': expected aggregated or packet");
}

Network::Network(const Slice& slice, const NetworkOptions& options)
    : slice_(slice),
      options_(options),
      links_(static_cast<std::size_t>(slice.num_links())),
      chip_sent_(static_cast<std::size_t>(slice.num_chips()), 0),
      chip_recv_(static_cast<std::size_t>(slice.num_chips()), 0) {
  if (options.packet_bytes == 0) throw ConfigError("ICI packet size must be positive");
  // Payload rate: the nominal rate less the protocol's share.
  ps_per_byte_ = 1e12 / (slice.config().link_bandwidth * slice.config().link_efficiency);
  hop_ps_ = static_cast<Ps>(std::llround(slice.config().hop_latency * 1e12));
  for (int d : slice.dims()) route_stride_ += static_cast<std::size_t>(d);  // covers untwisted routes
}

Ps Network::tx_ps(std::uint64_t bytes) const {
  return static_cast<Ps>(round_half_up(static_cast<double>(bytes) * ps_per_byte_));
}

std::uint64_t Network::packet_size(const Msg& m, std::uint64_t index) const {
  const std::uint64_t p = options_.packet_bytes;
  return index + 1 < m.packets ? p : m.bytes - p * (m.packets - 1);
}

Ps Network::message_tx(const Msg& m) const {
  return static_cast<Ps>(m.packets - 1) * tx_ps(options_.packet_bytes) + tx_ps(packet_size(m, m.packets - 1));
}

std::uint64_t Network::send(int src, int dst, std::uint64_t bytes, Ps at) {
  slice_.route_into(src, dst, route_scratch_);
  return send(src, dst, bytes, at, route_scratch_);
}

std::uint64_t Network::send(int src, int dst, std::uint64_t bytes, Ps at, const std::vector<int>& route,
                            std::uint64_t tag) {
  return send(src, dst, bytes, at, route.data(), route.size(), tag);
}

std::uint64_t Network::send(int src, int dst, std::uint64_t bytes, Ps at, const int* route, std::size_t hops,
                            std::uint64_t tag) {
  if (bytes == 0 || src == dst || hops == 0)
    throw InternalError("Network::send: a message needs bytes and two different chips");
  if (at < now_) throw InternalError("Network::send: send time in the past");
  if (hops > UINT16_MAX) throw InternalError("Network::send: route longer than 65535 hops");
  std::uint32_t slot = 0;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    if (msgs_.size() >= UINT32_MAX) throw InternalError("Network::send: too many messages in flight");
    slot = static_cast<std::uint32_t>(msgs_.size());
    msgs_.emplace_back();
    route_pool_.resize(msgs_.size() * route_stride_);
  }
  if (hops > route_stride_) {
    // Longer than any route so far: lay the pool out again, wider (a
    // dimension-order route is at most the sum of the axis lengths, so
    // this happens a few times per network at most).
    const std::size_t wider = std::max<std::size_t>(hops, 2 * route_stride_);
    std::vector<int> pool(msgs_.size() * wider);
    for (std::size_t i = 0; i < msgs_.size(); ++i)
      std::copy_n(route_pool_.begin() + static_cast<std::ptrdiff_t>(i * route_stride_), route_stride_,
                  pool.begin() + static_cast<std::ptrdiff_t>(i * wider));
    route_pool_.swap(pool);
    route_stride_ = wider;
  }
  Msg& m = msgs_[slot];
  const std::uint64_t id = next_id_++;
  m.id = id;
  m.tag = tag;
  m.src = src;
  m.dst = dst;
  m.bytes = bytes;
  m.hops = static_cast<std::uint32_t>(hops);
  std::copy_n(route, hops, route_pool_.begin() + static_cast<std::ptrdiff_t>(std::size_t{slot} * route_stride_));
  m.packets = (bytes + options_.packet_bytes - 1) / options_.packet_bytes;
  chip_sent_[static_cast<std::size_t>(src)] += bytes;
  ++in_flight_;
  on_send(slot, at);
  return id;
}

void Network::delivered(std::uint32_t slot, Ps t, std::vector<Delivery>& out) {
  const Msg& m = msgs_[slot];
  chip_recv_[static_cast<std::size_t>(m.dst)] += m.bytes;
  --in_flight_;
  out.push_back(Delivery{m.id, t, m.tag});
  free_.push_back(slot);
}

StatList Network::stats(Ps elapsed) const {
  StatList s;
  const double el = static_cast<double>(elapsed) * 1e-12;
  for (int l = 0; l < slice_.num_links(); ++l) {
    const Link& k = slice_.link(l);
    std::string name = "link.";
    const std::vector<int> x = slice_.coords(k.src);
    for (std::size_t a = 0; a < x.size(); ++a) name += (a ? "-" : "") + std::to_string(x[a]);
    name += std::string(".") + (k.dir > 0 ? "+" : "-") + "xyz"[k.axis];
    const LinkStats& st = links_[static_cast<std::size_t>(l)];
    const double busy = static_cast<double>(st.busy) * 1e-12;
    s.push_back(
        {name + ".bytes_sent", static_cast<double>(st.bytes_sent), "bytes", "bytes that entered this directed link"});
    s.push_back(
        {name + ".bytes_received", static_cast<double>(st.bytes_received), "bytes", "bytes that reached the far chip"});
    s.push_back({name + ".messages", static_cast<double>(st.messages), "count", "messages routed over this link"});
    s.push_back({name + ".busy", busy, "s", "time spent transmitting"});
    s.push_back({name + ".utilization", el > 0 ? busy / el : 0.0, "ratio", "busy time over the elapsed time"});
  }
  return s;
}

namespace {

// FIFO on a power-of-two ring buffer that keeps its capacity, unlike
// std::deque, which allocates and frees a block every few hundred pushes
// (per link, per message: the allocator was a third of a 256-chip run).
template <class T>
class Ring {
 public:
  bool empty() const { return size_ == 0; }
  T& front() { return buf_[head_]; }
  T& back() { return buf_[(head_ + size_ - 1) & (buf_.size() - 1)]; }
  void push_back(const T& v) {
    if (size_ == buf_.size()) {
      std::vector<T> bigger(std::max<std::size_t>(4, 2 * buf_.size()));
      for (std::size_t i = 0; i < size_; ++i) bigger[i] = buf_[(head_ + i) & (buf_.size() - 1)];
      buf_.swap(bigger);
      head_ = 0;
    }
    buf_[(head_ + size_) & (buf_.size() - 1)] = v;
    ++size_;
  }
  void pop_front() {
    head_ = (head_ + 1) & (buf_.size() - 1);
    --size_;
  }

 private:
  std::vector<T> buf_;
  std::size_t head_ = 0, size_ = 0;
};

// ---------------------------------------------------------------- aggregated
// Whole messages hop by hop: a message's head reaches link j of its route
// (tx of its first packet + hop latency after it started on link j-1) and
// joins that link's FIFO; the link serves whole messages one at a time,
// each occupying it until max(start + tx(message), end on link j-1 + hop
// latency + tx(last packet)). Events: head arrivals, link frees, deliveries.
class AggregatedNetwork final : public Network {
 public:
  AggregatedNetwork(const Slice& s, const NetworkOptions& o)
      : Network(s, o), queues_(static_cast<std::size_t>(s.num_links())) {}

  Ps next_event_time() const override { return heap_.empty() ? kNeverPs : heap_.top().t; }

  void advance_to(Ps t, std::vector<Delivery>& out) override {
    while (!heap_.empty() && heap_.top().t <= t) {
      const Ev e = heap_.top();
      heap_.pop();
      ++events_;
      now_ = e.t;
      switch (e.kind) {
        case Kind::arrive: arrive(e.msg, e.hop, e.t, e.seq); break;
        case Kind::free: free_link(static_cast<int>(e.msg), e.t); break;
        case Kind::deliver: {
          const Msg& m = msg(e.msg);
          const int* r = route(e.msg);
          for (std::uint32_t h = 0; h < m.hops; ++h) links_[static_cast<std::size_t>(r[h])].bytes_received += m.bytes;
          delivered(e.msg, e.t, out);
          break;
        }
      }
    }
    now_ = std::max(now_, t);
  }

 protected:
  void on_send(std::uint32_t slot, Ps at) override {
    if (slot >= prev_end_.size()) prev_end_.resize(static_cast<std::size_t>(slot) + 1, 0);
    prev_end_[slot] = 0;
    // Every event up to now_ has been processed: later than any of them.
    if (at <= now_)
      arrive(slot, 0, now_, UINT64_MAX);
    else
      push(Ev{at, 0, slot, 0, Kind::arrive});
  }

 private:
  enum class Kind : std::uint8_t { arrive, free, deliver };
  struct Ev {
    Ps t;
    std::uint64_t seq;
    std::uint32_t msg;  // message slot; free: link id
    std::uint16_t hop;  // 24-byte events: the heap is most of the time
    Kind kind;
    bool operator>(const Ev& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  // A link's free event is only put on the heap when a message waits for
  // it (most of them found an empty queue and were half the heap), with
  // the sequence number reserved when the transmission began, so that
  // every event keeps its place in (time, creation) order. Invariant: a
  // non-empty queue has its free event on the heap.
  struct Queue {
    Ring<std::pair<std::uint32_t, std::uint32_t>> waiting;  // (slot, hop)
    Ps busy_until = -1;                                     // end of the current transmission
    std::uint64_t free_seq = 0;                             // its free event's place among equal times
  };

  void push(Ev e) {
    e.seq = seq_++;
    heap_.push(e);
  }

  // `seq`: the arrival event's own; the link is still busy at its end
  // time for events ordered before its free event.
  void arrive(std::uint32_t id, std::uint32_t hop, Ps t, std::uint64_t seq) {
    const int link = route(id)[hop];
    Queue& q = queues_[static_cast<std::size_t>(link)];
    const bool busy = q.busy_until > t || (q.busy_until == t && seq < q.free_seq);
    if (!busy) {
      begin(link, id, hop, t);
      return;
    }
    if (q.waiting.empty()) heap_.push(Ev{q.busy_until, q.free_seq, static_cast<std::uint32_t>(link), 0, Kind::free});
    q.waiting.push_back({id, hop});
  }

  void begin(int link, std::uint32_t id, std::uint32_t hop, Ps t) {
    const Msg& m = msg(id);
    const Ps whole = message_tx(m);
    Ps end = t + whole;
    Ps& prev = prev_end_[id];
    if (hop > 0) end = std::max(end, prev + hop_ps_ + tx_ps(packet_size(m, m.packets - 1)));
    prev = end;
    Queue& q = queues_[static_cast<std::size_t>(link)];
    q.busy_until = end;
    q.free_seq = seq_++;
    LinkStats& st = links_[static_cast<std::size_t>(link)];
    st.bytes_sent += m.bytes;
    st.messages += 1;
    st.busy += whole;
    if (hop + 1 == m.hops)
      push(Ev{end + hop_ps_, 0, id, 0, Kind::deliver});
    else
      push(Ev{t + tx_ps(packet_size(m, 0)) + hop_ps_, 0, id, static_cast<std::uint16_t>(hop + 1), Kind::arrive});
  }

  void free_link(int link, Ps t) {
    Queue& q = queues_[static_cast<std::size_t>(link)];
    const auto [id, hop] = q.waiting.front();  // non-empty: see Queue
    q.waiting.pop_front();
    begin(link, id, hop, t);
    if (!q.waiting.empty()) heap_.push(Ev{q.busy_until, q.free_seq, static_cast<std::uint32_t>(link), 0, Kind::free});
  }

  std::vector<Queue> queues_;
  std::vector<Ps> prev_end_;  // per message slot: end on the previous hop
  std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> heap_;
  std::uint64_t seq_ = 0;
};

// -------------------------------------------------------------------- packet
class PacketNetwork final : public Network {
 public:
  PacketNetwork(const Slice& s, const NetworkOptions& o)
      : Network(s, o), queues_(static_cast<std::size_t>(s.num_links())), full_tx_(tx_ps(o.packet_bytes)) {
    events_q_.set_fifo_delays(full_tx_, hop_ps_);
  }

  Ps next_event_time() const override { return events_q_.empty() ? kNeverPs : events_q_.top().t; }

  void advance_to(Ps t, std::vector<Delivery>& out) override {
    while (!events_q_.empty() && events_q_.top().t <= t) {
      const Ev e = events_q_.pop();
      ++events_;
      now_ = e.t;
      switch (e.kind) {
        case Kind::finish: finish(e.a, e.t, out); break;
        case Kind::arrive: arrive(e.msg, e.a, e.b, e.hop, e.t); break;
        case Kind::deliver: delivered(e.msg, e.t, out); break;
      }
    }
    now_ = std::max(now_, t);
  }

 protected:
  void on_send(std::uint32_t id, Ps at) override {
    const Msg& m = msg(id);
    const int* r = route(id);
    for (std::uint32_t h = 0; h < m.hops; ++h) links_[static_cast<std::size_t>(r[h])].messages += 1;
    const std::uint32_t count = static_cast<std::uint32_t>(m.packets);
    if (at <= now_)
      arrive(id, 0, count, 0, now_);
    else
      push(Ev{at, 0, id, 0, count, 0, Kind::arrive});
  }

 private:
  enum class Kind : std::uint8_t { finish, arrive, deliver };
  struct Ev {
    Ps t;
    std::uint64_t seq;
    std::uint32_t msg;  // message slot
    std::uint32_t a;    // finish: link; arrive: first packet
    std::uint32_t b;    // arrive: packet count
    std::uint32_t hop;  // arrive: hop index along the route
    Kind kind;
    bool operator>(const Ev& o) const { return t != o.t ? t > o.t : seq > o.seq; }
    bool operator<(const Ev& o) const { return t != o.t ? t < o.t : seq < o.seq; }
  };
  // Consecutive packets of one message waiting at one link.
  struct Run {
    std::uint32_t msg;
    std::uint32_t first;
    std::uint32_t count;
    std::uint32_t hop;
  };
  struct Queue {
    Ring<Run> runs;
    bool busy = false;
  };

  // Events in (time, creation) order, as one binary heap would give, at
  // O(1) for the common ones. Every event is created while processing time
  // now_ (non-decreasing) for time now_ + delay, so the events of one
  // delay are created in the order they fall due: a FIFO per delay is
  // already sorted. Full-packet transmissions and hop latencies (nearly
  // all events) get a FIFO each; other delays (last partial packets,
  // sends in the future) go to a heap. Popping takes the least head.
  // Profiling showed the heap alone at ~98% of a 1 GiB all_reduce.
  class EventQueue {
   public:
    void set_fifo_delays(Ps a, Ps b) { delay_[0] = a, delay_[1] = b; }
    bool empty() const { return fifo_[0].size + fifo_[1].size + heap_.size() == 0; }
    void push(Ev e, Ps now) {
      e.seq = seq_++;
      const Ps d = e.t - now;
      for (int i = 0; i < 2; ++i)
        if (d == delay_[i]) {
          Fifo& f = fifo_[i];
          if (f.size > 0 && f.back().t > e.t) throw InternalError("PacketNetwork: event created in the past");
          f.push(e);
          return;
        }
      heap_.push(e);
    }
    const Ev& top() const { return *least(); }
    Ev pop() {
      const Ev* p = least();
      const Ev e = *p;
      if (!heap_.empty() && p == &heap_.top())
        heap_.pop();
      else if (fifo_[0].size > 0 && p == &fifo_[0].front())
        fifo_[0].pop();
      else
        fifo_[1].pop();
      return e;
    }

   private:
    struct Fifo {
      std::vector<Ev> buf;  // ring buffer, capacity a power of two
      std::size_t head = 0, size = 0;
      void push(const Ev& e) {
        if (size == buf.size()) {
          std::vector<Ev> bigger(std::max<std::size_t>(64, 2 * buf.size()));
          for (std::size_t i = 0; i < size; ++i) bigger[i] = buf[(head + i) & (buf.size() - 1)];
          buf.swap(bigger);
          head = 0;
        }
        buf[(head + size) & (buf.size() - 1)] = e;
        ++size;
      }
      const Ev& front() const { return buf[head]; }
      const Ev& back() const { return buf[(head + size - 1) & (buf.size() - 1)]; }
      void pop() {
        head = (head + 1) & (buf.size() - 1);
        --size;
      }
    };
    const Ev* least() const {
      const Ev* best = heap_.empty() ? nullptr : &heap_.top();
      for (const Fifo& f : fifo_)
        if (f.size > 0 && (!best || f.front() < *best)) best = &f.front();
      return best;
    }
    Ps delay_[2] = {-1, -1};
    Fifo fifo_[2];
    std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> heap_;
    std::uint64_t seq_ = 0;
  };

  void push(Ev e) { events_q_.push(e, now_); }

  Ps packet_tx(const Msg& m, std::uint32_t index) const {
    return index + 1 < m.packets ? full_tx_ : tx_ps(packet_size(m, index));
  }

  void arrive(std::uint32_t id, std::uint32_t first, std::uint32_t count, std::uint32_t hop, Ps t) {
    const int link = route(id)[hop];
    Queue& q = queues_[static_cast<std::size_t>(link)];
    if (!q.runs.empty()) {
      Run& tail = q.runs.back();
      if (tail.msg == id && tail.hop == hop && tail.first + tail.count == first) {
        tail.count += count;
        return;  // the link is busy: it is serving this queue
      }
    }
    q.runs.push_back(Run{id, first, count, hop});
    if (!q.busy) start(link, t);
  }

  void start(int link, Ps t) {
    Queue& q = queues_[static_cast<std::size_t>(link)];
    const Run& r = q.runs.front();
    const Msg& m = msg(r.msg);
    q.busy = true;
    push(Ev{t + packet_tx(m, r.first), 0, 0, static_cast<std::uint32_t>(link), 0, 0, Kind::finish});
  }

  void finish(std::uint32_t link, Ps t, std::vector<Delivery>& out) {
    Queue& q = queues_[link];
    Run& r = q.runs.front();
    const std::uint32_t id = r.msg;
    const std::uint32_t pkt = r.first;
    const std::uint32_t hop = r.hop;
    const Msg& m = msg(id);
    const std::uint64_t size = packet_size(m, pkt);
    LinkStats& st = links_[link];
    st.bytes_sent += size;
    st.bytes_received += size;
    st.packets += 1;
    st.busy += packet_tx(m, pkt);
    ++packets_;
    ++r.first;
    if (--r.count == 0) q.runs.pop_front();
    q.busy = false;
    if (hop + 1 == m.hops) {
      // Intermediate packets at the destination need no event: only the
      // last one completes the message.
      if (pkt + 1 == m.packets) push(Ev{t + hop_ps_, 0, id, 0, 0, 0, Kind::deliver});
    } else {
      push(Ev{t + hop_ps_, 0, id, pkt, 1, hop + 1, Kind::arrive});
    }
    if (!q.runs.empty()) start(static_cast<int>(link), t);
    (void)out;
  }

  std::vector<Queue> queues_;
  Ps full_tx_;
  EventQueue events_q_;
};

}  // namespace

std::unique_ptr<Network> make_network(const Slice& slice, const NetworkOptions& options) {
  if (options.fidelity == Fidelity::packet) return std::make_unique<PacketNetwork>(slice, options);
  return std::make_unique<AggregatedNetwork>(slice, options);
}

}  // namespace tpusim::arch::ici
