// ChunkedVector (the program's instructions) against std::vector: the same
// elements at the same indices through growth over many chunk boundaries,
// iteration and at()'s bounds; and its reason to exist: an element never
// moves once stored, however much is appended after it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "arch/common/chunked_vector.h"

using tpusim::arch::ChunkedVector;

namespace {

TEST(ChunkedVector, MatchesStdVectorAcrossChunks) {
  ChunkedVector<std::uint64_t, 3> c;  // chunks of 8
  std::vector<std::uint64_t> v;
  std::mt19937_64 rng(7);
  EXPECT_TRUE(c.empty());
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t x = rng();
    c.push_back(x);
    v.push_back(x);
    ASSERT_EQ(c.size(), v.size());
    ASSERT_EQ(c.back(), v.back());
  }
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(c[i], v[i]) << i;
  EXPECT_TRUE(std::equal(c.begin(), c.end(), v.begin(), v.end()));
  EXPECT_EQ(c.end() - c.begin(), 1000);
  EXPECT_EQ(*(c.begin() + 517), v[517]);
  c[9] = 42;
  EXPECT_EQ(c.at(9), 42u);
  EXPECT_THROW(c.at(1000), std::out_of_range);
  const ChunkedVector<std::uint64_t, 3> copy = c;
  EXPECT_EQ(copy.size(), 1000u);
  EXPECT_EQ(copy[9], 42u);
  EXPECT_EQ(std::accumulate(copy.begin(), copy.end(), std::uint64_t{0}),
            std::accumulate(c.begin(), c.end(), std::uint64_t{0}));
}

TEST(ChunkedVector, ElementsNeverMove) {
  ChunkedVector<int, 4> c;  // chunks of 16
  std::vector<const int*> where;
  for (int i = 0; i < 5000; ++i) {
    c.push_back(i);
    where.push_back(&c[static_cast<std::size_t>(i)]);
  }
  for (std::size_t i = 0; i < where.size(); ++i) {
    ASSERT_EQ(where[i], &c[i]) << i;
    ASSERT_EQ(*where[i], static_cast<int>(i));
  }
}

TEST(ChunkedVector, AssignsFromAList) {
  ChunkedVector<int, 1> c;  // chunks of 2
  c = {1, 2, 3, 4, 5};
  EXPECT_EQ(std::vector<int>(c.begin(), c.end()), (std::vector<int>{1, 2, 3, 4, 5}));
  c = {7};
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0], 7);
  c.clear();
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(c.begin(), c.end());
}

}  // namespace
