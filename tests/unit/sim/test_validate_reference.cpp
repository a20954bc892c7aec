// The validation table's reference check (sim/validate/reference_check.h):
// a table compared with itself has no difference; a changed simulated
// figure, a new case, a removed case and a changed outcome are each named
// with the old and new values; descriptive text is not compared; a file
// that is not a validation.csv is refused with its name.
#include <gtest/gtest.h>

#include "arch/common/errors.h"
#include "sim/validate/reference_check.h"
#include "sim/validate/report.h"

namespace tpusim::sim::validate {
namespace {

Case make_case(const std::string& id, double measured) {
  Case c;
  c.id = id;
  c.family = "demo";
  c.title = "a case";
  c.arch = "v5e";
  c.metric.kind = MetricKind::Time;
  c.metric.unit = "ms";
  c.measured = measured;
  c.tolerance = 0.1;
  c.source = "a paper";
  return c;
}

TEST(ValidateReference, SameRunHasNoDifference) {
  const Case a = make_case("a", 100), b = make_case("b", 10);
  const std::vector<CaseResult> r = {{&a, Outcome::Pass, 101, 1, "", 0}, {&b, Outcome::Pass, 10.5, 5, "", 0}};
  EXPECT_TRUE(reference_differences(csv_text(r), "ref.csv", r, true).empty());
}

TEST(ValidateReference, NamesEachChangeWithOldAndNewValues) {
  const Case a = make_case("a", 100), b = make_case("b", 10), c = make_case("c", 1);
  const std::vector<CaseResult> before = {{&a, Outcome::Pass, 101, 1, "", 0}, {&b, Outcome::Pass, 10.5, 5, "", 0}};
  const std::string ref = csv_text(before);
  // a: simulated 101 -> 120 (error 1% -> 20%, now a fail); b unchanged;
  // c is new.
  const std::vector<CaseResult> after = {
      {&a, Outcome::Fail, 120, 20, "", 0}, {&b, Outcome::Pass, 10.5, 5, "", 0}, {&c, Outcome::Pass, 1, 0, "", 0}};
  const auto d = reference_differences(ref, "ref.csv", after, true);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NE(d[0].find("case a: "), std::string::npos) << d[0];
  EXPECT_NE(d[0].find("simulated 101 -> 120"), std::string::npos) << d[0];
  EXPECT_NE(d[0].find("error_pct 1.00 -> 20.00"), std::string::npos) << d[0];
  EXPECT_NE(d[0].find("within_tolerance true -> false"), std::string::npos) << d[0];
  EXPECT_NE(d[0].find("outcome pass -> fail"), std::string::npos) << d[0];
  EXPECT_EQ(d[1], "case c: not in ref.csv (a new case)");
}

TEST(ValidateReference, RemovedCasesOnlyForTheWholeSuite) {
  const Case a = make_case("a", 100), b = make_case("b", 10);
  const std::string ref = csv_text({{&a, Outcome::Pass, 101, 1, "", 0}, {&b, Outcome::Pass, 10.5, 5, "", 0}});
  const std::vector<CaseResult> only_a = {{&a, Outcome::Pass, 101, 1, "", 0}};
  EXPECT_TRUE(reference_differences(ref, "ref.csv", only_a, false).empty());  // --filter a
  const auto d = reference_differences(ref, "ref.csv", only_a, true);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "case b: in ref.csv but not in the suite (removed)");
}

TEST(ValidateReference, DescriptiveTextIsNotCompared) {
  Case a = make_case("a", 100);
  const std::string ref = csv_text({{&a, Outcome::Pass, 101, 1, "", 0}});
  a.title = "a better title";
  a.source = "the same paper, table 2";
  EXPECT_TRUE(reference_differences(ref, "ref.csv", {{&a, Outcome::Pass, 101, 1, "", 0}}, true).empty());
  a.measured = 99;  // an input figure is compared
  EXPECT_EQ(reference_differences(ref, "ref.csv", {{&a, Outcome::Pass, 101, 2.02, "", 0}}, true).size(), 1u);
}

TEST(ValidateReference, RefusesOtherFiles) {
  const Case a = make_case("a", 100);
  const std::vector<CaseResult> r = {{&a, Outcome::Pass, 101, 1, "", 0}};
  try {
    reference_differences("point,status\n1,ok\n", "results.csv", r, true);
    FAIL() << "no error";
  } catch (const arch::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("results.csv:1: expected the validation.csv header"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(reference_differences("", "empty.csv", r, true), arch::ConfigError);
}

}  // namespace
}  // namespace tpusim::sim::validate
