// The requests a serving simulation receives: synthetic (an arrival
// process and input/output length distributions, drawn from a seeded
// generator whose streams are the same on every platform) or read from a
// trace CSV (arrival time, input tokens, output tokens).
// Arrival processes: Poisson at a rate, closed loop (a fixed number of
// clients, each sending its next request when the previous one finishes,
// no think time) and offline (every request at time 0).
// Leaves out: prompt contents (prefix sharing), think time, bursts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpusim::sim::serve {

// xoshiro256** seeded by splitmix64: the same stream on every platform
// (std::*_distribution differ between standard libraries).
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  double uniform();  // [0, 1)
 private:
  std::uint64_t s_[4];
};

// A token-length distribution, parsed from text:
//   fixed:N | uniform:LO:HI | normal:MEAN:STDDEV | hist:V=W,V=W,... |
//   hist:FILE.csv (rows "tokens,weight", optional header)
// Samples are integers >= 1 (normal is clamped at 1; uniform inclusive).
struct LengthDist {
  enum class Kind { fixed, uniform, normal, histogram };
  Kind kind = Kind::fixed;
  double a = 1, b = 1;                // fixed: a; uniform: [a, b]; normal: mean a, stddev b
  std::vector<std::int64_t> values;   // histogram
  std::vector<double> cumulative;     // histogram, normalised to end at 1
  std::int64_t sample(Rng& rng) const;
  std::int64_t max_value() const;  // upper bound of samples (normal: mean + 6 sd)
  double mean() const;
  std::string text;  // as given
};
// Throws UsageError (sim/cli/cli.h) naming `what` (e.g. "serve:
// --input") and the problem.
LengthDist parse_length_dist(const std::string& what, const std::string& text);

struct Request {
  std::int64_t id = 0;
  double arrival = 0;  // seconds; closed loop: set when the client sends it
  std::int64_t input = 0;
  std::int64_t output = 0;
  std::int64_t adapter = -1;  // LoRA adapter id (sim/serve/adapters.h); -1: the base model
};

enum class Arrival { poisson, closed, offline, trace };
const char* arrival_name(Arrival a);

struct WorkloadSpec {
  Arrival arrival = Arrival::poisson;
  double rate = 1;       // poisson: requests per second
  int concurrency = 1;   // closed loop: clients
  std::int64_t count = 100;
  LengthDist input, output;
  std::uint64_t seed = 1;
};

// The requests of a synthetic spec in id order (closed loop: arrival 0,
// the server sets it).
std::vector<Request> synthesize(const WorkloadSpec& spec);

// A trace CSV: header "arrival,input_tokens,output_tokens" and optionally
// ",adapter" (a LoRA adapter id per row, empty for none) (arrival in
// seconds, non-decreasing not required: sorted by arrival, stable).
// UsageError "FILE:LINE: column: problem" for bad rows.
std::vector<Request> read_trace_csv(const std::string& path);

}  // namespace tpusim::sim::serve
