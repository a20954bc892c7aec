// Physical address -> (pseudo-channel, bank, row, column) for HBM/DRAM.
// The mapping is a string of fields from most to least significant bits,
// e.g. "RoBaBgChPcCo": Ro row, Ba bank within its group, Bg bank group,
// Ch channel (all stacks' channels: stack-major, so the stack is the high
// part of Ch), Pc pseudo-channel, Co column counted in bursts. Below all
// fields sits the byte offset within one burst. Fields are mixed-radix, so
// counts need not be powers of two. The interleave unit (bytes that stay in
// one pseudo-channel, bank and row before the next field moves) is
// burst_bytes x columns-per-row when Co is the least significant field
// (1 KiB for the HBM presets), and one burst otherwise.
// With hbm.address_hash (the default) the decoded pseudo-channel is rotated
// by a multiplicative hash of the address above one sweep of all
// pseudo-channels (interleave x pseudo-channels bytes), and the bank by the
// row: each rotation is a bijection within its sweep or row, so sequential
// streams keep their spread, while strided streams (a block of a larger
// matrix) no longer land on a few channels. Off: the plain field mapping.
// Leaves out: rank bits (one rank), stack as its own field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/common/chip_config.h"

namespace tpusim::arch {

struct DramCoord {
  std::uint32_t pc = 0;    // global pseudo-channel index: (stack*channels + ch)*pcs + pc
  std::uint32_t bank = 0;  // bank_group * banks_per_group + bank
  std::uint64_t row = 0;
  std::uint32_t col = 0;  // burst index within the row
};

class AddressMapping {
 public:
  explicit AddressMapping(const HbmConfig& c);  // ConfigError on a bad string
  DramCoord decode(std::uint64_t addr) const;
  std::uint64_t interleave_bytes() const { return interleave_; }
  std::uint32_t pseudo_channels_total() const { return pcs_total_; }
  std::uint32_t banks_per_pc() const { return banks_; }
  std::uint32_t bank_group_of(std::uint32_t bank) const { return bank / banks_per_group_; }
  std::uint64_t burst_bytes() const { return burst_bytes_; }

 private:
  enum class F : std::uint8_t { Ro, Ba, Bg, Ch, Pc, Co };
  // Division by a divisor fixed at construction: a shift and a mask when it
  // is a power of two (every HBM preset), else the division. decode() does
  // a dozen of them per request; same results either way.
  struct Divisor {
    std::uint64_t d = 1;
    int shift = 0;  // log2(d), or -1 when d is not a power of two
    Divisor() = default;
    explicit Divisor(std::uint64_t v) : d(v), shift(-1) {
      if (v != 0 && (v & (v - 1)) == 0) shift = __builtin_ctzll(v);
    }
    std::uint64_t div(std::uint64_t x) const { return shift >= 0 ? x >> shift : x / d; }
    std::uint64_t mod(std::uint64_t x) const { return shift >= 0 ? x & (d - 1) : x % d; }
  };
  struct Field {
    F f;
    std::uint64_t radix;  // 0 = unbounded (only the most significant field)
    Divisor by;           // radix, when bounded
  };
  std::vector<Field> low_to_high_;
  std::uint64_t burst_bytes_ = 0, interleave_ = 0;
  std::uint32_t pcs_total_ = 0, banks_ = 0, banks_per_group_ = 0, pcs_per_ch_ = 0;
  bool hash_ = false;
  Divisor burst_div_, sweep_div_, pcs_div_, banks_div_;
};

}  // namespace tpusim::arch
