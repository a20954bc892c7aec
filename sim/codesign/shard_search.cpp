// Mesh enumeration, fit filtering, simulations in child processes and the
// ranking of `tpusim shard-search`; see shard_search.h.
#include "sim/codesign/shard_search.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "arch/common/derived.h"
#include "arch/ici/topology.h"
#include "models/analysis.h"
#include "models/model_file.h"
#include "models/sharding.h"
#include "models/zoo.h"
#include "sim/config/config_loader.h"
#include "sim/engine/slice_setup.h"
#include "sim/results/format.h"
#include "sim/run/model_fit.h"
#include "sim/sweep/child_pool.h"
#include "sim/sweep/progress.h"
#include "sim/sweep/results_table.h"

namespace tpusim::sim::codesign {

namespace fs = std::filesystem;

namespace {

// One piece of the slice an axis may take: a whole dimension, or the top
// or the low part of one split in two (map_mesh's parts).
struct Piece {
  int dim = 0;         // slice axis, or the DCN dimension
  int length = 1;      // chips along it; the DCN's as -length
  bool wraps = false;  // a ring
  int stride = 1;      // chips between its positions (1: whole or low part)
  int split = -1;      // the dimension this piece is half of, or -1
  bool low = false;    // a block variant's low part (below)
};

// The pieces of one enumeration: a list in order, and whether it is a
// block variant, whose meshes need explicit placements (map_mesh's rule
// does not make them) and whose low pieces form one run, the last.
struct PieceVariant {
  std::vector<Piece> pieces;
  bool block = false;
};

// One axis over a run of consecutive pieces.
struct AxisPlace {
  std::string axis;
  std::int64_t size = 1;
  std::vector<std::tuple<int, bool, int>> dims;  // (length, wraps, stride) of each piece it takes
  std::vector<workloads::MeshPart> parts;        // the pieces as --mesh parts (block variants)
};

// The slice's pieces: its dimensions in map_mesh's order (a multislice's
// slice count first; length-1 dimensions carry no axis), and with `split`
// one variant more per factorisation of each dimension d, its top part
// (every k-th chip, a ring where the dimension wraps) before its low part
// (k neighbours, a line), as map_mesh gives an axis that needs part of a
// dimension its top; and, on a slice of two or more dimensions longer
// than 2, one block variant per block edge b that divides them all: every
// dimension's top part (every b-th chip) first, then the b x b (x b)
// block of neighbours, for the last axis (MaxText's hybrid_ring_64x4 is
// the 2 x 2 block of a 16x16).
std::vector<PieceVariant> piece_variants(const arch::ici::Slice& slice, bool split) {
  std::vector<Piece> whole;
  if (slice.num_slices() > 1) whole.push_back({slice.dcn_axis(), -slice.num_slices(), false, 1, -1, false});
  for (int i = 0; i < slice.rank(); ++i)
    if (slice.dim(i) > 1) whole.push_back({i, slice.dim(i), slice.wraps(i), 1, -1, false});
  std::vector<PieceVariant> out = {{whole, false}};
  if (!split) return out;
  std::vector<Piece> ici;
  for (const Piece& p : whole)
    if (p.length > 0) ici.push_back(p);
  if (ici.size() >= 2) {
    const int shortest = std::min_element(ici.begin(), ici.end(), [](const Piece& a, const Piece& b) {
                           return a.length < b.length;
                         })->length;
    for (int b = 2; b < shortest; ++b) {
      if (std::any_of(ici.begin(), ici.end(), [&](const Piece& p) { return p.length % b != 0; })) continue;
      PieceVariant v;
      v.block = true;
      if (slice.num_slices() > 1) v.pieces.push_back(whole.front());
      for (const Piece& p : ici) v.pieces.push_back({p.dim, p.length / b, p.wraps, b, p.dim, false});
      for (const Piece& p : ici) v.pieces.push_back({p.dim, b, false, 1, p.dim, true});
      out.push_back(std::move(v));
    }
  }
  for (std::size_t w = 0; w < whole.size(); ++w) {
    const Piece& p = whole[w];
    if (p.length < 4) continue;  // the DCN (negative) or nothing to split
    for (int top = 2; top <= p.length / 2; ++top) {
      if (p.length % top != 0) continue;
      std::vector<Piece> v(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(w));
      v.push_back({p.dim, top, p.wraps, p.length / top, p.dim, false});
      v.push_back({p.dim, p.length / top, false, 1, p.dim, false});
      v.insert(v.end(), whole.begin() + static_cast<std::ptrdiff_t>(w) + 1, whole.end());
      out.push_back({std::move(v), false});
    }
  }
  return out;
}

// Every assignment of the slice's pieces (piece_variants), in order, to
// distinct axes (each axis a run of consecutive pieces, never both halves
// of one dimension: that is the whole dimension; in a block variant the
// block one run, the last), duplicates removed: of
// the assignments that give each axis pieces of the same lengths, strides
// and wraparound, the one listing the axes closest to `axes`' order is
// kept (fsdp=16,tensor=4 rather than tensor=4,fsdp=16 on 4x4x4).
std::vector<std::vector<AxisPlace>> enumerate_meshes(const arch::ici::Slice& slice,
                                                     const std::vector<std::string>& axes, bool split) {
  using Key = std::vector<std::pair<std::string, std::vector<std::tuple<int, bool, int>>>>;
  std::map<Key, std::pair<std::vector<std::size_t>, std::vector<AxisPlace>>> best;  // key -> (axis order, mesh)
  std::vector<Key> order;                                                           // keys in the order first found
  for (const PieceVariant& variant : piece_variants(slice, split)) {
    const std::vector<Piece>& pieces = variant.pieces;
    std::vector<AxisPlace> cur;
    std::vector<std::size_t> idx;
    const int rank = static_cast<int>(pieces.size());
    const int first_low = static_cast<int>(
        std::find_if(pieces.begin(), pieces.end(), [](const Piece& q) { return q.low; }) - pieces.begin());
    std::function<void(int)> rec = [&](int d) {
      if (d == rank) {
        Key key;
        for (const auto& a : cur) key.emplace_back(a.axis, a.dims);
        std::sort(key.begin(), key.end());
        const auto it = best.find(key);
        if (it == best.end()) {
          best.emplace(key, std::make_pair(idx, cur));
          order.push_back(key);
        } else if (idx < it->second.first) {
          it->second = std::make_pair(idx, cur);
        }
        return;
      }
      for (int e = d + 1; e <= rank; ++e) {
        // A block variant's block is the last run, whole.
        if (variant.block && (d < first_low ? e > first_low : e < rank)) continue;
        bool halves = false;  // both halves of a split dimension in one run
        for (int i = d; i + 1 < e; ++i)
          halves =
              halves || (pieces[static_cast<std::size_t>(i)].split >= 0 &&
                         pieces[static_cast<std::size_t>(i)].split == pieces[static_cast<std::size_t>(i) + 1].split);
        if (halves) break;  // longer runs hold them too
        for (std::size_t n = 0; n < axes.size(); ++n) {
          if (std::find(idx.begin(), idx.end(), n) != idx.end()) continue;
          AxisPlace p{axes[n], 1, {}, {}};
          for (int i = d; i < e; ++i) {
            const Piece& q = pieces[static_cast<std::size_t>(i)];
            p.size *= q.length < 0 ? -q.length : q.length;
            p.dims.emplace_back(q.length, q.wraps, q.stride);
            if (variant.block)
              p.parts.push_back({q.length < 0 ? "dcn" : std::string(1, "xyz"[q.dim]), q.stride, q.low ? q.length : 0});
          }
          cur.push_back(p);
          idx.push_back(n);
          rec(e);
          cur.pop_back();
          idx.pop_back();
        }
      }
    };
    rec(0);
  }
  std::vector<std::vector<AxisPlace>> out;
  for (const auto& k : order) out.push_back(best.at(k).second);
  return out;
}

std::vector<std::string> axes_for(const models::ModelSpec& m, models::Phase phase) {
  if (m.family == models::Family::resnet || m.family == models::Family::dlrm || m.family == models::Family::unet)
    return {"data"};
  std::vector<std::string> a = {"data", "fsdp", "tensor"};
  if (m.transformer.moe.enabled) a.push_back("expert");
  if (m.family == models::Family::decoder && (phase == models::Phase::prefill || phase == models::Phase::train))
    a.push_back("sequence");
  return a;
}

// The figures of a summary.csv; throws std::runtime_error for a missing column.
RunFigures figures(const std::map<std::string, std::string>& s, const std::string& path) {
  auto num = [&](const char* k) {
    const auto it = s.find(k);
    if (it == s.end() || it->second.empty()) throw std::runtime_error(path + ": no value in column " + k);
    return std::stod(it->second);
  };
  RunFigures f;
  f.seconds = num("seconds");
  f.model_flops = num("model_flops");
  f.hardware_flops = num("hardware_flops");
  f.compute_s = num("compute_busy_seconds");
  f.ici_s = num("ici_busy_seconds");
  f.ici_exposed_s = num("ici_exposed_seconds");
  f.hbm_exposed_s = num("hbm_exposed_seconds");
  return f;
}

}  // namespace

std::string ShardPoint::label() const {
  std::string s = mesh + (sequence_parallel ? " +sp" : "");
  return s;
}

std::string bottleneck(const RunFigures& f) {
  if (f.ici_exposed_s >= f.compute_s && f.ici_exposed_s >= f.hbm_exposed_s) return "ici";
  if (f.hbm_exposed_s > f.compute_s) return "hbm";
  return "compute";
}

RunFigures extrapolate(const RunFigures& a, const RunFigures& b, std::int64_t n, std::int64_t layers,
                       std::int64_t base) {
  auto x = [&](double RunFigures::*f) { return models::extrapolate_layers(a.*f, b.*f, n, layers, base); };
  RunFigures r;
  for (auto f : {&RunFigures::seconds, &RunFigures::model_flops, &RunFigures::hardware_flops, &RunFigures::compute_s,
                 &RunFigures::ici_s, &RunFigures::ici_exposed_s, &RunFigures::hbm_exposed_s})
    r.*f = x(f);
  return r;
}

ShardSearchResult run_shard_search(const ShardSearchOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  ShardSearchResult r;
  r.options = o;
  r.config = load_tpu_config(o.arch, o.sets, default_search_path(o.config_path));
  const models::ModelSpec spec = models::load_model(o.model);
  r.model_name = spec.name;
  r.layers = spec.transformer.layers;
  const arch::ici::Slice slice(r.config.ici, o.slice, false);  // std::invalid_argument for a bad shape
  // Every chip of every slice: the meshes cover them all.
  r.chips = static_cast<int>(slice.total_chips());
  if (r.chips < 2) throw std::invalid_argument("slice " + o.slice + " has one chip: there is no mesh to search");

  models::PhaseOptions base;
  base.phase = o.phase;
  base.batch = o.batch;
  base.seq_len = o.seq;
  base.context = o.context;
  base.fused_attention_backward = o.fused_attention_backward;
  base.moe_capacity_factor = o.moe_capacity_factor;
  base.attention_kernel = o.attention_kernel;
  base.optimizer_dtype = o.optimizer_dtype;
  base.attention_blocks = o.attention_blocks;
  models::check_options(spec, base);

  std::int64_t sample = o.sample_layers;
  const std::int64_t layer_base = models::layer_sampling_base(spec);
  if (sample > 0) {
    // Whole periods of the layers' pattern (local and global attention).
    const std::int64_t period = models::layer_sampling_period(spec);
    if (sample % period != 0) {
      const std::int64_t up = (sample / period + 1) * period;
      r.sampling_note = "--sample-layers " + std::to_string(sample) + " taken as " + std::to_string(up) +
                        ", whole periods of the model's " + std::to_string(period) + "-layer pattern";
      sample = up;
    }
    const std::string why = models::layer_sampling_obstacle(spec);
    if (!why.empty() || layer_base + 2 * sample >= spec.transformer.layers) {
      r.sampling_note = "--sample-layers " + std::to_string(sample) + " not used: " +
                        (why.empty() ? (layer_base > 0 ? std::to_string(layer_base) + " + " : std::string()) + "2 x " +
                                           std::to_string(sample) + " layers are not fewer than the model's " +
                                           std::to_string(spec.transformer.layers)
                                     : why);
      sample = 0;
    }
  }
  r.options.sample_layers = static_cast<int>(sample);
  r.sample_base = sample > 0 ? layer_base : 0;
  const std::int64_t sample_base = r.sample_base;

  const auto remats = o.phase == models::Phase::train ? o.remats : std::vector<std::string>{"none"};
  const bool sp_phase =
      spec.family == models::Family::decoder && (o.phase == models::Phase::prefill || o.phase == models::Phase::train);
  std::vector<ShardPoint> sims, others;
  std::set<std::string> texts;
  for (const auto& places : enumerate_meshes(slice, axes_for(spec, o.phase), o.split_dims)) {
    models::MeshSpec mesh;
    for (const auto& p : places) mesh.axes.push_back({p.axis, p.size, p.parts});
    const std::string text = mesh.str();
    if (!texts.insert(text).second) continue;  // the same placement from another piece variant
    try {
      (void)map_mesh(slice, mesh);
    } catch (const std::exception&) {
      continue;  // the engine cannot place it: not a mesh of this slice
    }
    std::vector<bool> sps = {false};
    if (o.sequence_parallel_variants && sp_phase && mesh.size("tensor") > 1) sps.push_back(true);
    for (bool sp : sps) {
      models::PhaseOptions po = base;
      po.mesh = mesh;
      po.sequence_parallel = sp;
      ShardPoint pt;
      pt.mesh = text;
      pt.sequence_parallel = sp;
      try {
        models::check_mesh(spec, po);
        models::check_options(spec, po);  // e.g. dense attention with latent attention
      } catch (const models::ModelError& e) {
        pt.status = "cannot_shard";
        pt.reason = e.what();
        pt.short_reason = pt.reason;
        others.push_back(pt);
        continue;
      }
      for (const auto& rm : remats) {
        const std::string err = models::parse_remat_spec(rm, &po.remat, &po.remat_custom);
        if (!err.empty()) throw std::invalid_argument("--remat: expected " + err + ", found '" + rm + "'");
        pt.remat = rm;
        const models::FitReport fit = check_model_fit(spec, po, r.config).report;
        pt.memory_bytes = fit.needed_bytes;
        if (!fit.fits) {
          pt.status = "no_fit";
          pt.reason = fit.message;
          pt.short_reason = "needs " + format_fixed(fit.needed_gib, 1) + " GiB per chip, a chip has " +
                            format_fixed(fit.available_gib, 1);
          others.push_back(pt);
        } else {
          pt.status = "ok";
          pt.reason.clear();
          sims.push_back(pt);
        }
      }
    }
  }

  // One child per simulation: point p's runs are 2p and 2p + 1 when sampled.
  const std::size_t per = sample > 0 ? 2 : 1;
  r.simulations = sims.size() * per;
  const std::string runs = (fs::path(o.out_dir) / "runs").string();
  auto dir_of = [&](std::size_t i) { return runs + "/" + std::to_string(i); };
  std::vector<RunFigures> figs(r.simulations);
  std::vector<std::string> errors(r.simulations);
  sweep::ChildPoolOptions pool;
  pool.jobs = o.jobs;
  pool.timeout = o.timeout;
  sweep::Progress progress(o.progress, o.progress_tty, r.simulations, 0, "shard-search", "simulations");
  sweep::run_children(
      r.simulations, pool,
      [&](std::size_t i) {
        const ShardPoint& pt = sims[i / per];
        sweep::ChildSpec s;
        s.dir = dir_of(i);
        for (const auto& d : o.config_path) s.args.insert(s.args.end(), {"--config-path", d});
        s.args.insert(s.args.end(), {"shard-search", "point",
                                     "--model",      o.model,
                                     "--arch",       o.arch,
                                     "--slice",      o.slice,
                                     "--mesh",       pt.mesh,
                                     "--phase",      models::phase_name(o.phase),
                                     "--batch",      std::to_string(o.batch),
                                     "--seq",        std::to_string(o.seq),
                                     "--context",    std::to_string(o.context),
                                     "--remat",      pt.remat,
                                     "--out",        s.dir});
        if (pt.sequence_parallel) s.args.push_back("--sequence-parallel");
        if (o.fused_attention_backward) s.args.push_back("--fused-attention-backward");
        if (o.moe_capacity_factor > 0)
          s.args.insert(s.args.end(), {"--moe-capacity-factor", format_real(o.moe_capacity_factor, 17)});
        if (o.attention_kernel != models::AttentionImpl::flash)
          s.args.insert(s.args.end(), {"--attention-kernel", models::attention_impl_name(o.attention_kernel)});
        if (o.optimizer_dtype != arch::DType::f32)
          s.args.insert(s.args.end(), {"--optimizer-dtype", std::string(arch::dtype_name(o.optimizer_dtype))});
        if (o.attention_blocks.any()) s.args.insert(s.args.end(), {"--attention-blocks", o.attention_blocks.str()});
        for (const auto& kv : o.sets) s.args.insert(s.args.end(), {"--set", kv});
        if (sample > 0)
          s.args.insert(
              s.args.end(),
              {"--layers", std::to_string(models::sampled_run_layers(sample_base, sample, static_cast<int>(i % 2)))});
        return s;
      },
      [&](std::size_t i, const sweep::ChildExit& e) {
        sims[i / per].wall += e.seconds;
        errors[i] = sweep::child_failure(e, dir_of(i));
        if (errors[i].empty()) {
          const std::string path = dir_of(i) + "/summary.csv";
          try {
            figs[i] = figures(sweep::read_run_summary(dir_of(i)), path);
          } catch (const std::exception& ex) {
            errors[i] = ex.what();
          }
        }
        progress.finished(errors[i].empty());
      },
      [&] { progress.tick(); });
  progress.end();

  double best = 0;
  for (std::size_t p = 0; p < sims.size(); ++p) {
    ShardPoint& pt = sims[p];
    const std::string err = !errors[p * per].empty() ? errors[p * per] : errors[p * per + per - 1];
    if (!err.empty()) {
      pt.status = "error";
      pt.reason = err;
      pt.short_reason = err;
      continue;
    }
    pt.fig =
        sample > 0 ? extrapolate(figs[2 * p], figs[2 * p + 1], sample, spec.transformer.layers, sample_base) : figs[p];
    // MFU and HFU as summary.csv defines them: FLOPs over 2 x seconds x
    // the chip's peak MACs per second.
    const double peak = arch::peak_flops(r.config, arch::DType::bf16);
    pt.mfu = pt.fig.model_flops / (pt.fig.seconds * peak);
    pt.hfu = pt.fig.hardware_flops / (pt.fig.seconds * peak);
    pt.bottleneck = bottleneck(pt.fig);
    pt.exposed_comm = pt.fig.ici_exposed_s / pt.fig.seconds;
    if (best == 0 || pt.fig.seconds < best) best = pt.fig.seconds;
  }
  std::stable_sort(sims.begin(), sims.end(), [](const ShardPoint& a, const ShardPoint& b) {
    if ((a.status == "ok") != (b.status == "ok")) return a.status == "ok";
    return a.status == "ok" && a.fig.seconds < b.fig.seconds;
  });
  for (auto& pt : sims)
    if (pt.status == "ok") pt.gap_pct = 100.0 * (pt.fig.seconds / best - 1.0);
  std::stable_sort(others.begin(), others.end(), [](const ShardPoint& a, const ShardPoint& b) {
    return a.status == "no_fit" && b.status != "no_fit";
  });
  r.points = sims;
  r.points.insert(r.points.end(), others.begin(), others.end());
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace tpusim::sim::codesign
