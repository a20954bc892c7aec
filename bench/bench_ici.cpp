// ICI network and collective speed, printed as "name value unit" lines:
// wall time to simulate an all_reduce of 1 GiB over both axes of a v5e
// 16x16 slice with the aggregated model and with the packet-level twin
// (4 KiB packets), messages and packet hops per wall second, a
// training-step-like stream of repeated collectives (what a sliced model
// run asks of the simulator: the same fsdp gathers and reduce-scatters
// again and again, overlapping), and the simulated figures next to the
// scaling book's (V / W per ring axis).
// `bench_ici quick` skips the packet-level 1 GiB run.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <systemc>

#include "arch/ici/collectives.h"
#include "tests/unit/arch/test_ici_util.h"

using namespace tpusim::arch;
using namespace tpusim::arch::ici;
using tpusim::arch::test::req;

namespace {
double wall(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
void out(const std::string& name, double v, const char* unit) {
  std::printf("%-52s %14.6g %s\n", name.c_str(), v, unit);
}

void timed(const Slice& s, const CollectiveRequest& r, Fidelity f, const std::string& tag) {
  NetworkOptions o;
  o.fidelity = f;
  IciSimulator sim(s, Mesh::physical(s), o);
  const auto t0 = std::chrono::steady_clock::now();
  sim.start(r, 0);
  const auto res = sim.run_all();
  const double w = wall(t0);
  const CollectiveResult& c = res.at(0);
  out(tag + ".simulated_time", c.seconds() * 1e6, "us");
  out(tag + ".wall_time", w, "s");
  out(tag + ".messages", static_cast<double>(c.messages), "count");
  out(tag + ".messages_per_wall_second", static_cast<double>(c.messages) / w, "1/s");
  if (f == Fidelity::packet) {
    out(tag + ".packet_hops", static_cast<double>(sim.network().packets_transmitted()), "count");
    out(tag + ".packet_hops_per_wall_second", static_cast<double>(sim.network().packets_transmitted()) / w, "1/s");
  }
  out(tag + ".events_per_wall_second", static_cast<double>(sim.network().events_processed()) / w, "1/s");
  out(tag + ".algorithm_bandwidth", c.achieved_bandwidth() / 1e9, "GB/s");
}
// 100 steps, each a 64 MiB all_gather over x,y and a 64 MiB reduce_scatter
// over x,y started 500 us later (they overlap and contend), one step per
// simulated ms, advanced step by step as a SystemC shell would.
void train_step_like(const Slice& s, int steps) {
  IciSimulator sim(s, Mesh::physical(s));
  const auto t0 = std::chrono::steady_clock::now();
  Ps t = 0;
  std::size_t done = 0;
  for (int i = 0; i < steps; ++i) {
    CollectiveRequest ag = req(CollectiveKind::all_gather, 64ull << 20, {"x", "y"});
    CollectiveRequest rs = ag;
    rs.kind = CollectiveKind::reduce_scatter;
    sim.start(ag, t);
    sim.start(rs, t + 500000000);
    t += 1000000000;
    done += sim.run_until(t).size();
  }
  done += sim.run_all().size();
  const double w = wall(t0);
  const double msgs = static_cast<double>(sim.network().messages_sent());
  out("train_step_like_100x2_64MiB_xy.collectives", static_cast<double>(done), "count");
  out("train_step_like_100x2_64MiB_xy.wall_time", w, "s");
  out("train_step_like_100x2_64MiB_xy.messages", msgs, "count");
  out("train_step_like_100x2_64MiB_xy.messages_per_wall_second", msgs / w, "1/s");
}
}  // namespace

int sc_main(int argc, char* argv[]) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "quick") == 0;
  const Slice v5e(test::ici_v5e(), "16x16");
  const std::uint64_t GiB = 1ull << 30;
  std::printf("# ICI bench: v5e 16x16, 45 GB/s one-way per link, 1 us per hop\n");
  const CollectiveRequest big = req(CollectiveKind::all_reduce, GiB, {"x", "y"});
  timed(v5e, big, Fidelity::aggregated, "all_reduce_1GiB_xy.aggregated");
  if (!quick) timed(v5e, big, Fidelity::packet, "all_reduce_1GiB_xy.packet");
  train_step_like(v5e, 100);

  // Simulated times against the scaling book (W = 2 x 45 GB/s per axis).
  const double W = 90e9;
  const std::uint64_t V = 256ull << 20;
  const Mesh m = Mesh::physical(v5e);
  auto t = [&](CollectiveKind k, std::uint64_t b, std::vector<std::string> ax) {
    return run_collective(v5e, m, req(k, b, std::move(ax))).seconds();
  };
  const double ag = t(CollectiveKind::all_gather, V, {"x"});
  out("book.all_gather_256MiB_x.sim_over_V_over_W", ag / (static_cast<double>(V) / W), "ratio");
  out("book.all_gather_1KiB_x.sim_over_8_hops", t(CollectiveKind::all_gather, 1024, {"x"}) / 8e-6, "ratio");
  out("book.all_reduce_over_all_gather_x", t(CollectiveKind::all_reduce, V, {"x"}) / ag, "ratio");
  out("book.all_reduce_xy_over_all_reduce_x",
      t(CollectiveKind::all_reduce, V, {"x", "y"}) / t(CollectiveKind::all_reduce, V, {"x"}), "ratio");
  out("book.all_to_all_over_all_gather_x", t(CollectiveKind::all_to_all, V / 16, {"x"}) / ag, "ratio");
  IciConfig line = test::ici_v5e();
  line.wraparound = "never";
  const Slice mesh16(line, "16x16");
  out("book.all_gather_no_wrap_over_wrap_x",
      run_collective(mesh16, Mesh::physical(mesh16), req(CollectiveKind::all_gather, V, {"x"})).seconds() / ag,
      "ratio");
  {
    const Slice s(test::ici_v5e(), "16x4");
    for (CollectiveKind k : {CollectiveKind::all_gather, CollectiveKind::all_reduce, CollectiveKind::all_to_all,
                             CollectiveKind::broadcast}) {
      const CollectiveRequest r = req(k, 64ull << 20, {"x", "y"});
      NetworkOptions p;
      p.fidelity = Fidelity::packet;
      const double a = run_collective(s, Mesh::physical(s), r).seconds();
      const double b = run_collective(s, Mesh::physical(s), r, p).seconds();
      out(std::string("agreement_16x4_64MiB_xy.") + to_string(k) + ".aggregated_over_packet", a / b, "ratio");
    }
  }
  return 0;
}

#include "bench/quiet_main.h"
