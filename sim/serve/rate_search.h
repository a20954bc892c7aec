// --find-max-rate: the highest Poisson arrival rate at which a serving run
// meets latency limits on its summary percentiles (e.g. ttft_p99=2s,
// tpot_p99=100ms). The requests keep their lengths at every rate (the
// generator draws lengths and gaps from separate streams); the rate is
// doubled or halved until one rate meets the limits and one does not,
// then bisected until they are within a relative tolerance.
// Leaves out: confidence intervals over seeds (one seed per probe).
#pragma once

#include <functional>
#include <vector>

#include "sim/serve/report.h"
#include "sim/serve/request_workload.h"
#include "sim/serve/server.h"

namespace tpusim::sim::serve {

struct RateProbe {
  double rate = 0;
  bool meets = false;
  Summary summary;
};

struct RateSearchResult {
  double rate = 0;        // highest rate found to meet the limits (0: none did)
  double failing = 0;     // lowest rate found not to (0: none failed)
  std::vector<RateProbe> probes;  // in the order run
  ServeResult best;               // the run at `rate`
};

// `run(requests)` simulates one probe (it may simulate missing step costs
// and rerun). Starts at `start` requests/s; stops when failing / rate <= 1
// + tol, or after a rate range of 2^40 without a bracket.
RateSearchResult find_max_rate(WorkloadSpec spec, const Slo& slo, double start, double tol, int replicas,
                               const std::function<ServeResult(const std::vector<Request>&)>& run);

}  // namespace tpusim::sim::serve
