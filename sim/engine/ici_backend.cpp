#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/engine/ici_backend.h"

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

std::vector<std::pair<std::string, arch::StatList>> IciBackend::block_stats() const {
  return {{"ici", impl_->module.stats()}};
}

const std::vector<CollectiveRecord>& IciBackend::records() const { return impl_->records; }

int IciBackend::chips() const { return impl_->slice.num_chips(); }

}  // namespace tpusim::sim
