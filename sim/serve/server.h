// The discrete-event simulation of an LLM server: requests arrive, wait,
// are admitted into a running batch, prefilled (in chunks) and decoded one
// token per engine step until done. Step times come from a StepCostModel
// (simulated steps, step_cost.h); this file decides only what each step
// holds.
// Models: continuous batching (a step holds up to max_batch sequences and
// max_tokens tokens: decodes take one token each, prefill chunks the rest),
// chunked prefill, static batching (a batch is formed, prefilled, decoded
// until its longest request ends, finished sequences padding the batch),
// decode-first or prefill-first budget order, FCFS admission, a paged KV
// cache (page_tokens per page, kv_pages per replica; a sequence holds the
// pages of its cached tokens), preemption by recompute (the latest
// admitted sequence frees its pages and later prefills its prompt and its
// generated tokens again) and data-parallel replicas (each its own server,
// arrivals routed to the one with the fewest requests).
// Preemption by swap moves the K/V pages to host memory and back instead.
// Leaves out: prefix caching (disaggregated prefill and decode is its own
// loop, disaggregated.h), network and tokenizer time.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/serve/adapters.h"
#include "sim/serve/request_workload.h"
#include "sim/serve/step_cost.h"

namespace tpusim::sim::serve {

enum class Batching { continuous, static_batch };

// Speculative decoding: a draft model proposes k tokens per decoding
// sequence (k autoregressive draft steps), the target verifies the k + 1
// positions in one step and keeps the accepted prefix plus one token of
// its own (the correction at the first rejection, or the bonus token when
// all k are accepted), so a verification yields 1 + accepted tokens.
// Acceptance models: `constant` (each drafted token accepted with
// probability a[0] given the previous ones were), `positions` (a[i] for
// the (i+1)-th drafted token), `histogram` (a[j] the weight of accepting
// exactly j tokens, j = 0..k). For a constant rate a the expected tokens
// per verification are sum_{j=0..k} a^j = (1 - a^(k+1)) / (1 - a) (k + 1
// at a = 1): Leviathan et al., "Fast Inference from Transformers via
// Speculative Decoding", ICML 2023, eq. (1).
struct SpecDecoding {
  enum class Kind { constant, positions, histogram };
  int k = 0;  // 0: off
  Kind kind = Kind::constant;
  std::vector<double> a;
  std::uint64_t seed = 1;
  double expected_tokens() const;  // per verification, from the model
};
enum class Priority { decode_first, prefill_first };
// What a preempted sequence loses: `recompute` drops its K/V and prefills
// its prompt and generated tokens again when readmitted; `swap` moves its
// K/V pages to host memory over the host link (each chip its own shard
// over its own link, in parallel) and back when it is readmitted, the
// transfers adding to the step that plans them (they sit between steps on
// the replica's critical path, as vLLM's swap does).
enum class Preemption { recompute, swap };

struct ServerOptions {
  Batching batching = Batching::continuous;
  Priority priority = Priority::decode_first;
  std::int64_t max_batch = 64;     // sequences in the running batch
  std::int64_t max_tokens = 2048;  // tokens per step
  bool chunked_prefill = true;
  std::int64_t page_tokens = 16;
  std::int64_t kv_pages = 0;  // per replica
  int replicas = 1;
  Arrival arrival = Arrival::poisson;
  int concurrency = 1;  // closed loop
  SpecDecoding spec;
  // LoRA (sim/serve/adapters.h): adapter slots per replica and load time.
  // A request is admitted once its adapter is resident and loaded (FCFS:
  // the queue head waits for its load); the adapters of waiting requests
  // are loaded ahead while slots are free or evictable.
  LoraServing lora;
  Preemption preemption = Preemption::recompute;
  double kv_bytes_per_token = 0;  // swap: K/V bytes of one token on one chip
  double host_link_bw = 0;        // swap: bytes/s of one chip's host link (pcie_bandwidth)
};

struct RequestRecord {
  Request req;
  int replica = 0;
  double scheduled = -1;    // first admitted into a batch
  double first_token = -1;  // end of the step that finished its prefill
  double finish = -1;
  int preemptions = 0;
  std::vector<double> itl;  // gaps between consecutive output tokens
};

struct StepRecord {
  int replica = 0;
  double start = 0, duration = 0;
  std::int64_t prefill_tokens = 0, prefill_seqs = 0, decode_seqs = 0;
  double mean_context = 0;
  double prefill_prefix = 0;  // the chunks' cached prefix, token-weighted mean (StepShape::prefix)
  double prefill_chunks = 0;  // prefill^2 / sum(chunk^2) (StepShape::chunks); 0 without prefill
  std::int64_t running = 0, waiting = 0, kv_pages_used = 0;
  std::int64_t preempted = 0;
  std::int64_t decode_tokens_out = 0;  // tokens the step's decodes produced (speculative: 1 + accepted each)
  std::int64_t adapters = 0;           // distinct LoRA adapters among the step's sequences
  std::int64_t adapter_loads = 0;      // adapter loads started while planning the step
};

struct ServeResult {
  std::vector<RequestRecord> requests;  // by id
  std::vector<StepRecord> steps;        // in start order
  double end_time = 0;                  // last finish
  // Time integrals over [0, end_time] for Little's law and utilisation.
  double in_system_integral = 0;  // requests arrived and not finished
  double waiting_integral = 0;    // requests arrived and not yet admitted
  double kv_pages_integral = 0;   // pages in use, summed over replicas
  std::int64_t kv_pages_peak = 0; // on any one replica
  std::int64_t kv_capacity = 0;   // pages per replica
  std::int64_t adapter_loads = 0, adapter_evictions = 0;  // over all replicas
  // Swap preemption: tokens whose K/V went to host memory and came back,
  // and the seconds of those transfers (inside the steps' durations).
  std::int64_t swapped_out_tokens = 0, swapped_in_tokens = 0;
  double swap_seconds = 0;
};

// Runs the simulation. Throws UsageError when a request can never fit in
// the KV cache. progress(done, total) is called as requests finish.
// With opt.spec.k > 0, `costs` holds the target's verification steps
// (k + 1 query tokens per decoding sequence) and `draft` the draft
// model's steps; a step then takes the draft's prefill of the step's
// chunk, k draft decode steps of the decoding sequences and the target's
// verification, one after another on the same chips.
ServeResult simulate_serving(const std::vector<Request>& requests, const ServerOptions& opt, StepCostModel& costs,
                             const std::function<void(std::int64_t, std::int64_t)>& progress = {},
                             StepCostModel* draft = nullptr);

}  // namespace tpusim::sim::serve
