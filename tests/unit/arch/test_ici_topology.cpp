// ICI slice topology: shape parsing, wraparound per generation rule,
// neighbour sets per port, twisted-torus offsets, hosts, dimension-order
// routes, and the errors for shapes a generation does not allow.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "arch/common/errors.h"
#include "arch/ici/topology.h"
#include "test_ici_util.h"

using namespace tpusim::arch;
using namespace tpusim::arch::ici;

namespace {

std::string error_of(const IciConfig& c, const std::string& shape, bool twisted = false) {
  try {
    Slice s(c, shape, twisted);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// Shortest distance on one axis of length n (ring if it wraps).
int axis_distance(int a, int b, int n, bool wrap) {
  const int d = std::abs(a - b);
  return wrap ? std::min(d, n - d) : d;
}

}  // namespace

TEST(IciTopology, ParsesShapes) {
  EXPECT_EQ(parse_shape("4x4"), (std::vector<int>{4, 4}));
  EXPECT_EQ(parse_shape("8x16x16"), (std::vector<int>{8, 16, 16}));
  for (const char* bad : {"", "4x", "x4", "4xx4", "4*4", "0x4", "ax4", "4x-4"})
    EXPECT_THROW(parse_shape(bad), ConfigError) << bad;
}

TEST(IciTopology, WraparoundRules) {
  // scaling book: v5e/v6e wrap only axes of length 16.
  EXPECT_TRUE(axis_wraps("length16", 16));
  EXPECT_FALSE(axis_wraps("length16", 8));
  // v4 docs: torus on axes whose length is a multiple of 4.
  EXPECT_TRUE(axis_wraps("multiple_of_4", 4));
  EXPECT_TRUE(axis_wraps("multiple_of_4", 12));
  EXPECT_FALSE(axis_wraps("multiple_of_4", 2));
  EXPECT_TRUE(axis_wraps("always", 3));
  EXPECT_FALSE(axis_wraps("always", 1));
  EXPECT_FALSE(axis_wraps("never", 16));
  EXPECT_THROW(axis_wraps("sometimes", 4), ConfigError);

  const Slice full(test::ici_v5e(), "16x16");
  EXPECT_TRUE(full.wraps(0));
  EXPECT_TRUE(full.wraps(1));
  const Slice half(test::ici_v5e(), "8x16");
  EXPECT_FALSE(half.wraps(0));
  EXPECT_TRUE(half.wraps(1));
  const Slice v4(test::ici_v4(), "2x4x8");
  EXPECT_FALSE(v4.wraps(0));
  EXPECT_TRUE(v4.wraps(1));
  EXPECT_TRUE(v4.wraps(2));
}

TEST(IciTopology, TwoDimensionalTorusHasFourDistinctNeighbours) {
  const Slice s(test::ici_v5e(), "16x16");
  EXPECT_EQ(s.num_chips(), 256);
  EXPECT_EQ(s.num_links(), 256 * 4);
  const int c = s.chip_at({0, 5});
  std::vector<int> n = s.neighbours(c);
  std::vector<int> want = {s.chip_at({1, 5}), s.chip_at({15, 5}), s.chip_at({0, 6}), s.chip_at({0, 4})};
  EXPECT_EQ(n, want);
  // Every chip of a full torus has exactly `ports` neighbours, all distinct.
  for (int x = 0; x < s.num_chips(); ++x) {
    const std::vector<int> nx = s.neighbours(x);
    EXPECT_EQ(nx.size(), 4u);
    EXPECT_EQ(std::set<int>(nx.begin(), nx.end()).size(), 4u);
  }
}

TEST(IciTopology, MeshEdgesHaveFewerNeighbours) {
  const Slice s(test::ici_v5e(), "4x4");  // no axis of length 16: no wraparound
  EXPECT_EQ(s.neighbours(s.chip_at({0, 0})).size(), 2u);
  EXPECT_EQ(s.neighbours(s.chip_at({1, 0})).size(), 3u);
  EXPECT_EQ(s.neighbours(s.chip_at({1, 2})).size(), 4u);
  EXPECT_EQ(s.out_link(s.chip_at({3, 1}), 0, +1), -1);
  // Links: 2 axes x 4 lines x 3 segments x 2 directions.
  EXPECT_EQ(s.num_links(), 48);
}

TEST(IciTopology, ThreeDimensionalTorusHasSixNeighbours) {
  const Slice s(test::ici_v5p(), "4x4x8");
  const int c = s.chip_at({3, 0, 7});
  const std::vector<int> want = {s.chip_at({0, 0, 7}), s.chip_at({2, 0, 7}), s.chip_at({3, 1, 7}),
                                 s.chip_at({3, 3, 7}), s.chip_at({3, 0, 0}), s.chip_at({3, 0, 6})};
  EXPECT_EQ(s.neighbours(c), want);
  EXPECT_TRUE(s.link(s.out_link(c, 0, +1)).wrap);
  EXPECT_FALSE(s.link(s.out_link(c, 0, -1)).wrap);
}

TEST(IciTopology, LinksPairUp) {
  // Every directed link has a reverse link: each ICI port is a cable.
  const Slice s(test::ici_v5p(), "4x4x8", true);
  for (int l = 0; l < s.num_links(); ++l) {
    const Link& k = s.link(l);
    const int back = s.out_link(k.dst, k.axis, -k.dir);
    ASSERT_GE(back, 0) << s.link_name(l);
    EXPECT_EQ(s.link(back).dst, k.src) << s.link_name(l);
  }
}

TEST(IciTopology, TwistedTorusShiftsWrapLinks) {
  // 2A=2B=C: x and y wrap links shift by C/2 = 4 along z (topology.h).
  const Slice s(test::ici_v4(), "4x4x8", true);
  EXPECT_EQ(s.link(s.out_link(s.chip_at({3, 1, 2}), 0, +1)).dst, s.chip_at({0, 1, 6}));
  EXPECT_EQ(s.link(s.out_link(s.chip_at({0, 1, 6}), 0, -1)).dst, s.chip_at({3, 1, 2}));
  EXPECT_EQ(s.link(s.out_link(s.chip_at({1, 3, 5}), 1, +1)).dst, s.chip_at({1, 0, 1}));
  EXPECT_EQ(s.link(s.out_link(s.chip_at({1, 1, 7}), 2, +1)).dst, s.chip_at({1, 1, 0}));  // z: untwisted
  // 2A=B=C: x wrap shifts y and z by 4.
  const Slice t(test::ici_v4(), "4x8x8", true);
  EXPECT_EQ(t.link(t.out_link(t.chip_at({3, 1, 2}), 0, +1)).dst, t.chip_at({0, 5, 6}));
  // The same shape untwisted keeps plain wraps.
  const Slice u(test::ici_v4(), "4x4x8");
  EXPECT_EQ(u.link(u.out_link(u.chip_at({3, 1, 2}), 0, +1)).dst, u.chip_at({0, 1, 2}));
}

TEST(IciTopology, DimensionOrderRoutesAreShortest) {
  for (const auto& [cfg, shape] :
       {std::pair{test::ici_v5e(), "16x16"}, std::pair{test::ici_v5e(), "8x16"}, std::pair{test::ici_v4(), "2x4x8"}}) {
    const Slice s(cfg, shape);
    for (int a = 0; a < s.num_chips(); a += 7)
      for (int b = 0; b < s.num_chips(); b += 3) {
        const std::vector<int> r = s.route(a, b);
        int want = 0;
        const auto xa = s.coords(a), xb = s.coords(b);
        for (int d = 0; d < s.rank(); ++d)
          want += axis_distance(xa[static_cast<std::size_t>(d)], xb[static_cast<std::size_t>(d)], s.dim(d), s.wraps(d));
        ASSERT_EQ(static_cast<int>(r.size()), want) << shape << " " << s.chip_name(a) << "->" << s.chip_name(b);
        int at = a, last_axis = 0;
        for (int l : r) {
          EXPECT_EQ(s.link(l).src, at);
          EXPECT_GE(s.link(l).axis, last_axis);  // dimension order
          last_axis = s.link(l).axis;
          at = s.link(l).dst;
        }
        EXPECT_EQ(at, b);
      }
  }
}

TEST(IciTopology, TwistedRoutesReachTheirDestination) {
  const Slice s(test::ici_v4(), "4x4x8", true);
  std::size_t longest = 0;
  for (int a = 0; a < s.num_chips(); ++a)
    for (int b = 0; b < s.num_chips(); ++b) {
      const std::vector<int> r = s.route(a, b);
      int at = a;
      for (int l : r) {
        ASSERT_EQ(s.link(l).src, at);
        at = s.link(l).dst;
      }
      ASSERT_EQ(at, b);
      longest = std::max(longest, r.size());
    }
  // Greedy dimension order on the twisted torus is not minimal, but stays
  // within 2 + 2 + 4 (the plain torus diameter) plus one detour of 4 in z.
  EXPECT_LE(longest, 12u);
}

TEST(IciTopology, Hosts) {
  // v5e docs: 8 chips (4x2) per host; v4: 4 chips (2x2x1) per host.
  const Slice s(test::ici_v5e(), "16x16");
  EXPECT_EQ(s.host_block(), (std::vector<int>{4, 2}));
  EXPECT_EQ(s.num_hosts(), 32);
  EXPECT_EQ(s.host_of(s.chip_at({3, 1})), s.host_of(s.chip_at({0, 0})));
  EXPECT_NE(s.host_of(s.chip_at({4, 0})), s.host_of(s.chip_at({0, 0})));
  EXPECT_NE(s.host_of(s.chip_at({0, 2})), s.host_of(s.chip_at({0, 0})));
  const Slice v4(test::ici_v4(), "4x4x4");
  EXPECT_EQ(v4.host_block(), (std::vector<int>{2, 2, 1}));
  EXPECT_EQ(v4.num_hosts(), 16);
  const Slice small(test::ici_v5e(), "2x2");  // a slice smaller than one host
  EXPECT_EQ(small.num_hosts(), 1);
}

TEST(IciTopology, InvalidShapesNameShapeAndRule) {
  const IciConfig e = test::ici_v5e();
  std::string m = error_of(e, "4x4x4");
  EXPECT_NE(m.find("'4x4x4'"), std::string::npos) << m;
  EXPECT_NE(m.find("torus2d needs 2 axes"), std::string::npos) << m;
  m = error_of(e, "32x16");
  EXPECT_NE(m.find("'32x16'"), std::string::npos) << m;
  EXPECT_NE(m.find("max_chips 256"), std::string::npos) << m;
  m = error_of(e, "12x4");
  EXPECT_NE(m.find("length16"), std::string::npos) << m;
  m = error_of(e, "4x4", true);
  EXPECT_NE(m.find("twisted"), std::string::npos) << m;
  const IciConfig p = test::ici_v5p();
  m = error_of(p, "4x6x8");
  EXPECT_NE(m.find("multiple_of_4"), std::string::npos) << m;
  m = error_of(p, "16x16");
  EXPECT_NE(m.find("torus3d needs 3 axes"), std::string::npos) << m;
  m = error_of(p, "4x4x4", true);  // not 2A=B=C or 2A=2B=C
  EXPECT_NE(m.find("2A=B=C"), std::string::npos) << m;
  m = error_of(p, "2x4x4", true);  // right proportions but x does not wrap
  EXPECT_NE(m.find("2A=B=C"), std::string::npos) << m;
  EXPECT_EQ(error_of(p, "16x16x24"), "");  // v5p's largest slice
  m = error_of(test::ici_v4(), "16x16x24");
  EXPECT_NE(m.find("max_chips 4096"), std::string::npos) << m;
  IciConfig bad = e;
  bad.wraparound = "sometimes";
  EXPECT_NE(error_of(bad, "4x4").find("sometimes"), std::string::npos);
  bad = e;
  bad.ports = 2;
  EXPECT_NE(error_of(bad, "4x4").find("ports"), std::string::npos);
}
