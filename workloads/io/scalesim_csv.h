// Reader for SCALE-Sim topology CSV files, in both of its forms:
//  - convolution: "Layer name, IFMAP Height, IFMAP Width, Filter Height,
//    Filter Width, Channels, Num Filter, Strides," (optionally a 9th column
//    with a separate stride for the width);
//  - GEMM: "Layer, M, N, K,".
// The form is detected from the header. Each row becomes one independent op
// (SCALE-Sim simulates layers one by one; nothing links a layer's output to
// the next layer's input), with its own input, weight and output tensors:
//  - conv row  -> conv2d, input [1, H, W, C], filter [FH, FW, C, NF],
//                 valid padding (SCALE-Sim's ofmap = (H - FH) / S + 1; its
//                 topologies carry padding in the IFMAP size), output
//                 [1, (H-FH)/Sh+1, (W-FW)/Sw+1, NF];
//  - GEMM row  -> matmul "mk,kn->mn", A [M, K] input, B [K, N] weight,
//                 output [M, N] (SCALE-Sim maps M,N,K to a conv with an M x K
//                 IFMAP and N filters of K, so MACs = M*N*K either way).
// Tensor names: "<layer>.ifmap"/"<layer>.filter" or "<layer>.a"/"<layer>.b";
// the op and its output are named after the layer.
// Leaves out: SCALE-Sim's config file (array size, dataflow, SRAM sizes) and
// v3 sparsity columns, which are rejected as unknown columns.
#pragma once

#include <string>

#include "workloads/ir/workload.h"

namespace tpusim::workloads {

struct ScaleSimOptions {
  DType dtype = DType::bf16;  // SCALE-Sim has no dtype; all tensors get this one
  std::string name;           // workload name; empty = the file's stem
};

enum class ScaleSimForm { conv, gemm };

// Throws WorkloadError naming file:line and the column for malformed rows
// (all rows are checked before throwing).
Workload read_scalesim_csv(const std::string& path, const ScaleSimOptions& opts = {});
Workload read_scalesim_csv_string(const std::string& text, const std::string& filename,
                                  const ScaleSimOptions& opts = {});
// Whether `run --workload` and sweeps read `path` as a SCALE-Sim topology
// (a name ending in .csv) rather than a workload file (YAML or JSON).
bool is_scalesim_path(const std::string& path);
// The form a header line describes; throws WorkloadError for neither.
ScaleSimForm detect_scalesim_form(const std::string& header_line, const std::string& filename = "");

}  // namespace tpusim::workloads
