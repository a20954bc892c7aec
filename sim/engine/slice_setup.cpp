#include "sim/engine/slice_setup.h"

#include <sstream>
#include <stdexcept>

#include "arch/common/errors.h"

namespace tpusim::sim {

MeshAxes parse_mesh(const std::string& text) {
  MeshAxes out;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    const auto eq = part.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == part.size())
      throw std::invalid_argument("--mesh: '" + part + "' is not name=size (e.g. fsdp=16,tensor=4)");
    const std::string name = part.substr(0, eq);
    std::int64_t size = 0;
    try {
      std::size_t used = 0;
      size = std::stoll(part.substr(eq + 1), &used);
      if (used != part.size() - eq - 1) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw std::invalid_argument("--mesh: size of '" + name + "' is not a whole number: '" +
                                  part.substr(eq + 1) + "'");
    }
    if (size < 1) throw std::invalid_argument("--mesh: size of '" + name + "' must be at least 1");
    for (const auto& a : out)
      if (a.first == name) throw std::invalid_argument("--mesh: axis '" + name + "' named twice");
    out.emplace_back(name, size);
  }
  if (out.empty()) throw std::invalid_argument("--mesh: no axes given");
  return out;
}

arch::ici::Mesh map_mesh(const arch::ici::Slice& slice, const MeshAxes& axes) {
  std::vector<std::pair<std::string, std::vector<int>>> mapped;
  int dim = 0;
  const auto& dims = slice.dims();
  for (const auto& [name, size] : axes) {
    std::vector<int> mine;
    std::int64_t product = 1;
    while (product < size && dim < slice.rank()) {
      product *= dims[static_cast<std::size_t>(dim)];
      mine.push_back(dim++);
    }
    if (product != size) {
      std::ostringstream os;
      os << "--mesh: axis '" << name << "' of size " << size
         << " does not cover whole dimensions of slice " << slice.shape()
         << " (mesh axes take consecutive slice dimensions in order)";
      throw std::invalid_argument(os.str());
    }
    mapped.emplace_back(name, mine);
  }
  return arch::ici::Mesh(slice, mapped);
}

void check_all_chips(const std::string& shape, int chips) {
  if (chips > kMaxAllChips)
    throw arch::ConfigError("--all-chips: slice " + shape + " has " + std::to_string(chips) +
                            " chips, more than the " + std::to_string(kMaxAllChips) +
                            " that --all-chips simulates (each chip's compute is simulated, so the run "
                            "would take about " + std::to_string(chips) +
                            " times as long as without it); drop --all-chips to let one chip stand for all");
}

}  // namespace tpusim::sim
