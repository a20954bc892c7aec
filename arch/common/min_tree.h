// A fixed set of slots 0..n-1, each holding a key or nothing, that finds
// the slot with the least (key, slot) in O(1) and updates one slot in
// O(log n) without allocating: a tournament tree (each inner node holds the
// winner of its two children). Ties between equal keys go to the lower
// slot, the order of a std::set<std::pair<double, slot>>, so it replaces
// one whose every slot appears at most once with the same order of events.
// A node is (key, slot) as one 128-bit unsigned number, the key's bits
// mapped so that unsigned order is the doubles' order (-0.0 taken as 0.0,
// as double comparison does): choosing a winner is one branch-free min.
// Leaves out: NaN keys; growing after construction (resize() clears).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace tpusim::arch {

class MinTree {
 public:
  static constexpr double kNone = std::numeric_limits<double>::infinity();

  explicit MinTree(std::size_t n = 0) { resize(n); }

  // n empty slots.
  void resize(std::size_t n) {
    leaves_ = 1;
    while (leaves_ < n) leaves_ *= 2;
    node_.assign(2 * leaves_, 0);
    for (std::size_t i = 0; i < leaves_; ++i) node_[leaves_ + i] = pack(kNone, i);
    for (std::size_t p = leaves_ - 1; p >= 1; --p) node_[p] = node_[2 * p];  // all kNone: the lowest slot wins
  }

  // Slot i holds `key` (kNone: nothing). The new entry climbs from its
  // leaf, meeting at each level the winner of the sibling subtree; it
  // stops at a node whose winner is unchanged, since a node's winner
  // depends only on its children's.
  void set(std::size_t i, double key) {
    std::size_t p = leaves_ + i;
    Node cur = pack(key, i);
    node_[p] = cur;
    while (p > 1) {
      const Node sib = node_[p ^ 1];
      cur = sib < cur ? sib : cur;
      p /= 2;
      if (node_[p] == cur) return;  // nothing above changes
      node_[p] = cur;
    }
  }
  void clear(std::size_t i) { set(i, kNone); }

  bool empty() const { return top_key() == kNone; }
  double top_key() const { return unpack(node_[1]); }                       // kNone when empty
  std::size_t top() const { return static_cast<std::uint32_t>(node_[1]); }  // meaningful unless empty
  double key(std::size_t i) const { return unpack(node_[leaves_ + i]); }

 private:
  __extension__ typedef unsigned __int128 Node;  // key bits (ordered) << 64 | slot
  static constexpr std::uint64_t kSign = 1ull << 63;
  static Node pack(double key, std::size_t slot) {
    key += 0.0;  // -0.0 -> 0.0
    std::uint64_t u;
    std::memcpy(&u, &key, sizeof u);
    u = (u & kSign) ? ~u : (u | kSign);  // negatives reversed below the positives
    return (static_cast<Node>(u) << 64) | slot;
  }
  static double unpack(Node n) {
    std::uint64_t u = static_cast<std::uint64_t>(n >> 64);
    u = (u & kSign) ? (u & ~kSign) : ~u;
    double key;
    std::memcpy(&key, &u, sizeof key);
    return key;
  }

  std::size_t leaves_ = 1;  // a power of two >= n
  std::vector<Node> node_;  // [1, leaves_): subtree winners; [leaves_, 2 leaves_): the slots
};

}  // namespace tpusim::arch
