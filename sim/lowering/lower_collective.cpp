// A collective is one ICI instruction: every chip takes part and the
// network model times it on the whole slice. Its lower bound: a chip
// cannot receive its share of the data faster than all of its links
// together deliver it.
#include <algorithm>

#include "arch/ici/collectives.h"
#include "sim/lowering/op_lowering.h"

namespace tpusim::sim::lowering {

namespace {

// Collective op kinds and arch::ici::CollectiveKind list the same six
// collectives in the same order; is_collective owns the list of kinds.
static_assert(static_cast<int>(OpKind::broadcast) - static_cast<int>(OpKind::all_gather) ==
                  static_cast<int>(arch::ici::CollectiveKind::broadcast),
              "collective op kinds and CollectiveKind must stay in the same order");
static_assert(static_cast<int>(OpKind::all_reduce) - static_cast<int>(OpKind::all_gather) ==
                  static_cast<int>(arch::ici::CollectiveKind::all_reduce),
              "collective op kinds and CollectiveKind must stay in the same order");

arch::ici::CollectiveKind collective_kind(OpKind k) {
  if (!workloads::is_collective(k)) throw std::logic_error("collective_kind: not a collective");
  return static_cast<arch::ici::CollectiveKind>(static_cast<int>(k) - static_cast<int>(OpKind::all_gather));
}

}  // namespace

std::vector<Step> lower_collective(const LowerContext& cx, std::size_t i, const Epilogue&, OpPlan& plan) {
  const Op& op = cx.op(i);
  if (!cx.opt.multi_chip)
    throw LoweringError("operator '" + op.name + "' is a " + plan.kind +
                        ", a collective: it needs a multi-chip slice (--slice), and this run simulates one chip");
  const auto& a = op.as<workloads::CollectiveAttrs>();
  std::int64_t group = 1;
  for (const std::string& axis : a.mesh_axes) {
    const auto want = cx.wl.mesh_axis_size(axis);
    std::int64_t have = -1;
    for (const auto& [name, size] : cx.opt.mesh)
      if (name == axis) have = size;
    if (have < 0)
      throw LoweringError("operator '" + op.name + "' runs over mesh axis '" + axis +
                          "', which the run's --mesh does not name");
    if (want && *want != have)
      throw LoweringError("operator '" + op.name + "': mesh axis '" + axis + "' has size " + std::to_string(*want) +
                          " in the workload but " + std::to_string(have) + " in --mesh");
    group *= have;
  }
  const Tensor& in = cx.tensor(op.inputs[0]);
  const Tensor& out = cx.tensor(op.outputs[0]);
  arch::IciWork w;
  w.kind = static_cast<std::uint8_t>(collective_kind(op.kind));
  w.bytes = std::max(in.bytes(), out.bytes());
  w.dtype = in.dtype;  // the VPU adds reductions in the operand's dtype
  w.root = static_cast<int>(a.root);
  arch::CollectiveGroup g;
  g.axes = a.mesh_axes;
  for (const auto& [s, d] : a.pairs) g.pairs.emplace_back(static_cast<int>(s), static_cast<int>(d));
  const double n = static_cast<double>(group);
  const double v = static_cast<double>(w.bytes);
  double received = v * (n - 1) / n;
  if (op.kind == OpKind::all_reduce) received *= 2;
  if (op.kind == OpKind::collective_permute || op.kind == OpKind::broadcast) received = group > 1 ? v : 0;
  // What a chip receives enters through its links within the group (a
  // ring's two per wrapping axis, a line's one), at most all its ports.
  int links = 0;
  bool known = true;
  for (const std::string& axis : a.mesh_axes) {
    const auto it = std::find_if(cx.opt.mesh_links.begin(), cx.opt.mesh_links.end(),
                                 [&](const auto& m) { return m.first == axis; });
    if (it == cx.opt.mesh_links.end())
      known = false;
    else
      links += it->second;
  }
  const int ports = cx.cfg.ici.ports;
  links = known ? std::min(links, ports) : ports;
  const double links_bw = static_cast<double>(links) * cx.cfg.ici.link_bandwidth;
  double seconds = links_bw > 0 ? received / links_bw : 0;
  const bool over_dcn = !cx.opt.dcn_axis.empty() && cx.opt.num_slices > 1 &&
                        std::find(a.mesh_axes.begin(), a.mesh_axes.end(), cx.opt.dcn_axis) != a.mesh_axes.end();
  if (over_dcn && group > 1) {
    // What crosses the DCN at least: the hierarchical collective's 1/n_ici
    // shard (all of a permute's buffer) through the chip's NIC share; and
    // everything it receives, over its links and NIC together.
    const double s = static_cast<double>(cx.opt.num_slices);
    const double n_ici = n / s;
    double dcn = v / n_ici * (s - 1) / s;
    if (op.kind == OpKind::all_reduce) dcn *= 2;
    if (op.kind == OpKind::collective_permute || op.kind == OpKind::broadcast) dcn = v;
    const double nic = cx.cfg.ici.dcn_bandwidth;
    seconds = std::max(received / (links_bw + nic), dcn / nic);  // nic > 0: Slice checks
  }
  plan.roofline_cycles = seconds * cx.cfg.chip.clock_hz;
  plan.blocking = "group of " + std::to_string(group) + " over " + std::to_string(a.mesh_axes.size()) + " axes";
  return {collective_step(w, std::move(g))};
}

Step collective_step(const arch::IciWork& w, arch::CollectiveGroup group) {
  arch::Instr ici;
  ici.unit = arch::UnitKind::ici;
  ici.work = w;
  Step s;
  s.core = 0;
  s.compute.push_back({ici, {}});
  s.collective = std::move(group);
  return s;
}

}  // namespace tpusim::sim::lowering
