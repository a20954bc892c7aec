// `tpusim serve`: a discrete-event simulation of an LLM server on a
// simulated slice (sim/serve/), with step costs from the cycle-level
// engine; and `tpusim serve step`, the child process that simulates one
// step shape and prints its time (SystemC elaborates once per process).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "arch/ici/topology.h"
#include "models/lora.h"
#include "models/sharding.h"
#include "models/zoo.h"
#include "sim/cli/cli.h"
#include "sim/cli/lora_options.h"
#include "sim/cli/serve_deployment.h"
#include "sim/config/config_writer.h"
#include "sim/engine/slice_setup.h"
#include "sim/run/run.h"
#include "sim/serve/adapters.h"
#include "sim/config/units.h"
#include "sim/serve/disaggregated.h"
#include "sim/serve/rate_search.h"
#include "sim/serve/report.h"
#include "sim/serve/request_workload.h"
#include "sim/serve/server.h"
#include "sim/serve/step_cost.h"
#include "sim/serve/step_runner.h"
#include "sim/sweep/progress.h"
#include "sim/serve/step_model_hash.h"  // generated: TPUSIM_STEP_MODEL_HASH
#include "sim/sweep/child_pool.h"

namespace tpusim::sim {

namespace po = boost::program_options;
using namespace serve;

namespace {

// --- serve ---------------------------------------------------------------

std::vector<GridPoint> sorted(const std::set<GridPoint>& s) { return {s.begin(), s.end()}; }

// One row per probed rate (rate_search.csv, curve.csv).
void write_rate_table(const std::string& path, const std::vector<RateProbe>& probes) {
  std::ofstream f(path);
  f << "probe,rate,meets_slo,throughput_rps,output_tps,goodput_rps,ttft_p50_s,ttft_p99_s,tpot_p50_s,tpot_p99_s,"
       "itl_p99_s,e2e_p99_s\n";
  int i = 0;
  for (const auto& p : probes) {
    const Summary& s = p.summary;
    f << i++ << "," << p.rate << "," << (p.meets ? 1 : 0) << "," << s.request_rate << "," << s.output_tps << ","
      << s.goodput << "," << s.ttft.p50 << "," << s.ttft.p99 << "," << s.tpot.p50 << "," << s.tpot.p99 << ","
      << s.itl.p99 << "," << s.e2e.p99 << "\n";
  }
  if (!f) throw UsageError("serve: cannot write " + path);
}

int serve_cmd(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description opts("serve options");
  add_deployment_options(opts);
  opts.add_options()("replicas", po::value<int>()->default_value(1),
                     "data-parallel replicas, each its own server on its own slice")(
      "requests", po::value<std::int64_t>()->default_value(100), "synthetic requests")(
      "arrival", po::value<std::string>()->default_value("poisson"), "poisson, closed or offline")(
      "rate", po::value<double>(), "poisson: requests per second")("concurrency", po::value<int>()->default_value(8),
                                                                   "closed: clients")(
      "input", po::value<std::string>()->default_value("fixed:1024"),
      "input length: fixed:N, uniform:LO:HI, normal:MEAN:SD, hist:V=W,... or hist:FILE.csv")(
      "output", po::value<std::string>()->default_value("fixed:1024"), "output length (as --input)")(
      "seed", po::value<std::uint64_t>()->default_value(1), "random seed of the synthetic workload")(
      "trace-csv", po::value<std::string>(), "requests from a CSV: arrival,input_tokens,output_tokens")(
      "batching", po::value<std::string>()->default_value("continuous"), "continuous or static")(
      "max-batch", po::value<std::int64_t>()->default_value(64), "sequences in a running batch")(
      "max-tokens", po::value<std::int64_t>()->default_value(2048), "tokens per step (prefill chunk budget)")(
      "no-chunked-prefill", po::bool_switch(), "prefill whole prompts only")(
      "policy", po::value<std::string>()->default_value("decode-first"), "decode-first or prefill-first")(
      "page-size", po::value<std::int64_t>()->default_value(16), "tokens per KV page")(
      "kv-pages", po::value<std::int64_t>(), "KV pages per replica (default: HBM free after weights)")(
      "prefill-slice", po::value<std::string>(),
      "disaggregation: the prefill instance's slice (the decode instance is --slice/--mesh)")(
      "prefill-mesh", po::value<std::string>(), "disaggregation: the prefill instance's mesh (tensor/expert axes)")(
      "kv-link-bandwidth", po::value<std::string>(),
      "disaggregation: bandwidth of the K/V transfer from prefill to decode slice, e.g. '100 GB/s' (ICI or DCN)")(
      "preemption", po::value<std::string>()->default_value("recompute"),
      "recompute or swap (K/V pages to host memory over the chip's pcie_bandwidth and back)")(
      "step-cache", po::value<std::string>(), "step-cost cache file, read and updated")(
      "jobs", po::value<int>()->default_value(0), "step simulations at a time (0: all cores)")(
      "slo", po::value<std::string>(), "latency limits, e.g. ttft_p99=2s,tpot_p99=100ms (goodput)")(
      "spec-tokens", po::value<int>()->default_value(0), "speculative decoding: tokens drafted per step (0: off)")(
      "draft-model", po::value<std::string>(),
      "draft model on the same chips (zoo name or file); without it drafting costs nothing (n-gram lookup)")(
      "acceptance", po::value<std::string>()->default_value("0.8"),
      "draft acceptance: RATE, pos:R1,...,Rk (per position) or hist:W0,...,Wk (weights of 0..k accepted)")(
      "rates", po::value<std::string>(), "a throughput-latency curve: Poisson rates R1,R2,... in one run (curve.csv)")(
      "find-max-rate", po::bool_switch(),
      "search the highest Poisson --rate (the start, default 1) whose run meets every --slo limit")(
      "rate-tolerance", po::value<double>()->default_value(0.02), "--find-max-rate: relative precision")(
      "interp-check", po::value<int>()->default_value(0),
      "simulate N of the run's off-grid step shapes directly and report the interpolation error")(
      "out", po::value<std::string>()->default_value("results/serve"), "output directory")(
      "trace", po::bool_switch(), "write trace.json (one track per request and per engine)")(
      "quiet", po::bool_switch(), "no progress bar")(
      "adapters", po::value<std::int64_t>()->default_value(0),
      "LoRA: synthetic requests use N adapters (needs --lora-rank; a --trace-csv names them in a column)")(
      "adapter-dist", po::value<std::string>()->default_value("uniform"),
      "popularity of the adapters: uniform or zipf:S")(
      "adapter-slots", po::value<std::int64_t>(),
      "adapters one replica holds in HBM (default: all of them); missing ones load over the host link");
  po::variables_map vm;
  if (!parse_command_args("serve", "tpusim serve --model NAME [--arch A --slice S --mesh M] [workload] [server]",
                          args, opts, {}, vm, ctx))
    return 0;
  const auto wall0 = std::chrono::steady_clock::now();
  const std::string out = vm["out"].as<std::string>();
  check_output_dir("serve: --out", out);
  Deployment d = load_deployment("serve", vm, ctx);

  // The workload.
  std::vector<Request> reqs;
  ServerOptions so;
  WorkloadSpec ws;
  const std::string arrival = vm["arrival"].as<std::string>();
  const bool find_rate = vm["find-max-rate"].as<bool>();
  if (find_rate && (vm.count("trace-csv") || arrival != "poisson" || !vm.count("slo")))
    throw UsageError("serve: --find-max-rate needs --slo and synthetic Poisson arrivals (no --trace-csv)");
  std::vector<double> rates;
  if (vm.count("rates")) {
    if (find_rate || vm.count("rate") || vm.count("trace-csv") || arrival != "poisson")
      throw UsageError("serve: --rates is a list of Poisson rates; it takes neither --rate, --find-max-rate nor "
                       "--trace-csv");
    std::istringstream in(vm["rates"].as<std::string>());
    for (std::string item; std::getline(in, item, ',');) {
      double r = -1;
      try {
        std::size_t used = 0;
        r = std::stod(item, &used);
        if (used != item.size()) r = -1;
      } catch (const std::exception&) {
      }
      if (!(r > 0 && r <= 1e6))
        throw UsageError("serve: --rates '" + vm["rates"].as<std::string>() +
                         "': expected rates in (0, 1e6] requests/s, found '" + item + "'");
      rates.push_back(r);
    }
    if (rates.empty()) throw UsageError("serve: --rates: no rate given");
  }
  if (vm.count("trace-csv")) {
    reqs = read_trace_csv(vm["trace-csv"].as<std::string>());
    so.arrival = Arrival::trace;
  } else {
    if (arrival == "poisson") {
      ws.arrival = Arrival::poisson;
      if (!vm.count("rate") && !find_rate && rates.empty())
        throw UsageError("serve: --arrival poisson needs --rate (requests per second)");
      ws.rate = vm.count("rate") ? vm["rate"].as<double>() : 1.0;
      if (!(ws.rate > 0 && ws.rate <= 1e6)) throw UsageError("serve: --rate must be in (0, 1e6]");
    } else if (arrival == "closed") {
      ws.arrival = Arrival::closed;
    } else if (arrival == "offline") {
      ws.arrival = Arrival::offline;
    } else {
      throw UsageError("serve: --arrival '" + arrival + "': expected poisson, closed or offline");
    }
    ws.count = vm["requests"].as<std::int64_t>();
    if (ws.count < 1 || ws.count > 10000000) throw UsageError("serve: --requests must be in [1, 1e7]");
    ws.input = parse_length_dist("serve: --input", vm["input"].as<std::string>());
    ws.output = parse_length_dist("serve: --output", vm["output"].as<std::string>());
    ws.seed = vm["seed"].as<std::uint64_t>();
    reqs = synthesize(ws);
    so.arrival = ws.arrival;
  }
  so.concurrency = vm["concurrency"].as<int>();
  if (so.concurrency < 1) throw UsageError("serve: --concurrency must be >= 1");
  so.replicas = vm["replicas"].as<int>();
  if (so.replicas < 1 || so.replicas > 4096) throw UsageError("serve: --replicas must be in [1, 4096]");
  const std::string batching = vm["batching"].as<std::string>(), policy = vm["policy"].as<std::string>();
  so.batching =
      choice<Batching>("batching", batching, {{"continuous", Batching::continuous}, {"static", Batching::static_batch}});
  so.priority = choice<Priority>("policy", policy,
                                 {{"decode-first", Priority::decode_first}, {"prefill-first", Priority::prefill_first}});
  so.max_batch = vm["max-batch"].as<std::int64_t>();
  so.max_tokens = vm["max-tokens"].as<std::int64_t>();
  so.page_tokens = vm["page-size"].as<std::int64_t>();
  so.chunked_prefill = !vm["no-chunked-prefill"].as<bool>();
  if (so.max_batch < 1 || so.max_batch > 65536) throw UsageError("serve: --max-batch must be in [1, 65536]");
  if (so.max_tokens < 1 || so.max_tokens > (1 << 20)) throw UsageError("serve: --max-tokens must be in [1, 2^20]");
  if (so.page_tokens < 1 || so.page_tokens > (1 << 16)) throw UsageError("serve: --page-size must be in [1, 65536]");
  std::int64_t max_in = 0, max_len = 0, min_in = std::numeric_limits<std::int64_t>::max();
  for (const auto& r : reqs) {
    max_in = std::max(max_in, r.input);
    min_in = std::min(min_in, r.input);
    max_len = std::max(max_len, r.input + r.output);
  }
  const std::int64_t max_ctx = d.spec.transformer.max_context;
  if (max_ctx > 0 && max_len > max_ctx)
    throw UsageError("serve: a request of " + std::to_string(max_len) + " tokens (input + output) exceeds " +
                     d.spec.name + "'s max_context " + std::to_string(max_ctx));
  // Without chunking a whole prompt is one step's prefill.
  const std::int64_t max_prefill = so.chunked_prefill ? so.max_tokens : std::max(so.max_tokens, max_in);
  Slo slo;
  if (vm.count("slo")) slo = parse_slo(vm["slo"].as<std::string>());
  // Speculative decoding.
  models::ModelSpec draft_spec;
  const bool has_draft = vm.count("draft-model") != 0;
  so.spec.k = vm["spec-tokens"].as<int>();
  if (so.spec.k < 0 || so.spec.k > 64) throw UsageError("serve: --spec-tokens must be in [0, 64]");
  if (has_draft && so.spec.k == 0) throw UsageError("serve: --draft-model needs --spec-tokens k >= 1");
  if (so.spec.k > 0) {
    std::string acc = vm["acceptance"].as<std::string>();
    if (acc.rfind("pos:", 0) == 0) {
      so.spec.kind = SpecDecoding::Kind::positions;
      acc = acc.substr(4);
    } else if (acc.rfind("hist:", 0) == 0) {
      so.spec.kind = SpecDecoding::Kind::histogram;
      acc = acc.substr(5);
    }
    std::istringstream in(acc);
    for (std::string item; std::getline(in, item, ',');) {
      try {
        std::size_t used = 0;
        so.spec.a.push_back(std::stod(item, &used));
        if (used != item.size() || !std::isfinite(so.spec.a.back())) throw std::invalid_argument(item);
      } catch (const std::exception&) {
        throw UsageError("serve: --acceptance '" + vm["acceptance"].as<std::string>() + "': expected a number, found '" +
                         item + "'");
      }
    }
    so.spec.seed = vm["seed"].as<std::uint64_t>();
    if (has_draft) {
      draft_spec = models::load_model(vm["draft-model"].as<std::string>());
      if (draft_spec.family != models::Family::decoder)
        throw UsageError("serve: --draft-model '" + vm["draft-model"].as<std::string>() + "' is not a decoder");
    }
  }
  // LoRA adapters (sim/serve/adapters.h): requests tagged, slots in HBM,
  // loads over the host link.
  const std::int64_t n_adapters = vm["adapters"].as<std::int64_t>();
  AdapterDist adist;
  std::int64_t adapter_count = 0;
  double adapter_bytes = 0;
  if (n_adapters < 0 || n_adapters > (1 << 20)) throw UsageError("serve: --adapters must be in [0, 2^20]");
  if (n_adapters > 0) {
    if (!d.lora.enabled()) throw UsageError("serve: --adapters needs --lora-rank");
    if (vm.count("trace-csv")) throw UsageError("serve: --adapters is for synthetic requests; a trace names them");
    adist = parse_adapter_dist("serve: --adapter-dist", vm["adapter-dist"].as<std::string>());
    assign_adapters(reqs, n_adapters, adist, vm["seed"].as<std::uint64_t>());
  }
  for (const auto& r : reqs) adapter_count = std::max(adapter_count, r.adapter + 1);
  if (adapter_count > 0 && !d.lora.enabled())
    throw UsageError("serve: the trace names LoRA adapters; give their --lora-rank (and --lora-targets)");
  if (d.lora.enabled()) {
    if (adapter_count == 0)
      throw UsageError("serve: --lora-rank needs --adapters N or a --trace-csv with an adapter column");
    if (n_adapters > 0) adapter_count = n_adapters;
    so.lora.slots = vm.count("adapter-slots") ? vm["adapter-slots"].as<std::int64_t>() : adapter_count;
    if (so.lora.slots < 1 || so.lora.slots > (1 << 20)) throw UsageError("serve: --adapter-slots must be in [1, 2^20]");
    models::PhaseOptions one = step_phase({0, 1, 1, 1}, d.mesh, d.dtype, 1, d.lora);
    models::check_options(d.spec, one);
    adapter_bytes = static_cast<double>(arch::dtype_bytes(d.dtype, models::lora_params(d.spec, one)));
    if (!(d.cfg.pcie_bandwidth > 0))
      throw UsageError("serve: LoRA adapters load over the host link, but the chip config has no pcie_bandwidth");
    so.lora.load_seconds = adapter_bytes / d.cfg.pcie_bandwidth;
  } else if (vm.count("adapter-slots")) {
    throw UsageError("serve: --adapter-slots needs --lora-rank");
  }
  std::string kv_note;
  if (vm.count("kv-pages")) {
    so.kv_pages = vm["kv-pages"].as<std::int64_t>();
    if (so.kv_pages < 1) throw UsageError("serve: --kv-pages must be >= 1");
    kv_note = "KV cache: " + std::to_string(so.kv_pages) + " pages (--kv-pages)";
  } else {
    // The longest decode reads input + output - 1 cached tokens.
    so.kv_pages = kv_pages_from_hbm(d, max_prefill, std::max<std::int64_t>(max_len - 1, 1), so.page_tokens, &kv_note,
                                    so.spec.k > 0 && has_draft ? &draft_spec : nullptr,
                                    static_cast<double>(so.lora.slots) * adapter_bytes);
  }
  so.preemption = choice<Preemption>("preemption", vm["preemption"].as<std::string>(),
                                     {{"recompute", Preemption::recompute}, {"swap", Preemption::swap}});
  if (so.preemption == Preemption::swap) {
    // K/V bytes of one token on one chip (the zoo's footprint at the
    // longest decode, per token), moved over that chip's own host link.
    const std::int64_t ctx = std::max<std::int64_t>(max_len - 1, 1);
    const models::FitReport f =
        models::check_fit(d.spec, step_phase({0, 1, ctx}, d.mesh, d.dtype), d.cfg.hbm.capacity_bytes);
    so.kv_bytes_per_token = static_cast<double>(f.footprint.kv_cache) / static_cast<double>(ctx);
    so.host_link_bw = d.cfg.pcie_bandwidth;
  }
  const int jobs = vm["jobs"].as<int>();
  if (jobs < 0 || jobs > 1024) throw UsageError("serve: --jobs must be in [0, 1024]");
  const int check = vm["interp-check"].as<int>();
  if (check < 0 || check > 10000) throw UsageError("serve: --interp-check must be in [0, 10000]");

  // The step-cost models and their cache: the target's steps (with
  // speculative decoding its verification steps, and its plain steps for
  // the comparison) and the draft's.
  const std::string cache = vm.count("step-cache") ? vm["step-cache"].as<std::string>() : "";
  // Steps above the model's context are extrapolated from the last cell
  // (the zoo refuses a chunk longer than max_context). A chunk follows at
  // most max_len - 2 cached tokens of its own sequence (a prompt, with the
  // tokens generated before a recompute preemption, is at most max_len - 1
  // long and its last chunk holds at least one token). A step's chunks are
  // whole prompts of at least min_in tokens but for two (the one it ends
  // and the one it starts), and at most max_batch.
  const std::int64_t step_tokens = max_ctx > 0 ? std::min(max_prefill, max_ctx) : max_prefill;
  const std::int64_t max_chunks =
      reqs.empty() ? 1 : std::min(so.max_batch, step_tokens / std::max<std::int64_t>(1, min_in) + 2);
  StepGrid grid = make_grid(step_tokens, so.max_batch, std::max<std::int64_t>(1, max_len - 1),
                            std::max<std::int64_t>(0, max_len - 2), max_chunks);
  if (so.lora.on()) {
    // The adapters and the decode batch bound each other (a sequence has
    // one adapter): both axes double, so that small mixed batches are
    // interpolated between near neighbours (docs/serving.md).
    grid.adapters = lora_adapter_axis(std::min(adapter_count, so.max_batch));
    grid.decode = lora_adapter_axis(so.max_batch);
  }
  struct Costs {
    StepSimSetup setup;
    std::string desc;
    std::unique_ptr<StepCostModel> model;
  };
  auto make_costs = [&](const models::ModelSpec& m, const std::string& model_arg, int decode_tokens) {
    Costs c;
    c.setup = d.setup;
    c.setup.model = model_arg;
    c.setup.decode_tokens = decode_tokens;
    c.desc = "arch=" + d.setup.arch + " slice=" + (d.setup.slice.empty() ? "1" : d.setup.slice) +
             " mesh=" + (d.setup.mesh.empty() ? "-" : d.setup.mesh) + " model=" + m.name + " dtype=" + d.setup.dtype +
             (d.setup.twisted ? " twisted" : "") +
             (d.setup.attention_kernel != "flash" ? " attention=" + d.setup.attention_kernel : "") +
             (decode_tokens > 1 ? " decode_tokens=" + std::to_string(decode_tokens) : "") +
             (d.lora.enabled() ? " lora=" + std::to_string(d.lora.rank) + ":" + c.setup.lora_targets : "");
    const std::string key = digest(std::string("tpusim-serve-step v1\n") + TPUSIM_VERSION + " " +
                                   TPUSIM_STEP_MODEL_HASH + "\n" +
                                   write_config(d.cfg) + "\n" +
                                   (m.file.empty() ? m.name : sweep::slurp_file(m.file)) + "\n" + c.desc);
    c.model = std::make_unique<StepCostModel>(grid, key);
    if (!cache.empty()) c.model->load(cache);
    return c;
  };
  const bool spec_on = so.spec.k > 0;
  Costs target = make_costs(d.spec, d.setup.model, spec_on ? so.spec.k + 1 : 1);
  // Disaggregation: the prefill instance's steps are a cost model of its
  // own slice and mesh (sim/serve/disaggregated.h).
  std::optional<Costs> prefill_costs;
  Disaggregation dis;
  if (vm.count("prefill-slice")) {
    if (!vm.count("kv-link-bandwidth") || spec_on || so.batching != Batching::continuous)
      throw UsageError("serve: --prefill-slice (disaggregation) needs --kv-link-bandwidth and takes neither "
                       "--spec-tokens nor --batching static");
    const std::string pslice = vm["prefill-slice"].as<std::string>();
    const std::string pmesh = vm.count("prefill-mesh") ? vm["prefill-mesh"].as<std::string>() : "";
    const arch::ici::Slice ps(d.cfg.ici, pslice, d.setup.twisted);  // arch::ConfigError
    if (!pmesh.empty()) {
      const workloads::MeshSpec m = workloads::parse_mesh(pmesh, models::mesh_axis_names());
      for (const auto& a : m.axes)
        if (a.name != "tensor" && a.name != "expert")
          throw UsageError("serve: --prefill-mesh '" + pmesh + "': axis '" + a.name + "' is not served");
      try {
        map_mesh(ps, m);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("serve: --prefill-mesh: ") + e.what());
      }
    }
    try {
      dis.link_bw = parse_quantity(vm["kv-link-bandwidth"].as<std::string>(), UnitKind::bandwidth);
    } catch (const UnitError& e) {
      throw UsageError("serve: --kv-link-bandwidth '" + vm["kv-link-bandwidth"].as<std::string>() + "': " + e.what());
    }
    // What crosses the link: the K/V of a token on every chip (the zoo's
    // footprint of one unsharded replica).
    const std::int64_t ctx = std::max<std::int64_t>(max_len - 1, 1);
    dis.kv_bytes_per_token =
        static_cast<double>(
            models::check_fit(d.spec, step_phase({0, 1, ctx}, {}, d.dtype), d.cfg.hbm.capacity_bytes).footprint.kv_cache) /
        static_cast<double>(ctx);
    const std::string dslice = d.setup.slice, dmesh = d.setup.mesh;
    d.setup.slice = pslice;
    d.setup.mesh = pmesh;
    prefill_costs = make_costs(d.spec, d.setup.model, 1);
    d.setup.slice = dslice;
    d.setup.mesh = dmesh;
  }
  std::optional<Costs> plain, draft;
  if (spec_on) {
    plain = make_costs(d.spec, d.setup.model, 1);
    if (has_draft) draft = make_costs(draft_spec, vm["draft-model"].as<std::string>(), 1);
  }
  std::vector<Costs*> all_costs = {&target};
  if (plain) all_costs.push_back(&*plain);
  if (draft) all_costs.push_back(&*draft);
  if (prefill_costs) all_costs.push_back(&*prefill_costs);
  std::size_t from_cache = 0;
  for (auto* c : all_costs) from_cache += c->model->size();
  const bool tty = ::isatty(2) && !vm["quiet"].as<bool>();
  std::ostream* bar_os = tty ? &std::cerr : nullptr;
  std::size_t simulated = 0;
  auto run_points = [&](Costs& c, const std::vector<GridPoint>& pts) {
    if (pts.empty()) return;
    StepCostModel& m = *c.model;
    const std::size_t done0 = m.size();
    sweep::Progress bar(bar_os, tty, pts.size(), 0, "serve", "step simulations");
    simulate_points(pts, c.setup, jobs, out, m, [&] { bar.set_done(m.size() - done0); });
    bar.set_done(pts.size());
    bar.end();
    simulated += pts.size();
    if (!cache.empty()) m.save(cache, c.desc);
  };
  // Seed points spanning the grid, then reruns until no corner is missing.
  for (auto* c : all_costs) {
    std::set<GridPoint> seed;
    for (const GridPoint& p : {GridPoint{grid.prefill.back(), 0, 0}, GridPoint{0, 1, grid.context.front()},
                               GridPoint{0, grid.decode.back(), grid.context.back()}})
      if (p.prefill + p.decode > 0 && !c->model->has(p)) seed.insert(p);
    run_points(*c, sorted(seed));
  }
  int passes = 0;
  // One serving run, with missing step costs simulated and the run
  // repeated until none is missing.
  auto run_with = [&](const std::vector<Request>& rs, const ServerOptions& o, Costs& main, Costs* dr) {
    for (int pass = 0;; ++pass, ++passes) {
      main.model->clear_missing();
      if (dr) dr->model->clear_missing();
      std::optional<sweep::Progress> bar;
      auto prog = [&](std::int64_t a, std::int64_t b) {
        if (!bar) bar.emplace(bar_os, tty, static_cast<std::size_t>(b), 0, "serve", "requests");
        bar->set_done(static_cast<std::size_t>(a));
        if (a == b) bar->end();
      };
      // Disaggregated: `dr` is the prefill instance's costs.
      ServeResult r = prefill_costs ? simulate_disaggregated(rs, o, dis, *dr->model, *main.model, prog)
                                    : simulate_serving(rs, o, *main.model, prog, dr ? dr->model.get() : nullptr);
      if (main.model->missing().empty() && (!dr || dr->model->missing().empty())) return r;
      if (pass > 64) throw std::logic_error("serve: step-cost discovery did not converge");
      run_points(main, sorted(main.model->missing()));
      if (dr) run_points(*dr, sorted(dr->model->missing()));
    }
  };
  // Requests synthesized again (rate search, curves) get their adapters.
  auto tagged = [&](std::vector<Request> rs) {
    if (n_adapters > 0) assign_adapters(rs, n_adapters, adist, vm["seed"].as<std::uint64_t>());
    return rs;
  };
  auto run_all = [&](const std::vector<Request>& rs) {
    return run_with(tagged(rs), so, target, prefill_costs ? &*prefill_costs : draft ? &*draft : nullptr);
  };
  StepCostModel& costs = *target.model;
  ServeResult res;
  double rate = ws.rate;
  if (find_rate) {
    const double tol = vm["rate-tolerance"].as<double>();
    if (!(tol >= 1e-4 && tol <= 1)) throw UsageError("serve: --rate-tolerance must be in [1e-4, 1]");
    RateSearchResult found = find_max_rate(ws, slo, ws.rate, tol, so.replicas, run_all);
    write_rate_table(out + "/rate_search.csv", found.probes);
    if (found.rate == 0)
      throw UsageError("serve: --find-max-rate: no rate down to " + std::to_string(found.probes.back().rate) +
                       " requests/s meets " + slo.text + " (see " + out + "/rate_search.csv)");
    if (found.failing == 0)
      throw UsageError("serve: --find-max-rate: every rate up to " + std::to_string(found.probes.back().rate) +
                       " requests/s meets " + slo.text);
    rate = found.rate;
    res = std::move(found.best);
    ctx.out << "max rate meeting " << slo.text << ": " << rate << " requests/s (" << found.failing
            << " does not; " << found.probes.size() << " probes, rate_search.csv)\n";
  } else if (!rates.empty()) {
    // A throughput-latency curve: the same requests at each rate, one
    // step-cost model for all.
    std::vector<RateProbe> curve;
    for (double r : rates) {
      ws.rate = r;
      res = run_all(synthesize(ws));
      RateProbe p{r, false, summarize(res, slo, so.replicas)};
      p.meets = p.summary.meets(slo);
      curve.push_back(p);
    }
    write_rate_table(out + "/curve.csv", curve);
    rate = rates.back();
    ctx.out << "throughput-latency curve over " << rates.size() << " rates: curve.csv (other files: rate " << rate
            << ")\n";
  } else {
    res = run_all(reqs);
  }
  const Summary sum = summarize(res, slo, so.replicas);
  // Speculative decoding against plain decoding of the same requests.
  std::string spec_line;
  std::vector<std::pair<std::string, std::string>> spec_cols;
  if (spec_on) {
    ServerOptions po = so;
    po.spec = SpecDecoding{};
    std::vector<Request> rs = reqs;
    if (find_rate) {
      ws.rate = rate;
      rs = synthesize(ws);
    }
    const Summary base = summarize(run_with(tagged(rs), po, *plain, nullptr), slo, so.replicas);
    double out_tok = 0, seq_steps = 0;
    for (const auto& st : res.steps) {
      out_tok += static_cast<double>(st.decode_tokens_out);
      seq_steps += static_cast<double>(st.decode_seqs);
    }
    const double per_step = seq_steps > 0 ? out_tok / seq_steps : 0;
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "  speculative k=%d (%s): %.3f tokens per verification (model: %.3f); plain decoding %.1f output "
                  "tok/s, TPOT mean %.4f s: speed-up %.3fx in throughput, %.3fx in TPOT\n",
                  so.spec.k, has_draft ? ("draft " + draft_spec.name).c_str() : "no draft model", per_step,
                  so.spec.expected_tokens(), base.output_tps, base.tpot.mean, sum.output_tps / base.output_tps,
                  base.tpot.mean / sum.tpot.mean);
    spec_line = buf;
    auto num = [](double v) {
      char b[40];
      std::snprintf(b, sizeof b, "%.9g", v);
      return std::string(b);
    };
    spec_cols = {{"spec_tokens", std::to_string(so.spec.k)},
                 {"draft_model", has_draft ? draft_spec.name : ""},
                 {"acceptance", vm["acceptance"].as<std::string>()},
                 {"tokens_per_verification", num(per_step)},
                 {"expected_tokens_per_verification", num(so.spec.expected_tokens())},
                 {"plain_output_tps", num(base.output_tps)},
                 {"plain_tpot_mean_s", num(base.tpot.mean)},
                 {"speedup_throughput", num(sum.output_tps / base.output_tps)},
                 {"speedup_tpot", num(base.tpot.mean / sum.tpot.mean)}};
  }

  std::vector<std::pair<std::string, std::string>> setup = {
      {"arch", d.setup.arch},
      {"slice", d.setup.slice.empty() ? "1" : d.setup.slice},
      {"mesh", d.setup.mesh},
      {"replicas", std::to_string(so.replicas)},
      {"model", d.spec.name},
      {"arrival", arrival_name(so.arrival)},
      {"rate", so.arrival == Arrival::poisson ? std::to_string(rate) : ""},
      {"concurrency", so.arrival == Arrival::closed ? std::to_string(so.concurrency) : ""},
      {"batching", batching},
      {"policy", policy},
      {"max_batch", std::to_string(so.max_batch)},
      {"max_tokens", std::to_string(so.max_tokens)},
      {"chunked_prefill", so.chunked_prefill ? "1" : "0"},
      {"page_tokens", std::to_string(so.page_tokens)},
      {"seed", std::to_string(vm["seed"].as<std::uint64_t>())},
      {"slo", slo.text},
      {"slo_met", slo.empty() ? "" : (sum.meets(slo) ? "1" : "0")}};
  setup.insert(setup.end(), spec_cols.begin(), spec_cols.end());
  std::string lora_line;
  if (so.lora.on()) {
    double step_adapters = 0;
    for (const auto& st : res.steps) step_adapters += static_cast<double>(st.adapters);
    if (!res.steps.empty()) step_adapters /= static_cast<double>(res.steps.size());
    char buf[64];
    auto num = [&](double v) {
      std::snprintf(buf, sizeof buf, "%.9g", v);
      return std::string(buf);
    };
    setup.insert(setup.end(), {{"lora_rank", std::to_string(d.lora.rank)},
                               {"lora_targets", target.setup.lora_targets},
                               {"adapters", std::to_string(adapter_count)},
                               {"adapter_dist", n_adapters > 0 ? adist.text : "trace"},
                               {"adapter_slots", std::to_string(so.lora.slots)},
                               {"adapter_bytes_per_chip", num(adapter_bytes)},
                               {"adapter_load_s", num(so.lora.load_seconds)},
                               {"adapter_loads", std::to_string(res.adapter_loads)},
                               {"adapter_evictions", std::to_string(res.adapter_evictions)},
                               {"mean_step_adapters", num(step_adapters)}});
    char line[300];
    std::snprintf(line, sizeof line,
                  "  LoRA rank %lld on %s: %lld adapter(s) (%s), %lld slot(s) per replica, %.2f MiB per chip each, "
                  "%.3f ms per load; %lld loads, %lld evictions; %.2f distinct adapters per step\n",
                  static_cast<long long>(d.lora.rank), target.setup.lora_targets.c_str(),
                  static_cast<long long>(adapter_count), n_adapters > 0 ? adist.text.c_str() : "trace",
                  static_cast<long long>(so.lora.slots), adapter_bytes / (1 << 20), 1e3 * so.lora.load_seconds,
                  static_cast<long long>(res.adapter_loads), static_cast<long long>(res.adapter_evictions),
                  step_adapters);
    lora_line = line;
  }
  if (prefill_costs) {
    char bw[40];
    std::snprintf(bw, sizeof bw, "%.9g", dis.link_bw);
    setup.insert(setup.end(), {{"prefill_slice", prefill_costs->setup.slice},
                               {"prefill_mesh", prefill_costs->setup.mesh},
                               {"kv_link_bandwidth", bw}});
  }
  write_serve_results(out, res, sum, setup, vm["trace"].as<bool>());

  // Interpolation against direct simulation on the run's own shapes.
  if (check > 0) {
    std::set<GridPoint> shapes;
    auto on_grid = [](const std::vector<std::int64_t>& axis, std::int64_t x) {
      return std::find(axis.begin(), axis.end(), x) != axis.end();
    };
    const auto& g = costs.grid();
    for (const auto& st : res.steps) {
      // A step's effective chunks, rounded: the direct simulation needs
      // whole chunks, and the interpolation is taken at the same count.
      GridPoint p{st.prefill_tokens,
                  st.decode_seqs,
                  st.decode_seqs > 0 ? std::llround(st.mean_context) : 0,
                  st.adapters,
                  st.prefill_tokens > 0 ? std::llround(st.prefill_prefix) : 0,
                  st.prefill_tokens > 0 ? std::max<std::int64_t>(1, std::llround(st.prefill_chunks)) : 1};
      if (p.decode > 0) p.context = std::max<std::int64_t>(1, p.context);
      if (on_grid(g.prefill, p.prefill) && on_grid(g.decode, p.decode) && on_grid(g.adapters, p.adapters) &&
          (p.decode == 0 || on_grid(g.context, p.context)) &&
          (p.prefill == 0 || (on_grid(g.prefix, p.prefix) && on_grid(g.chunks, p.chunks))))
        continue;
      shapes.insert(p);
    }
    std::vector<GridPoint> all = sorted(shapes), pick;
    for (int i = 0; i < check && !all.empty(); ++i) {
      const std::size_t k = all.size() * static_cast<std::size_t>(i) / static_cast<std::size_t>(check);
      if (pick.empty() || !(pick.back() == all[k])) pick.push_back(all[k]);
    }
    StepCostModel direct(g, costs.key());
    simulate_points(pick, target.setup, jobs, out, direct);
    std::ofstream f(out + "/interp_check.csv");
    f << "prefill_tokens,decode_seqs,context,interpolated_s,simulated_s,error_pct,adapters,prefix,chunks\n";
    double worst = 0, total = 0;
    for (const auto& p : pick) {
      const double interp = costs.cost({p.prefill, p.decode, static_cast<double>(p.context), p.adapters,
                                        static_cast<double>(p.prefix), static_cast<double>(p.chunks)});
      const double sim = direct.value(p);  // simulated at exactly this shape
      const double err = 100.0 * (interp - sim) / sim;
      worst = std::max(worst, std::abs(err));
      total += std::abs(err);
      f << p.prefill << "," << p.decode << "," << p.context << "," << interp << "," << sim << "," << err << ","
        << p.adapters << "," << p.prefix << "," << p.chunks << "\n";
    }
    ctx.out << "interpolation check: " << pick.size() << " shapes, mean |error| "
            << (pick.empty() ? 0 : total / static_cast<double>(pick.size())) << "%, max |error| " << worst
            << "% (interp_check.csv)\n";
  }

  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  char line[512];
  ctx.out << "Serving " << d.spec.name << " on " << d.setup.arch << " " << (d.setup.slice.empty() ? "1 chip" : d.setup.slice)
          << (d.setup.mesh.empty() ? "" : " (" + d.setup.mesh + ")") << " x" << so.replicas << " replica(s), "
          << sum.requests << " requests (" << arrival_name(so.arrival) << ")\n  " << kv_note << ", "
          << so.kv_pages << " pages of " << so.page_tokens << " tokens\n";
  std::snprintf(line, sizeof line,
                "  throughput   %.3f req/s, %.1f input tok/s, %.1f output tok/s over %.2f s\n"
                "  TTFT  p50 %.4f s  p90 %.4f s  p99 %.4f s  mean %.4f s\n"
                "  TPOT  p50 %.4f s  p90 %.4f s  p99 %.4f s  mean %.4f s\n"
                "  ITL   p50 %.4f s  p99 %.4f s;  e2e p50 %.3f s  p99 %.3f s\n"
                "  KV utilisation mean %.1f%% peak %.1f%%, %lld preemptions, %lld steps\n",
                sum.request_rate, sum.input_tps, sum.output_tps, sum.duration, sum.ttft.p50, sum.ttft.p90,
                sum.ttft.p99, sum.ttft.mean, sum.tpot.p50, sum.tpot.p90, sum.tpot.p99, sum.tpot.mean, sum.itl.p50,
                sum.itl.p99, sum.e2e.p50, sum.e2e.p99, 100 * sum.kv_util_mean, 100 * sum.kv_util_peak,
                static_cast<long long>(sum.preemptions), static_cast<long long>(sum.steps));
  ctx.out << line;
  if (prefill_costs) {
    std::snprintf(line, sizeof line,
                  "  disaggregated: prefill on %s (%s), decode on the slice above; K/V %.0f B per token over %.4g "
                  "GB/s\n",
                  prefill_costs->setup.slice.c_str(),
                  prefill_costs->setup.mesh.empty() ? "no mesh" : prefill_costs->setup.mesh.c_str(),
                  dis.kv_bytes_per_token, dis.link_bw / 1e9);
    ctx.out << line;
  }
  if (so.preemption == Preemption::swap) {
    std::snprintf(line, sizeof line, "  swap: %lld tokens to host memory, %lld back, %.4f s of host-link transfers\n",
                  static_cast<long long>(res.swapped_out_tokens), static_cast<long long>(res.swapped_in_tokens),
                  res.swap_seconds);
    ctx.out << line;
  }
  ctx.out << spec_line << lora_line;
  if (!slo.empty()) {
    std::snprintf(line, sizeof line, "  goodput %.3f req/s (%.1f%% of requests within %s); summary limits %s\n",
                  sum.goodput, 100 * sum.good_fraction, slo.text.c_str(), sum.meets(slo) ? "met" : "NOT met");
    ctx.out << line;
  }
  std::snprintf(line, sizeof line, "  step costs: %zu simulated now, %zu from the cache, %d reruns for missing ones; wall %.2f s\n",
                simulated, from_cache, passes, wall);
  ctx.out << line << "results: " << out << "\n";
  return 0;
}

}  // namespace

void register_serve_commands() {
  register_command("serve", "Simulate an LLM server (continuous batching, paged KV) on a slice", serve_cmd);
  register_command("serve step", "Simulate one serving step shape (used by serve)", serve_step_cmd);
}

}  // namespace tpusim::sim
