// See address_mapping.h.
#include "arch/hbm/address_mapping.h"

#include <algorithm>

#include "arch/common/errors.h"

namespace tpusim::arch {

AddressMapping::AddressMapping(const HbmConfig& c) {
  if (c.stacks <= 0 || c.channels <= 0 || c.pseudo_channels <= 0 || c.bank_groups <= 0 || c.banks_per_group <= 0)
    throw ConfigError("hbm: stacks, channels, pseudo_channels, bank_groups and banks_per_group must be positive");
  hash_ = c.address_hash;
  burst_bytes_ = static_cast<std::uint64_t>(c.bus_width_bits / 8) * c.burst_length;
  if (burst_bytes_ == 0 || c.row_bytes == 0 || c.row_bytes % burst_bytes_ != 0)
    throw ConfigError("hbm.row_size must be a positive multiple of one burst (" + std::to_string(burst_bytes_) +
                      " bytes)");
  pcs_per_ch_ = static_cast<std::uint32_t>(c.pseudo_channels);
  pcs_total_ = static_cast<std::uint32_t>(c.stacks * c.channels * c.pseudo_channels);
  banks_per_group_ = static_cast<std::uint32_t>(c.banks_per_group);
  banks_ = static_cast<std::uint32_t>(c.bank_groups * c.banks_per_group);
  const std::uint64_t cols = c.row_bytes / burst_bytes_;

  const std::string& s = c.address_mapping;
  std::vector<F> high_to_low;
  for (std::size_t i = 0; i < s.size(); i += 2) {
    std::string tok = s.substr(i, 2);
    F f;
    if (tok == "Ro")
      f = F::Ro;
    else if (tok == "Ba")
      f = F::Ba;
    else if (tok == "Bg")
      f = F::Bg;
    else if (tok == "Ch")
      f = F::Ch;
    else if (tok == "Pc")
      f = F::Pc;
    else if (tok == "Co")
      f = F::Co;
    else
      throw ConfigError("hbm.address_mapping '" + s + "': unknown field '" + tok +
                        "' (expected two-letter fields Ro, Ba, Bg, Ch, Pc, Co)");
    if (std::find(high_to_low.begin(), high_to_low.end(), f) != high_to_low.end())
      throw ConfigError("hbm.address_mapping '" + s + "': field '" + tok + "' appears twice");
    high_to_low.push_back(f);
  }
  if (high_to_low.size() != 6)
    throw ConfigError("hbm.address_mapping '" + s + "' must name each of Ro, Ba, Bg, Ch, Pc, Co once");
  std::uint64_t rows = 0;  // unbounded unless Ro is not the top field
  if (high_to_low.front() != F::Ro) {
    const std::uint64_t per_row = c.row_bytes * banks_ * pcs_total_;
    if (c.capacity_bytes == 0 || c.capacity_bytes % per_row != 0)
      throw ConfigError("hbm.address_mapping '" + s +
                        "' puts Ro below another field, which needs hbm.capacity as a multiple of " +
                        std::to_string(per_row) + " bytes");
    rows = c.capacity_bytes / per_row;
  }
  for (auto it = high_to_low.rbegin(); it != high_to_low.rend(); ++it) {
    std::uint64_t r = 0;
    switch (*it) {
      case F::Ro: r = rows; break;
      case F::Ba: r = static_cast<std::uint64_t>(c.banks_per_group); break;
      case F::Bg: r = static_cast<std::uint64_t>(c.bank_groups); break;
      case F::Ch: r = static_cast<std::uint64_t>(c.stacks) * c.channels; break;
      case F::Pc: r = pcs_per_ch_; break;
      case F::Co: r = cols; break;
    }
    low_to_high_.push_back({*it, r, Divisor(r == 0 ? 1 : r)});
  }
  interleave_ = low_to_high_.front().f == F::Co ? burst_bytes_ * cols : burst_bytes_;
  burst_div_ = Divisor(burst_bytes_);
  sweep_div_ = Divisor(interleave_ * pcs_total_);
  pcs_div_ = Divisor(pcs_total_);
  banks_div_ = Divisor(banks_);
}

DramCoord AddressMapping::decode(std::uint64_t addr) const {
  std::uint64_t v = burst_div_.div(addr);
  std::uint64_t ch = 0, pc = 0, ba = 0, bg = 0;
  DramCoord d;
  for (const Field& f : low_to_high_) {
    std::uint64_t x;
    if (f.radix == 0) {
      x = v;
      v = 0;
    } else {
      x = f.by.mod(v);
      v = f.by.div(v);
    }
    switch (f.f) {
      case F::Ro: d.row = x; break;
      case F::Ba: ba = x; break;
      case F::Bg: bg = x; break;
      case F::Ch: ch = x; break;
      case F::Pc: pc = x; break;
      case F::Co: d.col = static_cast<std::uint32_t>(x); break;
    }
  }
  d.pc = static_cast<std::uint32_t>(ch * pcs_per_ch_ + pc);
  d.bank = static_cast<std::uint32_t>(bg * banks_per_group_ + ba);
  if (hash_) {
    const std::uint64_t sweep = sweep_div_.div(addr);
    const std::uint64_t h = (sweep * 0x9E3779B97F4A7C15ull) >> 32;
    d.pc = static_cast<std::uint32_t>(pcs_div_.mod(d.pc + pcs_div_.mod(h)));
    d.bank = static_cast<std::uint32_t>(banks_div_.mod(d.bank + banks_div_.mod(d.row)));
  }
  return d;
}

}  // namespace tpusim::arch
