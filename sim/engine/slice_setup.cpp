#include "sim/engine/slice_setup.h"

#include <sstream>
#include <stdexcept>

#include "arch/common/errors.h"

namespace tpusim::sim {

arch::ici::Mesh map_mesh(const arch::ici::Slice& slice, const workloads::MeshSpec& mesh) {
  std::vector<std::pair<std::string, std::vector<int>>> mapped;
  // The DCN dimension of a multislice is the outermost: taken first.
  std::vector<int> order;
  if (slice.num_slices() > 1) order.push_back(slice.dcn_axis());
  for (int d = 0; d < slice.rank(); ++d) order.push_back(d);
  std::size_t next = 0;
  for (const auto& [name, size] : mesh.axes) {
    std::vector<int> mine;
    std::int64_t product = 1;
    while (product < size && next < order.size()) {
      product *= slice.axis_length(order[next]);
      mine.push_back(order[next++]);
    }
    if (product != size) {
      std::ostringstream os;
      os << "--mesh: axis '" << name << "' of size " << size << " does not cover whole dimensions of slice "
         << slice.shape() << " (mesh axes take consecutive slice dimensions in order"
         << (slice.num_slices() > 1 ? ", the slice count first" : "") << ")";
      throw std::invalid_argument(os.str());
    }
    mapped.emplace_back(name, mine);
  }
  return arch::ici::Mesh(slice, mapped);
}

workloads::MeshSpec physical_mesh(const arch::ici::Slice& slice) {
  static const char* const names[] = {"x", "y", "z"};
  workloads::MeshSpec mesh;
  if (slice.num_slices() > 1) mesh.axes.push_back({"dcn", slice.num_slices()});
  for (int d = 0; d < slice.rank(); ++d) mesh.axes.push_back({names[d], slice.dims()[static_cast<std::size_t>(d)]});
  return mesh;
}

arch::ici::Mesh network_mesh(const arch::ici::Slice& slice, const workloads::MeshSpec& mesh) {
  return mesh.empty() ? arch::ici::Mesh::physical(slice) : map_mesh(slice, mesh);
}

void check_all_chips(const std::string& shape, int chips) {
  if (chips > kMaxAllChips)
    throw arch::ConfigError("--all-chips: slice " + shape + " has " + std::to_string(chips) + " chips, more than the " +
                            std::to_string(kMaxAllChips) +
                            " that --all-chips simulates (each chip's compute is simulated, so the run "
                            "would take about " +
                            std::to_string(chips) +
                            " times as long as without it); drop --all-chips to let one chip stand for all");
}

}  // namespace tpusim::sim
