// Program::dep_pool's run-length encoding of each instruction's waits
// (arch/chip/isa.h): whatever ids an instruction is given, deps() gives
// back exactly those, in that order; runs of consecutive ids take two
// pool entries.
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <vector>

#include "arch/chip/isa.h"

using namespace tpusim;

namespace {

std::vector<arch::InstrId> decoded(const arch::Program& p, arch::InstrId id) {
  std::vector<arch::InstrId> out;
  for (arch::InstrId d : p.deps(id)) out.push_back(d);
  return out;
}

}  // namespace

TEST(ProgramDeps, EveryListComesBackAsGiven) {
  std::mt19937 rng(12345);
  arch::Program p;
  std::vector<std::vector<arch::InstrId>> given;
  for (int i = 0; i < 2000; ++i) {
    // Runs of 1 to 9 consecutive ids, jumps forward, backward and onto the
    // same id, so that runs of exactly 2 and 3, duplicates and descending
    // pairs all occur.
    std::vector<arch::InstrId> deps;
    const int pieces = static_cast<int>(rng() % 6);
    for (int k = 0; k < pieces; ++k) {
      const arch::InstrId start = rng() % 64;
      const int len = 1 + static_cast<int>(rng() % 9);
      for (int j = 0; j < len; ++j) deps.push_back(start + static_cast<arch::InstrId>(j));
      if (rng() % 4 == 0) deps.push_back(deps.back());
    }
    given.push_back(deps);
    p.add(arch::Instr{}, deps);
  }
  for (std::size_t i = 0; i < given.size(); ++i) EXPECT_EQ(decoded(p, static_cast<arch::InstrId>(i)), given[i]) << i;
}

TEST(ProgramDeps, RunsOfThreeOrMoreTakeTwoEntries) {
  arch::Program p;
  std::vector<arch::InstrId> run16;
  for (arch::InstrId k = 100; k < 116; ++k) run16.push_back(k);
  p.add(arch::Instr{}, run16);
  EXPECT_EQ(p.instrs[0].dep_count, 2U);
  p.add(arch::Instr{}, {7, 8});  // a pair stays as it is
  EXPECT_EQ(p.instrs[1].dep_count, 2U);
  p.add(arch::Instr{}, {7, 8, 9, 20, 30, 31, 32, 33});
  EXPECT_EQ(p.instrs[2].dep_count, 5U);
  EXPECT_EQ(decoded(p, 2), (std::vector<arch::InstrId>{7, 8, 9, 20, 30, 31, 32, 33}));
  p.add(arch::Instr{});
  EXPECT_TRUE(p.deps(3).empty());
  EXPECT_EQ(decoded(p, 0), run16);
}

TEST(ProgramDeps, IdsBeyondTheEncodingAreRefused) {
  arch::Program p;
  EXPECT_THROW(p.add(arch::Instr{}, {1, arch::kDepRunBit}), std::invalid_argument);
  EXPECT_THROW(p.add(arch::Instr{}, {arch::kDepRunBit + 5}), std::invalid_argument);
  // The largest id the encoding holds, alone and ending a run.
  p.add(arch::Instr{}, {arch::kDepRunBit - 3, arch::kDepRunBit - 2, arch::kDepRunBit - 1});
  EXPECT_EQ(decoded(p, static_cast<arch::InstrId>(p.instrs.size() - 1)),
            (std::vector<arch::InstrId>{arch::kDepRunBit - 3, arch::kDepRunBit - 2, arch::kDepRunBit - 1}));
}
