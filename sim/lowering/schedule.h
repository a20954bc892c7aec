// The order the lowering emits operators in, which is the order each
// TensorCore's in-order sequencer issues their instructions, and the
// asynchronous collectives that must wait for another one to complete.
// The workload's order, except with `prefetch` (multi-chip runs, as XLA's
// latency-hiding scheduler does with async collectives):
// - a collective whose operands no operator still to come produces is
//   moved before the kernel that precedes it, so that it runs while that
//   kernel computes; collectives whose operands are produced late
//   (activations) stay in place;
// - all-gathers of operands that no operator produces (FSDP weight
//   gathers) form a chain: each starts when the one before it has
//   completed, and is issued just before the first consumer of that one
//   (where the sequencer would wait for it anyway) when that is earlier.
//   XLA's scheduler keeps at most one all-gather in flight
//   (SchedulerConfig::all_gather_overlap_limit = 1 in
//   xla/service/latency_hiding_scheduler.h) and starts each as early as
//   that allows, so a large gather overlaps all the compute since the
//   previous gather ended rather than only the operator before its
//   consumer.
// - a collective that reads another collective's result (a weight
//   gradient's all-reduce over data replicas after its reduce-scatter
//   over fsdp) is issued just before the next collective of its
//   producer's kind (XLA keeps one collective of each kind in flight,
//   SchedulerConfig's *_overlap_limit = 1, so the producer has completed
//   there) or, when none follows, before its own first consumer, instead
//   of right after its producer, where the in-order sequencer would wait
//   for the producer and hold back every kernel behind it.
// Leaves out: the scheduler's memory limit (gathers run at most one ahead
// here, so at most two gathered weights are live; the memory plan keeps
// the workload's order), chaining of activation all-gathers and of the
// other collective kinds.
#pragma once

#include <cstddef>
#include <vector>

#include "sim/lowering/fusion.h"
#include "workloads/ir/workload.h"

namespace tpusim::sim::lowering {

struct Schedule {
  std::vector<std::size_t> order;  // every operator once
  std::vector<int> after;          // per operator: the collective it starts after, or -1
};

Schedule schedule_ops(const workloads::Workload& wl, const FusionPlan& fusion, bool prefetch);

}  // namespace tpusim::sim::lowering
