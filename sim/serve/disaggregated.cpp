// The event loop of disaggregated prefill and decode (see disaggregated.h).
#include "sim/serve/disaggregated.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "sim/cli/cli.h"
#include "sim/serve/request_loop.h"

namespace tpusim::sim::serve {

namespace {

struct DSeq {
  std::int64_t prefilled = 0, generated = 0, cache = 0, pages = 0;
  double last_token = -1;
};

struct Pair {
  // Prefill instance: FCFS queue (the head may be part-prefilled) and the
  // step in flight.
  std::deque<int> pwait;
  std::vector<std::pair<int, std::int64_t>> pstep;
  bool pbusy = false;
  double pend = 0;
  double link_free = 0;  // the link carries one transfer at a time
  // Decode instance.
  std::deque<int> dwait;
  std::vector<int> running;
  std::int64_t free_pages = 0;
  bool dbusy = false;
  double dend = 0;
};

class DisaggLoop : RequestLoop<DSeq> {
 public:
  DisaggLoop(const std::vector<Request>& reqs, const ServerOptions& opt, const Disaggregation& dis,
             StepCostModel& prefill, StepCostModel& decode,
             const std::function<void(std::int64_t, std::int64_t)>& progress)
      : RequestLoop(reqs, opt, progress, 0, "a decode instance"),
        dis_(dis),
        prefill_(prefill),
        decode_(decode),
        pairs_(static_cast<std::size_t>(opt.replicas)) {
    for (auto& p : pairs_) p.free_pages = opt.kv_pages;
  }

  ServeResult run() {
    const double inf = std::numeric_limits<double>::infinity();
    while (done_ < static_cast<std::int64_t>(seqs_.size())) {
      const double t_arr = next_arrival_time();
      const double t_xfer = transfers_.empty() ? inf : transfers_.begin()->first;
      double t_step = inf;
      std::size_t who = 0;
      bool decode_step = false;
      for (std::size_t r = 0; r < pairs_.size(); ++r) {
        if (pairs_[r].pbusy && pairs_[r].pend < t_step) {
          t_step = pairs_[r].pend;
          who = r;
          decode_step = false;
        }
        if (pairs_[r].dbusy && pairs_[r].dend < t_step) {
          t_step = pairs_[r].dend;
          who = r;
          decode_step = true;
        }
      }
      const double t = std::min({t_arr, t_xfer, t_step});
      if (t == inf) throw std::logic_error("serve: no event left with requests unfinished (disaggregated)");
      advance(t);
      if (t_arr == t) {
        dispatch(arrivals_[next_arrival_++]);
      } else if (t_xfer == t) {
        const auto [id, r] = transfers_.begin()->second;
        transfers_.erase(transfers_.begin());
        pairs_[r].dwait.push_back(id);
      } else if (decode_step) {
        finish_decode(who);
      } else {
        finish_prefill(who);
      }
      for (std::size_t r = 0; r < pairs_.size(); ++r) {
        if (!pairs_[r].pbusy) start_prefill(r);
        if (!pairs_[r].dbusy) start_decode(r);
      }
    }
    res_.end_time = now_;
    return std::move(res_);
  }

 private:
  const Disaggregation& dis_;
  StepCostModel& prefill_;
  StepCostModel& decode_;
  std::vector<Pair> pairs_;
  std::multimap<double, std::pair<int, std::size_t>> transfers_;  // arrival at the decode instance

  void advance(double t) {
    const double dt = step_clock(t);
    for (const auto& p : pairs_) res_.kv_pages_integral += static_cast<double>(opt_.kv_pages - p.free_pages) * dt;
  }

  void dispatch(int id) {
    const std::size_t best = least_loaded(pairs_.size(), [&](std::size_t r) {
      return pairs_[r].pwait.size() + pairs_[r].dwait.size() + pairs_[r].running.size();
    });
    rec(id).replica = static_cast<int>(best);
    pairs_[best].pwait.push_back(id);
    ++in_system_;
    ++waiting_;
  }

  void start_prefill(std::size_t r) {
    Pair& p = pairs_[r];
    p.pstep.clear();
    std::int64_t budget = opt_.max_tokens;
    for (std::size_t i = 0; i < p.pwait.size() && budget > 0; ++i) {
      const int id = p.pwait[i];
      const std::int64_t left = rec(id).req.input - seq(id).prefilled;
      std::int64_t chunk = std::min(left, budget);
      if (!opt_.chunked_prefill && chunk < left) {
        if (!p.pstep.empty()) break;  // a prompt longer than the budget runs alone
        chunk = left;
      }
      p.pstep.emplace_back(id, chunk);
      budget -= chunk;
      if (rec(id).scheduled < 0) {
        rec(id).scheduled = now_;
        --waiting_;
      }
    }
    if (p.pstep.empty()) return;
    StepShape shape;
    PrefillChunks chunks;
    for (const auto& [id, chunk] : p.pstep) chunks.add(chunk, seq(id).prefilled);
    chunks.shape_into(shape);
    const double dt = prefill_.cost(shape);
    p.pbusy = true;
    p.pend = now_ + dt;
    StepRecord st;
    st.replica = static_cast<int>(2 * r);
    st.start = now_;
    st.duration = dt;
    st.prefill_tokens = shape.prefill;
    st.prefill_prefix = shape.prefix;
    st.prefill_chunks = shape.chunks;
    st.prefill_seqs = static_cast<std::int64_t>(p.pstep.size());
    st.running = st.prefill_seqs;
    st.waiting = static_cast<std::int64_t>(p.pwait.size() - p.pstep.size());
    res_.steps.push_back(st);
  }

  void finish_prefill(std::size_t r) {
    Pair& p = pairs_[r];
    p.pbusy = false;
    for (const auto& [id, chunk] : p.pstep) {
      DSeq& s = seq(id);
      s.prefilled += chunk;
      if (s.prefilled < rec(id).req.input) continue;
      p.pwait.erase(std::find(p.pwait.begin(), p.pwait.end(), id));
      token(id);  // the first token, from the prefill instance
      if (s.generated >= rec(id).req.output) {
        request_done(id);
        continue;
      }
      // Its K/V cross to the decode instance, after the link's earlier
      // transfers.
      const double start = std::max(now_, p.link_free);
      p.link_free = start + static_cast<double>(rec(id).req.input) * dis_.kv_bytes_per_token / dis_.link_bw;
      transfers_.emplace(p.link_free, std::make_pair(id, r));
      s.cache = s.prefilled;
    }
    p.pstep.clear();
  }

  void start_decode(std::size_t r) {
    Pair& p = pairs_[r];
    while (!p.dwait.empty() && static_cast<std::int64_t>(p.running.size()) < opt_.max_batch) {
      const int id = p.dwait.front();
      const std::int64_t need = pages(rec(id).req.input + rec(id).req.output);
      if (need > p.free_pages) break;  // FCFS
      p.dwait.pop_front();
      p.free_pages -= need;
      seq(id).pages = need;
      p.running.push_back(id);
    }
    if (p.running.empty()) return;
    StepShape shape;
    double ctx = 0;
    for (int id : p.running) ctx += static_cast<double>(seq(id).cache);
    shape.decode = static_cast<std::int64_t>(p.running.size());
    shape.context = ctx / static_cast<double>(shape.decode);
    const double dt = decode_.cost(shape);
    p.dbusy = true;
    p.dend = now_ + dt;
    StepRecord st;
    st.replica = static_cast<int>(2 * r + 1);
    st.start = now_;
    st.duration = dt;
    st.decode_seqs = shape.decode;
    st.mean_context = shape.context;
    st.running = shape.decode;
    st.waiting = static_cast<std::int64_t>(p.dwait.size());
    st.kv_pages_used = opt_.kv_pages - p.free_pages;
    res_.kv_pages_peak = std::max(res_.kv_pages_peak, st.kv_pages_used);
    res_.steps.push_back(st);
  }

  void finish_decode(std::size_t r) {
    Pair& p = pairs_[r];
    p.dbusy = false;
    std::vector<int> keep;
    for (int id : p.running) {
      DSeq& s = seq(id);
      ++s.cache;
      token(id);
      if (s.generated >= rec(id).req.output) {
        p.free_pages += s.pages;
        s.pages = 0;
        request_done(id);
      } else {
        keep.push_back(id);
      }
    }
    for (auto it = res_.steps.rbegin(); it != res_.steps.rend(); ++it)
      if (it->replica == static_cast<int>(2 * r + 1)) {
        it->decode_tokens_out = static_cast<std::int64_t>(p.running.size());
        break;
      }
    p.running = std::move(keep);
  }
};

}  // namespace

ServeResult simulate_disaggregated(const std::vector<Request>& requests, const ServerOptions& opt,
                                   const Disaggregation& dis, StepCostModel& prefill, StepCostModel& decode,
                                   const std::function<void(std::int64_t, std::int64_t)>& progress) {
  if (opt.replicas < 1 || opt.max_batch < 1 || opt.max_tokens < 1 || opt.page_tokens < 1)
    throw UsageError("serve: --replicas, --max-batch, --max-tokens and --page-size must be >= 1");
  if (!(dis.kv_bytes_per_token > 0 && dis.link_bw > 0))
    throw UsageError("serve: disaggregation needs the K/V bytes per token and the link bandwidth, both > 0");
  if (opt.spec.k > 0 || opt.batching == Batching::static_batch)
    throw UsageError("serve: disaggregated serving takes neither --spec-tokens nor --batching static");
  DisaggLoop loop(requests, opt, dis, prefill, decode, progress);
  return loop.run();
}

}  // namespace tpusim::sim::serve
