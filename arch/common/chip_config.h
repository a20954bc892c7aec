// Plain configuration structs for every hardware block of a TPU chip.
// sim/config fills them from YAML (the only place that knows YAML); arch/
// modules take `const XConfig&`. Units are SI base units throughout:
// Hz, bytes, bytes per second, seconds. Each default is defined here once.
// Leaves out: anything about workloads or run options.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "arch/common/dtype.h"

namespace tpusim::arch {

struct ChipConfig {
  std::string name;        // config name, e.g. "v5e"
  std::string generation;  // e.g. "v5e"
  int tensorcores = 1;     // TensorCores per chip
  bool megacore = false;   // two TCs presented as one device (v4, v5p)
  double clock_hz = 0;     // TensorCore clock
};

// N:M structured sparsity in the MXU (a what-if: no public TPU generation
// advertises it). With n > 0 the array skips the zeros of an operand stored
// n:m sparse along K, streaming the compressed K (k x n/m): m/n times the
// dense MAC rate. Each kept value carries ceil(log2 m) bits of position
// metadata, shifted into the array with its weight tile over a path of
// `metadata_bytes_per_cycle` (0 = as fast as the weights: never limiting).
enum class SparseOperand : std::uint8_t { weights, activations };
struct MxuSparsityConfig {
  int n = 0, m = 0;  // 0: no sparse mode
  SparseOperand operand = SparseOperand::weights;
  std::string operand_name = "weights";  // as written in the config (schema round trip)
  double metadata_bytes_per_cycle = 0;
  int metadata_bits() const {
    int b = 0;
    while ((1 << b) < m) ++b;
    return n > 0 ? b : 0;
  }
};

struct MxuConfig {
  int count = 1;                     // MXUs per TensorCore
  int rows = 128;                    // R: contracting (K) extent of a weight tile
  int cols = 128;                    // C: output (N) extent of a weight tile
  int weight_load_cycles = 0;        // cycles to shift one weight tile in; 0 = rows
  bool weight_double_buffer = true;  // next tile loads while the current streams
  // MACs per PE per cycle relative to bf16 (bf16 = 1). A dtype absent from
  // the map is not supported by the MXU of this generation.
  std::map<DType, double> throughput{{DType::bf16, 1.0}, {DType::f32, 1.0}};
  DType accumulator = DType::f32;
  int input_latency = 0;   // cycles from issue until the first LHS row enters
  int output_latency = 0;  // cycles from the last PE until the result buffer
  MxuSparsityConfig sparsity;
};

struct VpuConfig {
  int sublanes = 8;
  int lanes = 128;
  int alus_per_lane = 2;             // elementwise ops per lane per cycle
  int latency = 2;                   // pipeline latency, cycles
  double transcendental_rate = 1.0;  // transcendental ops per lane per cycle
  int vregs = 32;                    // vector registers of sublanes x lanes x 32 bit
  int vmem_loads_per_cycle = 3;      // vreg loads from VMEM per cycle
  int vmem_stores_per_cycle = 1;     // vreg stores to VMEM per cycle
  // Whether the ALUs operate on packed sub-32-bit values (a bf16 vreg holds
  // 2 values per 32-bit slot, all processed by one op). false = narrow values
  // are processed one per slot at the f32 rate (v4/v5e have no bf16 VPU
  // arithmetic per public JAX/Pallas material; an assumption, not a spec).
  bool packed_narrow_alu = false;
};

struct XluConfig {
  int count = 2;                 // cross-lane units per TensorCore
  int latency = 8;               // cycles for one vreg through the unit
  double vregs_per_cycle = 1.0;  // throughput per XLU
};

// An on-chip memory: VMEM, SMEM or CMEM.
struct MemoryConfig {
  bool present = true;
  std::uint64_t size_bytes = 0;
  int ports = 1;
  double bandwidth = 0;  // bytes/s, all ports together
  int latency = 1;       // access latency, cycles
  // Allocation and access granule: buffers are rounded up to it and an access
  // moves whole granules (VMEM: 4 KiB transactions, Pallas TPU docs).
  // 0 = byte granular.
  std::uint64_t granule_bytes = 0;
};

// Defaults sized by Little's law (bytes in flight = bandwidth x latency):
// 512-byte requests (DMA chunks of 512 B - 2 KiB are usual; one HBM row
// slice is 1 KiB), one per cycle, at most 256 outstanding per engine. An
// engine then offers min(512 B x clock, 256 x 512 B / L) with L the
// unloaded latency of one request (~128 ns on HBM2e): 768 GB/s at 1.5 GHz,
// so the 4 engines offer 3.7x v5e's 819 GB/s and 1.3x v5p's 2765 GB/s
// (tests/unit/sim/test_hbm_chip_configs.cpp checks every shipped config).
struct DmaConfig {
  int engines = 4;                    // per chip
  int issue_per_cycle = 1;            // HBM requests one engine issues per (TensorCore) cycle
  int max_outstanding = 256;          // outstanding HBM requests per engine
  std::uint64_t request_bytes = 512;  // size of one HBM request (atom)
  int setup_cycles = 0;               // fixed cost per descriptor
};

// The JEDEC timings, declared once and expanded into HbmTimings (seconds),
// DramTiming (integer ps, arch/hbm/dram_timing.h), the config schema rows
// (sim/config/schema.cpp) and the calibration key (hbm_calibration.cpp).
// X(name, ps_name, required, positive, description):
//   name      YAML key under hbm.timings and the HbmTimings field
//   ps_name   the DramTiming field
//   required  the config must state it (schema)
//   positive  must be > 0; otherwise 0 means "no constraint"
#define TPUSIM_HBM_TIMINGS(X)                                                  \
  X(tCK, tCK, true, true, "Command clock period")                              \
  X(tCL, CL, true, true, "Read latency (CAS)")                                 \
  X(tCWL, CWL, false, false, "Write latency")                                  \
  X(tRCD, RCD, true, true, "Activate to read/write")                           \
  X(tRP, RP, true, true, "Precharge period")                                   \
  X(tRAS, RAS, true, true, "Activate to precharge")                            \
  X(tRC, RC, false, false, "Activate to activate, same bank")                  \
  X(tCCD_S, CCD_S, false, false, "Column to column, different bank group")     \
  X(tCCD_L, CCD_L, false, false, "Column to column, same bank group")          \
  X(tRRD_S, RRD_S, false, false, "Activate to activate, different bank group") \
  X(tRRD_L, RRD_L, false, false, "Activate to activate, same bank group")      \
  X(tFAW, FAW, false, false, "Four-activate window")                           \
  X(tWR, WR, false, false, "Write recovery")                                   \
  X(tWTR_S, WTR_S, false, false, "Write to read, different bank group")        \
  X(tWTR_L, WTR_L, false, false, "Write to read, same bank group")             \
  X(tRTP, RTP, false, false, "Read to precharge")                              \
  X(tRTW, RTW, false, false, "Read to write bus turnaround")                   \
  X(tRFC, RFC, true, false, "Refresh cycle time")                              \
  X(tREFI, REFI, true, false, "Refresh interval")

// DRAM timing in seconds; the HBM models convert to integer picoseconds.
struct HbmTimings {
#define TPUSIM_HBM_TIMING_FIELD(name, ps_name, required, positive, description) double name = 0;
  TPUSIM_HBM_TIMINGS(TPUSIM_HBM_TIMING_FIELD)
#undef TPUSIM_HBM_TIMING_FIELD
};

// Every field of HbmConfig, declared once: X(type, name, default, calibrated).
// `calibrated`: the detailed model reads it, so two configs share one
// calibration (hbm_calibration_key()) only when all of these are equal; a
// field added here is part of the key without further work. Units as in
// the rest of this file; the YAML keys are in sim/config/schema.cpp.
#define TPUSIM_HBM_FIELDS(X)                                                 \
  /* preset name, e.g. "HBM2e" */                                            \
  X(std::string, preset, , true)                                             \
  /* "channel" | "detailed" | "calibrated" (docs/hbm.md): the default is the \
     fastest model within the documented accuracy of the detailed one for    \
     whole workloads; calibration always runs detailed */                    \
  X(std::string, model, = "channel", false)                                  \
  X(int, stacks, = 1, true)                                                  \
  X(int, channels, = 8, true)        /* per stack */                         \
  X(int, pseudo_channels, = 2, true) /* per channel */                       \
  X(int, bank_groups, = 4, true)     /* per pseudo-channel */                \
  X(int, banks_per_group, = 4, true)                                         \
  /* row (page) size per pseudo-channel */                                   \
  X(std::uint64_t, row_bytes, = 1024, true)                                  \
  X(double, data_rate, = 0, true)    /* transfers per second per pin */      \
  X(int, bus_width_bits, = 64, true) /* per pseudo-channel */                \
  X(int, burst_length, = 4, true)                                            \
  X(std::uint64_t, capacity_bytes, = 0, true)                                \
  /* most to least significant field */                                      \
  X(std::string, address_mapping, = "RoBaBgChPcCo", true)                    \
  /* Address hashing as memory controllers do it (permutation-based          \
     interleaving): the pseudo-channel is rotated by a hash of the address   \
     bits above one full sweep of all pseudo-channels, and the bank by the   \
     row, so strided streams spread over every channel and bank while a      \
     sequential stream still visits each pseudo-channel once per sweep. */   \
  X(bool, address_hash, = true, true)                                        \
  X(int, queue_depth, = 64, true) /* scheduler queue per pseudo-channel */   \
  X(std::string, page_policy, = "open", true)                                \
  /* Fixed front-end + PHY latency added to every access (YAML key           \
     controller_latency, seconds); DRAM timing alone gives ~30 ns. 60 ns is  \
     an assumption that puts unloaded HBM reads near 100 ns. */              \
  X(double, controller_latency, = 60e-9, true)                               \
  /* Refreshes a controller may postpone while requests wait (paid when the  \
     pseudo-channel idles). JEDEC DDR4 (JESD79-4, "refresh postponing") and  \
     HBM2 (JESD235) allow up to 8; 1 keeps a long stream's refresh cost      \
     unchanged while a copy's tail absorbs the refresh it met. */            \
  X(int, refresh_postpone, = 1, true)                                        \
  X(HbmTimings, t, , true)

struct HbmConfig {
#define TPUSIM_HBM_FIELD(type, name, init, calibrated) type name init;
  TPUSIM_HBM_FIELDS(TPUSIM_HBM_FIELD)
#undef TPUSIM_HBM_FIELD
};

struct IciConfig {
  int ports = 4;
  double link_bandwidth = 0;  // bytes/s per link per direction
  double hop_latency = 0;     // seconds
  // Usable fraction of link_bandwidth for payload (packet headers, flow
  // control, link-level coding and whatever else a measured collective
  // loses against the nominal rate): every transmission runs at
  // link_bandwidth x link_efficiency. In (0, 1]; 1 = nominal.
  double link_efficiency = 1;
  // Start-up of every collective with messages: the synchronisation and
  // handshake (peers' buffers ready, DMA descriptors issued) between the
  // moment all chips of a group have reached the collective and the first
  // byte on a link; seconds, 0 = none.
  double collective_latency = 0;
  // How a collective over several mesh axes uses them: "tori" (split its
  // data k ways, one part per axis, each part visiting the axes in its own
  // rotated order, all at once, when every axis of the group wraps; axes
  // one after another, the whole data in one part, when any does not),
  // "always" (split on every group) or "never" (always one after another).
  // docs/ici.md, "Several axes".
  std::string axis_split = "tori";
  std::string topology = "torus2d";  // "torus2d" | "torus3d"
  // Wraparound rule per axis: "length16" (v5e/v6e: only axes of length 16),
  // "multiple_of_4" (v4/v5p), "always", "never".
  std::string wraparound = "always";
  bool twisted_torus = false;
  int max_chips = 1;
  int chips_per_host = 4;
  // Data-centre network between slices (multislice runs, "N*SHAPE"; the
  // top-level config keys dcn_bandwidth and dcn_latency): each chip's
  // share of its host's NIC, per direction, and the one-way latency of one
  // message (chip -> host -> network -> host -> chip).
  double dcn_bandwidth = 0;  // bytes/s per chip; 0 = no multislice runs
  double dcn_latency = 0;    // seconds per message
};

// One SparseCore (arch/sparsecore): a scalar sequencer driving `tiles`
// vector subcores of `lanes` 32-bit lanes each (openxla.org/xla/sparsecore,
// "Specifications at a glance": 16 tiles per SparseCore on v4, v5p and
// Trillium; SIMD width 8 f32). The count per chip is TpuConfig::sparsecores.
struct SparseCoreConfig {
  int tiles = 16;   // vector subcores (tiles) per SparseCore
  int lanes = 8;    // 32-bit SIMD lanes per tile
  int latency = 2;  // vector pipeline latency, cycles (assumption: as the TensorCore VPU)
};

// What the compiler's kernels cost beyond the hardware's own timing (the
// software half of a run: XLA's and Pallas's pipelined kernels).
struct KernelConfig {
  // Seconds the scalar core spends per pipeline (grid) step on bookkeeping:
  // semaphore waits, DMA descriptor issue, address arithmetic; serial with
  // the step's compute. 0 = free.
  double step_overhead = 0;
  // Seconds the scalar core spends starting a kernel (an operator), after
  // the previous kernel on its TensorCore has ended. 0 = free.
  double launch_overhead = 0;
  // Bytes of VMEM per TensorCore one kernel's blocks may use (the
  // compiler's scoped VMEM limit); 0 = all of VMEM.
  std::uint64_t scoped_vmem = 0;
};

// Energy per event of every block and the chip's static power (the
// `energy:` section); arch/power/energy_model.h turns the blocks'
// statistics into joules with them. Joules, watts; 0 = the event costs
// nothing. `present` = the config states an energy model.
struct EnergyConfig {
  bool present = false;
  std::map<DType, double> mxu_mac;  // J per MAC slot the MXU issues, per dtype it runs
  double vpu_op = 0;                // J per elementwise VPU (or XLU) operation on one element
  double vmem_byte = 0;             // J per byte read from or written to VMEM
  double cmem_byte = 0;             // J per byte read from or written to CMEM
  double hbm_bit = 0;               // J per bit read from or written to HBM
  double hbm_activate = 0;          // J per DRAM row activation (ACT + its precharge)
  double ici_bit = 0;               // J per bit sent over one ICI link (per hop)
  double static_power = 0;          // W drawn whatever the chip does (leakage, clocks, uncore)
  double tdp = 0;                   // W, thermal design power; 0 = unknown
};

// Figures a config states from public sources; loading checks that the
// derived figures agree within 3%.
struct PublishedFigures {
  std::map<DType, double> peak_flops;        // FLOP/s (or OP/s) per dtype
  std::optional<double> hbm_bandwidth;       // bytes/s
  std::optional<double> ici_link_bandwidth;  // bytes/s one-way per link
  // bytes/s, both directions of all links of a chip together (v7 publishes
  // only this figure).
  std::optional<double> ici_chip_bandwidth;
};

struct TpuConfig {
  ChipConfig chip;
  MxuConfig mxu;
  VpuConfig vpu;
  XluConfig xlu;
  MemoryConfig vmem;         // per TensorCore
  MemoryConfig smem;         // per TensorCore
  MemoryConfig cmem{false};  // per chip, optional
  DmaConfig dma;
  HbmConfig hbm;
  IciConfig ici;
  double pcie_bandwidth = 0;  // bytes/s per chip
  // Host DRAM per host, shared by its ici.chips_per_host chips (0: not
  // published; offloaded activations are then not checked against it).
  std::uint64_t host_memory_bytes = 0;
  std::uint64_t host_memory_per_chip() const {
    return ici.chips_per_host > 0 ? host_memory_bytes / static_cast<std::uint64_t>(ici.chips_per_host) : 0;
  }
  int sparsecores = 0;
  SparseCoreConfig sparsecore;
  KernelConfig kernel;
  EnergyConfig energy;
  PublishedFigures published;
};

}  // namespace tpusim::arch
