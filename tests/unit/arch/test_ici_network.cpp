// ICI network model: closed-form times of single messages (both
// fidelities, exact), contention on a shared link, conservation of bytes
// per link, and errors on misuse.
#include <gtest/gtest.h>

#include "arch/common/errors.h"
#include "arch/ici/network.h"
#include "test_ici_util.h"

using namespace tpusim::arch;
using namespace tpusim::arch::ici;

namespace {

NetworkOptions opts(Fidelity f, std::uint64_t packet = 4096) {
  NetworkOptions o;
  o.fidelity = f;
  o.packet_bytes = packet;
  return o;
}

std::vector<Delivery> drain(Network& n) {
  std::vector<Delivery> out;
  n.advance_to(kNeverPs - 1, out);
  return out;
}

// A round link bandwidth so closed forms are exact in picoseconds:
// 50 GB/s = 20 ps per byte; 4096-byte packet = 81920 ps.
IciConfig round_config() {
  IciConfig c = test::ici_v5e();
  c.link_bandwidth = 50e9;
  c.hop_latency = 1e-6;
  return c;
}

class BothFidelities : public ::testing::TestWithParam<Fidelity> {};

}  // namespace

TEST_P(BothFidelities, OneHopMessage) {
  const Slice s(round_config(), "16x16");
  auto net = make_network(s, opts(GetParam()));
  // 1 MiB over one hop: tx = 1048576 B x 20 ps = 20,971,520 ps, + 1 us hop.
  net->send(s.chip_at({0, 0}), s.chip_at({1, 0}), 1 << 20, 0);
  const auto d = drain(*net);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].time, 20971520 + 1000000);
}

TEST_P(BothFidelities, MultiHopMessagePipelinesPackets) {
  const Slice s(round_config(), "16x16");
  auto net = make_network(s, opts(GetParam()));
  // 3 hops, 10 packets of 4096 B plus a last packet of 100 B (41060 B):
  // whole tx = 10 x 81920 + 100 x 20 = 821,200 ps. Each hop starts one
  // head packet tx + hop latency after the previous one (81,920 + 1e6) and
  // then carries the whole message back to back (every packet has arrived
  // by the time the link wants it). Delivery = 2 x 1,081,920 + 821,200 +
  // 1e6 (last hop latency) = 3,985,040 ps.
  net->send(s.chip_at({0, 0}), s.chip_at({3, 0}), 41060, 0);
  const auto d = drain(*net);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].time, 3985040);
}

TEST_P(BothFidelities, SharedLinkSerializes) {
  const Slice s(round_config(), "16x16");
  auto net = make_network(s, opts(GetParam()));
  // Two 1 MiB messages from the same chip over the same first link at t=0:
  // the second waits for the first (FIFO): done at 2 x tx + hop.
  const int a = s.chip_at({0, 0}), b = s.chip_at({1, 0});
  net->send(a, b, 1 << 20, 0);
  net->send(a, b, 1 << 20, 0);
  const auto d = drain(*net);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].time, 20971520 + 1000000);
  EXPECT_EQ(d[1].time, 2 * 20971520 + 1000000);
  // Opposite directions of one cable do not contend.
  auto n2 = make_network(s, opts(GetParam()));
  n2->send(a, b, 1 << 20, 0);
  n2->send(b, a, 1 << 20, 0);
  const auto d2 = drain(*n2);
  ASSERT_EQ(d2.size(), 2u);
  EXPECT_EQ(d2[0].time, d2[1].time);
}

TEST_P(BothFidelities, LaterSendWaitsOnlyForTheRemainder) {
  const Slice s(round_config(), "16x16");
  auto net = make_network(s, opts(GetParam()));
  const int a = s.chip_at({0, 0}), b = s.chip_at({1, 0});
  net->send(a, b, 1 << 20, 0);
  std::vector<Delivery> out;
  net->advance_to(5000000, out);  // 5 us in: the first message is mid-link
  EXPECT_TRUE(out.empty());
  net->send(a, b, 4096, 5000000);
  const auto d = drain(*net);
  ASSERT_EQ(d.size(), 2u);
  // The link frees at 20,971,520 ps; the 4 KiB message then takes 81,920.
  EXPECT_EQ(d[1].time, 20971520 + 81920 + 1000000);
}

TEST_P(BothFidelities, BytesConservedPerLink) {
  const Slice s(test::ici_v5e(), "8x16");
  auto net = make_network(s, opts(GetParam()));
  std::uint64_t sent = 0;
  for (int i = 0; i < s.num_chips(); i += 5) {
    const int dst = (i * 37 + 11) % s.num_chips();
    if (dst == i) continue;
    net->send(i, dst, 10000 + static_cast<std::uint64_t>(i) * 333, 0);
    sent += 10000 + static_cast<std::uint64_t>(i) * 333;
  }
  drain(*net);
  EXPECT_EQ(net->messages_in_flight(), 0u);
  std::uint64_t chip_in = 0, chip_out = 0;
  for (int c = 0; c < s.num_chips(); ++c) {
    chip_in += net->chip_bytes_received(c);
    chip_out += net->chip_bytes_sent(c);
  }
  EXPECT_EQ(chip_out, sent);
  EXPECT_EQ(chip_in, sent);
  std::uint64_t link_bytes = 0;
  for (int l = 0; l < s.num_links(); ++l) {
    EXPECT_EQ(net->link_stats(l).bytes_sent, net->link_stats(l).bytes_received) << s.link_name(l);
    link_bytes += net->link_stats(l).bytes_sent;
  }
  EXPECT_GT(link_bytes, sent);  // multi-hop messages cross several links
}

TEST_P(BothFidelities, MisuseIsAnInternalError) {
  const Slice s(test::ici_v5e(), "4x4");
  auto net = make_network(s, opts(GetParam()));
  EXPECT_THROW(net->send(0, 0, 10, 0), InternalError);
  EXPECT_THROW(net->send(0, 1, 0, 0), InternalError);
  std::vector<Delivery> out;
  net->advance_to(100, out);
  EXPECT_THROW(net->send(0, 1, 10, 99), InternalError);
}

INSTANTIATE_TEST_SUITE_P(Ici, BothFidelities, ::testing::Values(Fidelity::aggregated, Fidelity::packet),
                         [](const auto& i) { return std::string(to_string(i.param)); });

TEST(IciNetwork, LinkServesHeadsInArrivalOrder) {
  // Two 64 KiB messages meet on link (0,0)->(1,0): A from (15,0) (its head
  // reaches the shared link after one packet + hop: 1.08192 us) and B sent
  // from (0,0) at 0.5 us. Both models let B go first (its head is there
  // first) and then A; A's packets interleave with nothing, so both give
  // the same final time: B on the link 0.5 .. 1.81072 us, A 1.81072 ..
  // 3.12144 us, + 1 us hop = 4,121,440 ps.
  const Slice s(round_config(), "16x16");
  Ps last[2] = {0, 0};
  for (Fidelity f : {Fidelity::aggregated, Fidelity::packet}) {
    auto net = make_network(s, opts(f));
    net->send(s.chip_at({15, 0}), s.chip_at({1, 0}), 65536, 0);
    std::vector<Delivery> out;
    net->advance_to(500000, out);
    net->send(s.chip_at({0, 0}), s.chip_at({1, 0}), 65536, 500000);
    for (const auto& d : drain(*net)) last[f == Fidelity::packet] = std::max(last[f == Fidelity::packet], d.time);
  }
  // Both finish at 2 x 65536 x 20 ps after the shared link starts (1.08192
  // us for A's head vs 0.5 us for B), within one packet time.
  EXPECT_EQ(last[0], 4121440);
  EXPECT_EQ(last[1], 4121440);
}

TEST(IciNetwork, ParseFidelity) {
  EXPECT_EQ(parse_fidelity("packet"), Fidelity::packet);
  EXPECT_EQ(parse_fidelity("aggregated"), Fidelity::aggregated);
  EXPECT_THROW(parse_fidelity("flit"), ConfigError);
}
