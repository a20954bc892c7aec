// The calibration cache file (arch/hbm/hbm_calibration_cache.h): figures
// come back exactly (doubles bit for bit), merged with what a table holds;
// a file for another key, or one cut short, is rejected and leaves the
// table as it was; the folder follows TPUSIM_CACHE_DIR, XDG_CACHE_HOME,
// HOME, and TPUSIM_NO_CACHE turns the cache off.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "arch/hbm/hbm_calibration_cache.h"

using namespace tpusim::arch;

namespace {

struct Dir {
  std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("tpusim_calcache_unit_" + std::to_string(::getpid()));
  Dir() { std::filesystem::create_directories(p); }
  ~Dir() {
    std::error_code ec;
    std::filesystem::remove_all(p, ec);
  }
  std::string file() const { return (p / "sub" / "cal.txt").string(); }
};

HbmCalibrationTables sample() {
  HbmCalibrationTables t;
  const HbmPattern seq{false, 64, true, 0, 0}, strided{true, 512, false, 32768, 262144};
  t.exact.emplace(std::make_tuple(seq, 1ull << 20, true), HbmCalibrationTables::Entry<Ps>{1234567, true});
  t.exact.emplace(std::make_tuple(strided, 16ull, false), HbmCalibrationTables::Entry<Ps>{731250, true});
  t.slopes.emplace(seq, HbmCalibrationTables::Entry<double>{1.0 / 3.0, true});  // not exact in decimal
  t.slopes.emplace(strided, HbmCalibrationTables::Entry<double>{1.2207031250000002e-3, true});
  t.read_write.emplace(std::make_pair(64ull, 1ull << 20), HbmCalibrationTables::Entry<Ps>{2500000, true});
  return t;
}

TEST(HbmCalibrationCache, FiguresComeBackExactlyAndUncounted) {
  Dir d;
  const HbmCalibrationTables t = sample();
  ASSERT_TRUE(save_hbm_calibration(d.file(), "key-a", t));  // creates the folder
  HbmCalibrationTables back;
  ASSERT_TRUE(load_hbm_calibration(d.file(), "key-a", back));
  ASSERT_EQ(back.exact.size(), t.exact.size());
  ASSERT_EQ(back.slopes.size(), t.slopes.size());
  ASSERT_EQ(back.read_write.size(), t.read_write.size());
  for (const auto& [k, e] : t.exact) {
    EXPECT_EQ(back.exact.at(k).v, e.v);
    EXPECT_FALSE(back.exact.at(k).counted);
  }
  for (const auto& [k, e] : t.slopes) EXPECT_EQ(back.slopes.at(k).v, e.v);  // bit for bit
  for (const auto& [k, e] : t.read_write) EXPECT_EQ(back.read_write.at(k).v, e.v);
}

TEST(HbmCalibrationCache, SaveMergesWithTheFileAndLoadKeepsOwnFigures) {
  Dir d;
  HbmCalibrationTables a = sample(), b;
  const HbmPattern other{false, 128, true, 0, 0};
  b.slopes.emplace(other, HbmCalibrationTables::Entry<double>{0.5, true});
  ASSERT_TRUE(save_hbm_calibration(d.file(), "k", a));
  ASSERT_TRUE(save_hbm_calibration(d.file(), "k", b));  // another process's figures
  HbmCalibrationTables back;
  back.read_write.emplace(std::make_pair(64ull, 1ull << 20), HbmCalibrationTables::Entry<Ps>{7, true});
  ASSERT_TRUE(load_hbm_calibration(d.file(), "k", back));
  EXPECT_EQ(back.slopes.size(), 3u);
  EXPECT_EQ(back.slopes.at(other).v, 0.5);
  EXPECT_EQ(back.read_write.at(std::make_pair(64ull, 1ull << 20)).v, 7);  // its own figure stays
  EXPECT_TRUE(back.read_write.at(std::make_pair(64ull, 1ull << 20)).counted);
}

TEST(HbmCalibrationCache, OtherKeyOrCutShortIsRejected) {
  Dir d;
  ASSERT_TRUE(save_hbm_calibration(d.file(), "key-a", sample()));
  HbmCalibrationTables t;
  EXPECT_FALSE(load_hbm_calibration(d.file(), "key-b", t));
  EXPECT_TRUE(t.exact.empty() && t.slopes.empty() && t.read_write.empty());
  std::stringstream ss;
  ss << std::ifstream(d.file()).rdbuf();
  const std::string good = ss.str();
  // Every proper prefix that ends a line: the end line or entries missing.
  for (std::size_t at = good.find('\n'); at + 1 < good.size(); at = good.find('\n', at + 1)) {
    std::ofstream(d.file(), std::ios::trunc) << good.substr(0, at + 1);
    EXPECT_FALSE(load_hbm_calibration(d.file(), "key-a", t)) << "cut after byte " << at;
    EXPECT_TRUE(t.exact.empty() && t.slopes.empty() && t.read_write.empty());
  }
  std::ofstream(d.file(), std::ios::trunc) << good << "exact 0 64 1 0 0 1 0 5\n";  // after the end line
  EXPECT_FALSE(load_hbm_calibration(d.file(), "key-a", t));
  EXPECT_FALSE(load_hbm_calibration((d.p / "missing.txt").string(), "key-a", t));
}

TEST(HbmCalibrationCache, FolderFromTheEnvironment) {
  ::unsetenv("TPUSIM_NO_CACHE");
  ::setenv("TPUSIM_CACHE_DIR", "/c/d", 1);
  ::setenv("XDG_CACHE_HOME", "/x", 1);
  ::setenv("HOME", "/h", 1);
  EXPECT_EQ(hbm_calibration_cache_dir(), "/c/d");
  ::unsetenv("TPUSIM_CACHE_DIR");
  EXPECT_EQ(hbm_calibration_cache_dir(), "/x/tpusim");
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(hbm_calibration_cache_dir(), "/h/.cache/tpusim");
  const std::string p = hbm_calibration_cache_path("some key");
  EXPECT_EQ(p.rfind("/h/.cache/tpusim/hbm-calibration-", 0), 0u);
  EXPECT_NE(p, hbm_calibration_cache_path("some key|"));  // the key names the file
  ::setenv("TPUSIM_NO_CACHE", "0", 1);
  EXPECT_EQ(hbm_calibration_cache_dir(), "/h/.cache/tpusim");
  ::setenv("TPUSIM_NO_CACHE", "1", 1);
  EXPECT_EQ(hbm_calibration_cache_dir(), "");
  EXPECT_EQ(hbm_calibration_cache_path("some key"), "");
}

}  // namespace
