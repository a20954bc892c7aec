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

struct MxuConfig {
  int count = 1;          // MXUs per TensorCore
  int rows = 128;         // R: contracting (K) extent of a weight tile
  int cols = 128;         // C: output (N) extent of a weight tile
  int weight_load_cycles = 0;  // cycles to shift one weight tile in; 0 = rows
  bool weight_double_buffer = true;  // next tile loads while the current streams
  // MACs per PE per cycle relative to bf16 (bf16 = 1). A dtype absent from
  // the map is not supported by the MXU of this generation.
  std::map<DType, double> throughput{{DType::bf16, 1.0}, {DType::f32, 1.0}};
  DType accumulator = DType::f32;
  int input_latency = 0;   // cycles from issue until the first LHS row enters
  int output_latency = 0;  // cycles from the last PE until the result buffer
};

struct VpuConfig {
  int sublanes = 8;
  int lanes = 128;
  int alus_per_lane = 2;            // elementwise ops per lane per cycle
  int latency = 2;                  // pipeline latency, cycles
  double transcendental_rate = 1.0; // transcendental ops per lane per cycle
  int vregs = 32;                   // vector registers of sublanes x lanes x 32 bit
  int vmem_loads_per_cycle = 3;     // vreg loads from VMEM per cycle
  int vmem_stores_per_cycle = 1;    // vreg stores to VMEM per cycle
  // Whether the ALUs operate on packed sub-32-bit values (a bf16 vreg holds
  // 2 values per 32-bit slot, all processed by one op). false = narrow values
  // are processed one per slot at the f32 rate (v4/v5e have no bf16 VPU
  // arithmetic per public JAX/Pallas material; an assumption, not a spec).
  bool packed_narrow_alu = false;
};

struct XluConfig {
  int count = 2;            // cross-lane units per TensorCore
  int latency = 8;          // cycles for one vreg through the unit
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
  int engines = 4;              // per chip
  int issue_per_cycle = 1;      // HBM requests one engine issues per (TensorCore) cycle
  int max_outstanding = 256;    // outstanding HBM requests per engine
  std::uint64_t request_bytes = 512;  // size of one HBM request (atom)
  int setup_cycles = 0;          // fixed cost per descriptor
};

// DRAM timing in seconds; the HBM model converts to memory-clock cycles.
struct HbmTimings {
  double tCK = 0;       // memory clock period (command clock)
  double tCL = 0;       // read latency (CAS)
  double tCWL = 0;      // write latency
  double tRCD = 0;
  double tRP = 0;
  double tRAS = 0;
  double tRC = 0;
  double tCCD_S = 0;
  double tCCD_L = 0;
  double tRRD_S = 0;
  double tRRD_L = 0;
  double tFAW = 0;
  double tWR = 0;
  double tWTR_S = 0;
  double tWTR_L = 0;
  double tRTP = 0;
  double tRTW = 0;      // read-to-write bus turnaround
  double tRFC = 0;
  double tREFI = 0;
};

struct HbmConfig {
  std::string preset;  // e.g. "HBM2e"
  std::string model = "detailed";  // "detailed" | "calibrated"
  int stacks = 1;
  int channels = 8;          // per stack
  int pseudo_channels = 2;   // per channel
  int bank_groups = 4;       // per pseudo-channel
  int banks_per_group = 4;
  std::uint64_t row_bytes = 1024;  // row (page) size per pseudo-channel
  double data_rate = 0;      // transfers per second per pin
  int bus_width_bits = 64;   // per pseudo-channel
  int burst_length = 4;
  std::uint64_t capacity_bytes = 0;
  std::string address_mapping = "RoBaBgChPcCo";  // most to least significant
  // Address hashing as memory controllers do it (permutation-based
  // interleaving): the pseudo-channel is rotated by a hash of the address
  // bits above one full sweep of all pseudo-channels, and the bank by the
  // row, so strided streams spread over every channel and bank while a
  // sequential stream still visits each pseudo-channel once per sweep.
  bool address_hash = true;
  int queue_depth = 64;      // scheduler queue per pseudo-channel
  std::string page_policy = "open";
  // Fixed front-end + PHY latency added to every access (YAML key
  // controller_latency, seconds); DRAM timing alone gives ~30 ns. 60 ns is
  // an assumption that puts unloaded HBM reads near 100 ns.
  double controller_latency = 60e-9;
  // Refreshes a controller may postpone while requests wait (paid when the
  // pseudo-channel idles). JEDEC DDR4 (JESD79-4, "refresh postponing") and
  // HBM2 (JESD235) allow up to 8; 1 keeps a long stream's refresh cost
  // unchanged while a copy's tail absorbs the refresh it met.
  int refresh_postpone = 1;
  HbmTimings t;
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
  std::string topology = "torus2d";  // "torus2d" | "torus3d"
  // Wraparound rule per axis: "length16" (v5e/v6e: only axes of length 16),
  // "multiple_of_4" (v4/v5p), "always", "never".
  std::string wraparound = "always";
  bool twisted_torus = false;
  int max_chips = 1;
  int chips_per_host = 4;
};

// What the compiler's kernels cost beyond the hardware's own timing (the
// software half of a run: XLA's and Pallas's pipelined kernels).
struct KernelConfig {
  // Seconds the scalar core spends per pipeline (grid) step on bookkeeping:
  // semaphore waits, DMA descriptor issue, address arithmetic; serial with
  // the step's compute. 0 = free.
  double step_overhead = 0;
  // Bytes of VMEM per TensorCore one kernel's blocks may use (the
  // compiler's scoped VMEM limit); 0 = all of VMEM.
  std::uint64_t scoped_vmem = 0;
};

struct PowerConfig {
  bool present = false;
  double tdp_w = 0;
  double idle_w = 0;
};

// Figures a config states from public sources; loading checks that the
// derived figures agree within 3%.
struct PublishedFigures {
  std::map<DType, double> peak_flops;   // FLOP/s (or OP/s) per dtype
  std::optional<double> hbm_bandwidth;  // bytes/s
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
  MemoryConfig vmem;  // per TensorCore
  MemoryConfig smem;  // per TensorCore
  MemoryConfig cmem{false};  // per chip, optional
  DmaConfig dma;
  HbmConfig hbm;
  IciConfig ici;
  double dcn_bandwidth = 0;   // bytes/s per chip
  double pcie_bandwidth = 0;  // bytes/s per chip
  int sparsecores = 0;
  KernelConfig kernel;
  PowerConfig power;
  PublishedFigures published;
};

}  // namespace tpusim::arch
