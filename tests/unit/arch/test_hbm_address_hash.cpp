// The controller's address hash (hbm.address_hash): it must keep every
// sweep of interleave units a permutation of the pseudo-channels (so a
// sequential stream is still spread evenly), and it must spread strided
// streams - the row blocks of a larger matrix that lowered matmuls read -
// which the plain field mapping sends to a few pseudo-channels.
#include <gtest/gtest.h>

#include <set>

#include "arch/hbm/address_mapping.h"
#include "arch/hbm/detailed_dram.h"
#include "hbm_test_util.h"

using namespace tpusim;

namespace {

arch::HbmConfig hbm2e(bool hash) {
  arch::HbmConfig c = test::load_hbm_preset("hbm2e", 2);
  c.address_hash = hash;
  return c;
}

double strided_efficiency(bool hash, std::uint64_t row_bytes, std::uint64_t stride) {
  arch::DetailedDram d(hbm2e(hash));
  arch::HbmTransfer t;
  t.row_bytes = row_bytes;
  t.stride = stride;
  t.rows = (8ull << 20) / row_bytes;  // 8 MiB in all
  const double s = arch::ps_to_seconds(d.transfer(t, 0));
  return static_cast<double>(t.bytes()) / s / d.peak_bandwidth();
}

}  // namespace

TEST(HbmAddressHash, EverySweepIsAPermutationOfPseudoChannels) {
  arch::AddressMapping m(hbm2e(true));
  const std::uint64_t unit = m.interleave_bytes(), pcs = m.pseudo_channels_total();
  for (std::uint64_t sweep = 0; sweep < 64; ++sweep) {
    std::set<std::uint32_t> seen;
    for (std::uint64_t i = 0; i < pcs; ++i) seen.insert(m.decode((sweep * pcs + i) * unit).pc);
    EXPECT_EQ(seen.size(), pcs) << "sweep " << sweep;
  }
}

TEST(HbmAddressHash, BanksWithinARowArePermuted) {
  arch::AddressMapping plain(hbm2e(false)), hashed(hbm2e(true));
  // Same pseudo-channel, every bank, a given row: the hashed banks are a
  // rotation of the plain ones by the row.
  const std::uint64_t sweep_bytes = plain.interleave_bytes() * plain.pseudo_channels_total();
  std::set<std::uint32_t> banks;
  for (std::uint32_t b = 0; b < plain.banks_per_pc(); ++b) {
    const std::uint64_t a = (5 * plain.banks_per_pc() + b) * sweep_bytes;  // row 5, bank b
    EXPECT_EQ(plain.decode(a).row, 5u);
    banks.insert(hashed.decode(a).bank);
  }
  EXPECT_EQ(banks.size(), plain.banks_per_pc());
}

TEST(HbmAddressHash, StridedBlockRowsSpreadOverChannels) {
  // 2 KiB rows 16 KiB apart (a [rows, 1024] bf16 block of a [rows, 8192]
  // matrix). Plain mapping: a 32 KiB sweep holds two rows, each covering 2
  // of 32 pseudo-channels at the same offsets, so only 4 pseudo-channels
  // ever work: at most 4/32 = 12.5% of peak. Hashed: rows land on rotated
  // pseudo-channels, all of them share the work.
  const double plain = strided_efficiency(false, 2048, 16384);
  const double hashed = strided_efficiency(true, 2048, 16384);
  RecordProperty("plain", std::to_string(plain));
  RecordProperty("hashed", std::to_string(hashed));
  EXPECT_LE(plain, 0.125);
  EXPECT_GE(hashed, 0.70);
}

TEST(HbmAddressHash, SequentialStreamKeepsItsEfficiency) {
  const double plain = strided_efficiency(false, 8ull << 20, 8ull << 20);
  const double hashed = strided_efficiency(true, 8ull << 20, 8ull << 20);
  EXPECT_GE(hashed, 0.88);
  EXPECT_NEAR(hashed, plain, 0.03);
}
