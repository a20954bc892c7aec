// The HBM SystemC shell: callbacks arrive at exactly the model's completion
// times (checked against the same model driven without SystemC), for both
// models, with transfers submitted at different times.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include <gtest/gtest.h>

#include <map>

#include <systemc>

#include "../unit/arch/hbm_test_util.h"
#include "arch/hbm/detailed_dram.h"
#include "arch/hbm/hbm_module.h"

using namespace tpusim;
using namespace tpusim::arch;

namespace {

void check_against_plain_model(const char* model) {
  HbmConfig c = test::load_hbm_preset("hbm2e", 2);
  c.model = model;
  HbmModule hbm("hbm", c);
  std::vector<HbmTransfer> ts(3);
  ts[0].row_bytes = 1 << 20;
  ts[1].row_bytes = 64 << 10;
  ts[1].base = (1ull << 30) + (96ull << 10);
  ts[2].row_bytes = 512;
  ts[2].rows = 100;
  ts[2].stride = 8192;
  ts[2].base = 2ull << 30;
  const Ps arrivals[3] = {0, 300000, 450000};
  std::vector<Ps> got(3, -1), called_at(3, -1);
  sc_core::sc_spawn([&] {
    for (int i = 0; i < 3; ++i) {
      const Ps now = HbmModule::now_ps();
      if (arrivals[i] > now) sc_core::wait(sc_core::sc_time(static_cast<double>(arrivals[i] - now), sc_core::SC_PS));
      hbm.submit(ts[static_cast<std::size_t>(i)], arrivals[i], [&, i](Ps t) {
        got[static_cast<std::size_t>(i)] = t;
        called_at[static_cast<std::size_t>(i)] = HbmModule::now_ps();
      });
    }
  });
  sc_core::sc_start();
  auto plain = make_hbm_model(c);
  std::vector<std::uint64_t> ids;
  std::map<std::uint64_t, Ps> done;
  for (int i = 0; i < 3; ++i) {
    for (const auto& x : plain->run_until(arrivals[i])) done[x.id] = x.time;
    ids.push_back(plain->submit(ts[static_cast<std::size_t>(i)], arrivals[i]));
  }
  while (done.size() < 3)
    for (const auto& x : plain->run_until(plain->next_event_time())) done[x.id] = x.time;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(got[static_cast<std::size_t>(i)], done[ids[static_cast<std::size_t>(i)]]) << i;
    EXPECT_EQ(called_at[static_cast<std::size_t>(i)], got[static_cast<std::size_t>(i)]) << i;
  }
}

}  // namespace

TEST(HbmModule, DetailedCallbacksAtExactCompletionTimes) { check_against_plain_model("detailed"); }
TEST(HbmModule, CalibratedCallbacksAtExactCompletionTimes) { check_against_plain_model("calibrated"); }
