// Step costs of a serving simulation: the time of one engine step (a
// prefill chunk of P tokens and B sequences decoding one token each over a
// mean of C cached tokens; the chunks, of n prompts, follow a
// token-weighted mean of X tokens of their own sequences already cached)
// from the cycle-level engine, never a formula.
// Each grid point (P, B, C, X, n) is simulated once, in its own `tpusim serve
// step` process (SystemC elaborates once per process), and a step between
// grid points is interpolated multilinearly from the corners of its cell.
// The model runs the serving simulation, collects the corners it lacked,
// has them simulated and runs again, until no corner is missing: every
// reported time comes from simulated corners only.
// The costs live in a cache file (`--step-cache FILE`), one line per
// point, tagged with a key (a digest of the tpusim version, the resolved
// chip config, the model file, slice, mesh and dtype), so one file serves
// many configs and a point of another config is never used.
// Cache lines are `KEY PREFILL DECODE CONTEXT SECONDS`, with a sixth field
// ADAPTERS for LoRA points of n > 0 distinct adapters, a seventh PREFIX
// for points whose chunks follow X > 0 cached tokens and an eighth CHUNKS
// for points of n > 1 prefill sequences (the fields before the last one
// written then 0 when there are none).
// Leaves out: a step's chunks are costed as equal chunks after their
// token-weighted mean prefix (exact for the chunk x prefix and the causal
// chunk^2 / 2 attention pairs, not for the K/V reads of unequal prefixes);
// see docs/serving.md.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace tpusim::sim::serve {

struct StepShape {
  std::int64_t prefill = 0;  // tokens of prefill chunks in the step
  std::int64_t decode = 0;   // sequences decoding one token
  double context = 0;        // mean cached tokens of the decoding sequences
  std::int64_t adapters = 0;  // distinct LoRA adapters among its sequences (0: none)
  // Cached tokens the prefill chunks follow (chunked prefill's later
  // chunks), the mean over the chunks weighted by their tokens:
  // sum(chunk x prefix) / prefill, so the attention to the prefixes
  // (proportional to chunk x prefix) is the grid's at prefill x prefix.
  double prefix = 0;
  // The prefill chunks' effective count, prefill^2 / sum(chunk^2): the
  // count of equal chunks with the same causal attention (sum(chunk^2) / 2
  // pairs); 1 for a single chunk.
  double chunks = 1;
};

// A step's prefill chunks as its shape's P, X and n: add() each chunk (its
// tokens and the tokens of its own sequence already cached), then
// shape_into() sets StepShape::prefill, prefix and chunks.
class PrefillChunks {
 public:
  void add(std::int64_t tokens, std::int64_t prefilled) {
    const double t = static_cast<double>(tokens);
    tokens_ += tokens;
    prefix_tokens_ += t * static_cast<double>(prefilled);
    squares_ += t * t;
  }
  void shape_into(StepShape& s) const {
    s.prefill = tokens_;
    if (tokens_ == 0) return;
    const double p = static_cast<double>(tokens_);
    s.prefix = prefix_tokens_ / p;
    s.chunks = p * p / squares_;
  }

 private:
  std::int64_t tokens_ = 0;
  double prefix_tokens_ = 0, squares_ = 0;
};

struct GridPoint {
  std::int64_t prefill = 0, decode = 0, context = 0;  // context 0 when decode == 0
  std::int64_t adapters = 0;                          // LoRA: distinct adapters, at most prefill + decode
  std::int64_t prefix = 0;                            // the chunk's cached prefix; 0 when prefill == 0
  std::int64_t chunks = 1;                            // prefill sequences (equal chunks); 1 when prefill == 0
  bool operator<(const GridPoint& o) const {
    return std::tie(prefill, decode, context, adapters, prefix, chunks) <
           std::tie(o.prefill, o.decode, o.context, o.adapters, o.prefix, o.chunks);
  }
  bool operator==(const GridPoint& o) const {
    return prefill == o.prefill && decode == o.decode && context == o.context && adapters == o.adapters &&
           prefix == o.prefix && chunks == o.chunks;
  }
};

// Grid axes: prefill {0, 16, 64, 256, ...x4 below max_tokens, max_tokens},
// decode {0, 1, 4, 16, ...x4 below max_batch, max_batch}, context {64, 256,
// ...x4 below max_context, max_context} (the longest decode's cache).
// With LoRA a fourth axis, distinct adapters in the step {0, 1, 2, 4, ...
// x2 below the most, the most} (lora_adapter_axis); without, {0}.
// The chunks' cached prefix: {0, 1024, 8192, ...x8 below max_prefix,
// max_prefix} ({0} when max_prefix is 0 or there is no prefill axis).
// Prefill sequences in a step: {1, 4, 16, ...x4 below max_chunks,
// max_chunks}, interpolated linearly in 1 / chunks (the causal attention
// of P tokens in n equal chunks is P^2 / 2n pairs); a corner of P prefill
// tokens holds at most P chunks. The axis is separable: a step's cost is
// its cost at one chunk (corners in P, B, C, adapters and X) plus what n
// chunks change, from the prefill-only corners in P and X (cost at n
// minus cost at 1), so only those corners are simulated at n > 1.
struct StepGrid {
  std::vector<std::int64_t> prefill, decode, context;
  std::vector<std::int64_t> adapters = {0};
  std::vector<std::int64_t> prefix = {0};
  std::vector<std::int64_t> chunks = {1};
};
std::vector<std::int64_t> lora_adapter_axis(std::int64_t most);
StepGrid make_grid(std::int64_t max_tokens, std::int64_t max_batch, std::int64_t max_context,
                   std::int64_t max_prefix = 0, std::int64_t max_chunks = 1);

class StepCostModel {
 public:
  StepCostModel(StepGrid grid, std::string key);

  // Seconds of a step. Uses the simulated corners of the shape's cell;
  // a corner not simulated yet is recorded in missing() and stood in for
  // by the nearest simulated point (only while the model is incomplete).
  double cost(const StepShape& s);
  // The grid points a cost() call needed and did not have.
  const std::set<GridPoint>& missing() const { return missing_; }
  void clear_missing() { missing_.clear(); }
  // Corners of `s`'s cell with a non-zero weight.
  std::vector<GridPoint> corners(const StepShape& s) const;

  void add(const GridPoint& p, double seconds);
  bool has(const GridPoint& p) const { return known_.count(p) != 0; }
  // The simulated seconds of a point added or loaded (0 when absent).
  double value(const GridPoint& p) const {
    auto it = known_.find(p);
    return it == known_.end() ? 0 : it->second;
  }
  std::size_t size() const { return known_.size(); }
  const std::map<GridPoint, double>& points() const { return known_; }
  const std::string& key() const { return key_; }
  const StepGrid& grid() const { return grid_; }

  // Reads a cache file (missing file: nothing); lines of other keys are
  // ignored, and save() keeps the ones the file holds when it writes.
  // UsageError "FILE:LINE: ..." on a malformed line.
  void load(const std::string& path);
  void save(const std::string& path, const std::string& description) const;

 private:
  double nearest(const GridPoint& p) const;
  StepGrid grid_;
  std::string key_;
  std::map<GridPoint, double> known_;
  std::set<GridPoint> missing_;
};

// FNV-1a 64 of `text` as 16 hex digits.
std::string digest(const std::string& text);

}  // namespace tpusim::sim::serve
