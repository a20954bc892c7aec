// Footprint of an array in an on-chip memory under TPU (8,128) tiling.
// Models: the last two dimensions are padded to whole tiles of
// (8 x 32/bits, 128) elements, i.e. 4 KiB per tile whatever the dtype
// (f32 (8,128), bf16 (16,128), int8 (32,128), int4 (64,128); Pallas TPU
// docs and Mosaic's vreg layouts pack sub-32-bit values along sublanes).
// Leaves out: 1-D layouts and other Mosaic layouts (replicated, offset),
// padding of leading dimensions (there is none).
#pragma once

#include <cstdint>

#include "arch/common/dtype.h"

namespace tpusim::arch {

inline constexpr std::uint64_t kTileSublanes = 8;
inline constexpr std::uint64_t kTileLanes = 128;
inline constexpr std::uint64_t kTileBytes = kTileSublanes * kTileLanes * 4;  // 4 KiB

// Rows of one tile for dtype t: 8 for f32, 16 for bf16, 32 for int8/fp8, 64 for int4.
constexpr std::uint64_t tile_rows(DType t) { return kTileSublanes * (32 / static_cast<std::uint64_t>(dtype_bits(t))); }

// Tiles an array [batch..., rows, cols] occupies.
constexpr std::uint64_t tile_count(std::uint64_t rows, std::uint64_t cols, DType t, std::uint64_t batch = 1) {
  return batch * ((rows + tile_rows(t) - 1) / tile_rows(t)) * ((cols + kTileLanes - 1) / kTileLanes);
}

// Bytes an array [batch..., rows, cols] occupies with its last two dims tiled.
constexpr std::uint64_t tiled_bytes(std::uint64_t rows, std::uint64_t cols, DType t, std::uint64_t batch = 1) {
  return tile_count(rows, cols, t, batch) * kTileBytes;
}

}  // namespace tpusim::arch
