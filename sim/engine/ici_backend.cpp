#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/engine/ici_backend.h"

#include <algorithm>
#include <unordered_map>

#include "arch/common/errors.h"
#include "arch/ici/ici_module.h"

namespace tpusim::sim {

namespace {

arch::ici::IciModule::ProgressCallback progress_of(std::function<void(const arch::CollectiveProgress&)> fn) {
  if (!fn) return {};
  return [f = std::move(fn)](const arch::ici::IciSimulator::ChipProgress& p) { f(p.step); };
}

arch::ici::CollectiveRequest to_request(const arch::IciWork& work, const arch::CollectiveGroup& group,
                                        arch::InstrId instr) {
  arch::ici::CollectiveRequest req;
  req.kind = static_cast<arch::ici::CollectiveKind>(work.kind);
  req.bytes = work.bytes;
  req.axes = group.axes;
  req.root = work.root;
  req.pairs = group.pairs;
  req.label = std::to_string(instr);
  return req;
}

CollectiveRecord to_record(arch::InstrId instr, const arch::ici::CollectiveResult& r) {
  CollectiveRecord rec;
  rec.instr = instr;
  rec.algorithm = r.algorithm;
  rec.bytes = r.bytes;
  rec.group_size = r.group_size;
  rec.seconds = r.seconds();
  rec.achieved_bandwidth = r.achieved_bandwidth();
  rec.bytes_sent = r.total_sent();
  rec.bytes_received = r.total_received();
  return rec;
}

}  // namespace

class IciBackendImpl {
 public:
  IciBackendImpl(const arch::TpuConfig& cfg, const std::string& shape, const workloads::MeshSpec& mesh, bool twisted)
      : slice(cfg.ici, shape, twisted), module("ici", slice, network_mesh(slice, mesh)) {}

  class Port : public arch::CollectiveBackend {
   public:
    Port(IciBackendImpl* impl, int chip) : impl_(impl), chip_(chip) {}
    void start(const arch::IciWork& work, const arch::CollectiveGroup& group, arch::InstrId instr,
               std::function<void()> on_done,
               std::function<void(const arch::CollectiveProgress&)> on_progress) override {
      // The first chip to reach the instruction plans the collective; the
      // others join the same instance (every chip runs the same program).
      auto it = impl_->deferred.find(instr);
      if (it == impl_->deferred.end()) {
        IciBackendImpl* impl = impl_;
        const std::uint64_t id = impl->module.start_deferred(
            to_request(work, group, instr),
            [impl, instr](const arch::ici::CollectiveResult& r) { impl->records.push_back(to_record(instr, r)); });
        it = impl_->deferred.emplace(instr, id).first;
      }
      impl_->module.watch(it->second, chip_, progress_of(std::move(on_progress)));
      impl_->module.chip_start(it->second, chip_, std::move(on_done));
    }
    std::vector<std::pair<std::string, arch::StatList>> block_stats() const override { return {}; }

   private:
    IciBackendImpl* impl_;
    int chip_;
  };

  arch::ici::Slice slice;
  arch::ici::IciModule module;
  std::vector<CollectiveRecord> records;
  std::unordered_map<arch::InstrId, std::uint64_t> deferred;  // instruction -> collective id
  std::vector<std::unique_ptr<Port>> ports;
};

IciBackend::IciBackend(const arch::TpuConfig& cfg, const std::string& slice, const workloads::MeshSpec& mesh,
                       bool twisted)
    : impl_(std::make_unique<IciBackendImpl>(cfg, slice, mesh, twisted)) {}

IciBackend::~IciBackend() = default;

void IciBackend::start(const arch::IciWork& work, const arch::CollectiveGroup& group, arch::InstrId instr,
                       std::function<void()> on_done,
                       std::function<void(const arch::CollectiveProgress&)> on_progress) {
  IciBackendImpl* impl = impl_.get();
  const std::uint64_t id = impl->module.start_collective_with_result(
      to_request(work, group, instr), [impl, instr, done = std::move(on_done)](const arch::ici::CollectiveResult& r) {
        impl->records.push_back(to_record(instr, r));
        done();
      });
  // The simulated chip stands for all: it does what the chip that moves
  // the most bytes does (the first such; all the same on a torus), its
  // HBM traffic and reductions paced by that chip's messages.
  int busiest = 0;
  std::uint64_t most = 0;
  const auto& sim = impl->module.simulator();
  for (int c = 0; c < impl->slice.num_chips(); ++c) {
    const auto [sent, received] = sim.planned_traffic(id, c);
    if (sent + received > most) {
      most = sent + received;
      busiest = c;
    }
  }
  impl->module.watch(id, busiest, progress_of(std::move(on_progress)));
}

arch::CollectiveBackend& IciBackend::chip_port(int chip) {
  if (chip < 0 || chip >= chips()) throw arch::InternalError("IciBackend::chip_port: no chip " + std::to_string(chip));
  auto& ports = impl_->ports;
  if (ports.empty())
    for (int c = 0; c < chips(); ++c) ports.push_back(std::make_unique<IciBackendImpl::Port>(impl_.get(), c));
  return *ports[static_cast<std::size_t>(chip)];
}

// Every link's statistics, then the hottest links: the five busiest by
// utilization (ties by name), the first place to look for a bottleneck.
std::vector<std::pair<std::string, arch::StatList>> IciBackend::block_stats() const {
  const arch::StatList all = impl_->module.stats();
  std::vector<std::pair<double, std::string>> links;
  const std::string prefix = "ici.link.", suffix = ".utilization";
  for (const arch::Stat& s : all)
    if (s.name.compare(0, prefix.size(), prefix) == 0 && s.name.size() > prefix.size() + suffix.size() &&
        s.name.compare(s.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      links.emplace_back(s.value, s.name.substr(prefix.size(), s.name.size() - prefix.size() - suffix.size()));
  std::sort(links.begin(), links.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  arch::StatList hot;
  for (std::size_t i = 0; i < links.size() && i < 5; ++i)
    hot.push_back({"rank" + std::to_string(i + 1) + "." + links[i].second, links[i].first, "ratio",
                   "utilization of the " + std::to_string(i + 1) + ". busiest link"});
  return {{"ici", all}, {"ici.hottest_links", hot}};
}

const std::vector<CollectiveRecord>& IciBackend::records() const { return impl_->records; }

int IciBackend::chips() const { return impl_->slice.num_chips(); }
int IciBackend::num_slices() const { return impl_->slice.num_slices(); }

}  // namespace tpusim::sim
