// MinTree against the std::set<std::pair<double, slot>> it replaces in
// ChannelHbm: after every update the least entry (ties to the lower slot)
// must be the set's first, over random keys with many exact ties, slots
// emptied and refilled, and sizes that are and are not powers of two.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>
#include <vector>

#include "arch/common/min_tree.h"

using tpusim::arch::MinTree;

namespace {

void check_against_set(std::size_t n, unsigned seed) {
  MinTree tree(n);
  std::set<std::pair<double, std::size_t>> set;
  std::vector<double> key(n, MinTree::kNone);
  std::mt19937_64 rng(seed);
  // Few distinct keys (ties are common), negative, zero and -0.0 included.
  const double values[] = {-3.5, -0.0, 0.0, 1.0, 1.0 + 1e-12, 2.5, 1e18, 7.0};
  for (int step = 0; step < 20000; ++step) {
    const std::size_t i = rng() % n;
    if (key[i] != MinTree::kNone) set.erase({key[i], i});
    const bool empty_it = rng() % 5 == 0;
    key[i] = empty_it ? MinTree::kNone : values[rng() % 8];
    if (!empty_it) set.insert({key[i], i});
    tree.set(i, key[i]);
    ASSERT_EQ(tree.empty(), set.empty()) << "step " << step;
    if (set.empty()) continue;
    ASSERT_EQ(tree.top_key(), set.begin()->first) << "step " << step;
    ASSERT_EQ(tree.top(), set.begin()->second) << "step " << step;
    ASSERT_EQ(tree.key(i), key[i]);
  }
}

TEST(MinTree, SameOrderAsASetOfPairs) {
  for (std::size_t n : {1u, 2u, 3u, 7u, 8u, 256u, 300u}) check_against_set(n, 17 + n);
}

TEST(MinTree, EmptyUntilSetAndAfterCleared) {
  MinTree t(5);
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.top_key(), MinTree::kNone);
  t.set(3, 2.0);
  t.set(4, 2.0);  // a tie: the lower slot wins
  EXPECT_EQ(t.top(), 3u);
  t.clear(3);
  EXPECT_EQ(t.top(), 4u);
  t.clear(4);
  EXPECT_TRUE(t.empty());
}

}  // namespace
