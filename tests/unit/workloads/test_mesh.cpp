// The one --mesh parser and the mesh representation (workloads/ir/mesh.h):
// any axis names by default, only the given ones when a list is passed,
// every problem reported with its column.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "workloads/ir/mesh.h"

using namespace tpusim::workloads;

TEST(Mesh, AnyNamesInOrderWithSpaces) {
  const MeshSpec m = parse_mesh(" x=16 , y = 4,data=2");
  ASSERT_EQ(m.axes.size(), 3u);
  EXPECT_EQ(m.axes[0], (MeshAxis{"x", 16}));
  EXPECT_EQ(m.axes[1], (MeshAxis{"y", 4}));
  EXPECT_EQ(m.axes[2], (MeshAxis{"data", 2}));
  EXPECT_EQ(m.chips(), 16 * 4 * 2);
  EXPECT_EQ(m.size("y"), 4);
  EXPECT_EQ(m.size("z"), 1);
  EXPECT_FALSE(m.find("z").has_value());
  EXPECT_EQ(m.str(), "x=16,y=4,data=2");
  EXPECT_EQ(parse_mesh(m.str()), m);
  EXPECT_TRUE(parse_mesh("  ").empty());
  EXPECT_EQ(parse_mesh("").chips(), 1);
}

TEST(Mesh, EveryProblemWithItsColumn) {
  try {
    parse_mesh("a=0,b,a=2,a=3,c=x,=4");
    FAIL();
  } catch (const MeshError& e) {
    const auto& d = e.diagnostics();
    ASSERT_EQ(d.size(), 5u) << e.what();
    // a=0 at column 1; b at 5; the second a=... at 11 (the first a=2 is fine); c=x at 15; =4 at 19.
    EXPECT_EQ(d[0].column, 1);
    EXPECT_EQ(d[0].key, "mesh.a");
    EXPECT_EQ(d[0].found, "'0'");
    EXPECT_EQ(d[1].column, 5);
    EXPECT_EQ(d[1].key, "mesh");
    EXPECT_EQ(d[2].column, 11);
    EXPECT_NE(d[2].found.find("given again"), std::string::npos);
    EXPECT_EQ(d[3].column, 15);
    EXPECT_EQ(d[3].found, "'x'");
    EXPECT_EQ(d[4].column, 19);
    EXPECT_EQ(d[0].render(),
              "--mesh 'a=0,b,a=2,a=3,c=x,=4':1:1: mesh.a: expected a size that is an integer >= 1, found '0'");
  }
}

TEST(Mesh, OnlyTheGivenNamesWhenListed) {
  const std::vector<std::string> names = {"data", "tensor"};
  EXPECT_EQ(parse_mesh("tensor=4", names).size("tensor"), 4);
  try {
    parse_mesh("tensr=4", names);
    FAIL();
  } catch (const MeshError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    EXPECT_EQ(e.diagnostics()[0].suggestion, "tensor");
    EXPECT_NE(std::string(e.what()).find("an axis name among data, tensor"), std::string::npos) << e.what();
  }
}

TEST(Mesh, PlacementsAreParsedAndWrittenBack) {
  const MeshSpec m = parse_mesh("fsdp=64@x/2*y/2, tensor=4 @ x%2*y/1%2,dcn=2@dcn");
  ASSERT_EQ(m.axes.size(), 3u);
  EXPECT_EQ(m.axes[0].size, 64);
  EXPECT_EQ(m.axes[0].placement, (std::vector<MeshPart>{{"x", 2, 0}, {"y", 2, 0}}));
  EXPECT_EQ(m.axes[1].placement, (std::vector<MeshPart>{{"x", 1, 2}, {"y", 1, 2}}));
  EXPECT_EQ(m.axes[2].placement, (std::vector<MeshPart>{{"dcn", 1, 0}}));
  EXPECT_EQ(m.str(), "fsdp=64@x/2*y/2,tensor=4@x%2*y%2,dcn=2@dcn");
  EXPECT_EQ(parse_mesh(m.str()), m);
  EXPECT_FALSE(parse_mesh("fsdp=64,tensor=4") == parse_mesh("fsdp=64@x/2*y/2,tensor=4@x%2*y%2"));
}

TEST(Mesh, MalformedPlacementsNameTheAxis) {
  for (const char* bad : {"tensor=4@w%2", "tensor=4@x%0", "tensor=4@x/", "tensor=4@x/0", "tensor=4@", "tensor=4@x**y",
                          "tensor=4@x%2%2", "tensor=4@x/2/2", "tensor=4@x%a", "tensor=2@x%4", "tensor=4@x%2*y%4"}) {
    try {
      parse_mesh(bad);
      FAIL() << bad;
    } catch (const MeshError& e) {
      ASSERT_EQ(e.diagnostics().size(), 1u) << bad << ": " << e.what();
      EXPECT_EQ(e.diagnostics()[0].key, "mesh.tensor") << bad;
    }
  }
}
