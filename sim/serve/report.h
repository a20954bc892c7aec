// What a serving simulation reports: the summary statistics (throughput,
// latency percentiles, goodput under SLOs, KV utilisation) and the files
// requests.csv, steps.csv, summary.csv and trace.json (docs/serving.md
// lists every column).
// Percentiles are nearest-rank on the sorted values (p-th: the value at
// rank ceil(p/100 * n)).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/serve/server.h"

namespace tpusim::sim::serve {

// Latency limits a request must meet to count as good, and the limits on
// summary percentiles --find-max-rate checks. Keys: ttft, tpot, itl, e2e
// with a percentile suffix (_p50, _p90, _p99, _mean), e.g.
// "ttft_p99=2s,tpot_p99=100ms". Goodput counts a request whose own TTFT,
// mean TPOT and end-to-end time meet the limits of those metrics.
struct Slo {
  std::map<std::string, double> limits;  // "ttft_p99" -> seconds
  bool empty() const { return limits.empty(); }
  std::string text;
};
// UsageError naming the bad item.
Slo parse_slo(const std::string& text);

struct Stats {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
  std::size_t n = 0;
};
Stats stats_of(std::vector<double> v);

struct Summary {
  std::int64_t requests = 0;
  double duration = 0;  // first arrival to last finish
  double request_rate = 0, input_tps = 0, output_tps = 0;
  Stats ttft, tpot, itl, e2e, queue;
  double goodput = 0;  // good requests per second (== rate without SLOs)
  double good_fraction = 1;
  double kv_util_mean = 0, kv_util_peak = 0;
  std::int64_t preemptions = 0, steps = 0;
  double mean_in_system = 0, mean_waiting = 0;  // time averages (Little's law)
  double arrival_rate = 0;                      // requests / (last arrival - 0)
  bool meets(const Slo& slo) const;             // every summary limit met
  double metric(const std::string& key) const;  // "ttft_p99" etc.
};
Summary summarize(const ServeResult& r, const Slo& slo, int replicas);

// Writes requests.csv, steps.csv, summary.csv and (trace) trace.json.
void write_serve_results(const std::string& dir, const ServeResult& r, const Summary& s,
                         const std::vector<std::pair<std::string, std::string>>& setup, bool trace);

}  // namespace tpusim::sim::serve
