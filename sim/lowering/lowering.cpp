// Lowering driver and the per-operator tiling rules. See lowering.h.
#include "sim/lowering/lowering.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "sim/lowering/pipeline.h"
#include "workloads/ir/cost.h"
#include "workloads/ir/shape_inference.h"

namespace tpusim::sim {

using arch::DType;
using arch::DmaWork;
using arch::Instr;
using arch::InstrId;
using arch::MemSpace;
using arch::MxuWork;
using arch::UnitKind;
using arch::VpuWork;
using arch::XluOp;
using arch::XluWork;
using workloads::Op;
using workloads::OpKind;
using workloads::Tensor;
using workloads::Workload;

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t round_up(std::int64_t a, std::int64_t b) { return ceil_div(a, b) * b; }

std::uint64_t bytes_of(DType t, std::int64_t n) {
  return arch::dtype_bytes(t, static_cast<std::uint64_t>(std::max<std::int64_t>(n, 0)));
}

// Chip figures the tiling search and the roofline need, per TensorCore
// cycle.
struct ChipFigures {
  int cores = 1;
  int mxus = 1;
  int rows = 128, cols = 128;
  int xlus = 2;
  double hbm_bytes_per_cycle = 1;
  double cmem_bytes_per_cycle = 0;  // 0: no CMEM
  // Cycles a pipeline step costs beyond its traffic and compute: about one
  // unloaded HBM access (controller latency plus a row miss) and the issue
  // of its instructions.
  double block_overhead = 200;
  std::uint64_t vmem_budget = 0;
  const arch::TpuConfig* cfg = nullptr;

  double throughput(DType t) const {
    auto it = cfg->mxu.throughput.find(t);
    return it == cfg->mxu.throughput.end() ? 0.0 : it->second;
  }
  // Peak MACs per cycle of the whole chip for a dtype.
  double peak_macs(DType t) const {
    return static_cast<double>(cores) * mxus * rows * cols * throughput(t);
  }
};

ChipFigures figures(const arch::TpuConfig& cfg, const LoweringOptions& opt) {
  ChipFigures f;
  f.cfg = &cfg;
  f.cores = std::max(1, cfg.chip.tensorcores);
  f.mxus = std::max(1, cfg.mxu.count);
  f.rows = cfg.mxu.rows;
  f.cols = cfg.mxu.cols;
  f.xlus = cfg.xlu.count;
  const auto& h = cfg.hbm;
  const double hbm_bw = static_cast<double>(h.stacks) * h.channels * h.pseudo_channels *
                        h.bus_width_bits / 8.0 * h.data_rate;
  f.hbm_bytes_per_cycle = hbm_bw / cfg.chip.clock_hz;
  if (cfg.cmem.present && cfg.cmem.size_bytes > 0) f.cmem_bytes_per_cycle = cfg.cmem.bandwidth / cfg.chip.clock_hz;
  f.block_overhead = (h.controller_latency + h.t.tRCD + h.t.tCL) * cfg.chip.clock_hz + 16;
  f.vmem_budget = static_cast<std::uint64_t>(static_cast<double>(cfg.vmem.size_bytes) *
                                             opt.vmem_budget_fraction);
  return f;
}

// Tensors placed in CMEM carry this tag in their address (above any HBM or
// CMEM offset), so that every load and store derived from the tensor's
// address by offsets goes to CMEM without each tiling rule knowing.
constexpr std::uint64_t kCmemTag = 1ull << 62;
bool in_cmem(std::uint64_t addr) { return (addr & kCmemTag) != 0; }

Instr dma(MemSpace src, MemSpace dst, std::uint64_t src_addr, std::uint64_t row_bytes,
          std::uint64_t rows = 1, std::uint64_t src_stride = 0) {
  Instr in;
  in.unit = UnitKind::dma;
  DmaWork w;
  w.src = src;
  w.dst = dst;
  w.src_addr = src_addr;
  w.dst_addr = src_addr;  // for stores: the HBM address; VMEM addresses are not modelled
  w.row_bytes = row_bytes;
  w.rows = rows;
  w.src_stride = src_stride ? src_stride : row_bytes;
  w.dst_stride = row_bytes;
  in.work = w;
  return in;
}

Instr load(std::uint64_t addr, std::uint64_t row_bytes, std::uint64_t rows = 1,
           std::uint64_t stride = 0) {
  if (in_cmem(addr)) return dma(MemSpace::cmem, MemSpace::vmem, addr & ~kCmemTag, row_bytes, rows, stride);
  return dma(MemSpace::hbm, MemSpace::vmem, addr, row_bytes, rows, stride);
}

Instr store(std::uint64_t addr, std::uint64_t row_bytes, std::uint64_t rows = 1,
            std::uint64_t stride = 0) {
  const bool cmem = in_cmem(addr);
  Instr in = dma(MemSpace::vmem, cmem ? MemSpace::cmem : MemSpace::hbm, addr & ~kCmemTag, row_bytes, rows,
                 row_bytes);
  auto& w = std::get<DmaWork>(in.work);
  w.dst_stride = stride ? stride : row_bytes;
  return in;
}

Instr mxu(std::int64_t m, std::int64_t k, std::int64_t n, DType t, int index) {
  Instr in;
  in.unit = UnitKind::mxu;
  in.index = static_cast<std::int16_t>(index);
  in.work = MxuWork{m, k, n, t};
  return in;
}

Instr vpu(std::uint64_t elements, DType t, double alu, double trans, int inputs, int outputs) {
  Instr in;
  in.unit = UnitKind::vpu;
  in.index = 0;
  VpuWork w;
  w.elements = elements;
  w.dtype = t;
  w.alu_ops = alu;
  w.transcendental_ops = trans;
  w.inputs = inputs;
  w.outputs = outputs;
  in.work = w;
  return in;
}

// Cross-lane work on an XLU; a chip without XLUs (TPUv1) does it on the
// VPU as one extra ALU pass over the elements.
Instr xlu(const ChipFigures& f, XluOp op, std::uint64_t elements, DType t) {
  if (f.xlus == 0) return vpu(elements, t, 1, 0, 1, 1);
  Instr in;
  in.unit = UnitKind::xlu;
  in.work = XluWork{op, elements, t};
  return in;
}

// How many chunks a streamed operator is cut into: at least `per_core` per
// TensorCore, so that the exposed first load and last store are small, and
// at most 4 MiB of traffic per chunk; never more than `cap`.
std::uint64_t chunk_count(int cores, std::uint64_t per_core, std::uint64_t traffic_bytes,
                          std::uint64_t cap) {
  const std::uint64_t wanted =
      std::max<std::uint64_t>(static_cast<std::uint64_t>(cores) * per_core, traffic_bytes / (4u << 20) + 1);
  return std::min(wanted, std::max<std::uint64_t>(1, cap));
}

// Whether a step is its core's first: operands every chunk needs whole
// (broadcast inputs, norm scales) are loaded once per core, with it.
bool first_on_core(std::uint64_t chunk, const Step& s, const std::vector<Step>& steps) {
  return chunk == 0 || steps.empty() || s.core != steps.back().core;
}

// Work of the elementwise ops fused into an anchor's epilogue, per output
// element, and the extra operands they read.
struct Epilogue {
  double alu = 0;
  double trans = 0;
  struct Extra {
    std::uint64_t addr = 0;
    std::uint64_t bytes = 0;   // whole tensor
    bool full = false;         // same element count as the output (read per block)
  };
  std::vector<Extra> extras;
  DType out_dtype = DType::bf16;
  std::uint64_t out_addr = 0;
};

class Lowerer {
 public:
  Lowerer(const Workload& wl, const arch::TpuConfig& cfg, const LoweringOptions& opt)
      : wl_(wl), cfg_(cfg), opt_(opt), index_(wl), f_(figures(cfg, opt)),
        pb_(out_.program, cfg.dma.engines) {
    out_.program.instrs.reserve(wl.ops.size() * 16);
  }

  LoweredWorkload run();

 private:
  const Tensor& tensor(const std::string& name) const { return *index_.find(name); }
  std::uint64_t addr(const std::string& name) const { return addrs_.at(name); }
  int cores_for_split() const { return opt_.megacore_split ? f_.cores : 1; }

  void plan_fusion();
  void place_in_cmem();
  void place_in_hbm();
  bool cmem_resident(const std::string& name) const { return in_cmem(addr(name)); }
  Epilogue epilogue_for(std::size_t anchor, const Tensor& anchor_out);
  std::vector<InstrId> deps_of(std::size_t op_index) const;

  std::vector<Step> lower_matmul(std::size_t i, const Epilogue& ep, OpPlan& plan);
  std::vector<Step> lower_stream(std::size_t i, const Epilogue& ep, OpPlan& plan);
  std::vector<Step> lower_rows(std::size_t i, const Epilogue& ep, OpPlan& plan);
  std::vector<Step> lower_attention(std::size_t i, const Epilogue& ep, OpPlan& plan);
  std::vector<Step> lower_conv(std::size_t i, const Epilogue& ep, OpPlan& plan);
  std::vector<Step> lower_gather(std::size_t i, const Epilogue& ep, OpPlan& plan);
  std::vector<Step> lower_copy(std::size_t i, const Epilogue& ep, OpPlan& plan);
  std::vector<Step> lower_collective(std::size_t i, OpPlan& plan);

  // Matmul-shaped block loop shared by matmul and convolution.
  struct GemmShape {
    std::int64_t batch = 1, m = 1, k = 1, n = 1;
    DType in_dtype = DType::bf16, w_dtype = DType::bf16;
    std::uint64_t a_addr = 0, b_addr = 0;
    bool b_batched = true;
    // Bytes of A actually read for a block of bm rows x bk (convolutions
    // read an input window, not the im2col matrix).
    double a_read_factor = 1.0;
  };
  std::vector<Step> gemm_steps(const GemmShape& g, const Epilogue& ep, OpPlan& plan);

  const Workload& wl_;
  const arch::TpuConfig& cfg_;
  const LoweringOptions& opt_;
  workloads::TensorIndex index_;  // name -> tensor, O(1)
  ChipFigures f_;
  LoweredWorkload out_;
  ProgramBuilder pb_;
  std::unordered_map<std::string, std::uint64_t> addrs_;
  std::unordered_map<std::string, std::vector<InstrId>> ready_;  // tensor -> instrs writing it
  std::vector<int> fused_into_;
  double collective_bound_cycles_ = 0;  // set by lower_collective for its op
  std::vector<std::vector<std::size_t>> chain_;  // anchor -> fused ops in order
};

bool fusable_consumer(const Op& op) { return op.kind == OpKind::elementwise; }
bool fusable_anchor(const Op& op) {
  return op.kind == OpKind::matmul || op.kind == OpKind::conv2d ||
         op.kind == OpKind::elementwise || op.kind == OpKind::attention;
}

void Lowerer::plan_fusion() {
  fused_into_.assign(wl_.ops.size(), -1);
  chain_.assign(wl_.ops.size(), {});
  if (!opt_.fusion) return;
  const auto consumers = wl_.consumers();
  const auto producers = wl_.producers();
  // The op that currently ends each anchor's chain, and the tensor it makes.
  for (std::size_t i = 0; i < wl_.ops.size(); ++i) {
    const Op& op = wl_.ops[i];
    if (!fusable_consumer(op)) continue;
    const Tensor& out = tensor(op.outputs[0]);
    for (const std::string& in : op.inputs) {
      auto p = producers.find(in);
      if (p == producers.end()) continue;
      const std::size_t prod = p->second;
      const std::size_t anchor = fused_into_[prod] >= 0 ? static_cast<std::size_t>(fused_into_[prod]) : prod;
      if (!fusable_anchor(wl_.ops[anchor])) continue;
      // The producer's result must feed only this op, must not be a
      // workload output, and must be the chain's current end; the fused
      // op must not change the element count.
      const Tensor& t = tensor(in);
      auto c = consumers.find(in);
      if (c == consumers.end() || c->second.size() != 1) continue;
      if (t.kind == workloads::TensorKind::output) continue;
      if (t.num_elements() != out.num_elements()) continue;
      const std::size_t end = chain_[anchor].empty() ? anchor : chain_[anchor].back();
      if (end != prod) continue;
      fused_into_[i] = static_cast<int>(anchor);
      chain_[anchor].push_back(i);
      break;
    }
  }
}

Epilogue Lowerer::epilogue_for(std::size_t anchor, const Tensor& anchor_out) {
  Epilogue ep;
  ep.out_dtype = anchor_out.dtype;
  std::string produced = anchor_out.name;
  for (std::size_t i : chain_[anchor]) {
    const Op& op = wl_.ops[i];
    const auto cost = workloads::ew_cost(op.as<workloads::ElementwiseAttrs>().kind);
    ep.alu += cost.flops;
    ep.trans += cost.transcendentals;
    for (const std::string& in : op.inputs) {
      if (in == produced) continue;
      const Tensor& t = tensor(in);
      ep.extras.push_back({addr(in), t.bytes(), t.num_elements() == anchor_out.num_elements()});
    }
    produced = op.outputs[0];
    ep.out_dtype = tensor(produced).dtype;
  }
  ep.out_addr = addr(produced);
  return ep;
}

std::vector<InstrId> Lowerer::deps_of(std::size_t op_index) const {
  std::vector<InstrId> d;
  auto add_tensor = [&](const std::string& name) {
    auto it = ready_.find(name);
    if (it != ready_.end()) d.insert(d.end(), it->second.begin(), it->second.end());
  };
  for (const std::string& in : wl_.ops[op_index].inputs) add_tensor(in);
  for (std::size_t j : chain_[op_index])
    for (const std::string& in : wl_.ops[j].inputs) add_tensor(in);
  std::sort(d.begin(), d.end());
  d.erase(std::unique(d.begin(), d.end()), d.end());
  return d;
}

// Epilogue instructions of one output block of `elems` elements at
// `offset` elements into the output (contiguous rows of `row_elems`).
void add_epilogue(Step& s, const Epilogue& ep, std::uint64_t elems, std::uint64_t row_elems,
                  std::uint64_t rows, std::uint64_t out_row_stride_elems, std::uint64_t offset_elems,
                  DType acc_dtype, double base_alu, double base_trans, int base_inputs) {
  // Each fused operand as large as the output is one more VMEM stream.
  int inputs = base_inputs;
  for (const auto& x : ep.extras) inputs += x.full ? 1 : 0;
  const double alu = base_alu + ep.alu;
  if (alu > 0 || ep.trans + base_trans > 0 || acc_dtype != ep.out_dtype || !ep.extras.empty())
    s.epilogue.push_back(vpu(elems, acc_dtype, std::max(1.0, alu), ep.trans + base_trans, inputs, 1));
  s.epilogue.push_back(store(ep.out_addr + bytes_of(ep.out_dtype, static_cast<std::int64_t>(offset_elems)),
                             bytes_of(ep.out_dtype, static_cast<std::int64_t>(row_elems)), rows,
                             bytes_of(ep.out_dtype, static_cast<std::int64_t>(out_row_stride_elems))));
}

// Extra operands of fused ops, loaded with the step that completes a block.
void add_extra_loads(Step& s, const Epilogue& ep, std::uint64_t offset_elems, std::uint64_t elems,
                     std::uint64_t total_elems, bool first_block) {
  for (const auto& x : ep.extras) {
    if (x.full) {
      const std::uint64_t per = total_elems ? x.bytes / total_elems : 0;
      s.loads.push_back(load(x.addr + offset_elems * per, std::max<std::uint64_t>(1, elems * per)));
    } else if (first_block) {
      s.loads.push_back(load(x.addr, std::max<std::uint64_t>(1, x.bytes)));
    }
  }
}

std::vector<Step> Lowerer::gemm_steps(const GemmShape& g, const Epilogue& ep, OpPlan& plan) {
  const double tp = f_.throughput(g.in_dtype);
  if (tp <= 0)
    throw LoweringError("the MXU of " + cfg_.chip.name + " does not support " +
                        std::string(arch::dtype_name(g.in_dtype)) + " operands");
  const std::int64_t R = f_.rows, C = f_.cols;
  const std::uint64_t ab = arch::dtype_bits(g.in_dtype), bb = arch::dtype_bits(g.w_dtype),
                      ob = arch::dtype_bits(ep.out_dtype);
  const int cores = cores_for_split();

  auto cands = [](std::int64_t full, std::int64_t unit, std::int64_t lo) {
    std::vector<std::int64_t> v;
    const std::int64_t top = round_up(full, unit);
    for (std::int64_t b = lo; b < top && b <= 65536; b *= 2)
      if (b % unit == 0 || unit % b == 0) v.push_back(round_up(b, std::min(unit, b)));
    v.push_back(top);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  const auto bms = cands(g.m, 8, 8), bks = cands(g.k, R, R), bns = cands(g.n, C, C);
  double best = std::numeric_limits<double>::max();
  std::int64_t bm = 0, bk = 0, bn = 0;
  bool n_outer = false;
  std::uint64_t best_vmem = 0;
  for (std::int64_t m : bms)
    for (std::int64_t k : bks)
      for (std::int64_t n : bns) {
        const std::uint64_t vmem =
            (2 * (static_cast<std::uint64_t>(m * k) * ab + static_cast<std::uint64_t>(k * n) * bb) +
             static_cast<std::uint64_t>(m * n) * 32 + 2 * static_cast<std::uint64_t>(m * n) * ob) / 8;
        if (vmem > f_.vmem_budget) continue;
        const double nm = static_cast<double>(ceil_div(g.m, m)), nk = static_cast<double>(ceil_div(g.k, k)),
                     nn = static_cast<double>(ceil_div(g.n, n));
        const double a_bytes = static_cast<double>(g.batch) * g.m * g.k * ab / 8.0 * g.a_read_factor;
        const double b_bytes = static_cast<double>(g.b_batched ? g.batch : 1) * g.k * g.n * bb / 8.0;
        const double c_bytes = static_cast<double>(g.batch) * g.m * g.n * ob / 8.0;
        const double b_reloads = g.b_batched ? 1.0 : static_cast<double>(g.batch);
        const double t_m_outer = a_bytes * (nk == 1 ? 1 : nn) + b_bytes * nm * b_reloads;
        const double t_n_outer = a_bytes * nn + b_bytes * (nk == 1 ? 1 : nm) * b_reloads;
        const bool no = t_n_outer < t_m_outer;
        const double traffic = std::min(t_m_outer, t_n_outer) + c_bytes;
        // Compute: weight tiles spread over every MXU of every core; each
        // tile streams m rows (at the dtype's rate) or, when m is short,
        // takes at least its weight load.
        const double tiles = static_cast<double>(g.batch) * nm * nk * nn *
                             static_cast<double>(ceil_div(k, R) * ceil_div(n, C));
        const double per_tile = std::max(static_cast<double>(m) / tp, static_cast<double>(R));
        const double compute = tiles * per_tile / (static_cast<double>(f_.mxus) * cores);
        const double blocks = static_cast<double>(g.batch) * nm * nk * nn;
        const double first = (static_cast<double>(m * k) * ab + static_cast<double>(k * n) * bb) / 8.0 /
                             f_.hbm_bytes_per_cycle;
        const double last = static_cast<double>(m * n) * ob / 8.0 / f_.hbm_bytes_per_cycle +
                            static_cast<double>(R + C);
        const double t = std::max(compute, traffic / f_.hbm_bytes_per_cycle) + first + last +
                         blocks * f_.block_overhead;  // per-block DMA latency and issue
        if (t < best) {
          best = t;
          bm = m;
          bk = k;
          bn = n;
          n_outer = no;
          best_vmem = vmem;
        }
      }
  if (bm == 0)
    throw LoweringError("no block of " + plan.name + " fits the VMEM budget of " +
                        std::to_string(f_.vmem_budget) + " bytes");
  plan.vmem_peak = best_vmem;
  {
    std::ostringstream os;
    os << "bm=" << bm << " bk=" << bk << " bn=" << bn << (n_outer ? " n-outer" : " m-outer");
    plan.blocking = os.str();
  }

  const std::int64_t nm = ceil_div(g.m, bm), nk = ceil_div(g.k, bk), nn = ceil_div(g.n, bn);
  const std::int64_t outer = n_outer ? nn : nm, inner = n_outer ? nm : nn;
  const std::int64_t blocks_per_batch = outer * inner;
  const std::int64_t total_out_blocks = g.batch * blocks_per_batch;
  const std::uint64_t out_elems = static_cast<std::uint64_t>(g.batch * g.m * g.n);
  std::vector<Step> steps;
  steps.reserve(static_cast<std::size_t>(total_out_blocks * nk));
  std::int64_t last_a = -1, last_b = -1;
  int last_core = -1;
  std::int64_t ob_index = 0;
  for (std::int64_t b = 0; b < g.batch; ++b)
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t in = 0; in < inner; ++in, ++ob_index) {
        const std::int64_t mi = n_outer ? in : o, ni = n_outer ? o : in;
        const int core = static_cast<int>(ob_index * cores / std::max<std::int64_t>(1, total_out_blocks));
        if (core != last_core) {
          last_a = last_b = -1;
          last_core = core;
        }
        const std::int64_t m = std::min(bm, g.m - mi * bm), n = std::min(bn, g.n - ni * bn);
        for (std::int64_t ki = 0; ki < nk; ++ki) {
          const std::int64_t k = std::min(bk, g.k - ki * bk);
          Step s;
          s.core = core;
          const std::int64_t a_id = (b * nm + mi) * nk + ki;
          const std::int64_t b_id = ((g.b_batched ? b : 0) * nk + ki) * nn + ni;
          if (a_id != last_a) {
            const std::uint64_t row = bytes_of(g.in_dtype, k);
            const std::uint64_t rows = static_cast<std::uint64_t>(std::ceil(m * g.a_read_factor));
            s.loads.push_back(load(g.a_addr + bytes_of(g.in_dtype, (b * g.m + mi * bm) * g.k + ki * bk),
                                   row, std::max<std::uint64_t>(1, rows), bytes_of(g.in_dtype, g.k)));
            last_a = a_id;
          }
          if (b_id != last_b) {
            s.loads.push_back(load(g.b_addr + bytes_of(g.w_dtype, ((g.b_batched ? b : 0) * g.k + ki * bk) * g.n + ni * bn),
                                   bytes_of(g.w_dtype, n), static_cast<std::uint64_t>(k),
                                   bytes_of(g.w_dtype, g.n)));
            last_b = b_id;
          }
          // Spread the block over the MXUs: by column tiles when there are
          // enough, else also by rows.
          const std::int64_t ntiles = ceil_div(n, C);
          const int mx = f_.mxus;
          if (ntiles >= mx) {
            for (int u = 0; u < mx; ++u) {
              const std::int64_t t0 = ntiles * u / mx, t1 = ntiles * (u + 1) / mx;
              const std::int64_t cols = std::min(n, t1 * C) - t0 * C;
              if (cols <= 0) continue;
              s.compute.push_back({mxu(m, k, cols, g.in_dtype, u), {}});
              plan.padded_macs += static_cast<std::uint64_t>(m * round_up(k, R) * round_up(cols, C));
            }
          } else {
            const int per_tile = mx / static_cast<int>(ntiles);
            int u = 0;
            for (std::int64_t t = 0; t < ntiles; ++t) {
              const std::int64_t cols = std::min(n, (t + 1) * C) - t * C;
              for (int r = 0; r < per_tile; ++r, ++u) {
                const std::int64_t r0 = m * r / per_tile, r1 = m * (r + 1) / per_tile;
                if (r1 <= r0) continue;
                s.compute.push_back({mxu(r1 - r0, k, cols, g.in_dtype, u), {}});
                plan.padded_macs += static_cast<std::uint64_t>((r1 - r0) * round_up(k, R) * round_up(cols, C));
              }
            }
          }
          if (ki == nk - 1) {
            const std::uint64_t off = static_cast<std::uint64_t>((b * g.m + mi * bm) * g.n + ni * bn);
            add_extra_loads(s, ep, off, static_cast<std::uint64_t>(m * n), out_elems, ob_index == 0);
            add_epilogue(s, ep, static_cast<std::uint64_t>(m * n), static_cast<std::uint64_t>(n),
                         static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(g.n), off,
                         DType::f32, 0, 0, 1);
          }
          steps.push_back(std::move(s));
        }
      }
  return steps;
}

std::vector<Step> Lowerer::lower_matmul(std::size_t i, const Epilogue& ep, OpPlan& plan) {
  const Op& op = wl_.ops[i];
  const Tensor& a = tensor(op.inputs[0]);
  const Tensor& w = tensor(op.inputs[1]);
  const auto& attrs = op.as<workloads::MatmulAttrs>();
  const auto d = workloads::matmul_dims(attrs, a.shape, w.shape);
  const auto spec = workloads::parse_einsum(attrs.equation);
  GemmShape g;
  g.batch = d.batch;
  g.m = d.m;
  g.k = d.k;
  g.n = d.n;
  g.in_dtype = a.dtype;
  g.w_dtype = w.dtype;
  g.a_addr = addr(a.name);
  g.b_addr = addr(w.name);
  g.b_batched = !spec.batch.empty();
  if (a.dtype != w.dtype)
    g.in_dtype = arch::dtype_bits(a.dtype) >= arch::dtype_bits(w.dtype) ? a.dtype : w.dtype;
  return gemm_steps(g, ep, plan);
}

std::vector<Step> Lowerer::lower_conv(std::size_t i, const Epilogue& ep, OpPlan& plan) {
  const Op& op = wl_.ops[i];
  const Tensor& x = tensor(op.inputs[0]);
  const Tensor& w = tensor(op.inputs[1]);
  const auto& a = op.as<workloads::Conv2dAttrs>();
  const std::int64_t N = x.shape[0], H = x.shape[1], W = x.shape[2], Cin = x.shape[3];
  const std::int64_t KH = w.shape[0], KW = w.shape[1], OC = w.shape[3];
  const auto geo = workloads::conv2d_geometry(a, H, W, KH, KW);
  const std::int64_t G = a.groups;
  const std::int64_t pixels = N * geo.out_h * geo.out_w;
  if (G > 1 && G == Cin) {
    // Depthwise: no contraction worth an MXU pass; the VPU does KH*KW
    // multiply-adds per output element.
    const std::uint64_t out_elems = static_cast<std::uint64_t>(pixels * OC);
    const std::uint64_t in_bytes = x.bytes();
    const int cores = cores_for_split();
    const std::uint64_t chunks =
        std::max<std::uint64_t>(static_cast<std::uint64_t>(cores) * 8,
                                std::min<std::uint64_t>(4096, out_elems / (64 * 1024) + 1));
    std::vector<Step> steps;
    for (std::uint64_t c = 0; c < chunks; ++c) {
      const std::uint64_t e0 = out_elems * c / chunks, e1 = out_elems * (c + 1) / chunks;
      if (e1 == e0) continue;
      Step s;
      s.core = static_cast<int>(c * static_cast<std::uint64_t>(cores) / chunks);
      const std::uint64_t ib = in_bytes * c / chunks, ie = in_bytes * (c + 1) / chunks;
      s.loads.push_back(load(addr(x.name) + ib, std::max<std::uint64_t>(1, ie - ib)));
      if (c == 0) s.loads.push_back(load(addr(w.name), w.bytes()));
      s.compute.push_back({vpu(e1 - e0, x.dtype, 2.0 * KH * KW, 0, 1, 0), {}});
      add_extra_loads(s, ep, e0, e1 - e0, out_elems, c == 0);
      add_epilogue(s, ep, e1 - e0, e1 - e0, 1, e1 - e0, e0, x.dtype, 0, 0, 1);
      steps.push_back(std::move(s));
    }
    plan.blocking = "depthwise on VPU, " + std::to_string(chunks) + " chunks";
    plan.vmem_peak = 2 * (in_bytes / chunks + bytes_of(x.dtype, static_cast<std::int64_t>(out_elems / chunks)));
    return steps;
  }
  // Implicit GEMM per group: M = output pixels, K = KH*KW*Cin/G, N = OC/G.
  // A block of output pixels reads its input window once (halo included),
  // not the KH*KW-times larger im2col matrix.
  GemmShape g;
  g.batch = G;
  g.m = pixels;
  g.k = KH * KW * (Cin / G);
  g.n = OC / G;
  g.in_dtype = x.dtype;
  g.w_dtype = w.dtype;
  g.a_addr = addr(x.name);
  g.b_addr = addr(w.name);
  g.b_batched = G > 1;
  const double window = static_cast<double>(a.stride_h * a.stride_w) > 0
                            ? std::min(1.0, static_cast<double>(H * W) /
                                                static_cast<double>(geo.out_h * geo.out_w * KH * KW))
                            : 1.0;
  g.a_read_factor = std::max(window, 1.0 / static_cast<double>(KH * KW));
  return gemm_steps(g, ep, plan);
}

// Streams the flattened output in chunks: elementwise ops (and chains fused
// into them), casts.
std::vector<Step> Lowerer::lower_stream(std::size_t i, const Epilogue& ep, OpPlan& plan) {
  const Op& op = wl_.ops[i];
  const Tensor& out = tensor(op.outputs[0]);
  const std::uint64_t elems = static_cast<std::uint64_t>(out.num_elements());
  const auto cost = workloads::ew_cost(op.as<workloads::ElementwiseAttrs>().kind);
  const int cores = cores_for_split();
  std::uint64_t row_bytes_total = 0;
  for (const auto& in : op.inputs) row_bytes_total += tensor(in).bytes();
  row_bytes_total += out.bytes();
  const std::uint64_t chunks = chunk_count(cores, 16, row_bytes_total, elems / 1024);
  std::vector<Step> steps;
  for (std::uint64_t c = 0; c < chunks; ++c) {
    const std::uint64_t e0 = elems * c / chunks, e1 = elems * (c + 1) / chunks;
    if (e1 == e0) continue;
    Step s;
    s.core = static_cast<int>(c * static_cast<std::uint64_t>(cores) / chunks);
    int inputs = 0;
    for (const auto& name : op.inputs) {
      const Tensor& t = tensor(name);
      const std::uint64_t te = static_cast<std::uint64_t>(t.num_elements());
      if (te == elems) {
        s.loads.push_back(load(addr(name) + bytes_of(t.dtype, static_cast<std::int64_t>(e0)),
                               bytes_of(t.dtype, static_cast<std::int64_t>(e1 - e0))));
        ++inputs;
      } else if (first_on_core(c, s, steps)) {
        s.loads.push_back(load(addr(name), std::max<std::uint64_t>(1, t.bytes())));
      }
    }
    s.compute.push_back({vpu(e1 - e0, tensor(op.inputs[0]).dtype, std::max(1, cost.flops),
                             cost.transcendentals, std::max(1, inputs), 0), {}});
    add_extra_loads(s, ep, e0, e1 - e0, elems, c == 0);
    add_epilogue(s, ep, e1 - e0, e1 - e0, 1, e1 - e0, e0, out.dtype, 0, 0, 1);
    steps.push_back(std::move(s));
  }
  plan.vmem_peak = 2 * row_bytes_total / chunks + 1;
  plan.blocking = std::to_string(chunks) + " chunks";
  return steps;
}

// Row-wise ops: reduce, softmax, layer/RMS norm. Rows are the reduced
// extent; the VPU does the arithmetic, the XLU the cross-lane reductions.
std::vector<Step> Lowerer::lower_rows(std::size_t i, const Epilogue& ep, OpPlan& plan) {
  const Op& op = wl_.ops[i];
  const Tensor& x = tensor(op.inputs[0]);
  const Tensor& out = tensor(op.outputs[0]);
  const std::uint64_t elems = static_cast<std::uint64_t>(x.num_elements());
  const std::uint64_t out_elems = static_cast<std::uint64_t>(out.num_elements());
  const auto cost = workloads::op_cost(index_, op);
  const double alu = elems ? static_cast<double>(cost.flops) / static_cast<double>(elems) : 0;
  const double trans = elems ? static_cast<double>(cost.transcendentals) / static_cast<double>(elems) : 0;
  const int reductions = op.kind == OpKind::softmax ? 2 : op.kind == OpKind::layer_norm ? 2 : 1;
  const int cores = cores_for_split();
  const std::uint64_t traffic = x.bytes() + out.bytes();
  const std::uint64_t chunks = chunk_count(cores, 16, traffic, std::min(elems, out_elems ? out_elems : 1));
  std::vector<Step> steps;
  for (std::uint64_t c = 0; c < chunks; ++c) {
    const std::uint64_t e0 = elems * c / chunks, e1 = elems * (c + 1) / chunks;
    const std::uint64_t o0 = out_elems * c / chunks, o1 = out_elems * (c + 1) / chunks;
    if (e1 == e0) continue;
    Step s;
    s.core = static_cast<int>(c * static_cast<std::uint64_t>(cores) / chunks);
    s.loads.push_back(load(addr(x.name) + bytes_of(x.dtype, static_cast<std::int64_t>(e0)),
                           bytes_of(x.dtype, static_cast<std::int64_t>(e1 - e0))));
    for (std::size_t k = 1; k < op.inputs.size(); ++k)
      if (first_on_core(c, s, steps))
        s.loads.push_back(load(addr(op.inputs[k]), std::max<std::uint64_t>(1, tensor(op.inputs[k]).bytes())));
    s.compute.push_back({vpu(e1 - e0, x.dtype, std::max(1.0, alu), trans, 1, 1), {}});
    for (int r = 0; r < reductions; ++r)
      s.compute.push_back({xlu(f_, XluOp::reduce, e1 - e0, x.dtype), {static_cast<int>(s.compute.size()) - 1}});
    add_extra_loads(s, ep, o0, o1 - o0, out_elems, c == 0);
    add_epilogue(s, ep, std::max<std::uint64_t>(1, o1 - o0), std::max<std::uint64_t>(1, o1 - o0), 1,
                 std::max<std::uint64_t>(1, o1 - o0), o0, out.dtype, 0, 0, 1);
    steps.push_back(std::move(s));
  }
  plan.vmem_peak = 2 * traffic / chunks + 1;
  plan.blocking = std::to_string(chunks) + " chunks";
  return steps;
}

// Flash attention: per (batch, KV head) the query rows of its head group
// are folded into M; for each query block, K and V blocks stream through
// VMEM: S = Q K^T (MXU), online softmax (VPU, XLU), O += P V (MXU); the
// normalised output is stored once per query block. Causal blocks wholly
// above the diagonal are skipped.
std::vector<Step> Lowerer::lower_attention(std::size_t i, const Epilogue& ep, OpPlan& plan) {
  const Op& op = wl_.ops[i];
  const Tensor& q = tensor(op.inputs[0]);
  const Tensor& k = tensor(op.inputs[1]);
  const Tensor& v = tensor(op.inputs[2]);
  const bool causal = op.as<workloads::AttentionAttrs>().causal;
  const std::int64_t B = q.shape[0], Lq = q.shape[1], H = q.shape[2], D = q.shape[3];
  const std::int64_t Lkv = k.shape[1], KVH = k.shape[2], Dv = v.shape[3];
  const std::int64_t group = H / KVH;
  const std::int64_t rows = Lq * group;  // query rows per KV head
  const DType t = q.dtype;
  if (f_.throughput(t) <= 0)
    throw LoweringError("the MXU of " + cfg_.chip.name + " does not support " +
                        std::string(arch::dtype_name(t)) + " attention");
  const std::int64_t bq = std::min<std::int64_t>(round_up(rows, 8), 512);
  const std::int64_t bkv = std::min<std::int64_t>(round_up(Lkv, f_.cols), 512);
  const int cores = cores_for_split();
  const std::int64_t nq = ceil_div(rows, bq);
  const std::int64_t units = B * KVH * nq;
  const std::uint64_t out_elems = static_cast<std::uint64_t>(q.num_elements() / D * Dv);
  std::vector<Step> steps;
  std::int64_t unit = 0;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < KVH; ++h)
      for (std::int64_t qi = 0; qi < nq; ++qi, ++unit) {
        const int core = static_cast<int>(unit * cores / std::max<std::int64_t>(1, units));
        const std::int64_t r0 = qi * bq, rn = std::min(bq, rows - r0);
        // Last query position in this block (rows are [query, head] pairs).
        const std::int64_t q_last = (r0 + rn - 1) / group;
        const std::int64_t visible = causal ? std::min(Lkv, q_last + (Lkv - Lq) + 1) : Lkv;
        const std::int64_t kv_blocks = std::max<std::int64_t>(1, ceil_div(visible, bkv));
        for (std::int64_t kj = 0; kj < kv_blocks; ++kj) {
          const std::int64_t c0 = kj * bkv, cn = std::min(bkv, Lkv - c0);
          Step s;
          s.core = core;
          if (kj == 0)
            s.loads.push_back(load(addr(q.name) + bytes_of(t, ((b * Lq) * H + h * group) * D + r0 / group * H * D),
                                   bytes_of(t, group * D), static_cast<std::uint64_t>(ceil_div(rn, group)),
                                   bytes_of(t, H * D)));
          s.loads.push_back(load(addr(k.name) + bytes_of(k.dtype, ((b * Lkv + c0) * KVH + h) * D),
                                 bytes_of(k.dtype, D), static_cast<std::uint64_t>(cn), bytes_of(k.dtype, KVH * D)));
          s.loads.push_back(load(addr(v.name) + bytes_of(v.dtype, ((b * Lkv + c0) * KVH + h) * Dv),
                                 bytes_of(v.dtype, Dv), static_cast<std::uint64_t>(cn), bytes_of(v.dtype, KVH * Dv)));
          const std::uint64_t scores = static_cast<std::uint64_t>(rn * cn);
          s.compute.push_back({mxu(rn, D, cn, t, 0), {}});
          s.compute.push_back({vpu(scores, DType::f32, 5, 1, 1, 1), {0}});
          s.compute.push_back({xlu(f_, XluOp::reduce, 2 * scores, DType::f32), {1}});
          s.compute.push_back({mxu(rn, cn, Dv, t, f_.mxus > 1 ? 1 : 0), {2}});
          plan.padded_macs += static_cast<std::uint64_t>(rn * round_up(D, f_.rows) * round_up(cn, f_.cols) +
                                                         rn * round_up(cn, f_.rows) * round_up(Dv, f_.cols));
          if (kj == kv_blocks - 1) {
            const std::uint64_t off = static_cast<std::uint64_t>(((b * Lq) * H + h * group) * Dv + r0 / group * H * Dv);
            add_extra_loads(s, ep, off, static_cast<std::uint64_t>(rn * Dv), out_elems, unit == 0);
            add_epilogue(s, ep, static_cast<std::uint64_t>(rn * Dv), static_cast<std::uint64_t>(group * Dv),
                         static_cast<std::uint64_t>(ceil_div(rn, group)), static_cast<std::uint64_t>(H * Dv),
                         off, DType::f32, 1, 0, 1);
          }
          steps.push_back(std::move(s));
        }
      }
  plan.vmem_peak = 2 * (bytes_of(t, bq * D) + bytes_of(k.dtype, bkv * D) + bytes_of(v.dtype, bkv * Dv)) +
                   static_cast<std::uint64_t>(bq * bkv * 4 + bq * Dv * 4);
  plan.blocking = "bq=" + std::to_string(bq) + " bkv=" + std::to_string(bkv);
  return steps;
}

// Embedding lookups: each index fetches one table row (a strided gather
// from HBM), then the rows are stored contiguously.
std::vector<Step> Lowerer::lower_gather(std::size_t i, const Epilogue& ep, OpPlan& plan) {
  const Op& op = wl_.ops[i];
  const Tensor& table = tensor(op.inputs[0]);
  const Tensor& idx = tensor(op.inputs[1]);
  const Tensor& out = tensor(op.outputs[0]);
  const std::int64_t V = table.shape[0];
  const std::int64_t n = idx.num_elements();
  const std::uint64_t row = bytes_of(table.dtype, table.num_elements() / std::max<std::int64_t>(1, V));
  const int cores = cores_for_split();
  const std::int64_t chunks = std::max<std::int64_t>(1, std::min<std::int64_t>(n, cores * 8));
  // Lookups land on rows spread over the table; a stride of the table over
  // the lookups stands for that spread in the memory system.
  const std::uint64_t spread = row * static_cast<std::uint64_t>(std::max<std::int64_t>(1, V / std::max<std::int64_t>(1, n)));
  std::vector<Step> steps;
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t i0 = n * c / chunks, i1 = n * (c + 1) / chunks;
    if (i1 == i0) continue;
    Step s;
    s.core = static_cast<int>(c * cores / chunks);
    s.loads.push_back(load(addr(idx.name) + bytes_of(idx.dtype, i0), bytes_of(idx.dtype, i1 - i0)));
    s.loads.push_back(load(addr(table.name) + static_cast<std::uint64_t>(i0) * spread % std::max<std::uint64_t>(1, table.bytes()),
                           row, static_cast<std::uint64_t>(i1 - i0), spread));
    s.compute.push_back({vpu(static_cast<std::uint64_t>(i1 - i0), idx.dtype, 1, 0, 1, 0), {}});
    const std::uint64_t per = static_cast<std::uint64_t>(out.num_elements() / std::max<std::int64_t>(1, n));
    add_extra_loads(s, ep, static_cast<std::uint64_t>(i0) * per, static_cast<std::uint64_t>(i1 - i0) * per,
                    static_cast<std::uint64_t>(out.num_elements()), c == 0);
    add_epilogue(s, ep, static_cast<std::uint64_t>(i1 - i0) * per, static_cast<std::uint64_t>(i1 - i0) * per, 1,
                 static_cast<std::uint64_t>(i1 - i0) * per, static_cast<std::uint64_t>(i0) * per, table.dtype, 0, 0, 0);
    // The VPU pass above only formed addresses; rows go straight to HBM.
    steps.push_back(std::move(s));
  }
  plan.vmem_peak = 2 * (row * static_cast<std::uint64_t>(ceil_div(n, chunks)));
  plan.blocking = std::to_string(chunks) + " chunks";
  return steps;
}

// Layout ops: transpose through VMEM and the XLU; concat and slice as
// strided copies; reshape is a relabelling of the same bytes and costs
// nothing.
std::vector<Step> Lowerer::lower_copy(std::size_t i, const Epilogue& ep, OpPlan& plan) {
  const Op& op = wl_.ops[i];
  const Tensor& out = tensor(op.outputs[0]);
  if (op.kind == OpKind::reshape) {
    addrs_[out.name] = addr(op.inputs[0]);
    plan.blocking = "bitcast";
    return {};
  }
  const std::uint64_t elems = static_cast<std::uint64_t>(out.num_elements());
  const int cores = cores_for_split();
  const std::uint64_t chunks = chunk_count(cores, 8, out.bytes(), elems / 1024 + 1);
  std::vector<Step> steps;
  for (std::uint64_t c = 0; c < chunks; ++c) {
    const std::uint64_t e0 = elems * c / chunks, e1 = elems * (c + 1) / chunks;
    if (e1 == e0) continue;
    Step s;
    s.core = static_cast<int>(c * static_cast<std::uint64_t>(cores) / chunks);
    if (op.kind == OpKind::slice) {
      // Read only the selected elements: rows of the innermost extent.
      s.loads.push_back(load(addr(op.inputs[0]) + bytes_of(out.dtype, static_cast<std::int64_t>(e0)),
                             bytes_of(out.dtype, static_cast<std::int64_t>(e1 - e0))));
    } else {
      for (const auto& in : op.inputs) {
        const Tensor& t = tensor(in);
        const std::uint64_t te = static_cast<std::uint64_t>(t.num_elements());
        const std::uint64_t a0 = te * c / chunks, a1 = te * (c + 1) / chunks;
        if (a1 > a0)
          s.loads.push_back(load(addr(in) + bytes_of(t.dtype, static_cast<std::int64_t>(a0)),
                                 bytes_of(t.dtype, static_cast<std::int64_t>(a1 - a0))));
      }
    }
    if (op.kind == OpKind::transpose)
      s.compute.push_back({xlu(f_, XluOp::transpose, e1 - e0, out.dtype), {}});
    else
      s.compute.push_back({vpu(e1 - e0, out.dtype, 1, 0, 1, 0), {}});
    add_extra_loads(s, ep, e0, e1 - e0, elems, c == 0);
    add_epilogue(s, ep, e1 - e0, e1 - e0, 1, e1 - e0, e0, out.dtype, 0, 0, 0);
    steps.push_back(std::move(s));
  }
  plan.vmem_peak = 2 * out.bytes() / chunks + 1;
  plan.blocking = std::to_string(chunks) + " chunks";
  return steps;
}

// A collective is one ICI instruction: every chip takes part and the
// network model times it on the whole slice. Its lower bound: a chip
// cannot receive its share of the data faster than all of its links
// together deliver it.
std::vector<Step> Lowerer::lower_collective(std::size_t i, OpPlan& plan) {
  const Op& op = wl_.ops[i];
  const auto& a = op.as<workloads::CollectiveAttrs>();
  std::int64_t group = 1;
  for (const std::string& axis : a.mesh_axes) {
    const auto want = wl_.mesh_axis_size(axis);
    std::int64_t have = -1;
    for (const auto& [name, size] : opt_.mesh)
      if (name == axis) have = size;
    if (have < 0)
      throw LoweringError("operator '" + op.name + "' runs over mesh axis '" + axis +
                          "', which the run's --mesh does not name");
    if (want && *want != have)
      throw LoweringError("operator '" + op.name + "': mesh axis '" + axis + "' has size " +
                          std::to_string(*want) + " in the workload but " + std::to_string(have) +
                          " in --mesh");
    group *= have;
  }
  const Tensor& in = tensor(op.inputs[0]);
  const Tensor& out = tensor(op.outputs[0]);
  arch::IciWork w;
  const auto kind_name = std::string(workloads::op_kind_name(op.kind));
  static const char* kinds[] = {"all_gather", "reduce_scatter", "all_reduce",
                                "all_to_all", "collective_permute", "broadcast"};
  for (std::uint8_t k = 0; k < 6; ++k)
    if (kind_name == kinds[k]) w.kind = k;
  w.bytes = std::max(in.bytes(), out.bytes());
  w.dtype = in.dtype;  // the VPU adds reductions in the operand's dtype
  w.axes = a.mesh_axes;
  w.root = static_cast<int>(a.root);
  for (const auto& [s, d] : a.pairs) w.pairs.emplace_back(static_cast<int>(s), static_cast<int>(d));
  const double n = static_cast<double>(group);
  const double v = static_cast<double>(w.bytes);
  double received = v * (n - 1) / n;
  if (op.kind == OpKind::all_reduce) received *= 2;
  if (op.kind == OpKind::collective_permute || op.kind == OpKind::broadcast) received = group > 1 ? v : 0;
  const double links_bw = static_cast<double>(cfg_.ici.ports) * cfg_.ici.link_bandwidth;
  collective_bound_cycles_ = links_bw > 0 ? received / links_bw * cfg_.chip.clock_hz : 0;
  Instr ici;
  ici.unit = UnitKind::ici;
  ici.work = w;
  Step s;
  s.core = 0;
  s.compute.push_back({ici, {}});
  plan.blocking = "group of " + std::to_string(group) + " over " + std::to_string(a.mesh_axes.size()) + " axes";
  return {s};
}

// CMEM placement (TPU v4/v4i: 128 MiB on-chip, shared by the TensorCores),
// in the spirit of XLA's memory-space assignment, which places buffers in
// the faster alternate memory when they fit: candidates are intermediate
// activations that are materialised (not sources, which must come from HBM
// anyway, not workload outputs, not values internal to a fusion, not
// reshape aliases). A candidate lives from its producer to its last
// consumer; its benefit is the HBM traffic it saves (written once, read by
// each consumer) per byte of CMEM per operator of its lifetime. Greedy in
// that order, first fit over the addresses of the already placed tensors
// whose lifetimes overlap (4 KiB aligned); the rest stays in HBM.
// Leaves out: prefetching sources into CMEM ahead of use, and eviction
// (a tensor is in CMEM for its whole life or not at all).
void Lowerer::place_in_cmem() {
  if (!opt_.cmem || f_.cmem_bytes_per_cycle <= 0) return;
  const std::uint64_t capacity = cfg_.cmem.size_bytes;
  constexpr std::uint64_t kAlign = 4096;
  std::unordered_set<std::string> internal, aliased;
  for (std::size_t a = 0; a < chain_.size(); ++a) {
    if (chain_[a].empty()) continue;
    internal.insert(wl_.ops[a].outputs[0]);
    for (std::size_t k = 0; k + 1 < chain_[a].size(); ++k) internal.insert(wl_.ops[chain_[a][k]].outputs[0]);
  }
  for (const Op& op : wl_.ops)
    if (op.kind == OpKind::reshape) {
      aliased.insert(op.inputs[0]);
      aliased.insert(op.outputs[0]);
    }
  struct Cand {
    std::string name;
    std::size_t first = 0, last = 0;
    std::uint64_t size = 0;
    double score = 0;
  };
  std::unordered_map<std::string, std::size_t> producer;
  std::unordered_map<std::string, std::pair<std::size_t, std::size_t>> use;  // last consumer, readers
  for (std::size_t i = 0; i < wl_.ops.size(); ++i) {
    for (const std::string& o : wl_.ops[i].outputs) producer.emplace(o, i);
    for (const std::string& in : wl_.ops[i].inputs) {
      auto& u = use[in];
      u.first = i;
      ++u.second;
    }
  }
  std::vector<Cand> cands;
  for (const Tensor& t : wl_.tensors) {
    if (t.is_source() || t.kind == workloads::TensorKind::output) continue;
    if (internal.count(t.name) || aliased.count(t.name)) continue;
    auto p = producer.find(t.name);
    auto u = use.find(t.name);
    if (p == producer.end() || u == use.end()) continue;
    if (workloads::is_collective(wl_.ops[p->second].kind)) continue;  // lands where the ICI puts it
    Cand c;
    c.name = t.name;
    c.first = p->second;
    c.last = u->second.first;
    c.size = std::max<std::uint64_t>(kAlign, (t.bytes() + kAlign - 1) / kAlign * kAlign);
    if (c.size > capacity) continue;
    const double saved = static_cast<double>(t.bytes()) * static_cast<double>(1 + u->second.second);
    c.score = saved / (static_cast<double>(c.size) * static_cast<double>(c.last - c.first + 1));
    cands.push_back(std::move(c));
  }
  std::stable_sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    return a.score != b.score ? a.score > b.score : a.first < b.first;
  });
  struct Placed {
    std::size_t first, last;
    std::uint64_t at, size;
  };
  std::vector<Placed> placed;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> busy;  // reused per candidate
  for (const Cand& c : cands) {
    busy.clear();
    for (const Placed& q : placed)
      if (q.first <= c.last && c.first <= q.last) busy.emplace_back(q.at, q.size);
    std::sort(busy.begin(), busy.end());
    std::uint64_t at = 0;
    for (const auto& [b_at, b_size] : busy) {
      if (at + c.size <= b_at) break;
      at = std::max(at, b_at + b_size);
    }
    if (at + c.size > capacity) continue;
    placed.push_back({c.first, c.last, at, c.size});
    addrs_[c.name] = kCmemTag | at;
  }
}

// HBM placement by liveness, as XLA's buffer assignment does: sources
// (inputs, weights, KV caches) and results live throughout; an activation
// lives from its producer to its last consumer, and its range is reused
// afterwards (best fit over a free list, 4 KiB aligned). The peak must fit
// the chip's HBM.
void Lowerer::place_in_hbm() {
  constexpr std::uint64_t kAlign = 4096;
  auto rounded = [=](std::uint64_t b) { return std::max<std::uint64_t>(kAlign, (b + kAlign - 1) / kAlign * kAlign); };
  std::map<std::uint64_t, std::uint64_t> free;  // offset -> size
  std::uint64_t top = 0, peak = 0, live = 0;
  auto alloc = [&](const std::string& name, std::uint64_t bytes) {
    const std::uint64_t need = rounded(bytes);
    auto best = free.end();
    for (auto it = free.begin(); it != free.end(); ++it)
      if (it->second >= need && (best == free.end() || it->second < best->second)) best = it;
    std::uint64_t at;
    if (best != free.end()) {
      at = best->first;
      const std::uint64_t rest = best->second - need;
      free.erase(best);
      if (rest) free[at + need] = rest;
    } else {
      at = top;
      top += need;
    }
    addrs_[name] = at;
    live += need;
    peak = std::max(peak, live);
  };
  auto release = [&](const std::string& name, std::uint64_t bytes) {
    const std::uint64_t need = rounded(bytes);
    std::uint64_t at = addrs_.at(name);
    live -= need;
    auto next = free.lower_bound(at);
    std::uint64_t size = need;
    if (next != free.end() && next->first == at + size) {
      size += next->second;
      free.erase(next);
    }
    auto prev = free.lower_bound(at);
    if (prev != free.begin()) {
      --prev;
      if (prev->first + prev->second == at) {
        at = prev->first;
        size += prev->second;
        free.erase(prev);
      }
    }
    free[at] = size;
  };
  // Last op reading each tensor.
  std::unordered_map<std::string, std::size_t> last_use;
  for (std::size_t i = 0; i < wl_.ops.size(); ++i)
    for (const std::string& in : wl_.ops[i].inputs) last_use[in] = i;
  auto permanent = [&](const Tensor& t) {
    return t.is_source() || t.kind == workloads::TensorKind::output || !last_use.count(t.name);
  };
  std::unordered_set<std::string> aliased, donors;
  for (const Op& op : wl_.ops)
    if (op.kind == OpKind::reshape) {
      aliased.insert(op.inputs[0]);
      aliased.insert(op.outputs[0]);
    }
  for (const Tensor& t : wl_.tensors)
    if (t.is_source()) alloc(t.name, t.bytes());
  for (std::size_t i = 0; i < wl_.ops.size(); ++i) {
    const Op& op = wl_.ops[i];
    for (const std::string& o : op.outputs) {
      const Tensor& t = tensor(o);
      if (addrs_.count(o) && in_cmem(addrs_.at(o))) continue;  // placed in CMEM
      // A reshape's result is a relabelling of its input's bytes.
      if (op.kind == OpKind::reshape) {
        addrs_[o] = addrs_.at(op.inputs[0]);
        continue;
      }
      // Buffer donation: an elementwise update whose source operand (a
      // weight, optimizer state, KV cache) of the same size is read for the
      // last time here writes in place, as jitted training steps do with
      // donated arguments.
      bool donated = false;
      if (op.kind == OpKind::elementwise)
        for (const std::string& in : op.inputs) {
          const Tensor& src = tensor(in);
          if (src.is_source() && src.bytes() == t.bytes() && last_use.at(in) == i && !donors.count(in) &&
              !aliased.count(in)) {
            addrs_[o] = addrs_.at(in);
            donors.insert(in);
            donated = true;
            break;
          }
        }
      if (!donated) alloc(o, t.bytes());
    }
    for (const std::string& in : op.inputs) {
      const Tensor& t = tensor(in);
      if (permanent(t) || last_use.at(in) != i || in_cmem(addrs_.at(in))) continue;
      // A reshape's input and result share one range; it is kept (not
      // reused) rather than tracking the alias's combined lifetime.
      if (aliased.count(in)) continue;
      release(in, t.bytes());
    }
  }
  out_.hbm_peak_bytes = peak;
  if (cfg_.hbm.capacity_bytes > 0 && peak > cfg_.hbm.capacity_bytes)
    throw LoweringError("workload '" + wl_.name + "' needs " + std::to_string(peak) +
                        " bytes of HBM at its peak but " + cfg_.chip.name + " has " +
                        std::to_string(cfg_.hbm.capacity_bytes));
}

LoweredWorkload Lowerer::run() {
  out_.program.cores = f_.cores;
  plan_fusion();
  place_in_cmem();
  place_in_hbm();
  out_.ops.resize(wl_.ops.size());
  for (std::size_t i = 0; i < wl_.ops.size(); ++i) {
    const Op& op = wl_.ops[i];
    OpPlan& plan = out_.ops[i];
    plan.name = op.name;
    plan.kind = std::string(workloads::op_kind_name(op.kind));
    {
      std::ostringstream os;
      for (std::size_t k = 0; k < op.inputs.size(); ++k)
        os << (k ? " x " : "") << workloads::shape_str(tensor(op.inputs[k]).shape);
      os << " -> " << workloads::shape_str(tensor(op.outputs[0]).shape);
      plan.shapes = os.str();
    }
    plan.dtype = std::string(arch::dtype_name(tensor(op.inputs.empty() ? op.outputs[0] : op.inputs[0]).dtype));
    const auto cost = workloads::op_cost(index_, op);
    plan.flops = cost.flops;
    plan.macs = cost.macs;
    out_.program.op_names.push_back(op.name);
    if (workloads::is_collective(op.kind) && !opt_.multi_chip)
      throw LoweringError("operator '" + op.name + "' is a " + plan.kind +
                          ", a collective: it needs a multi-chip slice (--slice), and this run "
                          "simulates one chip");
    if (fused_into_[i] >= 0) {
      plan.fused_into = fused_into_[i];
      // Its result is produced by the anchor's stores.
      ready_[op.outputs[0]] = ready_[wl_.ops[static_cast<std::size_t>(fused_into_[i])].outputs[0]];
      continue;
    }
    const Tensor& out = tensor(op.outputs[0]);
    const Epilogue ep = epilogue_for(i, out);
    const auto deps = deps_of(i);
    std::vector<Step> steps;
    switch (op.kind) {
      case OpKind::matmul: steps = lower_matmul(i, ep, plan); break;
      case OpKind::conv2d: steps = lower_conv(i, ep, plan); break;
      case OpKind::elementwise: steps = lower_stream(i, ep, plan); break;
      case OpKind::reduce:
      case OpKind::softmax:
      case OpKind::layer_norm:
      case OpKind::rms_norm: steps = lower_rows(i, ep, plan); break;
      case OpKind::attention: steps = lower_attention(i, ep, plan); break;
      case OpKind::all_gather:
      case OpKind::reduce_scatter:
      case OpKind::all_reduce:
      case OpKind::all_to_all:
      case OpKind::collective_permute:
      case OpKind::broadcast: steps = lower_collective(i, plan); break;
      case OpKind::gather: steps = lower_gather(i, ep, plan); break;
      case OpKind::transpose:
      case OpKind::reshape:
      case OpKind::concat:
      case OpKind::slice: steps = lower_copy(i, ep, plan); break;
      default: throw LoweringError("operator '" + op.name + "': no lowering for " + plan.kind);
    }
    // Minimum memory traffic of the fused group: its external inputs
    // once, its final output once; in HBM, or in CMEM for tensors placed
    // there.
    std::uint64_t bytes = 0, cmem = 0;
    auto count = [&](const std::string& name, std::uint64_t b) { (cmem_resident(name) ? cmem : bytes) += b; };
    if (op.kind != OpKind::reshape) {
      bytes = cost.bytes_read;
      // op_cost reads every non-gather operand whole; move those in CMEM.
      if (op.kind != OpKind::gather)
        for (const auto& in : op.inputs)
          if (cmem_resident(in)) {
            bytes -= std::min(bytes, tensor(in).bytes());
            cmem += tensor(in).bytes();
          }
      for (std::size_t j : chain_[i]) {
        for (const auto& in : wl_.ops[j].inputs) {
          bool internal = in == op.outputs[0];
          for (std::size_t q : chain_[i]) internal = internal || in == wl_.ops[q].outputs[0];
          if (!internal) count(in, tensor(in).bytes());
        }
      }
      const std::string& final_out = chain_[i].empty() ? op.outputs[0] : wl_.ops[chain_[i].back()].outputs[0];
      count(final_out, tensor(final_out).bytes());
    }
    for (std::size_t j : chain_[i]) plan.fused.push_back(static_cast<std::uint32_t>(j));
    auto add_dma = [&](const Instr& in) {
      const DmaWork& w = std::get<DmaWork>(in.work);
      if (w.src == MemSpace::hbm || w.dst == MemSpace::hbm) plan.dma_bytes += w.bytes();
      if (w.src == MemSpace::cmem || w.dst == MemSpace::cmem) plan.cmem_dma_bytes += w.bytes();
    };
    for (const Step& s : steps) {
      for (const Instr& l : s.loads) add_dma(l);
      for (const Instr& e : s.epilogue)
        if (e.unit == UnitKind::dma) add_dma(e);
    }
    // The IR's minimum assumes every input byte is read once; an operator
    // that legitimately reads a subset (slice, strided 1x1 convolution)
    // has the smaller figure as its lower bound.
    if (plan.dma_bytes < bytes) bytes = plan.dma_bytes;
    if (plan.cmem_dma_bytes < cmem) cmem = plan.cmem_dma_bytes;
    plan.hbm_bytes = bytes;
    plan.cmem_bytes = cmem;
    // Roofline over the whole chip: MXU peak for matmul-like FLOPs, HBM for
    // bytes (vector work is bounded by memory in this bound).
    const double peak = f_.peak_macs(op.kind == OpKind::conv2d || op.kind == OpKind::matmul ||
                                             op.kind == OpKind::attention
                                         ? tensor(op.inputs[0]).dtype
                                         : DType::bf16);
    const double t_math = peak > 0 ? static_cast<double>(plan.macs) / peak : 0;
    // HBM and CMEM are separate paths; each bounds the op on its own.
    double t_mem = static_cast<double>(bytes) / f_.hbm_bytes_per_cycle;
    if (cmem > 0) t_mem = std::max(t_mem, static_cast<double>(cmem) / f_.cmem_bytes_per_cycle);
    plan.memory_cycles = t_mem;
    plan.roofline_cycles = std::max(t_math, t_mem);
    if (workloads::is_collective(op.kind)) {
      plan.hbm_bytes = 0;
      plan.memory_cycles = 0;
      plan.roofline_cycles = collective_bound_cycles_;
    }
    const std::vector<InstrId> done = pb_.emit_op(static_cast<std::uint32_t>(i), steps, deps);
    ready_[op.outputs[0]] = done;
    for (std::size_t j : chain_[i]) ready_[wl_.ops[j].outputs[0]] = done;
  }
  return std::move(out_);
}

}  // namespace

LoweredWorkload lower(const Workload& wl, const arch::TpuConfig& cfg, const LoweringOptions& opt) {
  Lowerer l(wl, cfg, opt);
  return l.run();
}

}  // namespace tpusim::sim
