// The on-disk HBM calibration cache (arch/hbm/hbm_calibration_cache.h)
// through the executable: a run with the cache off, one that fills it and
// one that reads it give byte-identical results (calibration_runs
// included); the warm run really reads the file (a figure changed in it
// changes the result); a corrupt or truncated file is ignored, the
// figures measured again and the file rewritten whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;
using tpusim::test::slurp;
using tpusim::test::TmpDir;

const char* kRun = "run --arch v5e --gemm 2048,2048,1024 --quiet";

// The run's CSVs, summary.csv without its host-time column.
std::string results(const std::string& out) {
  std::string all;
  for (const char* f : {"summary.csv", "ops.csv", "units.csv"}) {
    std::istringstream in(slurp(out + "/" + f));
    std::string line;
    std::vector<std::size_t> drop;
    bool header = true;
    while (std::getline(in, line)) {
      std::vector<std::string> cells;
      std::stringstream ss(line);
      for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
      if (header && std::string(f) == "summary.csv")
        for (std::size_t i = 0; i < cells.size(); ++i)
          if (cells[i] == "sim_wall_seconds") drop.push_back(i);
      header = false;
      for (std::size_t i = 0; i < cells.size(); ++i)
        if (std::find(drop.begin(), drop.end(), i) == drop.end()) all += cells[i] + ",";
      all += "\n";
    }
    all += "--\n";
  }
  return all;
}

std::string run(const TmpDir& d, const std::string& name, const std::string& env) {
  const std::string out = d / name;
  const auto r = tpusim::test::run_tpusim_in(d.p.string(), std::string(kRun) + " --out " + out, env);
  EXPECT_EQ(r.rc, 0) << r.err;
  return results(out);
}

std::vector<std::string> cache_files(const std::string& dir) {
  std::vector<std::string> v;
  if (!fs::exists(dir)) return v;
  for (const auto& e : fs::directory_iterator(dir)) v.push_back(e.path().string());
  return v;
}

TEST(CalibrationCache, OffColdAndWarmRunsAreIdentical) {
  TmpDir d("tpusim_calcache_");
  const std::string cache = d / "cache";
  const std::string off = run(d, "off", "TPUSIM_NO_CACHE=1 TPUSIM_CACHE_DIR=" + cache);
  EXPECT_TRUE(cache_files(cache).empty()) << "TPUSIM_NO_CACHE=1 must write nothing";
  const std::string cold = run(d, "cold", "TPUSIM_CACHE_DIR=" + cache);
  const auto files = cache_files(cache);
  ASSERT_EQ(files.size(), 1u);  // one HBM config, no temporary left behind
  const std::string saved = slurp(files[0]);
  const std::string warm = run(d, "warm", "TPUSIM_CACHE_DIR=" + cache);
  EXPECT_EQ(off, cold);
  EXPECT_EQ(off, warm);
  EXPECT_NE(off.find("calibration_runs"), std::string::npos);
  EXPECT_EQ(slurp(files[0]), saved) << "a warm run measures nothing new";
}

TEST(CalibrationCache, WarmRunReadsTheFile) {
  TmpDir d("tpusim_calcache_");
  const std::string cache = d / "cache";
  const std::string cold = run(d, "cold", "TPUSIM_CACHE_DIR=" + cache);
  const auto files = cache_files(cache);
  ASSERT_EQ(files.size(), 1u);
  // Every measured time alone ("exact" lines end in picoseconds) doubled:
  // a well-formed file, so the run must take it and time differently.
  std::istringstream in(slurp(files[0]));
  std::string text, line;
  int changed = 0;
  while (std::getline(in, line)) {
    if (line.rfind("exact ", 0) == 0) {
      const auto sp = line.rfind(' ');
      line = line.substr(0, sp + 1) + std::to_string(2 * std::stoll(line.substr(sp + 1)));
      ++changed;
    }
    text += line + "\n";
  }
  ASSERT_GT(changed, 0);
  std::ofstream(files[0]) << text;
  EXPECT_NE(run(d, "doctored", "TPUSIM_CACHE_DIR=" + cache), cold);
}

// A damaged file: ignored, the run as without the cache, the file rewritten.
void expect_ignored(const std::string& damage(const std::string&)) {
  TmpDir d("tpusim_calcache_");
  const std::string cache = d / "cache";
  const std::string cold = run(d, "cold", "TPUSIM_CACHE_DIR=" + cache);
  const auto files = cache_files(cache);
  ASSERT_EQ(files.size(), 1u);
  const std::string good = slurp(files[0]);
  std::ofstream(files[0]) << damage(good);
  EXPECT_EQ(run(d, "again", "TPUSIM_CACHE_DIR=" + cache), cold);
  EXPECT_EQ(slurp(files[0]), good) << "the damaged file is replaced by a whole one";
}

const std::string& garbage(const std::string&) {
  static const std::string s = "not a calibration\n\x01\x02";
  return s;
}
const std::string& truncated(const std::string& good) {  // no end line
  static std::string s;
  s = good.substr(0, good.rfind("end "));
  return s;
}
const std::string& other_version(const std::string& good) {
  static std::string s;
  s = good;
  s.replace(s.find(' ') + 1, 1, "999");
  return s;
}
const std::string& bad_number(const std::string& good) {  // a figure that is no number
  static std::string s;
  s = good;
  const auto at = s.find("\nrw ");
  s.replace(at + 4, 1, "x");
  return s;
}

TEST(CalibrationCache, GarbageFileIsIgnored) { expect_ignored(garbage); }
TEST(CalibrationCache, TruncatedFileIsIgnored) { expect_ignored(truncated); }
TEST(CalibrationCache, OtherFormatVersionIsIgnored) { expect_ignored(other_version); }
TEST(CalibrationCache, MalformedFigureIsIgnored) { expect_ignored(bad_number); }

TEST(CalibrationCache, OtherHbmConfigHasItsOwnFile) {
  TmpDir d("tpusim_calcache_");
  const std::string cache = d / "cache";
  run(d, "a", "TPUSIM_CACHE_DIR=" + cache);
  const auto r =
      tpusim::test::run_tpusim_in(d.p.string(), std::string(kRun) + " --set hbm.refresh_postpone=4 --out " + (d / "b"),
                                  "TPUSIM_CACHE_DIR=" + cache);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(cache_files(cache).size(), 2u);
}

}  // namespace
