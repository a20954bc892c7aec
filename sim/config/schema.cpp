// The table of config keys; see schema.h. Meanings here are the reference
// for docs/config.md (`tpusim config keys` prints them).
#include "sim/config/schema.h"

#include <cmath>
#include <type_traits>

namespace tpusim::sim {
namespace {

using arch::DType;
using arch::TpuConfig;

// A generic lambda works on both `TpuConfig&` and `const TpuConfig&`.
#define TPUSIM_FIELD(expr) ([](auto& c) -> auto& { return expr; })

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Builder {
  std::vector<FieldSpec> v;

  template <class Acc>
  FieldSpec& num(const std::string& path, FieldType type, Acc acc, double min, bool excl, const std::string& doc) {
    FieldSpec f;
    f.path = path;
    f.type = type;
    f.min = min;
    f.min_exclusive = excl;
    f.doc = doc;
    f.set = [acc](TpuConfig& c, const FieldValue& x) {
      using T = std::decay_t<decltype(acc(c))>;
      acc(c) = static_cast<T>(std::get<double>(x));
    };
    f.get = [acc](const TpuConfig& c) { return FieldValue(static_cast<double>(acc(c))); };
    f.present = [](const TpuConfig&) { return true; };
    v.push_back(f);
    return v.back();
  }
  // Counts: integers >= min.
  template <class Acc>
  FieldSpec& integer(const std::string& path, Acc acc, double min, const std::string& doc) {
    return num(path, FieldType::integer, acc, min, false, doc);
  }
  template <class Acc>
  FieldSpec& real(const std::string& path, Acc acc, const std::string& doc) {
    return num(path, FieldType::real, acc, 0, true, doc);
  }
  // Quantities are > 0 unless `allow_zero`.
  template <class Acc>
  FieldSpec& qty(const std::string& path, UnitKind unit, Acc acc, const std::string& doc, bool allow_zero = false) {
    FieldSpec& f = num(path, FieldType::quantity, acc, 0, !allow_zero, doc);
    f.unit = unit;
    return f;
  }
  template <class Acc>
  FieldSpec& opt_qty(const std::string& path, UnitKind unit, Acc acc, const std::string& doc) {
    FieldSpec f;
    f.path = path;
    f.type = FieldType::quantity;
    f.unit = unit;
    f.min = 0;
    f.min_exclusive = true;
    f.doc = doc;
    f.set = [acc](TpuConfig& c, const FieldValue& x) { acc(c) = std::get<double>(x); };
    f.get = [acc](const TpuConfig& c) { return FieldValue(acc(c).value_or(0.0)); };
    f.present = [acc](const TpuConfig& c) { return acc(c).has_value(); };
    v.push_back(f);
    return v.back();
  }
  template <class Acc>
  FieldSpec& boolean(const std::string& path, Acc acc, const std::string& doc) {
    FieldSpec f;
    f.path = path;
    f.type = FieldType::boolean;
    f.doc = doc;
    f.set = [acc](TpuConfig& c, const FieldValue& x) { acc(c) = std::get<bool>(x); };
    f.get = [acc](const TpuConfig& c) { return FieldValue(static_cast<bool>(acc(c))); };
    f.present = [](const TpuConfig&) { return true; };
    v.push_back(f);
    return v.back();
  }
  template <class Acc>
  FieldSpec& str(const std::string& path, Acc acc, std::vector<std::string> choices, const std::string& doc) {
    FieldSpec f;
    f.path = path;
    f.type = FieldType::string;
    f.choices = std::move(choices);
    f.doc = doc;
    f.set = [acc](TpuConfig& c, const FieldValue& x) { acc(c) = std::get<std::string>(x); };
    f.get = [acc](const TpuConfig& c) { return FieldValue(std::string(acc(c))); };
    f.present = [](const TpuConfig&) { return true; };
    v.push_back(f);
    return v.back();
  }
  template <class Acc>
  FieldSpec& dtype(const std::string& path, Acc acc, const std::string& doc) {
    FieldSpec f;
    f.path = path;
    f.type = FieldType::dtype;
    for (DType t : arch::kAllDTypes) f.choices.emplace_back(arch::dtype_name(t));
    f.doc = doc;
    f.set = [acc](TpuConfig& c, const FieldValue& x) { acc(c) = *arch::parse_dtype(std::get<std::string>(x)); };
    f.get = [acc](const TpuConfig& c) { return FieldValue(std::string(arch::dtype_name(acc(c)))); };
    f.present = [](const TpuConfig&) { return true; };
    v.push_back(f);
    return v.back();
  }
  template <class Acc>
  FieldSpec& dmap(const std::string& path, Acc acc, double scale, const std::string& doc) {
    FieldSpec f;
    f.path = path;
    f.type = FieldType::dtype_map;
    f.min = 0;
    f.min_exclusive = true;
    f.scale = scale;
    f.doc = doc;
    f.set = [acc](TpuConfig& c, const FieldValue& x) { acc(c) = std::get<std::map<DType, double>>(x); };
    f.get = [acc](const TpuConfig& c) { return FieldValue(acc(c)); };
    f.present = [](const TpuConfig&) { return true; };
    v.push_back(f);
    return v.back();
  }
};

std::vector<FieldSpec> build() {
  Builder b;
  using U = UnitKind;
  // chip
  b.str("chip.name", TPUSIM_FIELD(c.chip.name), {},
        "Config name; defaults to the file name without .yaml (not inherited through extends)");
  b.str("chip.generation", TPUSIM_FIELD(c.chip.generation), {}, "TPU generation, e.g. v5e").required = true;
  b.integer("chip.tensorcores", TPUSIM_FIELD(c.chip.tensorcores), 1, "TensorCores per chip").bounded(64);
  b.boolean("chip.megacore", TPUSIM_FIELD(c.chip.megacore), "Two TensorCores presented as one device (v4, v5p)");
  b.qty("chip.clock", U::frequency, TPUSIM_FIELD(c.chip.clock_hz), "TensorCore clock")
      .at_least(1e6)
      .bounded(100e9)
      .required = true;
  // mxu
  b.integer("mxu.count", TPUSIM_FIELD(c.mxu.count), 1, "MXUs per TensorCore").bounded(64);
  b.integer("mxu.rows", TPUSIM_FIELD(c.mxu.rows), 1, "Systolic array rows: contracting (K) extent of a weight tile")
      .bounded(4096);
  b.integer("mxu.cols", TPUSIM_FIELD(c.mxu.cols), 1, "Systolic array columns: output (N) extent of a weight tile")
      .bounded(4096);
  b.integer("mxu.weight_load_cycles", TPUSIM_FIELD(c.mxu.weight_load_cycles), 0,
            "Cycles to shift one weight tile in; 0 means `rows`")
      .bounded(1e6);
  b.boolean("mxu.weight_double_buffer", TPUSIM_FIELD(c.mxu.weight_double_buffer),
            "The next weight tile loads while the current one streams");
  b.dmap("mxu.throughput", TPUSIM_FIELD(c.mxu.throughput), 1,
         "MACs per PE per cycle per dtype relative to bf16 = 1, e.g. {bf16: 1, int8: 2}; a dtype "
         "absent from the map is unsupported; the map replaces the default as a whole");
  b.dtype("mxu.accumulator", TPUSIM_FIELD(c.mxu.accumulator), "Accumulator dtype");
  b.integer("mxu.input_latency", TPUSIM_FIELD(c.mxu.input_latency), 0,
            "Cycles from issue until the first LHS row enters the array")
      .bounded(1e6);
  b.integer("mxu.output_latency", TPUSIM_FIELD(c.mxu.output_latency), 0, "Cycles from the last PE to the result buffer")
      .bounded(1e6);
  // N:M structured sparsity (a what-if; no shipped config turns it on).
  b.integer("mxu.sparsity.n", TPUSIM_FIELD(c.mxu.sparsity.n), 0,
            "N of the N:M sparsity the MXU skips zeros of (0 = no sparse mode; needs 0 < n < m)")
      .bounded(64);
  b.integer("mxu.sparsity.m", TPUSIM_FIELD(c.mxu.sparsity.m), 0, "M of the MXU's N:M sparsity (group size along K)")
      .bounded(64);
  {
    FieldSpec& f = b.str("mxu.sparsity.operand", TPUSIM_FIELD(c.mxu.sparsity.operand_name), {"weights", "activations"},
                         "Which matmul operand may be N:M sparse: weights (the stationary B) or activations (A)");
    f.set = [](TpuConfig& c, const FieldValue& x) {
      c.mxu.sparsity.operand =
          std::get<std::string>(x) == "activations" ? arch::SparseOperand::activations : arch::SparseOperand::weights;
      c.mxu.sparsity.operand_name = std::get<std::string>(x);
    };
  }
  b.num("mxu.sparsity.metadata_bandwidth", FieldType::real, TPUSIM_FIELD(c.mxu.sparsity.metadata_bytes_per_cycle), 0,
        false, "Bytes of sparsity metadata per cycle per MXU shifted in with a weight tile (0 = never limiting)")
      .bounded(1e6);
  // vpu
  b.integer("vpu.sublanes", TPUSIM_FIELD(c.vpu.sublanes), 1, "Sublanes of a vector register").bounded(1024);
  b.integer("vpu.lanes", TPUSIM_FIELD(c.vpu.lanes), 1, "Lanes of a vector register").bounded(4096);
  b.integer("vpu.alus_per_lane", TPUSIM_FIELD(c.vpu.alus_per_lane), 1, "Elementwise ops per lane per cycle")
      .bounded(64);
  b.integer("vpu.latency", TPUSIM_FIELD(c.vpu.latency), 1, "Pipeline latency, cycles").bounded(1e6);
  b.real("vpu.transcendental_rate", TPUSIM_FIELD(c.vpu.transcendental_rate), "Transcendental ops per lane per cycle")
      .bounded(64);
  b.integer("vpu.vregs", TPUSIM_FIELD(c.vpu.vregs), 1, "Vector registers (sublanes x lanes x 32 bit) per TensorCore")
      .bounded(65536);
  b.integer("vpu.vmem_loads_per_cycle", TPUSIM_FIELD(c.vpu.vmem_loads_per_cycle), 1,
            "Vector register loads from VMEM per cycle")
      .bounded(64);
  b.integer("vpu.vmem_stores_per_cycle", TPUSIM_FIELD(c.vpu.vmem_stores_per_cycle), 1,
            "Vector register stores to VMEM per cycle")
      .bounded(64);
  b.boolean("vpu.packed_narrow_alu", TPUSIM_FIELD(c.vpu.packed_narrow_alu),
            "ALUs operate on packed sub-32-bit values (a bf16 vreg slot holds 2 values); false = "
            "narrow values run one per slot at the f32 rate");
  // xlu
  b.integer("xlu.count", TPUSIM_FIELD(c.xlu.count), 0,
            "Cross-lane units per TensorCore, each running one XLU op at a time; 0 = none (TPUv1): a workload "
            "that needs cross-lane work is refused")
      .bounded(64);
  b.integer("xlu.latency", TPUSIM_FIELD(c.xlu.latency), 1, "Cycles for one vreg through an XLU").bounded(1e6);
  b.real("xlu.vregs_per_cycle", TPUSIM_FIELD(c.xlu.vregs_per_cycle), "Vregs per cycle per XLU").bounded(64);
  // on-chip memories
  auto mem = [&](const std::string& n, auto acc, const std::string& what) {
    b.boolean(
        n + ".present", [acc](auto& c) -> auto& { return acc(c).present; },
        "The " + what + " exists (a `" + n + ":` section switches an optional one on)");
    b.qty(
         n + ".size", U::size, [acc](auto& c) -> auto& { return acc(c).size_bytes; },
         "Capacity of the " + what + "; must be > 0 if present", true)
        .bounded(1099511627776.0);  // 1 TiB
    b.integer(
         n + ".ports", [acc](auto& c) -> auto& { return acc(c).ports; }, 1, "Access ports of the " + what)
        .bounded(64);
    b.qty(
         n + ".bandwidth", U::bandwidth, [acc](auto& c) -> auto& { return acc(c).bandwidth; },
         "Bandwidth of the " + what + ", all ports together", true)
        .bounded(1e15);
    b.integer(
         n + ".latency", [acc](auto& c) -> auto& { return acc(c).latency; }, 0,
         "Access latency of the " + what + ", cycles")
        .bounded(1e6);
    b.qty(
        n + ".granule", U::size, [acc](auto& c) -> auto& { return acc(c).granule_bytes; },
        "Allocation and access granule of the " + what + "; 0 = byte granular", true);
  };
  mem("vmem", TPUSIM_FIELD(c.vmem), "vector memory, per TensorCore");
  mem("smem", TPUSIM_FIELD(c.smem), "scalar memory, per TensorCore");
  mem("cmem", TPUSIM_FIELD(c.cmem), "common memory, per chip (optional)");
  // dma
  b.integer("dma.engines", TPUSIM_FIELD(c.dma.engines), 1, "DMA engines per chip").bounded(1024);
  b.integer("dma.issue_per_cycle", TPUSIM_FIELD(c.dma.issue_per_cycle), 1, "HBM requests one engine issues per cycle")
      .bounded(64);
  b.integer("dma.max_outstanding", TPUSIM_FIELD(c.dma.max_outstanding), 1, "Outstanding HBM requests per engine")
      .bounded(65536);
  b.qty("dma.request_bytes", U::size, TPUSIM_FIELD(c.dma.request_bytes), "Size of one HBM request (atom)")
      .bounded(1048576);
  b.integer("dma.setup_cycles", TPUSIM_FIELD(c.dma.setup_cycles), 0, "Fixed cycles per descriptor").bounded(1e6);
  // hbm
  b.str("hbm.preset", TPUSIM_FIELD(c.hbm.preset), {},
        "Memory preset merged under this section from hbm/<lowercased preset>.yaml; the chip's "
        "own keys win");
  b.str("hbm.model", TPUSIM_FIELD(c.hbm.model), {"detailed", "channel", "calibrated"},
        "Timing model: per-pseudo-channel fluid calibrated against the bank-level model (channel, "
        "the default), bank-level (detailed), or whole-memory fluid calibrated against it (calibrated)");
  b.integer("hbm.stacks", TPUSIM_FIELD(c.hbm.stacks), 1, "Stacks (or DIMM-like devices) per chip").bounded(64);
  b.integer("hbm.channels", TPUSIM_FIELD(c.hbm.channels), 1, "Channels per stack").bounded(64);
  b.integer("hbm.pseudo_channels", TPUSIM_FIELD(c.hbm.pseudo_channels), 1, "Pseudo-channels per channel").bounded(8);
  b.integer("hbm.bank_groups", TPUSIM_FIELD(c.hbm.bank_groups), 1, "Bank groups per pseudo-channel").bounded(64);
  b.integer("hbm.banks_per_group", TPUSIM_FIELD(c.hbm.banks_per_group), 1, "Banks per bank group").bounded(64);
  b.qty("hbm.row_size", U::size, TPUSIM_FIELD(c.hbm.row_bytes), "Row (page) size per pseudo-channel").bounded(1048576);
  b.qty("hbm.data_rate", U::transfer_rate, TPUSIM_FIELD(c.hbm.data_rate), "Transfers per second per pin")
      .bounded(100e9)
      .required = true;
  b.integer("hbm.bus_width_bits", TPUSIM_FIELD(c.hbm.bus_width_bits), 1, "Data bus width per pseudo-channel, bits")
      .bounded(4096);
  b.integer("hbm.burst_length", TPUSIM_FIELD(c.hbm.burst_length), 1, "Burst length, transfers").bounded(64);
  b.qty("hbm.capacity", U::size, TPUSIM_FIELD(c.hbm.capacity_bytes), "Capacity per chip")
      .bounded(1125899906842624.0)
      .required = true;
  b.str("hbm.address_mapping", TPUSIM_FIELD(c.hbm.address_mapping), {},
        "Address bit order, most to least significant, as a permutation of Ro Ba Bg Ch Pc Co");
  b.boolean("hbm.address_hash", TPUSIM_FIELD(c.hbm.address_hash),
            "Rotate pseudo-channel and bank by a hash of the higher address bits");
  b.integer("hbm.queue_depth", TPUSIM_FIELD(c.hbm.queue_depth), 1, "Scheduler queue entries per pseudo-channel")
      .bounded(65536);
  b.str("hbm.page_policy", TPUSIM_FIELD(c.hbm.page_policy), {"open", "closed"}, "Row buffer policy");
  b.qty("hbm.controller_latency", U::time, TPUSIM_FIELD(c.hbm.controller_latency),
        "Fixed controller front-end + PHY latency added to every access", true)
      .bounded(1e-3);
  b.integer("hbm.refresh_postpone", TPUSIM_FIELD(c.hbm.refresh_postpone), 0,
            "Refreshes the controller may postpone while requests wait (0..8)")
      .bounded(8);
  // One row per JEDEC timing of TPUSIM_HBM_TIMINGS (arch/common/chip_config.h).
#define TPUSIM_HBM_TIMING_ROW(name, ps_name, req, positive, description)         \
  b.qty("hbm.timings." #name, U::time, TPUSIM_FIELD(c.hbm.t.name),               \
        std::string(description) + ((req) ? "" : "; 0 = no constraint"), !(req)) \
      .bounded(1e-3)                                                             \
      .required = (req);
  TPUSIM_HBM_TIMINGS(TPUSIM_HBM_TIMING_ROW)
#undef TPUSIM_HBM_TIMING_ROW
  // ici
  b.integer("ici.ports", TPUSIM_FIELD(c.ici.ports), 0, "ICI links per chip; 0 = no ICI").bounded(64);
  b.qty("ici.link_bandwidth", U::bandwidth, TPUSIM_FIELD(c.ici.link_bandwidth),
        "Bandwidth per link per direction; must be > 0 if ports > 0", true)
      .bounded(1e15);
  b.qty("ici.hop_latency", U::time, TPUSIM_FIELD(c.ici.hop_latency), "Latency per hop", true).bounded(1e-3);
  b.real("ici.link_efficiency", TPUSIM_FIELD(c.ici.link_efficiency),
         "Usable fraction of ici.link_bandwidth for payload (protocol, headers, flow control), "
         "in (0, 1]; every link transmits at link_bandwidth x link_efficiency");
  b.qty("ici.collective_latency", U::time, TPUSIM_FIELD(c.ici.collective_latency),
        "Start-up of each collective (synchronisation and handshake) between the last chip of a "
        "group reaching it and its first message; 0 = none",
        true)
      .bounded(1e-3);
  b.str("ici.axis_split", TPUSIM_FIELD(c.ici.axis_split), {"tori", "always", "never"},
        "A collective over several axes: split its data over them all at once when every axis of its "
        "group wraps (tori), always, or never (axes one after another)");
  b.str("ici.topology", TPUSIM_FIELD(c.ici.topology), {"torus2d", "torus3d"}, "Slice topology");
  b.str("ici.wraparound", TPUSIM_FIELD(c.ici.wraparound), {"length16", "multiple_of_4", "always", "never"},
        "Which axes get wraparound links: only length-16 axes (v5e, v6e), axes whose length is a "
        "multiple of 4 (v4, v5p), always or never");
  b.boolean("ici.twisted_torus", TPUSIM_FIELD(c.ici.twisted_torus), "Twisted torus shapes are available");
  b.integer("ici.max_chips", TPUSIM_FIELD(c.ici.max_chips), 1, "Largest slice, chips").bounded(1048576);
  b.integer("ici.chips_per_host", TPUSIM_FIELD(c.ici.chips_per_host), 1, "Chips per host").bounded(1024);
  // chip-level links and blocks
  b.qty("dcn_bandwidth", U::bandwidth, TPUSIM_FIELD(c.ici.dcn_bandwidth),
        "Data-centre network (between slices) bandwidth per chip and direction; 0 = no multislice runs", true)
      .bounded(1e15);
  b.qty("dcn_latency", U::time, TPUSIM_FIELD(c.ici.dcn_latency),
        "One-way latency of one message between slices (chip, host, network, host, chip)", true)
      .bounded(1e-1);
  b.qty("pcie_bandwidth", U::bandwidth, TPUSIM_FIELD(c.pcie_bandwidth), "Host PCIe bandwidth per chip", true)
      .bounded(1e15);
  b.qty("host_memory", U::size, TPUSIM_FIELD(c.host_memory_bytes),
        "Host DRAM per host, shared by its chips (0: unknown, offloaded activations unchecked)", true)
      .bounded(1125899906842624.0);
  b.integer("sparsecores", TPUSIM_FIELD(c.sparsecores), 0, "SparseCores per chip").bounded(64);
  b.integer("sparsecore.tiles", TPUSIM_FIELD(c.sparsecore.tiles), 1, "Vector subcores (tiles) per SparseCore")
      .bounded(1024);
  b.integer("sparsecore.lanes", TPUSIM_FIELD(c.sparsecore.lanes), 1, "32-bit SIMD lanes per SparseCore tile")
      .bounded(4096);
  b.integer("sparsecore.latency", TPUSIM_FIELD(c.sparsecore.latency), 1, "SparseCore vector pipeline latency, cycles")
      .bounded(1e6);
  // kernels: what the compiler's pipelined kernels cost beyond the hardware
  b.qty("kernel.step_overhead", U::time, TPUSIM_FIELD(c.kernel.step_overhead),
        "Scalar-core time per pipeline (grid) step, serial with the step's compute; 0 = free", true)
      .bounded(1e-3);
  b.qty("kernel.launch_overhead", U::time, TPUSIM_FIELD(c.kernel.launch_overhead),
        "Scalar-core time to start a kernel (an operator) after the previous one on its TensorCore "
        "ended; 0 = free",
        true)
      .bounded(1e-3);
  b.qty("kernel.scoped_vmem", U::size, TPUSIM_FIELD(c.kernel.scoped_vmem),
        "VMEM per TensorCore one kernel's blocks may use (the compiler's scoped VMEM limit); "
        "0 = all of VMEM",
        true)
      .bounded(1099511627776.0);
  // energy (optional): per-event energies of the blocks, static power, TDP
  b.boolean("energy.present", TPUSIM_FIELD(c.energy.present),
            "The config states an energy model (an `energy:` section switches this on)");
  b.dmap("energy.mxu_mac_pj", TPUSIM_FIELD(c.energy.mxu_mac), 1e-12,
         "MXU energy per MAC slot issued, pJ, per dtype the MXU runs, e.g. {bf16: 0.3, int8: 0.1}; "
         "a dtype absent from the map costs nothing");
  // Energies per event: bytes, bits and operations cost at most 1 uJ each.
  auto per_event = [&](const std::string& key, auto acc, const std::string& doc) {
    b.qty("energy." + key, U::energy, acc, doc, true).bounded(1e-6);
  };
  per_event("vpu_op", TPUSIM_FIELD(c.energy.vpu_op),
            "Energy of one elementwise VPU operation on one element (XLU passes: per 32-bit slot)");
  per_event("vmem_byte", TPUSIM_FIELD(c.energy.vmem_byte),
            "Energy per byte read from or written to VMEM (DMA, vreg loads/stores, MXU operands)");
  per_event("cmem_byte", TPUSIM_FIELD(c.energy.cmem_byte), "Energy per byte read from or written to CMEM");
  per_event("hbm_bit", TPUSIM_FIELD(c.energy.hbm_bit),
            "Energy per bit read from or written to HBM (I/O and column access)");
  b.qty("energy.hbm_activate", U::energy, TPUSIM_FIELD(c.energy.hbm_activate),
        "Energy per DRAM row activation (ACT with its precharge)", true)
      .bounded(1e-3);
  per_event("ici_bit", TPUSIM_FIELD(c.energy.ici_bit), "Energy per bit sent over one ICI link (each hop)");
  b.qty("energy.static_power", U::power, TPUSIM_FIELD(c.energy.static_power),
        "Power the chip draws whatever it does (leakage, clocks, uncore, HBM standby), charged "
        "for the whole run",
        true)
      .bounded(1e6);
  b.qty("energy.tdp", U::power, TPUSIM_FIELD(c.energy.tdp),
        "Thermal design power; a run whose average power exceeds it is flagged; 0 = unknown", true)
      .bounded(1e6);
  // published
  b.dmap("published.peak_tflops", TPUSIM_FIELD(c.published.peak_flops), 1e12,
         "Published peak TFLOP/s (TOP/s for integers) per dtype; checked against the derived "
         "peak within 3%");
  b.opt_qty("published.hbm_bandwidth", U::bandwidth, TPUSIM_FIELD(c.published.hbm_bandwidth),
            "Published HBM bandwidth; checked against the derived one within 3%");
  b.opt_qty("published.ici_link_bandwidth", U::bandwidth, TPUSIM_FIELD(c.published.ici_link_bandwidth),
            "Published ICI bandwidth per link per direction; checked against ici.link_bandwidth "
            "within 3%");
  b.opt_qty("published.ici_chip_bandwidth", U::bandwidth, TPUSIM_FIELD(c.published.ici_chip_bandwidth),
            "Published ICI bandwidth per chip, both directions of all links; checked against 2 x "
            "ports x link_bandwidth within 3%");
  return b.v;
}

}  // namespace

std::string FieldSpec::expected() const {
  auto bound = [&]() -> std::string {
    std::string b;
    if (min != -kInf) b = (min_exclusive ? " > " : " >= ") + format_scaled(min, 1, 1);
    if (max != kInf) b += (b.empty() ? " <= " : " and <= ") + format_scaled(max, 1, 1);
    return b;
  };
  switch (type) {
    case FieldType::integer: return "an integer" + bound();
    case FieldType::real: return "a number" + bound();
    case FieldType::boolean: return "true or false";
    case FieldType::string: {
      if (choices.empty()) return "a string";
      std::string s = "one of ";
      for (size_t i = 0; i < choices.size(); ++i) s += (i ? ", " : "") + choices[i];
      return s;
    }
    case FieldType::quantity:
      return unit_kind_description(unit) + (max != kInf ? " of at most " + format_quantity(max, unit) : std::string());
    case FieldType::dtype: {
      std::string s = "a dtype, one of ";
      for (size_t i = 0; i < choices.size(); ++i) s += (i ? ", " : "") + choices[i];
      return s;
    }
    case FieldType::dtype_map: return "a map of dtype to number > 0, e.g. {bf16: 1, int8: 2}";
  }
  return "";
}

const std::vector<FieldSpec>& schema() {
  static const std::vector<FieldSpec> s = build();
  return s;
}

const FieldSpec* find_field(const std::string& path) {
  static const std::map<std::string, const FieldSpec*> index = [] {
    std::map<std::string, const FieldSpec*> m;
    for (const FieldSpec& f : schema()) m[f.path] = &f;
    return m;
  }();
  auto it = index.find(path);
  return it == index.end() ? nullptr : it->second;
}

const std::vector<std::string>& schema_sections() {
  static const std::vector<std::string> s = [] {
    std::vector<std::string> out;
    for (const FieldSpec& f : schema()) {
      std::string p = f.path;
      for (size_t dot = p.find('.'); dot != std::string::npos; dot = p.find('.', dot + 1)) {
        std::string sec = p.substr(0, dot);
        bool seen = false;
        for (auto& x : out) seen |= x == sec;
        if (!seen) out.push_back(sec);
      }
    }
    return out;
  }();
  return s;
}

bool is_section(const std::string& path) {
  for (const auto& s : schema_sections())
    if (s == path) return true;
  return false;
}

std::vector<std::string> section_children(const std::string& section) {
  std::vector<std::string> out;
  std::string prefix = section.empty() ? "" : section + ".";
  auto add = [&](const std::string& full) {
    if (full.compare(0, prefix.size(), prefix) != 0) return;
    std::string rest = full.substr(prefix.size());
    if (rest.empty()) return;
    rest = rest.substr(0, rest.find('.'));
    for (auto& x : out)
      if (x == rest) return;
    out.push_back(rest);
  };
  for (const FieldSpec& f : schema()) add(f.path);
  return out;
}

bool is_presence_section(const std::string& section) { return section == "cmem" || section == "energy"; }

std::string format_field(const FieldSpec& f, const FieldValue& v) {
  switch (f.type) {
    case FieldType::integer:
    case FieldType::real: return format_scaled(std::get<double>(v), 1, 1);
    case FieldType::boolean: return std::get<bool>(v) ? "true" : "false";
    case FieldType::string:
    case FieldType::dtype: return std::get<std::string>(v);
    case FieldType::quantity: return format_quantity(std::get<double>(v), f.unit);
    case FieldType::dtype_map: {
      std::string s = "{";
      for (const auto& [t, x] : std::get<std::map<arch::DType, double>>(v)) {
        if (s.size() > 1) s += ", ";
        s += std::string(arch::dtype_name(t)) + ": " + format_scaled(x, f.scale, 1);
      }
      return s + "}";
    }
  }
  return "";
}

}  // namespace tpusim::sim
