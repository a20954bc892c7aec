#include "sim/engine/slice_setup.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "arch/common/errors.h"

namespace tpusim::sim {

namespace {

using arch::ici::SubAxis;

[[noreturn]] void refuse(const arch::ici::Slice& slice, const std::string& what) {
  throw std::invalid_argument("--mesh: " + what + " (slice " + slice.shape() + ")");
}

// An axis's explicit placement ("tensor=4@x%2*y%2") as parts of the
// slice's axes.
std::vector<SubAxis> place(const arch::ici::Slice& slice, const workloads::MeshAxis& ax) {
  std::vector<SubAxis> parts;
  std::int64_t product = 1;
  for (const workloads::MeshPart& p : ax.placement) {
    int axis = -1;
    if (p.axis == "dcn") {
      if (slice.num_slices() < 2)
        refuse(slice, "axis '" + ax.name + "' is placed on the dcn, but the slice is one slice");
      axis = slice.dcn_axis();
    } else {
      axis = p.axis[0] - 'x';
      if (axis >= slice.rank())
        refuse(slice, "axis '" + ax.name + "' is placed on " + p.axis + ", which the slice does not have");
    }
    const std::int64_t len = slice.axis_length(axis);
    if (p.stride < 1 || p.length < 0 || p.stride > len || len % p.stride != 0)
      refuse(slice, "axis '" + ax.name + "': stride " + std::to_string(p.stride) + " does not divide " + p.axis +
                        "'s length " + std::to_string(len));
    const std::int64_t length = p.length == 0 ? len / p.stride : p.length;
    if (length > len)  // before narrowing; Mesh::split checks the fit
      refuse(slice, "axis '" + ax.name + "': part " + p.axis + " of length " + std::to_string(length) +
                        " does not fit " + p.axis + "'s length " + std::to_string(len));
    parts.push_back({axis, static_cast<int>(p.stride), static_cast<int>(length)});
    // Lengths are >= 1, so a product past the axis's size stays past it:
    // it is not multiplied further (dozens of parts would overflow).
    if (product <= ax.size) product *= length;
  }
  if (product != ax.size)
    refuse(slice, "axis '" + ax.name + "' of size " + std::to_string(ax.size) + " is placed on parts of " +
                      (product > ax.size ? "more than " + std::to_string(ax.size) : std::to_string(product)) +
                      " chips");
  return parts;
}

}  // namespace

arch::ici::Mesh map_mesh(const arch::ici::Slice& slice, const workloads::MeshSpec& mesh) {
  std::vector<std::pair<std::string, std::vector<SubAxis>>> mapped;
  const auto placed = std::count_if(mesh.axes.begin(), mesh.axes.end(),
                                    [](const workloads::MeshAxis& a) { return !a.placement.empty(); });
  if (placed > 0) {
    if (static_cast<std::size_t>(placed) != mesh.axes.size())
      refuse(slice, "either every axis has a placement (name=size@parts) or none does");
    for (const auto& ax : mesh.axes) mapped.emplace_back(ax.name, place(slice, ax));
    try {
      return arch::ici::Mesh::split(slice, std::move(mapped));
    } catch (const arch::ConfigError& e) {
      refuse(slice, e.what());
    }
  }
  // The DCN dimension of a multislice is the outermost: taken first.
  std::vector<int> order;
  if (slice.num_slices() > 1) order.push_back(slice.dcn_axis());
  for (int d = 0; d < slice.rank(); ++d) order.push_back(d);
  // Of each dimension, the positions no axis has taken yet: the lowest
  // `free[d]` (stride 1). An axis that needs only part of what is free
  // takes the top of it (every (free/need)-th chip), leaving the
  // neighbouring chips below to the axes after it, as JAX's
  // create_device_mesh gives the minor part of a split axis to the later,
  // more communication-heavy axis.
  std::vector<int> free(order.size() + 1, 0);
  for (int d : order) free[static_cast<std::size_t>(d)] = slice.axis_length(d);
  std::size_t next = 0;
  for (const auto& ax : mesh.axes) {
    std::vector<SubAxis> mine;
    std::int64_t product = 1;
    while (product < ax.size && next < order.size()) {
      const int d = order[next];
      const int r = free[static_cast<std::size_t>(d)];
      const std::int64_t need = ax.size / product;
      if (ax.size % product != 0) break;
      if (need % r == 0) {  // all of what is free
        mine.push_back({d, 1, r});
        product *= r;
        free[static_cast<std::size_t>(d)] = 1;
        ++next;
      } else if (r % need == 0 && !slice.is_dcn(d)) {  // the top part
        mine.push_back({d, static_cast<int>(r / need), static_cast<int>(need)});
        product *= need;
        free[static_cast<std::size_t>(d)] = static_cast<int>(r / need);
      } else {
        break;
      }
    }
    if (product != ax.size) {
      std::ostringstream os;
      os << "--mesh: axis '" << ax.name << "' of size " << ax.size << " does not cover whole dimensions or parts of "
         << "them of slice " << slice.shape() << " (mesh axes take consecutive slice dimensions in order"
         << (slice.num_slices() > 1 ? ", the slice count first" : "")
         << ", splitting a dimension where an axis needs part of it; name=size@parts places an axis explicitly)";
      throw std::invalid_argument(os.str());
    }
    mapped.emplace_back(ax.name, mine);
  }
  try {
    return arch::ici::Mesh::split(slice, std::move(mapped));
  } catch (const arch::ConfigError& e) {  // e.g. a name given twice
    refuse(slice, e.what());
  }
}

workloads::MeshSpec physical_mesh(const arch::ici::Slice& slice) {
  static const char* const names[] = {"x", "y", "z"};
  workloads::MeshSpec mesh;
  if (slice.num_slices() > 1) mesh.axes.push_back({"dcn", slice.num_slices(), {}});
  for (int d = 0; d < slice.rank(); ++d) mesh.axes.push_back({names[d], slice.dims()[static_cast<std::size_t>(d)], {}});
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
