// The chip's sequencing semantics, with simple closed-form unit timings so
// that every expected cycle can be derived by hand: in-order issue at one
// instruction per cycle, blocking on dependencies, units overlapping each
// other, DMA completions arriving by callback.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include <gtest/gtest.h>

#include <memory>
#include <systemc>

#include "arch/chip/chip_module.h"
#include "arch/common/time.h"

using namespace tpusim::arch;

namespace {

// A unit that takes `latency` cycles per instruction and runs one at a time.
class SerialUnit : public UnitTiming {
 public:
  explicit SerialUnit(std::uint64_t latency) : latency_(latency) {}
  Interval issue(const Instr&, std::uint64_t ready) override {
    const std::uint64_t start = std::max(ready, busy_until_);
    busy_until_ = start + latency_;
    return {start, busy_until_};
  }
  StatList stats() const override { return {{"busy_until", double(busy_until_), "cycles", ""}}; }

 private:
  std::uint64_t latency_;
  std::uint64_t busy_until_ = 0;
};

// A DMA engine pool where a copy of B bytes takes B cycles after it starts,
// engines independent of each other.
class LinearDma : public DmaBackend, public sc_core::sc_module {
 public:
  LinearDma(sc_core::sc_module_name n, double clock_hz) : sc_core::sc_module(n), clock_(clock_hz) {}
  void start(const DmaWork& w, int, std::function<void()> on_done) override {
    auto ev = std::make_shared<sc_core::sc_event>();
    sc_core::sc_spawn_options o;
    o.spawn_method();
    o.dont_initialize();
    o.set_sensitivity(ev.get());
    sc_core::sc_spawn([ev, on_done] { on_done(); }, nullptr, &o);
    ev->notify(cycles_to_time(w.bytes(), clock_));
    events_.push_back(ev);
    ++started;
  }
  std::vector<std::pair<std::string, StatList>> block_stats() const override {
    return {{"dma", {{"transfers", double(started), "count", ""}}}};
  }
  int started = 0;

 private:
  double clock_;
  std::vector<std::shared_ptr<sc_core::sc_event>> events_;
};

TpuConfig small_chip(int mxus = 2) {
  TpuConfig cfg;
  cfg.chip.tensorcores = 1;
  cfg.chip.clock_hz = 1e9;
  cfg.mxu.count = mxus;
  cfg.xlu.count = 1;
  cfg.dma.engines = 2;
  return cfg;
}

Instr make(UnitKind u, std::uint64_t dma_bytes = 0) {
  Instr in;
  in.unit = u;
  if (u == UnitKind::dma) {
    DmaWork w;
    w.row_bytes = dma_bytes;
    in.work = w;
  } else if (u == UnitKind::mxu) {
    in.work = MxuWork{};
  } else {
    in.work = VpuWork{};
  }
  return in;
}

// Appends an instruction of unit `u` waiting for `deps` to `p`.
InstrId add(Program& p, UnitKind u, std::initializer_list<InstrId> deps, std::uint64_t dma_bytes = 0) {
  return p.add(make(u, dma_bytes), deps);
}

UnitFactory latencies(std::uint64_t mxu, std::uint64_t vpu) {
  return [=](UnitKind k, int, int) -> std::unique_ptr<UnitTiming> {
    return std::make_unique<SerialUnit>(k == UnitKind::mxu ? mxu : vpu);
  };
}

}  // namespace

TEST(ChipSequencer, DependentChainAddsLatencies) {
  TpuConfig cfg = small_chip();
  Program p;
  add(p, UnitKind::dma, {}, 100);  // 0: issue 0, done 100
  add(p, UnitKind::mxu, {0}, 0);   // 1: issue 100, done 100+50
  add(p, UnitKind::vpu, {1}, 0);   // 2: issue 150, done 150+10
  LinearDma dma("dma", cfg.chip.clock_hz);
  ChipModule chip("chip", cfg, p, latencies(50, 10), dma);
  sc_core::sc_start();
  ASSERT_TRUE(chip.all_done());
  EXPECT_EQ(chip.records()[0].finish, 100u);
  EXPECT_EQ(chip.records()[1].issue, 100u);
  EXPECT_EQ(chip.records()[1].finish, 150u);
  EXPECT_EQ(chip.records()[2].start, 150u);
  EXPECT_EQ(chip.end_cycle(), 160u);
}

TEST(ChipSequencer, IndependentWorkOverlapsAndIssuesOnePerCycle) {
  TpuConfig cfg = small_chip(2);
  Program p;
  // Four MXU instructions with no dependencies on two MXUs, round robin:
  // issue slots 0,1,2,3; MXU0 runs #0 at 0-50 and #2 at 50-100, MXU1 runs
  // #1 at 1-51 and #3 at 51-101. A DMA issued in slot 4 overlaps them all
  // and ends at 4 + 30 = 34.
  for (int i = 0; i < 4; ++i) add(p, UnitKind::mxu, {});
  add(p, UnitKind::dma, {}, 30);
  LinearDma dma("dma", cfg.chip.clock_hz);
  ChipModule chip("chip", cfg, p, latencies(50, 10), dma);
  sc_core::sc_start();
  const auto& r = chip.records();
  EXPECT_EQ(r[2].start, 50u);
  EXPECT_EQ(r[3].start, 51u);
  EXPECT_EQ(r[3].finish, 101u);
  EXPECT_EQ(r[4].issue, 4u);
  EXPECT_EQ(r[4].finish, 34u);
  EXPECT_EQ(chip.end_cycle(), 101u);
}

TEST(ChipSequencer, BlockingIssueDelaysLaterIndependentInstructions) {
  TpuConfig cfg = small_chip(1);
  Program p;
  add(p, UnitKind::dma, {}, 200);  // 0: done at 200
  add(p, UnitKind::vpu, {0});      // 1: sequencer blocks until 200
  add(p, UnitKind::mxu, {});       // 2: independent, but issued after 1
  LinearDma dma("dma", cfg.chip.clock_hz);
  ChipModule chip("chip", cfg, p, latencies(50, 10), dma);
  sc_core::sc_start();
  EXPECT_EQ(chip.records()[1].issue, 200u);
  EXPECT_EQ(chip.records()[2].issue, 201u);  // in-order: one slot after #1
  EXPECT_EQ(chip.records()[2].finish, 251u);
}

namespace {
// Blocks i = 0..7: DMA(i) loads 40 cycles, MXU(i) computes 100 cycles, two
// VMEM buffers, so DMA(i+2) must wait for MXU(i) to free its buffer.
// `mxu_ahead` issues MXU(i+1) before DMA(i+2), so that the blocking wait
// for MXU(i) never holds back the next MXU instruction.
std::uint64_t pipeline_end(bool mxu_ahead) {
  TpuConfig cfg = small_chip(1);
  Program p;
  const int blocks = 8;
  std::vector<InstrId> dma(blocks), mxu(blocks);
  dma[0] = add(p, UnitKind::dma, {}, 40);
  dma[1] = add(p, UnitKind::dma, {}, 40);
  if (mxu_ahead) {
    mxu[0] = add(p, UnitKind::mxu, {dma[0]});
    for (int i = 0; i < blocks; ++i) {
      if (i + 1 < blocks) mxu[i + 1] = add(p, UnitKind::mxu, {dma[i + 1]});
      if (i + 2 < blocks) dma[i + 2] = add(p, UnitKind::dma, {mxu[i]}, 40);
    }
  } else {
    for (int i = 0; i < blocks; ++i) {
      mxu[i] = add(p, UnitKind::mxu, {dma[i]});
      if (i + 2 < blocks) dma[i + 2] = add(p, UnitKind::dma, {mxu[i]}, 40);
    }
  }
  LinearDma dma_backend("dma", cfg.chip.clock_hz);
  ChipModule chip("chip", cfg, p, latencies(100, 10), dma_backend);
  sc_core::sc_start();
  EXPECT_TRUE(chip.all_done());
  return chip.end_cycle();
}
}  // namespace

TEST(ChipSequencer, SoftwarePipelinedOrderReachesComputeBound) {
  // The MXU never idles after the first load: 40 + 8 x 100 = 840. (MXU(i+2)
  // waits for DMA(i+2), done at MXU(i)'s end + 40, well before MXU(i+1)
  // ends 100 cycles after MXU(i).)
  EXPECT_EQ(pipeline_end(true), 840u);
}

TEST(ChipSequencer, NaiveOrderLosesOneIssueSlotPerBlock) {
  // Order DMA0 DMA1 MXU0 DMA2 MXU1 ...: the sequencer blocks on DMA(i+2)'s
  // wait for MXU(i), so MXU(i+1) issues one cycle after MXU(i) ends. That
  // happens for i = 0..5 (DMA2..DMA7 exist): 840 + 6 = 846.
  EXPECT_EQ(pipeline_end(false), 846u);
}

TEST(ChipSequencer, RejectsForwardDependencies) {
  TpuConfig cfg = small_chip();
  Program p;
  add(p, UnitKind::vpu, {1});
  add(p, UnitKind::vpu, {});
  LinearDma dma("dma", cfg.chip.clock_hz);
  EXPECT_THROW(ChipModule("chip", cfg, p, latencies(1, 1), dma), std::invalid_argument);
}
