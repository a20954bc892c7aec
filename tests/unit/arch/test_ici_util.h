// ICI configs of the shipped generations for tests that link no YAML
// loader: the values of configs/v5e.yaml, v5p.yaml and v4.yaml (ici:
// sections), sourced there from the Cloud TPU docs and the scaling book.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "arch/common/chip_config.h"
#include "arch/ici/collectives.h"

namespace tpusim::arch::test {

// A collective of `bytes` per chip over mesh `axes`.
inline ici::CollectiveRequest req(ici::CollectiveKind k, std::uint64_t bytes, std::vector<std::string> axes) {
  ici::CollectiveRequest r;
  r.kind = k;
  r.bytes = bytes;
  r.axes = std::move(axes);
  return r;
}

inline IciConfig ici_v5e() {
  IciConfig c;
  c.ports = 4;
  c.link_bandwidth = 45e9;  // 45 GB/s one-way per link
  c.hop_latency = 1e-6;     // ~1 us per hop
  c.topology = "torus2d";
  c.wraparound = "length16";
  c.twisted_torus = false;
  c.max_chips = 256;
  c.chips_per_host = 8;
  return c;
}

inline IciConfig ici_v5p() {
  IciConfig c;
  c.ports = 6;
  c.link_bandwidth = 90e9;
  c.hop_latency = 1e-6;
  c.topology = "torus3d";
  c.wraparound = "multiple_of_4";
  c.twisted_torus = true;
  c.max_chips = 8960;
  c.chips_per_host = 4;
  return c;
}

inline IciConfig ici_v4() {
  IciConfig c = ici_v5p();
  c.link_bandwidth = 45e9;
  c.max_chips = 4096;
  return c;
}

}  // namespace tpusim::arch::test
