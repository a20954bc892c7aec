// A multi-chip run's slice and device mesh: the slice shape (e.g. "4x4x4")
// checked against the generation's topology rules, and named mesh axes
// ("fsdp=16,tensor=4") mapped onto slice dimensions.
// Mapping rule: mesh axes are taken in the order given, each over the next
// consecutive slice dimensions whose lengths multiply to its size (so on
// 4x4x4, fsdp=16 takes x and y, tensor=4 takes z). An axis that needs only
// part of the next dimension takes its top part (every k-th chip, a
// stride-k part, arch::ici::SubAxis) and leaves the neighbouring chips to
// the axes after it: fsdp=64,tensor=4 on 16x16 gives fsdp x and y/4 (every
// fourth chip along y, a ring) and tensor y%4 (four neighbours, a line).
// This is how JAX's create_device_mesh with allow_split_physical_axes
// orders a split axis (the later, more communication-heavy axis gets the
// minor part). A size that fits neither whole dimensions nor such parts is
// an error; slice dimensions left over belong to no mesh axis. On a
// multislice ("N*SHAPE") the slice count is a dimension before the first
// (the DCN, outermost, as MaxText's dcn_* parallelism axes are):
// data=4,fsdp=256 on 4*16x16 puts data on the DCN; it is never split.
// Explicit placement: when every axis names its parts
// ("fsdp=64@x/2*y/2,tensor=4@x%2*y%2", workloads::MeshPart), those are
// used, checked against the slice (each part fits its dimension, the parts
// of a dimension are separate digits of its coordinate, the lengths of an
// axis's parts multiply to its size). That example is MaxText's
// hybrid_ring_64x4 mesh on a v6e-256 (a 2x2 square of neighbours per
// tensor group).
// Without --mesh, the axes are the physical dcn (multislice only), x, y
// (, z).
#pragma once

#include <string>

#include "arch/common/chip_config.h"
#include "arch/ici/collectives.h"
#include "arch/ici/topology.h"
#include "workloads/ir/mesh.h"

namespace tpusim::sim {

// Maps the named axes (workloads::parse_mesh) onto the slice's dimensions
// (rule above); std::invalid_argument naming the axis and the slice when a
// size does not land on whole dimensions or parts of them, or a placement
// does not fit.
arch::ici::Mesh map_mesh(const arch::ici::Slice& slice, const workloads::MeshSpec& mesh);

// The physical mesh of a slice: x, y (, z) with the slice's dimensions, the
// mesh of a multi-chip run without --mesh.
workloads::MeshSpec physical_mesh(const arch::ici::Slice& slice);

// The mesh a multi-chip run's ICI network uses: `mesh` mapped onto the
// slice (map_mesh), or the slice's physical axes when it is empty.
arch::ici::Mesh network_mesh(const arch::ici::Slice& slice, const workloads::MeshSpec& mesh);

// --all-chips simulates every chip's compute, so a run costs about the
// chip count times a shared run; beyond this many chips it is refused.
inline constexpr int kMaxAllChips = 64;
// arch::ConfigError naming the slice, its chip count and the limit when
// `chips` exceeds kMaxAllChips.
void check_all_chips(const std::string& shape, int chips);

}  // namespace tpusim::sim
