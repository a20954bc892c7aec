// SystemC shell around the ICI collective simulator of one slice. Clients
// (e.g. a ChipModule's sequencer) start a collective and get a callback at
// its exact completion time; one thread advances the plain-C++ simulator
// to the current time and sleeps until its next event or a new request, so
// no clock is ticked and collectives overlap freely with other modules'
// work and with each other (they contend on the shared links).
// Callers may watch a chip's messages (watch) to pace their own work, the
// HBM reads and writes and the reductions, with the transfer.
// Leaves out: TLM sockets (callers hold a reference), charging the
// reduction arithmetic (the result's reduce_bytes_per_chip and the
// watched progress are for the caller's VPU model).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>

#include <systemc>

#include "arch/common/stats.h"
#include "arch/ici/collectives.h"

namespace tpusim::arch::ici {

class IciModule : public sc_core::sc_module {
 public:
  using ResultCallback = std::function<void(const CollectiveResult&)>;

  IciModule(sc_core::sc_module_name name, const Slice& slice, const Mesh& mesh, const NetworkOptions& options = {});

  // Starts the collective at the current simulation time and returns at
  // once (its id); on_done runs in this module's thread at the completion
  // time. Throws ConfigError for a request that does not fit the slice.
  std::uint64_t start_collective(const CollectiveRequest& req, std::function<void()> on_done);
  std::uint64_t start_collective_with_result(const CollectiveRequest& req, ResultCallback on_done);

  // Per-chip view (every chip simulated on its own): the collective is
  // planned now and its chips join it one by one with chip_start; the
  // traffic of a group starts when all its chips have joined
  // (IciSimulator::start_deferred). on_chip_done runs when that chip's
  // part is complete, on_all_done when the whole collective is.
  std::uint64_t start_deferred(const CollectiveRequest& req, ResultCallback on_all_done);
  void chip_start(std::uint64_t id, int chip, std::function<void()> on_chip_done);
  // Calls on_progress in this module's thread each time chip `chip` sends
  // or receives a message of collective `id` (IciSimulator::watch, same
  // timing rule), before any completion callback of the same instant.
  using ProgressCallback = std::function<void(const IciSimulator::ChipProgress&)>;
  void watch(std::uint64_t id, int chip, ProgressCallback on_progress);

  IciSimulator& simulator() { return sim_; }
  const IciSimulator& simulator() const { return sim_; }
  // Per-link statistics (bytes each way, messages, busy time, utilization
  // over [0, now]) and totals; see IciSimulator::stats.
  StatList stats() const { return sim_.stats(); }

  static Ps now_ps();

 private:
  void run();
  // Runs the callbacks of chips and collectives that completed.
  void deliver(std::vector<CollectiveResult> finished);

  IciSimulator sim_;
  std::unordered_map<std::uint64_t, ResultCallback> waiting_;
  std::map<std::pair<std::uint64_t, int>, std::function<void()>> chip_waiting_;
  std::map<std::pair<std::uint64_t, int>, ProgressCallback> watchers_;
  sc_core::sc_event wake_;
};

}  // namespace tpusim::arch::ici
