// The rate search of --find-max-rate (see rate_search.h).
#include "sim/serve/rate_search.h"

#include <cmath>

namespace tpusim::sim::serve {

RateSearchResult find_max_rate(WorkloadSpec spec, const Slo& slo, double start, double tol, int replicas,
                               const std::function<ServeResult(const std::vector<Request>&)>& run) {
  RateSearchResult out;
  spec.arrival = Arrival::poisson;
  auto probe = [&](double rate) {
    spec.rate = rate;
    ServeResult r = run(synthesize(spec));
    RateProbe p{rate, false, summarize(r, slo, replicas)};
    p.meets = p.summary.meets(slo);
    out.probes.push_back(p);
    if (p.meets && rate > out.rate) {
      out.rate = rate;
      out.best = std::move(r);
    }
    if (!p.meets && (out.failing == 0 || rate < out.failing)) out.failing = rate;
    return p.meets;
  };
  double r = start;
  if (probe(r)) {
    for (int i = 0; i < 40 && out.failing == 0; ++i) probe(r *= 2);
  } else {
    for (int i = 0; i < 40 && out.rate == 0; ++i) probe(r /= 2);
  }
  if (out.rate == 0 || out.failing == 0) return out;
  while (out.failing / out.rate > 1 + tol) probe(std::sqrt(out.rate * out.failing));
  return out;
}

}  // namespace tpusim::sim::serve
