// `tpusim shard-search`: which device mesh (and remat policy) trains or
// serves a model fastest on a slice. It enumerates the meshes the slice
// can carry: named axes (data, fsdp, tensor, expert, sequence, as
// models/sharding.h shards them) each over consecutive whole slice
// dimensions (sim/engine/slice_setup.h's mapping rule), every chip in
// some axis, and with `split_dims` also over parts of one dimension split
// in two (its top part, every k-th chip, to one axis and the k
// neighbours below to the next, as the mapping rule places them) and over
// blocks (the last axis a b x b block of neighbours, the others every
// b-th chip: explicit placements, MaxText's hybrid_ring_64x4); Megatron sequence parallelism as a variant of tensor
// > 1; each remat policy asked for (train only, named or MaxText's custom). Meshes that place the same axes on
// dimensions of the same lengths and wraparound are duplicates and enumerated once. A mesh the model cannot shard
// (heads, KV heads, experts, FFN size, batch or sequence not divisible) is listed with the reason (models::check_mesh);
// one that does not fit HBM with the fit check's message (models::check_fit). The rest are simulated, one `tpusim
// shard-search point` child per simulation, `jobs` at a time (sweep::run_children), and ranked by step time. Layer
// sampling (`sample_layers` > 0, decoders whose layers after the first b are all alike, b =
// models::layer_sampling_base): each point simulates the model with b + n and b + 2n layers and extrapolates every
// time, FLOP and busy figure linearly to the full layer count
// (t(L) = t(b + n) + (L - b - n) (t(b + 2n) - t(b + n)) / n). Its error
// against full runs is measured in docs/codesign.md and bounded by a test.
// Bottleneck of a run (summary.csv's time breakdown, time_breakdown.h):
// whichever of compute time, exposed collective (ICI) time and exposed HBM
// time is the largest (ties: ici before hbm before compute); the table
// also shows exposed ICI time as a share of the step.
// Leaves out: pipeline parallelism, uneven splits, meshes over part of
// the slice, axis orders beyond one per dimension-length assignment, more
// than one split dimension outside the blocks, and other placements
// (`--mesh name=size@parts` on `run`).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "arch/common/chip_config.h"
#include "models/model_spec.h"

namespace tpusim::sim::codesign {

struct ShardSearchOptions {
  std::string model;              // zoo name or file
  std::string arch;               // generation name or config file
  std::string slice;              // "4x4x4"
  std::vector<std::string> sets;  // config overrides key=value (--set), for the fit check and every child
  models::Phase phase = models::Phase::train;
  std::int64_t batch = 8, seq = 2048, context = 2048;
  // Train only: the remat policies to try, as --remat takes them (a policy
  // name or custom:name=place,..., models::parse_remat_spec).
  std::vector<std::string> remats = {"none"};
  // Kernel choices of every point (models::PhaseOptions).
  bool fused_attention_backward = false;
  double moe_capacity_factor = 0;
  models::AttentionImpl attention_kernel = models::AttentionImpl::flash;
  arch::DType optimizer_dtype = arch::DType::f32;  // PhaseOptions::optimizer_dtype
  models::SplashBlocks attention_blocks;           // PhaseOptions::attention_blocks
  bool sequence_parallel_variants = true;
  bool split_dims = false;  // also meshes over parts of one slice dimension
  int sample_layers = 0;    // 0 = simulate every layer
  std::string out_dir;
  int jobs = 0;
  double timeout = 0;
  int top = 0;  // rows printed; 0 = all
  std::vector<std::string> config_path;
  std::ostream* progress = nullptr;
  bool progress_tty = false;
};

// Figures of one simulation (a summary.csv row), linear in the layer count.
struct RunFigures {
  double seconds = 0, model_flops = 0, hardware_flops = 0;
  double compute_s = 0, ici_s = 0, ici_exposed_s = 0, hbm_exposed_s = 0;
};

struct ShardPoint {
  std::string mesh;  // "fsdp=16,tensor=4"
  bool sequence_parallel = false;
  std::string remat = "none";      // as --remat takes it
  std::string status;              // "ok", "error", "no_fit", "cannot_shard"
  std::string reason;              // why not ok (in full, for the CSV)
  std::string short_reason;        // one line, for the terminal
  std::uint64_t memory_bytes = 0;  // per chip (fit check's footprint)
  RunFigures fig;                  // full-model figures (extrapolated when sampled)
  double mfu = 0, hfu = 0;
  std::string bottleneck;     // compute, hbm, ici
  double exposed_comm = 0;    // ici_exposed_s / seconds
  double gap_pct = 0;         // 100 x (seconds / best - 1)
  double wall = 0;            // host seconds of its children
  std::string label() const;  // mesh, "+sp" with sequence parallelism, remat
};

struct ShardSearchResult {
  ShardSearchOptions options;
  arch::TpuConfig config;
  std::string model_name;
  std::int64_t layers = 0;
  int chips = 0;
  std::vector<ShardPoint> points;  // ranked: ok by step time, then error, no_fit, cannot_shard
  std::size_t simulations = 0;
  std::string sampling_note;     // why --sample-layers was not used, when it was not
  std::int64_t sample_base = 0;  // with layer sampling: the leading layers always simulated (b)
  double wall_seconds = 0;
};

// Throws ModelError / ConfigError / UsageError-like std::invalid_argument
// for the user's mistakes (unknown model, bad slice).
ShardSearchResult run_shard_search(const ShardSearchOptions& o);

// The bottleneck rule above.
std::string bottleneck(const RunFigures& f);
// Linear extrapolation from base + n and base + 2n layers to `layers`.
RunFigures extrapolate(const RunFigures& at_n, const RunFigures& at_2n, std::int64_t n, std::int64_t layers,
                       std::int64_t base = 0);

// Reports (shard_report.cpp).
void print_shard_search(const ShardSearchResult& r, std::ostream& os);
std::string shard_search_csv(const ShardSearchResult& r);
std::string shard_search_html(const ShardSearchResult& r);

}  // namespace tpusim::sim::codesign
