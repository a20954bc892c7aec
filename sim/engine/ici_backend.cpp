#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/engine/ici_backend.h"

#include <algorithm>

#include "arch/ici/ici_module.h"

namespace tpusim::sim {

class IciBackendImpl {
 public:
  IciBackendImpl(const arch::TpuConfig& cfg, const std::string& shape, const MeshAxes& mesh,
                 bool twisted)
      : slice(cfg.ici, shape, twisted),
        module("ici", slice, mesh.empty() ? arch::ici::Mesh::physical(slice) : map_mesh(slice, mesh)) {}
  arch::ici::Slice slice;
  arch::ici::IciModule module;
  std::vector<CollectiveRecord> records;
};

IciBackend::IciBackend(const arch::TpuConfig& cfg, const std::string& slice, const MeshAxes& mesh,
                       bool twisted)
    : impl_(std::make_unique<IciBackendImpl>(cfg, slice, mesh, twisted)) {}

IciBackend::~IciBackend() = default;

void IciBackend::start(const arch::IciWork& work, arch::InstrId instr, std::function<void()> on_done) {
  arch::ici::CollectiveRequest req;
  req.kind = static_cast<arch::ici::CollectiveKind>(work.kind);
  req.bytes = work.bytes;
  req.axes = work.axes;
  req.root = work.root;
  req.pairs = work.pairs;
  req.label = std::to_string(instr);
  IciBackendImpl* impl = impl_.get();
  impl->module.start_collective_with_result(
      req, [impl, instr, done = std::move(on_done)](const arch::ici::CollectiveResult& r) {
        CollectiveRecord rec;
        rec.instr = instr;
        rec.algorithm = r.algorithm;
        rec.bytes = r.bytes;
        rec.group_size = r.group_size;
        rec.seconds = r.seconds();
        rec.achieved_bandwidth = r.achieved_bandwidth();
        rec.bytes_sent = r.total_sent();
        rec.bytes_received = r.total_received();
        impl->records.push_back(rec);
        done();
      });
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
  std::sort(links.begin(), links.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  arch::StatList hot;
  for (std::size_t i = 0; i < links.size() && i < 5; ++i)
    hot.push_back({"rank" + std::to_string(i + 1) + "." + links[i].second, links[i].first, "ratio",
                   "utilization of the " + std::to_string(i + 1) + ". busiest link"});
  return {{"ici", all}, {"ici.hottest_links", hot}};
}

const std::vector<CollectiveRecord>& IciBackend::records() const { return impl_->records; }

int IciBackend::chips() const { return impl_->slice.num_chips(); }

}  // namespace tpusim::sim
