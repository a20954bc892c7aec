// ICI slice topology: the chips of a slice laid out on a 2D or 3D grid
// (shape strings "4x4", "16x16", "4x4x8"), which axes wrap around (from the
// generation's rule in IciConfig::wraparound), the optional twisted torus
// of v4/v5p, the directed neighbour links (one per ICI port that has a
// neighbour), hosts (chips_per_host), and dimension-order routes.
//
// Twisted torus (modelled choice; the v4 paper shows 4x4x8 twisted but not
// the exact wiring): a wrap link of an axis of the shortest length A lands
// on the opposite face shifted by half the length along every axis of
// length 2A. So on 4x4x8, +x from (3,y,z) reaches (0,y,(z+4)%8) and +y
// from (x,3,z) reaches (x,0,(z+4)%8); on 4x8x8, +x from (3,y,z) reaches
// (0,(y+4)%8,(z+4)%8). The -direction wrap applies the opposite shift.
//
// Multislice: "N*SHAPE" (e.g. "4*16x16") is N identical slices joined by
// the data-centre network (DCN). The slice's own chips are the ones laid
// out here (num_chips); the others are identical copies, and the DCN is an
// extra mesh dimension of length N (dcn_axis(), outermost) whose
// collectives go out through each chip's share of its host's NIC
// (IciConfig::dcn_bandwidth, dcn_latency; collectives.h).
//
// Leaves out: optical circuit switch reconfiguration, DCN topology
// (switches, oversubscription: each chip's NIC share is its only limit),
// failed chips or links, per-link bandwidth differences (every link has
// IciConfig::link_bandwidth). Mesh axes on parts of an axis are
// collectives.h's (SubAxis).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "arch/common/chip_config.h"

namespace tpusim::arch::ici {

using Ps = std::int64_t;  // picoseconds
inline constexpr Ps kNeverPs = std::numeric_limits<Ps>::max();

// A directed link: the transmit side of one ICI port of `src`.
struct Link {
  int src = 0;
  int dst = 0;
  int axis = 0;
  int dir = +1;       // +1 or -1 along `axis`
  bool wrap = false;  // a wraparound link (crosses the slice edge)
};

// "4x4x8" -> {4,4,8}. Throws ConfigError on malformed text.
std::vector<int> parse_shape(const std::string& shape);

// Most slices of one multislice run.
inline constexpr int kMaxSlices = 4096;
// "4*16x16" -> "16x16" with num_slices = 4; "16x16" -> itself with 1.
// ConfigError for a malformed count.
std::string split_slices(const std::string& shape, int& num_slices);

// Whether an axis of this length wraps under `rule` ("length16",
// "multiple_of_4", "always", "never"). Throws ConfigError for an unknown
// rule.
bool axis_wraps(const std::string& rule, int length);

class Slice {
 public:
  // Throws ConfigError naming the shape and the violated rule when the
  // shape does not fit the generation: rank (torus2d = 2 axes, torus3d =
  // 3), more than max_chips, an axis length the rule does not allow
  // (length16: powers of two up to 16; multiple_of_4: 1, 2 or a multiple
  // of 4), fewer ports than 2 x rank, or a twist requested where the
  // generation or shape has none.
  Slice(const IciConfig& config, const std::string& shape, bool twisted = false);

  const IciConfig& config() const { return config_; }
  const std::string& shape() const { return shape_; }  // as given, "N*" included
  int rank() const { return static_cast<int>(dims_.size()); }
  int dim(int axis) const { return dims_[static_cast<std::size_t>(axis)]; }
  // Multislice: the number of slices (1 = one slice, no DCN), and the mesh
  // dimension index that stands for the DCN (rank(); not a slice axis: no
  // coordinate, no link). axis_length(a) is dim(a), or num_slices() for
  // the DCN dimension.
  int num_slices() const { return num_slices_; }
  int dcn_axis() const { return rank(); }
  bool is_dcn(int axis) const { return axis == rank(); }
  int axis_length(int axis) const { return is_dcn(axis) ? num_slices_ : dim(axis); }
  // Chips of all slices: num_chips() x num_slices().
  std::int64_t total_chips() const { return static_cast<std::int64_t>(num_chips_) * num_slices_; }
  const std::vector<int>& dims() const { return dims_; }
  int num_chips() const { return num_chips_; }
  bool wraps(int axis) const { return wraps_[static_cast<std::size_t>(axis)]; }
  bool twisted() const { return twisted_; }

  std::vector<int> coords(int chip) const;
  int coord(int chip, int axis) const {  // coords(chip)[axis] without allocating
    return (chip / stride_[static_cast<std::size_t>(axis)]) % dims_[static_cast<std::size_t>(axis)];
  }
  int chip_at(const std::vector<int>& coords) const;  // coords in range
  std::string chip_name(int chip) const;              // "(3,0,7)"

  int num_links() const { return static_cast<int>(links_.size()); }
  const Link& link(int id) const { return links_[static_cast<std::size_t>(id)]; }
  std::string link_name(int id) const;  // "(3,0)+x"
  // Link leaving `chip` along `axis` in direction `dir`, or -1 if none.
  int out_link(int chip, int axis, int dir) const;
  // Neighbour chips, one entry per existing out link (axis-major, + then
  // -). A chip of a length-2 wrapping axis lists the same neighbour twice:
  // two ports, two cables.
  std::vector<int> neighbours(int chip) const;

  // Dimension-order route (axes in index order; on a wrapping axis the
  // shorter way round, ties broken by the parity of the current coordinate
  // so that half of the half-way messages go each way). Returns link ids;
  // empty when src == dst.
  std::vector<int> route(int src, int dst) const;
  // The same route written into `path` (cleared first), which keeps its
  // capacity: no allocation once warm (simulators route every message).
  void route_into(int src, int dst, std::vector<int>& path) const;

  std::vector<int> host_block() const { return host_block_; }
  int host_of(int chip) const;
  int num_hosts() const;

 private:
  IciConfig config_;
  std::string shape_;
  std::vector<int> dims_;
  std::vector<int> stride_;  // chip index step of one unit along each axis
  std::vector<bool> wraps_;
  bool twisted_ = false;
  // twist_[a][b]: shift along axis b applied when crossing axis a's +wrap.
  std::vector<std::vector<int>> twist_;
  int num_chips_ = 1;
  int num_slices_ = 1;
  std::vector<Link> links_;
  std::vector<int> out_;  // chip * 2 * rank + axis * 2 + (dir > 0 ? 0 : 1)
  std::vector<int> host_block_;
};

}  // namespace tpusim::arch::ici
