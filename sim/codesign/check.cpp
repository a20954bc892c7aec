// The check itself: analysis per generation and phase, simulations of the
// model and its candidates in child processes, suggestions; see check.h.
#include "sim/codesign/check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "models/analysis.h"
#include "models/zoo.h"
#include "sim/config/config_loader.h"
#include "sim/sweep/child_pool.h"
#include "sim/sweep/results_table.h"

namespace tpusim::sim::codesign {

namespace fs = std::filesystem;

namespace {

models::PhaseOptions phase_options(const CheckOptions& o, models::Phase p) {
  models::PhaseOptions po;
  po.phase = p;
  po.batch = o.batch;
  po.seq_len = o.seq;
  po.context = o.context;
  return po;
}

// The weight dtype a candidate simulates with on a chip ("" = none fits).
std::string weight_dtype_on(const Candidate& c, const arch::TpuConfig& cfg) {
  if (c.weight_dtype.empty()) return "";
  const auto want = arch::parse_dtype(c.weight_dtype);
  if (want && cfg.mxu.throughput.count(*want)) return c.weight_dtype;
  if (cfg.mxu.throughput.count(arch::DType::fp8_e4m3)) return "fp8_e4m3";
  return "";
}

std::vector<OpTime> read_ops(const std::string& path) {
  const auto rows = sweep::parse_csv(sweep::slurp_file(path));
  std::vector<OpTime> out;
  if (rows.empty()) return out;
  auto col = [&](const char* n) -> std::size_t {
    const auto it = std::find(rows[0].begin(), rows[0].end(), n);
    return static_cast<std::size_t>(it - rows[0].begin());
  };
  const std::size_t name = col("name"), kind = col("kind"), cycles = col("cycles"), bound = col("bound");
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (r.size() != rows[0].size()) continue;
    OpTime t{r[name], r[kind], r[bound], r[cycles].empty() ? 0.0 : std::stod(r[cycles])};
    out.push_back(t);
  }
  return out;
}

std::vector<TimeShare> time_shares(const std::vector<OpTime>& ops) {
  std::vector<TimeShare> out;
  double total = 0;
  for (const auto& op : ops) {
    total += op.cycles;
    std::string t = layer_type(op.name);
    if (t.empty())
      t = op.kind == "all_gather" || op.kind == "reduce_scatter" || op.kind == "all_reduce" ||
                  op.kind == "all_to_all" || op.kind == "collective_permute" || op.kind == "broadcast"
              ? "collectives"
              : "other (norms, rope, residuals, layout)";
    auto it = std::find_if(out.begin(), out.end(), [&](const TimeShare& s) { return s.type == t; });
    if (it == out.end()) it = out.insert(out.end(), TimeShare{t, 0});
    it->share += op.cycles;
  }
  for (auto& s : out) s.share = total > 0 ? s.share / total : 0;
  return out;
}

}  // namespace

CheckResult run_check(const CheckOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  CheckResult r;
  r.options = o;
  r.model = models::load_model(o.model);
  r.params = models::count_params(r.model).total;
  r.divisibility = divisibility(r.model);
  int tile = 0;
  for (const auto& a : o.archs) {
    ArchCheck ac;
    ac.arch = a;
    ac.config = load_tpu_config(a, {}, default_search_path(o.config_path));
    tile = std::max(tile, ac.config.mxu.cols);
    ac.dims = misaligned_dims(r.model, ac.config.mxu.cols);
    for (models::Phase p : o.phases) {
      const models::PhaseOptions po = phase_options(o, p);
      models::check_options(r.model, po);
      const workloads::Workload wl = models::generate(r.model, po);
      ac.layers[p] = check_layers(wl, ac.config);
      ac.fit[p] = fit_table(r.model, po, ac.config);
    }
    models::PhaseOptions kvo = phase_options(o, models::Phase::decode);
    ac.kv = kv_fit(r.model, kvo, ac.config);
    r.archs.push_back(std::move(ac));
  }
  std::vector<int> mxus;
  for (const auto& ac : r.archs) mxus.push_back(ac.config.mxu.cols);
  r.candidates = candidates(r.model, tile, mxus);

  // The simulations: every (arch, phase) of the model, then of each candidate.
  for (const auto& ac : r.archs)
    for (models::Phase p : o.phases) {
      if (!o.simulate) continue;
      r.points.push_back({ac.arch, p, -1, false, "", 0, 0, {}});
      for (std::size_t c = 0; c < r.candidates.size(); ++c) {
        const Candidate& cand = r.candidates[c];
        if (!cand.weight_dtype.empty() && weight_dtype_on(cand, ac.config).empty()) continue;
        if (cand.mxu != 0 && cand.mxu != ac.config.mxu.cols) continue;  // sized for another generation's MXU
        r.points.push_back({ac.arch, p, static_cast<int>(c), false, "", 0, 0, {}});
      }
    }
  const std::string runs = (fs::path(o.out_dir) / "runs").string();
  auto dir_of = [&](std::size_t i) { return runs + "/" + std::to_string(i); };
  sweep::ChildPoolOptions pool;
  pool.jobs = o.jobs;
  pool.timeout = o.timeout;
  std::size_t done = 0;
  sweep::run_children(
      r.points.size(), pool,
      [&](std::size_t i) {
        const SimPoint& pt = r.points[i];
        sweep::ChildSpec s;
        s.dir = dir_of(i);
        for (const auto& d : o.config_path) s.args.insert(s.args.end(), {"--config-path", d});
        s.args.insert(s.args.end(), {"check", "point", "--model", o.model, "--arch", pt.arch, "--phase",
                                     models::phase_name(pt.phase), "--batch", std::to_string(o.batch), "--seq",
                                     std::to_string(o.seq), "--context", std::to_string(o.context), "--out", s.dir});
        if (!o.slice.empty()) s.args.insert(s.args.end(), {"--slice", o.slice, "--mesh", o.mesh});
        if (pt.candidate >= 0) {
          const Candidate& c = r.candidates[static_cast<std::size_t>(pt.candidate)];
          for (const auto& ch : c.changes)
            s.args.insert(s.args.end(), {"--change", ch.key + "=" + std::to_string(ch.value)});
          const auto ac =
              std::find_if(r.archs.begin(), r.archs.end(), [&](const ArchCheck& a) { return a.arch == pt.arch; });
          if (!c.weight_dtype.empty()) s.args.insert(s.args.end(), {"--weight-dtype", weight_dtype_on(c, ac->config)});
        }
        return s;
      },
      [&](std::size_t i, const sweep::ChildExit& e) {
        SimPoint& pt = r.points[i];
        pt.wall = e.seconds;
        pt.error = sweep::child_failure(e, dir_of(i));
        if (pt.error.empty()) {
          const auto rows = sweep::parse_csv(sweep::slurp_file(dir_of(i) + "/summary.csv"));
          const auto it = rows.empty() ? rows.end() : rows.begin();
          std::size_t col = 0;
          if (it != rows.end())
            col = static_cast<std::size_t>(std::find(rows[0].begin(), rows[0].end(), "seconds") - rows[0].begin());
          if (rows.size() < 2 || col >= rows[1].size()) {
            pt.error = "the simulation exited 0 but wrote no readable summary.csv";
          } else {
            pt.seconds = std::stod(rows[1][col]);
            pt.ops = read_ops(dir_of(i) + "/ops.csv");
            pt.ok = true;
          }
        }
        ++done;
        if (o.progress)
          *o.progress << "check: " << done << "/" << r.points.size() << " simulations" << (pt.ok ? "" : " (one failed)")
                      << "\n";
      });

  // Time shares from the model's own runs.
  for (const auto& pt : r.points)
    if (pt.candidate < 0 && pt.ok)
      for (auto& ac : r.archs)
        if (ac.arch == pt.arch) ac.shares[pt.phase] = time_shares(pt.ops);

  // Suggestions: each candidate on each arch against the model's own times.
  for (const auto& ac : r.archs) {
    std::vector<Suggestion> arch_s;
    for (std::size_t c = 0; c < r.candidates.size(); ++c) {
      Suggestion s;
      s.candidate = static_cast<int>(c);
      s.arch = ac.arch;
      double gain_sum = 0;
      int phases = 0;
      bool any = false;
      for (const auto& pt : r.points) {
        if (pt.arch != ac.arch || pt.candidate != static_cast<int>(c)) continue;
        any = true;
        const auto base = std::find_if(r.points.begin(), r.points.end(), [&](const SimPoint& b) {
          return b.arch == pt.arch && b.phase == pt.phase && b.candidate < 0;
        });
        if (!pt.ok || !base->ok) {
          s.error = !pt.ok ? pt.error : base->error;
          continue;
        }
        s.before[pt.phase] = base->seconds;
        s.after[pt.phase] = pt.seconds;
        gain_sum += 100.0 * (base->seconds - pt.seconds) / base->seconds;
        ++phases;
      }
      if (!any) continue;
      const Candidate& cand = r.candidates[c];
      const models::ModelSpec changed = apply_changes(r.model, cand.changes);
      s.params_delta =
          static_cast<std::int64_t>(models::count_params(changed).total) - static_cast<std::int64_t>(r.params);
      s.params_delta_pct = r.params ? 100.0 * static_cast<double>(s.params_delta) / static_cast<double>(r.params) : 0;
      models::PhaseOptions po = phase_options(o, o.phases.front());
      const std::uint64_t mem0 = models::memory_footprint(r.model, po).total();
      if (!cand.weight_dtype.empty()) {
        const auto dt = arch::parse_dtype(weight_dtype_on(cand, ac.config));
        if (dt) po.weight_dtype = *dt;
      }
      s.memory_delta =
          static_cast<std::int64_t>(models::memory_footprint(changed, po).total()) - static_cast<std::int64_t>(mem0);
      s.gain_pct = phases ? gain_sum / phases : 0;
      s.score = s.gain_pct / std::max(std::fabs(s.params_delta_pct), 1.0);
      arch_s.push_back(s);
    }
    std::stable_sort(arch_s.begin(), arch_s.end(), [](const Suggestion& a, const Suggestion& b) {
      if (a.error.empty() != b.error.empty()) return a.error.empty();
      return a.score > b.score;
    });
    r.suggestions.insert(r.suggestions.end(), arch_s.begin(), arch_s.end());
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace tpusim::sim::codesign
