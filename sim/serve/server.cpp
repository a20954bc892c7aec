// The serving event loop (see server.h).
#include "sim/serve/server.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

#include "sim/cli/cli.h"
#include "sim/serve/request_loop.h"

namespace tpusim::sim::serve {

namespace {

struct Seq {
  std::int64_t prompt = 0;     // tokens to prefill (input, + generated after a preemption)
  std::int64_t prefilled = 0;  // of prompt, in the cache
  std::int64_t generated = 0;  // output tokens so far
  std::int64_t cache = 0;      // tokens whose K/V are cached
  std::int64_t pages = 0;
  bool decoding = false;
  bool swapped = false;  // K/V in host memory (swap preemption)
  double last_token = -1;
};

struct Work {
  int seq = 0;
  std::int64_t chunk = 0;  // prefill tokens; 0 = one decode token
};

struct Replica {
  std::vector<int> running;  // admission order
  std::deque<int> waiting;
  std::int64_t free_pages = 0;
  bool busy = false;
  double step_end = 0;
  std::vector<Work> step;
  double swap_bytes = 0;  // host-link traffic planned for the next step
  // static batching: the batch being served (padding included)
  std::vector<int> batch;
  AdapterCache adapters;                                  // LoRA: resident adapters, host link
  double wake = std::numeric_limits<double>::infinity();  // idle until an adapter load ends
};

// Drafted tokens accepted in one verification, drawn from the model.
std::int64_t accepted(const SpecDecoding& s, Rng& rng) {
  switch (s.kind) {
    case SpecDecoding::Kind::constant:
    case SpecDecoding::Kind::positions: {
      std::int64_t n = 0;
      while (n < s.k) {
        const double a = s.kind == SpecDecoding::Kind::constant ? s.a[0] : s.a[static_cast<std::size_t>(n)];
        if (rng.uniform() >= a) break;
        ++n;
      }
      return n;
    }
    case SpecDecoding::Kind::histogram: {
      double total = 0;
      for (double w : s.a) total += w;
      double u = rng.uniform() * total;
      for (std::size_t j = 0; j < s.a.size(); ++j) {
        if (u < s.a[j]) return static_cast<std::int64_t>(j);
        u -= s.a[j];
      }
      return static_cast<std::int64_t>(s.a.size()) - 1;
    }
  }
  return 0;
}

class Loop : RequestLoop<Seq> {
 public:
  Loop(const std::vector<Request>& reqs, const ServerOptions& opt, StepCostModel& costs,
       const std::function<void(std::int64_t, std::int64_t)>& progress, StepCostModel* draft)
      : RequestLoop(reqs, opt, progress, opt.spec.k, "a replica"),
        costs_(costs),
        draft_(draft),
        reps_(static_cast<std::size_t>(opt.replicas)),
        accept_rng_(opt.spec.seed * 2 + 3) {
    for (auto& r : reps_) {
      r.free_pages = opt.kv_pages;
      r.adapters = AdapterCache(opt.lora.slots, opt.lora.load_seconds);
    }
  }

  ServeResult run() {
    const double inf = std::numeric_limits<double>::infinity();
    while (done_ < static_cast<std::int64_t>(seqs_.size())) {
      double t_arr = next_arrival_time();
      double t_step = inf;
      std::size_t who = 0;
      double t_wake = inf;
      for (std::size_t r = 0; r < reps_.size(); ++r) {
        if (reps_[r].busy && reps_[r].step_end < t_step) {
          t_step = reps_[r].step_end;
          who = r;
        }
        if (!reps_[r].busy) t_wake = std::min(t_wake, reps_[r].wake);
      }
      if (t_arr == inf && t_step == inf && t_wake == inf)
        throw std::logic_error("serve: no event left with requests unfinished");
      if (t_wake < t_arr && t_wake < t_step) {
        advance(t_wake);  // an adapter load ended: the idle replicas plan again below
      } else if (t_arr <= t_step) {
        advance(t_arr);
        const int id = arrivals_[next_arrival_++];
        dispatch(id);
      } else {
        advance(t_step);
        finish_step(who);
      }
      for (std::size_t r = 0; r < reps_.size(); ++r)
        if (!reps_[r].busy) start_step(r);
    }
    res_.end_time = now_;
    for (const auto& r : reps_) {
      res_.adapter_loads += r.adapters.loads();
      res_.adapter_evictions += r.adapters.evictions();
    }
    return std::move(res_);
  }

 private:
  StepCostModel& costs_;
  StepCostModel* draft_;
  std::vector<Replica> reps_;
  Rng accept_rng_;
  std::int64_t lookahead() const { return opt_.spec.k; }  // extra K/V slots a verification writes

  void advance(double t) {
    const double dt = step_clock(t);
    for (const auto& r : reps_) res_.kv_pages_integral += static_cast<double>(opt_.kv_pages - r.free_pages) * dt;
  }

  void dispatch(int id) {
    const std::size_t best = least_loaded(reps_.size(), [&](std::size_t r) {
      return reps_[r].running.size() + reps_[r].waiting.size() + reps_[r].batch.size();
    });
    rec(id).replica = static_cast<int>(best);
    Seq& s = seq(id);
    s.prompt = rec(id).req.input;
    reps_[best].waiting.push_back(id);
    ++in_system_;
    ++waiting_;
  }

  void admit(Replica& rp, int id) {
    rp.running.push_back(id);
    if (rec(id).scheduled < 0) {
      rec(id).scheduled = now_;
      --waiting_;
    }
  }

  // Frees the latest admitted running sequence (not `keep`): recompute.
  bool preempt_one(Replica& rp, int keep, std::int64_t* count) {
    for (auto it = rp.running.rbegin(); it != rp.running.rend(); ++it) {
      const int v = *it;
      if (v == keep) continue;
      Seq& s = seq(v);
      rp.free_pages += s.pages;
      s.pages = 0;
      if (opt_.preemption == Preemption::swap) {
        // Its cached tokens go to host memory; prompt, progress and
        // generated tokens stay.
        s.swapped = true;
        rp.swap_bytes += static_cast<double>(s.cache) * opt_.kv_bytes_per_token;
        res_.swapped_out_tokens += s.cache;
      } else {
        s.prompt = rec(v).req.input + s.generated;
        s.prefilled = 0;
        s.cache = 0;
        s.decoding = false;
      }
      ++rec(v).preemptions;
      ++*count;
      rp.running.erase(std::next(it).base());
      rp.waiting.push_front(v);
      for (auto& w : rp.step)
        if (w.seq == v) w.seq = -1;
      return true;
    }
    return false;
  }

  bool grow(Replica& rp, int id, std::int64_t tokens_after) {
    Seq& s = seq(id);
    const std::int64_t need = pages(tokens_after) - s.pages;
    if (need <= 0) return true;
    if (need > rp.free_pages) return false;
    rp.free_pages -= need;
    s.pages += need;
    return true;
  }

  void start_step(std::size_t r) {
    Replica& rp = reps_[r];
    rp.step.clear();
    rp.wake = std::numeric_limits<double>::infinity();
    const std::int64_t loads0 = rp.adapters.loads();
    std::int64_t preempted = 0;
    if (opt_.batching == Batching::static_batch)
      plan_static(rp);
    else
      plan_continuous(rp, &preempted);
    rp.step.erase(std::remove_if(rp.step.begin(), rp.step.end(), [](const Work& w) { return w.seq < 0; }),
                  rp.step.end());
    if (rp.step.empty()) return;
    StepShape shape;
    double ctx = 0;
    PrefillChunks prefill_chunks;
    StepRecord st;
    for (const auto& w : rp.step) {
      if (w.chunk > 0) {
        prefill_chunks.add(w.chunk, seq(w.seq).prefilled);
        ++st.prefill_seqs;
      } else {
        ++shape.decode;
        ctx += static_cast<double>(std::max<std::int64_t>(1, seq(w.seq).cache));
      }
    }
    if (opt_.batching == Batching::static_batch && shape.decode > 0) {
      // Padding: finished sequences of the batch still take their rows.
      shape.decode = static_cast<std::int64_t>(rp.batch.size());
      ctx = 0;
      for (int id : rp.batch) ctx += static_cast<double>(std::max<std::int64_t>(1, seq(id).cache));
    }
    shape.context = shape.decode > 0 ? ctx / static_cast<double>(shape.decode) : 0;
    prefill_chunks.shape_into(shape);
    if (opt_.lora.on()) {
      std::set<std::int64_t> used;
      if (opt_.batching == Batching::static_batch && shape.decode > 0)
        for (int id : rp.batch) used.insert(rec(id).req.adapter);
      else
        for (const auto& w : rp.step) used.insert(rec(w.seq).req.adapter);
      used.erase(-1);
      shape.adapters = static_cast<std::int64_t>(used.size());
      st.adapters = shape.adapters;
    }
    st.adapter_loads = rp.adapters.loads() - loads0;
    double dt = costs_.cost(shape);
    if (rp.swap_bytes > 0) {
      const double t = rp.swap_bytes / opt_.host_link_bw;
      dt += t;
      res_.swap_seconds += t;
      rp.swap_bytes = 0;
    }
    if (opt_.spec.k > 0 && draft_) {
      if (shape.prefill > 0) {
        StepShape chunks;
        prefill_chunks.shape_into(chunks);
        dt += draft_->cost(chunks);
      }
      if (shape.decode > 0) dt += static_cast<double>(opt_.spec.k) * draft_->cost({0, shape.decode, shape.context});
    }
    rp.busy = true;
    rp.step_end = now_ + dt;
    st.replica = static_cast<int>(r);
    st.start = now_;
    st.duration = dt;
    st.prefill_tokens = shape.prefill;
    st.decode_seqs = shape.decode;
    st.mean_context = shape.context;
    st.prefill_prefix = shape.prefix;
    st.prefill_chunks = shape.prefill > 0 ? shape.chunks : 0;
    st.running = static_cast<std::int64_t>(opt_.batching == Batching::static_batch ? rp.batch.size()
                                                                                    : rp.running.size());
    st.waiting = static_cast<std::int64_t>(rp.waiting.size());
    st.kv_pages_used = opt_.kv_pages - rp.free_pages;
    st.preempted = preempted;
    res_.kv_pages_peak = std::max(res_.kv_pages_peak, st.kv_pages_used);
    res_.steps.push_back(st);
  }

  void plan_continuous(Replica& rp, std::int64_t* preempted) {
    std::int64_t budget = opt_.max_tokens;
    auto decodes = [&] {
      // Admission order; each decode needs room for one more token, made
      // by preempting the latest admitted sequences. A sequence alone
      // always fits (its whole length was checked against the capacity).
      for (std::size_t i = 0; i < rp.running.size() && budget > 0; ++i) {
        const int id = rp.running[i];
        Seq& s = seq(id);
        if (!s.decoding || planned(rp, id)) continue;
        while (!grow(rp, id, s.cache + 1 + lookahead()))
          if (!preempt_one(rp, id, preempted)) throw std::logic_error("serve: a lone sequence outgrew the KV cache");
        i = static_cast<std::size_t>(std::find(rp.running.begin(), rp.running.end(), id) - rp.running.begin());
        rp.step.push_back({id, 0});
        --budget;
      }
    };
    auto prefills = [&] {
      // Sequences mid-prefill first, then admissions in FCFS order.
      for (int id : rp.running) {
        if (budget <= 0) return;
        Seq& s = seq(id);
        if (s.decoding) continue;
        std::int64_t chunk = std::min(s.prompt - s.prefilled, budget);
        if (!opt_.chunked_prefill && chunk < s.prompt - s.prefilled) continue;
        if (!grow(rp, id, s.prefilled + chunk)) {
          // Chunked: as much as the free pages hold; whole prompts wait.
          chunk = opt_.chunked_prefill ? (rp.free_pages + s.pages) * opt_.page_tokens - s.prefilled : 0;
          if (chunk <= 0 || !grow(rp, id, s.prefilled + chunk)) continue;
        }
        rp.step.push_back({id, chunk});
        budget -= chunk;
      }
      while (!rp.waiting.empty() && budget > 0 && static_cast<std::int64_t>(rp.running.size()) < opt_.max_batch) {
        const int id = rp.waiting.front();
        Seq& s = seq(id);
        if (s.swapped) {
          if (!swap_in(rp, id, &budget)) return;  // FCFS: no overtaking
          continue;
        }
        std::int64_t chunk = std::min(s.prompt, budget);
        if (!opt_.chunked_prefill && chunk < s.prompt) {
          // A prompt longer than the budget runs alone in its own step.
          if (!rp.step.empty() || budget < opt_.max_tokens) return;
          chunk = s.prompt;
        }
        if (pages(chunk) > rp.free_pages) return;  // FCFS: no overtaking
        if (!adapter_ready(rp, id)) break;
        rp.waiting.pop_front();
        admit(rp, id);
        grow(rp, id, chunk);
        rp.step.push_back({id, chunk});
        budget -= chunk;
      }
    };
    if (opt_.priority == Priority::decode_first) {
      decodes();
      prefills();
    } else {
      prefills();
      decodes();
    }
    prefetch_adapters(rp);
  }

  // LoRA: the adapters of running sequences (and of a static batch) stay.
  std::set<std::int64_t> pinned_adapters(const Replica& rp) {
    std::set<std::int64_t> p;
    for (int id : rp.running) p.insert(rec(id).req.adapter);
    for (int id : rp.batch) p.insert(rec(id).req.adapter);
    return p;
  }

  // True when request `id` may be admitted now as far as its adapter goes:
  // none, or resident and loaded (then marked used). Otherwise a load is
  // started if a slot can be had, and the replica wakes at its end when
  // it has nothing else to do.
  bool adapter_ready(Replica& rp, int id) {
    const std::int64_t a = rec(id).req.adapter;
    if (!opt_.lora.on() || a < 0) return true;
    const std::set<std::int64_t> pin = pinned_adapters(rp);
    const double ready = rp.adapters.acquire(a, now_, [&](std::int64_t x) { return pin.count(x) != 0; });
    if (ready <= now_) {
      rp.adapters.touch(a);
      return true;
    }
    rp.wake = std::min(rp.wake, ready);
    return false;
  }

  // Loads ahead the adapters of waiting requests, in queue order, while a
  // slot is free or held by an adapter no running or earlier waiting
  // request needs.
  void prefetch_adapters(Replica& rp) {
    if (!opt_.lora.on()) return;
    std::set<std::int64_t> pin = pinned_adapters(rp);
    std::int64_t scanned = 0;
    for (int id : rp.waiting) {
      if (++scanned > opt_.max_batch) break;
      const std::int64_t a = rec(id).req.adapter;
      if (a < 0) continue;
      const double ready = rp.adapters.acquire(a, now_, [&](std::int64_t x) { return pin.count(x) != 0; });
      if (ready == AdapterCache::kNever) break;
      pin.insert(a);
      if (ready > now_) rp.wake = std::min(rp.wake, ready);
    }
  }

  bool planned(const Replica& rp, int id) const {
    return std::any_of(rp.step.begin(), rp.step.end(), [&](const Work& w) { return w.seq == id; });
  }

  // Readmits a swapped sequence when its pages fit: its K/V come back over
  // the host link, and it goes on where it stopped in this same step (a
  // decode, or its next prefill chunk). False when it does not fit.
  bool swap_in(Replica& rp, int id, std::int64_t* budget) {
    Seq& s = seq(id);
    // Room for its cache and the next token: a sequence readmitted alone
    // always fits (its whole length was checked against the capacity).
    if (pages(s.cache + 1 + (s.decoding ? lookahead() : 0)) > rp.free_pages) return false;
    rp.waiting.pop_front();
    admit(rp, id);
    grow(rp, id, s.cache);
    s.swapped = false;
    rp.swap_bytes += static_cast<double>(s.cache) * opt_.kv_bytes_per_token;
    res_.swapped_in_tokens += s.cache;
    if (s.decoding) {
      if (grow(rp, id, s.cache + 1 + lookahead())) {
        rp.step.push_back({id, 0});
        --*budget;
      }
    } else {
      const std::int64_t chunk = std::min(s.prompt - s.prefilled, *budget);
      if (chunk > 0 && (opt_.chunked_prefill || chunk == s.prompt - s.prefilled) && grow(rp, id, s.prefilled + chunk)) {
        rp.step.push_back({id, chunk});
        *budget -= chunk;
      }
    }
    return true;
  }

  void plan_static(Replica& rp) {
    if (rp.batch.empty()) {
      // A new batch: FCFS, pages for each request's whole length reserved.
      while (!rp.waiting.empty() && static_cast<std::int64_t>(rp.batch.size()) < opt_.max_batch) {
        const int id = rp.waiting.front();
        const std::int64_t need = pages(rec(id).req.input + rec(id).req.output);
        if (need > rp.free_pages || !adapter_ready(rp, id)) break;
        rp.waiting.pop_front();
        rp.free_pages -= need;
        seq(id).pages = need;
        rp.batch.push_back(id);
        admit(rp, id);
      }
      if (rp.batch.empty()) return;
    }
    std::int64_t budget = opt_.max_tokens;
    for (int id : rp.batch) {
      Seq& s = seq(id);
      if (s.decoding || budget <= 0) continue;
      const std::int64_t chunk = std::min(s.prompt - s.prefilled, budget);
      rp.step.push_back({id, chunk});
      budget -= chunk;
    }
    if (!rp.step.empty()) return;  // prefill the whole batch first
    for (int id : rp.batch)
      if (seq(id).generated < rec(id).req.output) rp.step.push_back({id, 0});
  }

  void finish_step(std::size_t ri) {
    Replica& rp = reps_[ri];
    rp.busy = false;
    std::vector<int> finished;
    std::int64_t produced = 0;
    for (const auto& w : rp.step) {
      Seq& s = seq(w.seq);
      if (w.chunk > 0) {
        s.prefilled += w.chunk;
        s.cache = s.prefilled;
        if (s.prefilled == s.prompt) {
          s.decoding = true;
          token(w.seq);
        }
      } else {
        std::int64_t n = 1;
        if (opt_.spec.k > 0) n = std::min(1 + accepted(opt_.spec, accept_rng_), rec(w.seq).req.output - s.generated);
        for (std::int64_t i = 0; i < n; ++i) {
          ++s.cache;
          token(w.seq);
        }
        produced += n;
      }
      if (s.decoding && s.generated >= rec(w.seq).req.output) finished.push_back(w.seq);
    }
    for (int id : finished) {
      Seq& s = seq(id);
      if (opt_.batching == Batching::continuous) {
        rp.free_pages += s.pages;
        s.pages = 0;
        rp.running.erase(std::find(rp.running.begin(), rp.running.end(), id));
      }
      request_done(id);
    }
    if (opt_.batching == Batching::static_batch) {
      bool all = true;
      for (int id : rp.batch) all = all && rec(id).finish >= 0;
      if (all) {
        for (int id : rp.batch) {
          rp.free_pages += seq(id).pages;
          seq(id).pages = 0;
        }
        rp.batch.clear();
        rp.running.clear();
      }
    }
    rp.step.clear();
    for (auto it = res_.steps.rbegin(); it != res_.steps.rend(); ++it)
      if (it->replica == static_cast<int>(ri)) {
        it->decode_tokens_out = produced;
        break;
      }
  }
};

}  // namespace

double SpecDecoding::expected_tokens() const {
  if (k == 0) return 1;
  switch (kind) {
    case Kind::constant: {
      double e = 0, p = 1;
      for (int j = 0; j <= k; ++j, p *= a[0]) e += p;  // (1 - a^(k+1)) / (1 - a)
      return e;
    }
    case Kind::positions: {
      double e = 1, p = 1;
      for (int j = 0; j < k; ++j) e += (p *= a[static_cast<std::size_t>(j)]);
      return e;
    }
    case Kind::histogram: {
      double e = 0, total = 0;
      for (std::size_t j = 0; j < a.size(); ++j) {
        e += a[j] * static_cast<double>(j + 1);
        total += a[j];
      }
      return e / total;
    }
  }
  return 1;
}

ServeResult simulate_serving(const std::vector<Request>& requests, const ServerOptions& opt, StepCostModel& costs,
                             const std::function<void(std::int64_t, std::int64_t)>& progress, StepCostModel* draft) {
  if (opt.replicas < 1 || opt.max_batch < 1 || opt.max_tokens < 1 || opt.page_tokens < 1)
    throw UsageError("serve: --replicas, --max-batch, --max-tokens and --page-size must be >= 1");
  const SpecDecoding& sp = opt.spec;
  if (sp.k < 0 || sp.k > 64) throw UsageError("serve: --spec-tokens must be in [0, 64]");
  if (sp.k > 0) {
    const std::size_t want = sp.kind == SpecDecoding::Kind::constant    ? 1
                             : sp.kind == SpecDecoding::Kind::positions ? static_cast<std::size_t>(sp.k)
                                                                        : static_cast<std::size_t>(sp.k) + 1;
    double total = 0;
    for (double a : sp.a) total += a;
    bool ok = sp.a.size() == want && total > 0;
    for (double a : sp.a) ok = ok && a >= 0 && (sp.kind == SpecDecoding::Kind::histogram || a <= 1);
    if (sp.kind != SpecDecoding::Kind::histogram && !sp.a.empty() && total == 0) ok = true;  // acceptance 0
    if (!ok)
      throw UsageError("serve: --acceptance: expected " + std::to_string(want) +
                       (sp.kind == SpecDecoding::Kind::histogram ? " weights >= 0 (not all 0)" : " rates in [0, 1]") +
                       " for --spec-tokens " + std::to_string(sp.k) + ", found " + std::to_string(sp.a.size()));
  }
  if (opt.preemption == Preemption::swap && !(opt.kv_bytes_per_token > 0 && opt.host_link_bw > 0))
    throw UsageError(
        "serve: swap preemption needs the K/V bytes per token and the host link bandwidth "
        "(pcie_bandwidth of the chip config), both > 0");
  Loop loop(requests, opt, costs, progress, draft);
  return loop.run();
}

}  // namespace tpusim::sim::serve
