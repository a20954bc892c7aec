#include "sim/lowering/collective_matmul.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

#include "arch/ici/collectives.h"
#include "sim/lowering/roofline.h"
#include "workloads/ir/shape_inference.h"

namespace tpusim::sim::lowering {

using arch::InstrId;
using workloads::Op;
using workloads::OpKind;

RingSplit ring_split(std::int64_t n, bool bidirectional) {
  RingSplit r;
  r.n = n;
  r.fwd = bidirectional ? n / 2 : n - 1;  // ceil((n - 1) / 2)
  r.bwd = n - 1 - r.fwd;
  return r;
}

std::vector<int> ring_order(const std::vector<int>& dims) {
  int n = 1;
  for (int d : dims) n *= d;
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(n));
  if (dims.size() == 2 && (dims[0] % 2 == 0 || dims[1] % 2 == 0)) {
    // Rows i along the even dimension, columns j along the other: down
    // column 0, then back up in a snake over columns 1.., ending next to
    // the start (rows even: the last row runs towards column 1).
    const bool even0 = dims[0] % 2 == 0;
    const int rows = even0 ? dims[0] : dims[1], cols = even0 ? dims[1] : dims[0];
    auto rank = [&](int i, int j) { return even0 ? i + dims[0] * j : j + dims[0] * i; };
    for (int i = 0; i < rows; ++i) order.push_back(rank(i, 0));
    for (int i = rows - 1; i >= 0; --i)
      for (int k = 1; k < cols; ++k) order.push_back(rank(i, (rows - 1 - i) % 2 == 0 ? k : cols - k));
    return order;
  }
  // Reflected mixed-radix order: each step changes one coordinate by one.
  std::vector<int> c(dims.size(), 0), dir(dims.size(), 1);
  for (int k = 0; k < n; ++k) {
    int r = 0;
    for (std::size_t a = dims.size(); a-- > 0;) r = r * dims[a] + c[a];
    order.push_back(r);
    for (std::size_t a = 0; a < dims.size(); ++a) {
      const int next = c[a] + dir[a];
      if (next >= 0 && next < dims[a]) {
        c[a] = next;
        break;
      }
      dir[a] = -dir[a];
    }
  }
  return order;
}

std::vector<std::int64_t> gather_chunk_order(const RingSplit& r) {
  // Chip 0 stands for all (SPMD): step t of the + direction brings the
  // chunk of rank -t, step t of the - direction that of rank +t.
  std::vector<std::int64_t> order{0};
  for (std::int64_t t = 1; t <= std::max(r.fwd, r.bwd); ++t) {
    if (t <= r.fwd) order.push_back((r.n - t) % r.n);
    if (t <= r.bwd) order.push_back(t);
  }
  return order;
}

GemmRows chunk_rows(const workloads::Shape& lhs, int dim, std::int64_t n, std::int64_t q) {
  // Rows are the lhs's free dims (all but the last) flattened in order.
  std::int64_t before = 1, after = 1;
  for (int k = 0; k < dim; ++k) before *= lhs[static_cast<std::size_t>(k)];
  for (std::size_t k = static_cast<std::size_t>(dim) + 1; k + 1 < lhs.size(); ++k) after *= lhs[k];
  const std::int64_t per = lhs[static_cast<std::size_t>(dim)] / n;
  GemmRows w;
  w.outer = before;
  w.rows = per * after;
  w.stride = lhs[static_cast<std::size_t>(dim)] * after;
  w.row0 = q * per * after;
  return w;
}

namespace {

// The single mesh axis a collective runs over and its size in the run's
// mesh, or 0 when it runs over several axes, over the DCN, or the run
// lacks the axis.
std::int64_t ring_of(const Op& op, const LoweringOptions& opt, std::string& axis) {
  const auto& a = op.as<workloads::CollectiveAttrs>();
  if (a.mesh_axes.size() != 1) return 0;
  axis = a.mesh_axes[0];
  if (axis == opt.dcn_axis) return 0;  // over the DCN: left whole
  for (const auto& [name, size] : opt.mesh)
    if (name == axis) return size;
  return 0;
}

// A gather or scatter over one mesh axis of n >= 2 chips along `dim`
// whose larger side (`big`) is at least the threshold; false otherwise.
bool ring_collective(const Op& op, const workloads::TensorIndex& index, const LoweringOptions& opt,
                     const std::string& big, std::string& axis, std::int64_t& n, int& dim) {
  n = ring_of(op, opt, axis);
  dim = static_cast<int>(op.as<workloads::CollectiveAttrs>().dim);
  return n >= 2 && index.find(big)->bytes() >= opt.collective_matmul_min_bytes;
}

// A matmul whose rows can be cut along lhs dim `dim`: no batch dims, the
// lhs its free dims then one contracting dim, the output the lhs's free
// dims then the rhs's one free dim (x @ w; dy @ w^T), `dim` a free dim.
bool rows_dim(const Op& op, const workloads::TensorIndex& index, int dim) {
  if (op.kind != OpKind::matmul) return false;
  const auto spec = workloads::parse_einsum(op.as<workloads::MatmulAttrs>().equation);
  if (!spec.batch.empty() || spec.contracting.size() != 1 || spec.rhs_free.size() != 1 || spec.rhs.size() != 2)
    return false;
  if (spec.lhs.size() < 2 || spec.lhs.back() != spec.contracting[0]) return false;
  if (spec.out != spec.lhs.substr(0, spec.lhs.size() - 1) + spec.rhs_free) return false;
  const workloads::Tensor& lhs = *index.find(op.inputs[0]);
  return dim >= 0 && dim + 1 < lhs.rank();
}

// The sum of `ins` (each `elems` elements of dt, laid out alike) streamed
// into `out` on the VPU, as a loop fusion: chunks of every input loaded,
// one add per extra input, the chunk stored.
std::vector<Step> sum_steps(const LowerContext& cx, const std::vector<Ref>& ins, Ref out, std::uint64_t elems,
                            arch::DType dt) {
  const int cores = cx.cores();
  const std::uint64_t traffic = bytes_of(dt, static_cast<std::int64_t>(elems)) * (ins.size() + 1);
  const std::uint64_t chunks = chunk_count(cx.f, cores, 16, traffic, std::max<std::uint64_t>(1, elems / 1024));
  Epilogue ep;
  ep.out_dtype = dt;
  ep.out = out;
  const int n_in = static_cast<int>(ins.size());
  return chunked_steps(elems, chunks, cores, [&](const Chunk& k, std::uint64_t, Step& s, const std::vector<Step>&) {
    const auto e0 = static_cast<std::int64_t>(k.begin), e1 = static_cast<std::int64_t>(k.end);
    for (const Ref& r : ins) s.loads.push_back(load(r + bytes_of(dt, e0), bytes_of(dt, e1 - e0)));
    s.compute.push_back({vpu(k.end - k.begin, dt, n_in - 1, 0, n_in, 0), {}});
    add_epilogue(s, ep, {k.end - k.begin, k.end - k.begin, 1, k.end - k.begin, k.begin}, {dt, 0, 0, 1});
  });
}

}  // namespace

CollectiveMatmulPlan plan_collective_matmul(const workloads::Workload& wl, const workloads::TensorIndex& index,
                                            const FusionPlan& fusion, const LoweringOptions& opt,
                                            const std::vector<std::size_t>& order) {
  CollectiveMatmulPlan p;
  if (!opt.multi_chip || !opt.collective_matmul) return p;
  const auto consumers = wl.consumers();
  const auto producers = wl.producers();
  std::vector<std::size_t> pos(wl.ops.size(), 0);
  for (std::size_t k = 0; k < order.size(); ++k) pos[order[k]] = k;
  auto readers = [&](const std::string& t) -> const std::vector<std::size_t>& {
    static const std::vector<std::size_t> kNone;
    auto it = consumers.find(t);
    return it == consumers.end() ? kNone : it->second;
  };

  // Reduce-scatters first: a matmul both sliced by a gather and scattered
  // is left to the gather.
  for (std::size_t i = 0; i < wl.ops.size(); ++i) {
    const Op& op = wl.ops[i];
    if (op.kind != OpKind::reduce_scatter) continue;
    CmScatter s;
    s.op = i;
    const std::string& in = op.inputs[0];
    if (!ring_collective(op, index, opt, in, s.axis, s.n, s.dim)) continue;
    const workloads::Tensor& t = *index.find(in);
    if (s.dim < 0 || s.dim + 1 >= t.rank() || t.shape[static_cast<std::size_t>(s.dim)] % s.n != 0) continue;
    if (t.kind == workloads::TensorKind::output || readers(in).size() != 1) continue;
    auto pr = producers.find(in);
    if (pr == producers.end()) continue;
    const std::size_t anchor =
        fusion.fused(pr->second) ? static_cast<std::size_t>(fusion.fused_into[pr->second]) : pr->second;
    if (fusion.final_output(wl, anchor) != in || !rows_dim(wl.ops[anchor], index, s.dim)) continue;
    s.anchor = anchor;
    p.scatter_at[i] = p.scatters.size();
    p.anchor_of[anchor] = p.scatters.size();
    p.scatters.push_back(s);
  }

  for (std::size_t i = 0; i < wl.ops.size(); ++i) {
    const Op& op = wl.ops[i];
    if (op.kind != OpKind::all_gather) continue;
    CmGather g;
    g.op = i;
    const std::string& out = op.outputs[0];
    if (!ring_collective(op, index, opt, out, g.axis, g.n, g.dim)) continue;
    std::vector<std::size_t> sliced;
    for (std::size_t c : readers(out)) {
      const Op& m = wl.ops[c];
      // Its fused epilogue must not read the gathered tensor too (a slice
      // waits for its own chunk only).
      bool epilogue_reads = false;
      for (std::size_t f : fusion.chain[c])
        for (const std::string& in : wl.ops[f].inputs) epilogue_reads = epilogue_reads || in == out;
      if (m.kind == OpKind::matmul && m.inputs[0] == out && m.inputs[1] != out && !epilogue_reads &&
          !p.anchor_of.count(c) && !p.sliced.count(c) && rows_dim(m, index, g.dim))
        sliced.push_back(c);
    }
    if (sliced.empty()) continue;
    std::sort(sliced.begin(), sliced.end(), [&](std::size_t a, std::size_t b) { return pos[a] < pos[b]; });
    sliced.erase(std::unique(sliced.begin(), sliced.end()), sliced.end());
    // Together only if nothing emitted between the first and the last
    // reads a result of the ones before it (it would run before them).
    std::unordered_set<std::string> results;
    std::unordered_set<std::size_t> members(sliced.begin(), sliced.end());
    bool together = true;
    for (std::size_t k = pos[sliced.front()]; k < pos[sliced.back()] && together; ++k) {
      const std::size_t j = order[k];
      if (fusion.fused(j) && members.count(static_cast<std::size_t>(fusion.fused_into[j]))) continue;
      if (members.count(j)) {
        results.insert(wl.ops[j].outputs[0]);
        for (std::size_t f : fusion.chain[j]) results.insert(wl.ops[f].outputs[0]);
        continue;
      }
      for (const std::string& in : wl.ops[j].inputs) together = together && !results.count(in);
    }
    if (together)
      g.groups.push_back(sliced);
    else
      for (std::size_t c : sliced) g.groups.push_back({c});
    // The ring runs with the first group's slices: every other reader of
    // the gathered tensor must come after them.
    const std::size_t ring_at = pos[g.groups.front().back()];
    bool after = true;
    for (std::size_t c : readers(out))
      if (!members.count(c)) after = after && pos[c] > ring_at;
    if (!after) continue;
    for (std::size_t c : sliced) p.sliced[c] = p.gathers.size();
    p.gather_at[i] = p.gathers.size();
    p.gathers.push_back(std::move(g));
  }
  return p;
}

std::vector<InstrId> CollectiveMatmulEmitter::permute(std::size_t i, const std::string& axis, std::int64_t n, int dir,
                                                      std::uint64_t bytes, arch::DType dt,
                                                      const std::vector<InstrId>& deps) {
  arch::IciWork w;
  w.kind = static_cast<std::uint8_t>(arch::ici::CollectiveKind::collective_permute);
  w.bytes = std::max<std::uint64_t>(1, bytes);
  w.dtype = dt;
  std::vector<int> ring;
  for (const auto& [name, dims] : cx_.opt.mesh_dims)
    if (name == axis) ring = ring_order(dims);
  if (static_cast<std::int64_t>(ring.size()) != n) {
    ring.resize(static_cast<std::size_t>(n));
    for (std::int64_t r = 0; r < n; ++r) ring[static_cast<std::size_t>(r)] = static_cast<int>(r);
  }
  arch::CollectiveGroup g;
  g.axes = {axis};
  for (std::int64_t k = 0; k < n; ++k)
    g.pairs.emplace_back(ring[static_cast<std::size_t>(k)], ring[static_cast<std::size_t>((k + dir + n) % n)]);
  return pb_.emit_op(static_cast<std::uint32_t>(i), {collective_step(w, std::move(g))}, deps);
}

// A decomposed collective's row: its link bound as lower_collective
// computes it for the undecomposed one (the same bytes cross the links).
void CollectiveMatmulEmitter::set_collective_plan(std::size_t i, const std::string& what) {
  OpPlan& plan = plans_[i];
  (void)lower_collective(cx_, i, {}, plan);
  fill_roofline(cx_, i, {}, plan);
  plan.blocking = what + "; " + plan.blocking;
}

void CollectiveMatmulEmitter::emit_gather(const CmGather& g) {
  // The ring runs with the first group's slices (emit_slices): a permute
  // waiting for the previous one must not stall the in-order sequencer
  // before the kernels that can run meanwhile.
  gather_in_[g.op] = deps_(g.op, "");
  const RingSplit r = ring_split(g.n, cx_.opt.collective_matmul_bidirectional);
  set_collective_plan(g.op, "collective matmul: " + std::to_string(r.fwd) + "+" + std::to_string(r.bwd) +
                                " ring permutes of " + std::to_string(cx_.tensor(cx_.op(g.op).inputs[0]).bytes()) +
                                " B");
}

void CollectiveMatmulEmitter::emit_slices(const CmGather& g, const std::vector<std::size_t>& group) {
  const Op& gop = cx_.op(g.op);
  const std::string& gathered = gop.outputs[0];
  const Ref own = cx_.ref(gop.inputs[0]);
  const std::uint64_t shard = cx_.tensor(gop.inputs[0]).bytes();
  const RingSplit r = ring_split(g.n, cx_.opt.collective_matmul_bidirectional);
  struct Consumer {
    std::size_t op;
    Epilogue ep;
    std::vector<InstrId> deps, done;
    std::vector<Step> all;
  };
  std::vector<Consumer> cs;
  for (std::size_t c : group) cs.push_back({c, epilogue_for(cx_, c), deps_(c, gathered), {}, {}});
  // The first group runs the ring: the permutes of step t + 1 (each
  // forwarding what step t brought) are issued before the slices of the
  // chunks step t brought, so they run while those compute.
  const bool ring = !chunks_.count(g.op);
  if (ring) {
    std::vector<std::vector<InstrId>> at(static_cast<std::size_t>(g.n));
    at[0] = gather_in_.at(g.op);
    chunks_[g.op] = std::move(at);
  }
  auto& at = chunks_.at(g.op);
  std::vector<InstrId> fwd = at[0], bwd = at[0];
  const arch::DType dt = cx_.tensor(gop.inputs[0]).dtype;
  for (std::int64_t t = 0; t <= std::max(r.fwd, r.bwd); ++t) {
    if (ring && t + 1 <= r.fwd) {
      fwd = permute(g.op, g.axis, g.n, +1, shard, dt, fwd);
      at[static_cast<std::size_t>((g.n - t - 1) % g.n)] = fwd;
    }
    if (ring && t + 1 <= r.bwd) {
      bwd = permute(g.op, g.axis, g.n, -1, shard, dt, bwd);
      at[static_cast<std::size_t>(t + 1)] = bwd;
    }
    std::vector<std::int64_t> step;
    if (t == 0) step.push_back(0);
    if (t > 0 && t <= r.fwd) step.push_back(g.n - t);
    if (t > 0 && t <= r.bwd) step.push_back(t);
    for (std::int64_t q : step)
      for (Consumer& c : cs) {
        GemmRows w = chunk_rows(cx_.tensor(gathered).shape, g.dim, g.n, q);
        // A chunk arrives whole: its rows are one matrix, in the chip's
        // own shard or where its permute put it in the gathered buffer.
        w.own_a = q == 0 ? own : cx_.ref(gathered) + static_cast<std::uint64_t>(q) * shard;
        std::vector<Step> steps = lower_matmul_rows(cx_, c.op, c.ep, w, plans_[c.op]);
        std::vector<InstrId> d = c.deps;
        const auto& ch = at[static_cast<std::size_t>(q)];
        d.insert(d.end(), ch.begin(), ch.end());
        std::sort(d.begin(), d.end());
        d.erase(std::unique(d.begin(), d.end()), d.end());
        const std::vector<InstrId> done = pb_.emit_op(static_cast<std::uint32_t>(c.op), steps, d);
        c.done.insert(c.done.end(), done.begin(), done.end());
        std::move(steps.begin(), steps.end(), std::back_inserter(c.all));
      }
  }
  if (ring) {
    std::vector<InstrId> all;
    for (const auto& ids : at) all.insert(all.end(), ids.begin(), ids.end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    ready_[gathered] = std::move(all);
  }
  for (Consumer& c : cs) {
    OpPlan& plan = plans_[c.op];
    for (std::size_t j : cx_.fusion.chain[c.op]) plan.fused.push_back(static_cast<std::uint32_t>(j));
    fill_roofline(cx_, c.op, c.all, plan);
    plan.blocking += "; collective matmul: " + std::to_string(g.n) + " slices";
    ready_[cx_.op(c.op).outputs[0]] = c.done;
    for (std::size_t j : cx_.fusion.chain[c.op]) ready_[cx_.op(j).outputs[0]] = c.done;
  }
}

void CollectiveMatmulEmitter::emit_scatter_anchor(const CmScatter& s) {
  const std::size_t a = s.anchor;
  const Op& rs = cx_.op(s.op);
  const std::string& partial = rs.inputs[0];  // the anchor group's result
  const workloads::Tensor& pt = cx_.tensor(partial);
  const workloads::Tensor& lhs = cx_.tensor(cx_.op(a).inputs[0]);
  const Ref full = cx_.ref(partial), mine = cx_.ref(rs.outputs[0]);
  const std::uint64_t chunk_bytes = pt.bytes() / static_cast<std::uint64_t>(s.n);
  const std::uint64_t chunk_elems = static_cast<std::uint64_t>(pt.num_elements()) / static_cast<std::uint64_t>(s.n);
  const RingSplit r = ring_split(s.n, cx_.opt.collective_matmul_bidirectional);
  const Epilogue ep = epilogue_for(cx_, a);
  const std::vector<InstrId> deps = deps_(a, "");
  OpPlan& plan = plans_[a];
  std::vector<Step> all, adds;
  // Buffers: destination d's partial product and then its running sum in
  // slot d of the group's result (chunk-major); what the + direction
  // brings lands in the reduce_scatter's result, what the - direction
  // brings in slot 0; the own chunk's product goes to slot n - 1 (sent by
  // then). XLA's loop buffers are the memory plan's tensors here.
  auto slot = [&](std::int64_t d) { return full + static_cast<std::uint64_t>(d) * chunk_bytes; };
  const Ref recv_fwd = mine, recv_bwd = slot(0);
  auto slice = [&](std::int64_t dest, Ref out) {
    GemmRows w = chunk_rows(lhs.shape, s.dim, s.n, dest);
    w.own_out = out;
    std::vector<Step> steps = lower_matmul_rows(cx_, a, ep, w, plan);
    std::vector<InstrId> ids = pb_.emit_op(static_cast<std::uint32_t>(a), steps, deps);
    std::move(steps.begin(), steps.end(), std::back_inserter(all));
    return ids;
  };
  // The received partial sum is added by a loop fusion of its own (the
  // recipes run with --xla_jf_conv_output_fusion=false: no add fused into
  // the dot), as the reduce_scatter's own work.
  auto add = [&](const std::vector<Ref>& ins, Ref out, const std::vector<InstrId>& wait) {
    std::vector<Step> steps = sum_steps(cx_, ins, out, chunk_elems, pt.dtype);
    std::vector<InstrId> ids = pb_.emit_op(static_cast<std::uint32_t>(s.op), steps, wait);
    std::move(steps.begin(), steps.end(), std::back_inserter(adds));
    return ids;
  };
  // Step k of the + direction works on destination fwd - k (rank 0
  // standing for all), of the - direction on n - bwd + k: both products
  // first, then the adds of what the previous step brought, then the
  // permutes passing the sums on.
  std::vector<InstrId> sent_fwd, sent_bwd;
  for (std::int64_t k = 0; k < std::max(r.fwd, r.bwd); ++k) {
    const std::int64_t df = r.fwd - k, db = s.n - r.bwd + k;
    std::vector<InstrId> pf, pb;
    if (k < r.fwd) pf = slice(df, slot(df));
    if (k < r.bwd) pb = slice(db, slot(db));
    if (k < r.fwd && k > 0) pf = add({slot(df), recv_fwd}, slot(df), sent_fwd);
    if (k < r.bwd && k > 0) pb = add({slot(db), recv_bwd}, slot(db), sent_bwd);
    if (k < r.fwd) sent_fwd = permute(s.op, s.axis, s.n, +1, chunk_bytes, pt.dtype, pf);
    if (k < r.bwd) sent_bwd = permute(s.op, s.axis, s.n, -1, chunk_bytes, pt.dtype, pb);
  }
  // The own chunk: its product plus both directions' sums, into the
  // reduce_scatter's result.
  std::vector<InstrId> done = slice(0, slot(s.n - 1));
  std::vector<Ref> ins{slot(s.n - 1)};
  std::vector<InstrId> wait = sent_fwd;
  wait.insert(wait.end(), sent_bwd.begin(), sent_bwd.end());
  if (r.fwd > 0) ins.push_back(recv_fwd);
  if (r.bwd > 0) ins.push_back(recv_bwd);
  if (ins.size() > 1) done = add(ins, mine, wait);
  for (std::size_t j : cx_.fusion.chain[a]) plan.fused.push_back(static_cast<std::uint32_t>(j));
  fill_roofline(cx_, a, all, plan);
  plan.blocking += "; collective matmul: " + std::to_string(s.n) + " slices";
  fill_roofline(cx_, s.op, adds, plans_[s.op]);
  ready_[partial] = done;
  ready_[cx_.op(a).outputs[0]] = done;
  for (std::size_t j : cx_.fusion.chain[a]) ready_[cx_.op(j).outputs[0]] = done;
  scattered_[s.op] = done;
}

bool CollectiveMatmulEmitter::emit(std::size_t i) {
  if (auto it = plan_.gather_at.find(i); it != plan_.gather_at.end()) {
    emit_gather(plan_.gathers[it->second]);
    return true;
  }
  if (auto it = plan_.sliced.find(i); it != plan_.sliced.end()) {
    const CmGather& g = plan_.gathers[it->second];
    for (const auto& group : g.groups)
      if (group.back() == i) emit_slices(g, group);
    return true;  // the group's earlier members wait for its last
  }
  if (auto it = plan_.anchor_of.find(i); it != plan_.anchor_of.end()) {
    emit_scatter_anchor(plan_.scatters[it->second]);
    return true;
  }
  if (auto it = plan_.scatter_at.find(i); it != plan_.scatter_at.end()) {
    const CmScatter& s = plan_.scatters[it->second];
    ready_[cx_.op(i).outputs[0]] = scattered_.at(i);
    const RingSplit r = ring_split(s.n, cx_.opt.collective_matmul_bidirectional);
    set_collective_plan(i, "collective matmul: " + std::to_string(r.fwd) + "+" + std::to_string(r.bwd) +
                               " ring permutes of partial sums");
    return true;
  }
  return false;
}

}  // namespace tpusim::sim::lowering
