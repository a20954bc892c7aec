// Test helper: reads the shipped memory presets (configs/hbm/*.yaml) into
// arch::HbmConfig without yaml-cpp (unit tests link tpusim_arch only), so
// the tests exercise the very values that ship. Handles the presets' flat
// `key: value  # comment` layout and the units they use; anything else
// throws, so a preset that changes shape fails loudly here.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include "arch/common/chip_config.h"

#include "arch/hbm/detailed_dram.h"
#include "arch/hbm/hbm_model.h"

namespace tpusim::test {

inline double hbm_parse_quantity(const std::string& v) {
  std::istringstream in(v);
  double x = 0;
  std::string unit;
  in >> x >> unit;
  static const std::map<std::string, double> k{{"ns", 1e-9},       {"us", 1e-6},  {"ps", 1e-12}, {"KiB", 1024.0},
                                               {"MiB", 1048576.0}, {"GT/s", 1e9}, {"MT/s", 1e6}, {"", 1.0}};
  auto it = k.find(unit);
  if (it == k.end()) throw std::runtime_error("unknown unit in '" + v + "'");
  return x * it->second;
}

inline arch::HbmConfig load_hbm_preset(const std::string& file_stem, int stacks) {
  const char* env = std::getenv("TPUSIM_SOURCE_DIR");
  const std::string root = env ? env : TPUSIM_SOURCE_DIR;
  std::ifstream f(root + "/configs/hbm/" + file_stem + ".yaml");
  if (!f) throw std::runtime_error("cannot open preset " + file_stem);
  std::map<std::string, std::string> kv;
  std::string line;
  while (std::getline(f, line)) {
    auto hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon), val = line.substr(colon + 1);
    auto trim = [](std::string s) {
      const char* ws = " \t\"";
      s.erase(0, s.find_first_not_of(ws));
      auto e = s.find_last_not_of(ws);
      s.erase(e == std::string::npos ? 0 : e + 1);
      return s;
    };
    key = trim(key);
    val = trim(val);
    if (!val.empty()) kv[key] = val;
  }
  auto get = [&](const std::string& k) {
    auto it = kv.find(k);
    if (it == kv.end()) throw std::runtime_error("preset " + file_stem + " lacks " + k);
    return it->second;
  };
  arch::HbmConfig c;
  c.preset = get("preset");
  c.model = "detailed";  // presets leave the model to the HbmConfig default
  c.stacks = stacks;
  c.channels = std::stoi(get("channels"));
  c.pseudo_channels = std::stoi(get("pseudo_channels"));
  c.bank_groups = std::stoi(get("bank_groups"));
  c.banks_per_group = std::stoi(get("banks_per_group"));
  c.row_bytes = static_cast<std::uint64_t>(hbm_parse_quantity(get("row_size")));
  c.data_rate = hbm_parse_quantity(get("data_rate"));
  c.bus_width_bits = std::stoi(get("bus_width_bits"));
  c.burst_length = std::stoi(get("burst_length"));
  c.address_mapping = get("address_mapping");
  c.queue_depth = std::stoi(get("queue_depth"));
  c.page_policy = get("page_policy");
#define TPUSIM_TEST_TIMING(name, ps_name, required, positive, description) c.t.name = hbm_parse_quantity(get(#name));
  TPUSIM_HBM_TIMINGS(TPUSIM_TEST_TIMING)
#undef TPUSIM_TEST_TIMING
  return c;
}

// `rows` rows of `row` bytes, `stride` apart, from `base`.
inline arch::HbmTransfer strided(std::uint64_t base, std::uint64_t row, std::uint64_t stride, std::uint64_t rows,
                                 bool write = false) {
  arch::HbmTransfer t;
  t.base = base;
  t.row_bytes = row;
  t.stride = stride;
  t.rows = rows;
  t.write = write;
  return t;
}

inline arch::HbmTransfer contiguous(std::uint64_t base, std::uint64_t bytes, bool write = false) {
  return strided(base, bytes, bytes, 1, write);
}

// A transfer submitted at its arrival time.
struct HbmJob {
  arch::HbmTransfer t;
  arch::Ps arrival = 0;
};

// Completion time of each job on model m, in job order; event by event
// (next_event_time), as the SystemC shell drives a model.
inline std::vector<arch::Ps> run_hbm_jobs(arch::HbmModel& m, const std::vector<HbmJob>& jobs) {
  std::vector<std::uint64_t> ids;
  for (const auto& j : jobs) ids.push_back(m.submit(j.t, j.arrival));
  std::map<std::uint64_t, arch::Ps> done;
  while (done.size() < ids.size()) {
    const arch::Ps next = m.next_event_time();
    if (next == arch::kNever) throw std::runtime_error("HBM model went idle with transfers outstanding");
    for (const auto& c : m.run_until(next)) done[c.id] = c.time;
  }
  std::vector<arch::Ps> out;
  for (auto id : ids) out.push_back(done.at(id));
  return out;
}

// Every job's duration (completion - arrival) on model M within tol of the
// detailed model's, as gtest expectations; returns the largest relative
// error.
template <class M>
double expect_hbm_close(const arch::HbmConfig& c, const std::vector<HbmJob>& jobs, double tol) {
  arch::DetailedDram det(c);
  M model(c);
  const auto d = run_hbm_jobs(det, jobs);
  const auto m = run_hbm_jobs(model, jobs);
  double worst = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const double dd = static_cast<double>(d[i] - jobs[i].arrival);
    const double err = std::abs(static_cast<double>(m[i] - d[i])) / dd;
    worst = std::max(worst, err);
    EXPECT_LE(err, tol) << "transfer " << i << " (" << jobs[i].t.bytes() << " bytes, rows " << jobs[i].t.rows << " x "
                        << jobs[i].t.row_bytes << ", write " << jobs[i].t.write << "): detailed " << dd << " ps, model "
                        << static_cast<double>(m[i] - jobs[i].arrival) << " ps";
  }
  return worst;
}

}  // namespace tpusim::test
