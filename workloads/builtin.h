// Built-in micro-workloads: a single GEMM, convolution, attention or
// elementwise op with its input/weight tensors, for calibration, sweeps and
// quick CLI runs; also parsed from CLI-style strings.
// Leaves out: multi-op graphs (see models/ for networks).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "workloads/ir/workload.h"

namespace tpusim::workloads::builtin {

// C[M, N] = A[M, K] x B[K, N]; A is an input, B a weight. blocks: the
// kernel's block sizes (MatmulBlocks; 0 = searched).
Workload gemm(std::int64_t m, std::int64_t k, std::int64_t n, DType dtype = DType::bf16, MatmulBlocks blocks = {});

// NHWC input [n, h, w, c], HWIO filter [kh, kw, c, oc], stride in both dims,
// symmetric explicit padding `pad` on every side.
Workload conv(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c, std::int64_t kh, std::int64_t kw,
              std::int64_t oc, std::int64_t stride, std::int64_t pad, DType dtype = DType::bf16);

// q [batch, q_len, heads, head_dim]; k, v kv_cache [batch, kv_len, kv_heads, head_dim];
// window: local attention (AttentionAttrs::window; causal only, 0 = none);
// blocks: the kernel's block sizes (AttentionBlocks; 0 = searched);
// latent: one kv_cache tensor is the key and the value (MLA's latent
// cache, read once); value_dim: the value columns PV uses
// (AttentionAttrs::value_dim; 0 = all).
Workload attention(std::int64_t batch, std::int64_t q_len, std::int64_t kv_len, std::int64_t heads,
                   std::int64_t kv_heads, std::int64_t head_dim, bool causal, DType dtype = DType::bf16,
                   std::int64_t window = 0, AttentionBlocks blocks = {}, std::int64_t max_step_seqs = 0,
                   bool latent = false, std::int64_t value_dim = 0);

// One elementwise op over inputs of `shape` (select/where take an int8
// condition of the same shape). cast needs `to`.
Workload elementwise(EwKind kind, const Shape& shape, DType dtype = DType::bf16,
                     std::optional<DType> to = std::nullopt);

// CLI-style strings. Each accepts positional fields or key=value fields
// (not mixed); key=value forms may add dtype=<name> to override `dtype`.
//   gemm:        "M,K,N"                         or "m=..,k=..,n=.."
//                (bm=, bk=, bn= (key=value only) fix the kernel's blocks,
//                MatmulBlocks; each a multiple of 8, 128, 128 or the whole
//                dimension)
//   conv:        "N,H,W,C,KH,KW,OC,stride,pad"    or "n=..,h=..,w=..,c=..,kh=..,kw=..,oc=..,stride=..,pad=.."
//                (stride defaults to 1, pad to 0 in the key=value form)
//   attention:   "B,Q,KV,H,KVH,D[,causal]"        or "b=1,q=2048,kv=2048,h=32,kvh=8,d=128,causal=1"
//                (key=value defaults: b=1, kv=q, kvh=h, causal=0; window=W, key=value
//                only, makes it local attention over W keys and needs causal=1;
//                bq=, bkv= (key=value only) fix the kernel's block_q and block_kv;
//                seqs=N (key=value only) lets a grid step hold up to N sequences;
//                latent=1 (key=value only) makes one tensor the key and the value,
//                dv=N (key=value only) narrows PV to its first N columns)
//   elementwise: "KIND,D0,D1,..."  e.g. "silu,8,4096"; cast as "cast:f32,8,4096"
// Malformed strings throw WorkloadError naming the field and what was found.
Workload parse_gemm(const std::string& spec, DType dtype = DType::bf16);
Workload parse_conv(const std::string& spec, DType dtype = DType::bf16);
Workload parse_attention(const std::string& spec, DType dtype = DType::bf16);
Workload parse_elementwise(const std::string& spec, DType dtype = DType::bf16);
// kind: "gemm", "conv", "attention" or "elementwise".
Workload parse(const std::string& kind, const std::string& spec, DType dtype = DType::bf16);

}  // namespace tpusim::workloads::builtin
