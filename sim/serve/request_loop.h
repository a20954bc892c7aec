// The request bookkeeping the serving event loops share (server.cpp's
// colocated loop, disaggregated.cpp's prefill/decode pairs): the requests'
// records and per-sequence state, the arrival order (open or closed loop),
// the clock with its queue integrals (Little's law), a sequence's tokens
// and a request's completion. `SeqT` is the loop's per-sequence state; it
// has `generated` and `last_token`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "sim/cli/cli.h"
#include "sim/serve/server.h"

namespace tpusim::sim::serve {

template <typename SeqT>
class RequestLoop {
 protected:
  // Records `reqs`; each needs at most the KV pages of one replica
  // (`holder` names it in the error) for its whole length plus
  // `extra_tokens`.
  RequestLoop(const std::vector<Request>& reqs, const ServerOptions& opt,
              const std::function<void(std::int64_t, std::int64_t)>& progress, std::int64_t extra_tokens,
              const char* holder)
      : opt_(opt), progress_(progress), seqs_(reqs.size()) {
    res_.kv_capacity = opt.kv_pages;
    res_.requests.resize(reqs.size());
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      res_.requests[i].req = reqs[i];
      const std::int64_t need = pages(reqs[i].input + reqs[i].output + extra_tokens);
      if (need > opt.kv_pages)
        throw UsageError("serve: request " + std::to_string(i) + " (" + std::to_string(reqs[i].input) + " in, " +
                         std::to_string(reqs[i].output) + " out) needs " + std::to_string(need) + " KV pages but " +
                         holder + " holds " + std::to_string(opt.kv_pages));
    }
    if (opt.arrival == Arrival::closed) {
      for (auto& r : res_.requests) r.req.arrival = 0;
      next_closed_ = std::min<std::size_t>(reqs.size(), static_cast<std::size_t>(opt.concurrency));
      for (std::size_t i = 0; i < next_closed_; ++i) arrivals_.push_back(static_cast<int>(i));
    } else {
      for (std::size_t i = 0; i < reqs.size(); ++i) arrivals_.push_back(static_cast<int>(i));
      std::stable_sort(arrivals_.begin(), arrivals_.end(), [&](int a, int b) { return arr(a) < arr(b); });
    }
  }

  double arr(int id) const { return res_.requests[static_cast<std::size_t>(id)].req.arrival; }
  std::int64_t pages(std::int64_t tokens) const { return (tokens + opt_.page_tokens - 1) / opt_.page_tokens; }
  SeqT& seq(int id) { return seqs_[static_cast<std::size_t>(id)]; }
  RequestRecord& rec(int id) { return res_.requests[static_cast<std::size_t>(id)]; }
  // Time of the next arrival (infinity when none is left).
  double next_arrival_time() const {
    return next_arrival_ < arrivals_.size() ? arr(arrivals_[next_arrival_])
                                            : std::numeric_limits<double>::infinity();
  }

  // Moves the clock to `t`, integrating the requests in the system and
  // waiting; returns the interval, for the loop's own integrals.
  double step_clock(double t) {
    const double dt = t - now_;
    res_.in_system_integral += static_cast<double>(in_system_) * dt;
    res_.waiting_integral += static_cast<double>(waiting_) * dt;
    now_ = t;
    return dt;
  }

  // The index of the least loaded of `n` replicas (the first on a tie).
  template <typename Load>
  static std::size_t least_loaded(std::size_t n, Load load) {
    std::size_t best = 0, least = std::numeric_limits<std::size_t>::max();
    for (std::size_t r = 0; r < n; ++r) {
      const std::size_t l = load(r);
      if (l < least) {
        least = l;
        best = r;
      }
    }
    return best;
  }

  // Sequence `id` emits one token now.
  void token(int id) {
    SeqT& s = seq(id);
    RequestRecord& r = rec(id);
    ++s.generated;
    if (r.first_token < 0) r.first_token = now_;
    if (s.last_token >= 0) r.itl.push_back(now_ - s.last_token);
    s.last_token = now_;
  }

  // Request `id` has finished: a closed loop sends the next request.
  void request_done(int id) {
    rec(id).finish = now_;
    --in_system_;
    ++done_;
    if (opt_.arrival == Arrival::closed && next_closed_ < seqs_.size()) {
      rec(static_cast<int>(next_closed_)).req.arrival = now_;
      arrivals_.push_back(static_cast<int>(next_closed_++));
    }
    if (progress_) progress_(done_, static_cast<std::int64_t>(seqs_.size()));
  }

  const ServerOptions& opt_;
  const std::function<void(std::int64_t, std::int64_t)>& progress_;
  std::vector<SeqT> seqs_;
  ServeResult res_;
  std::vector<int> arrivals_;
  std::size_t next_arrival_ = 0, next_closed_ = 0;
  double now_ = 0;
  std::int64_t in_system_ = 0, waiting_ = 0, done_ = 0;
};

}  // namespace tpusim::sim::serve
