// A two-layer decoder model file for end-to-end serving tests: its steps
// simulate in milliseconds.
#pragma once

namespace tpusim::test {

constexpr const char* kTinyDecoder = R"(name: tiny-decoder
family: decoder
hidden: 256
layers: 2
vocab: 1024
max_context: 2048
norm: rmsnorm
position: rotary
tied_embeddings: false
attention: {heads: 4, kv_heads: 2, head_dim: 64}
ffn: {kind: swiglu, size: 512}
)";

}  // namespace tpusim::test
