// Prefill/decode disaggregation: each replica is a prefill instance and a
// decode instance on separate slices, each with its own step costs
// (StepCostModel of its own slice and mesh). The prefill instance runs
// prefill-only steps (FCFS, prompts chunked at the token budget) and a
// request's first token comes at the end of the step that prefills its
// last chunk; its K/V then cross to the decode instance over a link of a
// stated bandwidth (one transfer at a time per replica, FIFO), and the
// decode instance runs decode-only steps of up to max_batch sequences.
// The decode instance admits a sequence (FCFS) when pages for its whole
// length (input + output) are free, so it never preempts.
// Leaves out: the prefill instance's KV capacity (it holds only the
// prompts in flight), overlap of transfers with the prefill of later
// chunks (a transfer starts when the prompt's last chunk ends), speculative
// decoding, static batching.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/serve/server.h"

namespace tpusim::sim::serve {

struct Disaggregation {
  double kv_bytes_per_token = 0;  // K/V bytes of one token, whole model (what crosses the link)
  double link_bw = 0;             // bytes/s between a replica's prefill and decode slices
};

// `opt` gives max_batch (decode instance), max_tokens (prefill budget),
// page_tokens, kv_pages (decode instance), replicas, arrival and
// concurrency; `prefill` and `decode` are the two instances' step costs.
// StepRecord::replica is 2 x replica for prefill steps and 2 x replica + 1
// for decode steps; kv pages are the decode instance's.
ServeResult simulate_disaggregated(const std::vector<Request>& requests, const ServerOptions& opt,
                                   const Disaggregation& dis, StepCostModel& prefill, StepCostModel& decode,
                                   const std::function<void(std::int64_t, std::int64_t)>& progress = {});

}  // namespace tpusim::sim::serve
