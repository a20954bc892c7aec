// The instruction stream a TensorCore's scalar sequencer issues: coarse
// instructions at the granularity where the hardware is regular (a matmul
// block on one MXU, a vector stream over a VMEM tile, one DMA descriptor).
// Lowering (sim/lowering) produces a Program; the chip model executes it.
// Each instruction names the instructions it must wait for (semaphores in
// the real machine); the sequencer issues in program order and blocks on
// those waits, the units execute their queues in order and overlap each
// other. Scalar work is one issue slot per instruction plus the
// `scalar_cycles` an instruction carries. Leaves out: instruction fetch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "arch/common/chunked_vector.h"
#include "arch/common/dtype.h"

namespace tpusim::arch {

enum class UnitKind : std::uint8_t { dma, mxu, vpu, xlu, ici };

inline const char* unit_kind_name(UnitKind k) {
  switch (k) {
    case UnitKind::dma: return "dma";
    case UnitKind::mxu: return "mxu";
    case UnitKind::vpu: return "vpu";
    case UnitKind::xlu: return "xlu";
    case UnitKind::ici: return "ici";
  }
  return "?";
}

enum class MemSpace : std::uint8_t { hbm, vmem, smem, cmem, ici, host };

inline const char* mem_space_name(MemSpace s) {
  switch (s) {
    case MemSpace::hbm: return "hbm";
    case MemSpace::vmem: return "vmem";
    case MemSpace::smem: return "smem";
    case MemSpace::cmem: return "cmem";
    case MemSpace::ici: return "ici";
    case MemSpace::host: return "host";
  }
  return "?";
}

// A[m,k] @ B[k,n] on one MXU: the weight tiles of B are loaded in turn and
// the m rows of A stream through each; f32 accumulation.
struct MxuWork {
  std::int64_t m = 0, k = 0, n = 0;
  DType dtype = DType::bf16;
  bool sparse = false;  // k is the compressed K of an N:M sparse operand
};

// A vector stream over `elements` elements: per element `alu_ops` ALU
// operations and `transcendental_ops` transcendental ones, reading `inputs`
// operands from VMEM and writing `outputs`.
struct VpuWork {
  std::uint64_t elements = 0;
  DType dtype = DType::bf16;
  double alu_ops = 1;
  double transcendental_ops = 0;
  int inputs = 1;
  int outputs = 1;
};

enum class XluOp : std::uint8_t { reduce, transpose, permute };

// `cols`: the extent of the last dimension (a reduction's row length);
// 0 = one vreg's lanes, i.e. every 128 elements reduced on their own.
struct XluWork {
  XluOp op = XluOp::reduce;
  std::uint64_t elements = 0;
  DType dtype = DType::bf16;
  std::uint64_t cols = 0;
};

// A strided copy: `rows` rows of `row_bytes`, rows `src_stride` and
// `dst_stride` bytes apart (a contiguous copy has rows = 1).
struct DmaWork {
  MemSpace src = MemSpace::hbm;
  MemSpace dst = MemSpace::vmem;
  std::uint64_t src_addr = 0;
  std::uint64_t dst_addr = 0;
  std::uint64_t row_bytes = 0;
  std::uint64_t rows = 1;
  std::uint64_t src_stride = 0;
  std::uint64_t dst_stride = 0;
  std::uint64_t bytes() const { return row_bytes * rows; }
  // The HBM traffic: the bytes once per HBM end (an HBM-to-HBM copy reads
  // and writes them).
  std::uint64_t hbm_bytes() const {
    return static_cast<std::uint64_t>((src == MemSpace::hbm) + (dst == MemSpace::hbm)) * bytes();
  }
};

// Who takes part in a collective: the named mesh axes of the slice it
// runs over, and for a collective_permute the (source, destination) pairs.
// Kept once per program (Program::groups) rather than in the instruction,
// so that Instr holds no heap memory.
struct CollectiveGroup {
  std::vector<std::string> axes;
  std::vector<std::pair<int, int>> pairs;
};

// A collective over named mesh axes of the slice, executed by the ICI
// network with every chip taking part (SPMD). `bytes` is per chip, on the
// larger side of the collective (all_gather output, reduce_scatter input,
// all_reduce and all_to_all buffer). `kind` is an arch::ici::CollectiveKind.
// `dtype`: element type of the buffer, which sets how many elements a
// reduction adds on the VPU. `group`: its CollectiveGroup in
// Program::groups.
// Fields are ordered so that the small ones share one word: a program
// holds millions of instructions, and the largest alternative sets the
// size of every Instr.
struct IciWork {
  std::uint8_t kind = 0;
  DType dtype = DType::bf16;
  int root = 0;
  std::uint64_t bytes = 0;
  std::uint32_t group = 0;
};

using InstrId = std::uint32_t;

// 88 bytes (the small fields first, packed into 24), and trivially
// copyable: a large training step lowers to millions of instructions, so
// their size and the cost of moving them are much of the lowering's time
// (allocating and growing the program).
struct Instr {
  UnitKind unit = UnitKind::vpu;
  std::uint16_t core = 0;   // TensorCore that issues it
  std::int16_t index = -1;  // which MXU/XLU/DMA engine; -1 = next in turn
  std::uint32_t op = 0;     // workload operator it belongs to (for reports)
  // Cycles the scalar core spends before issuing this instruction, once its
  // waits are over (a pipeline step's bookkeeping: semaphores, DMA
  // descriptors, address arithmetic). The sequencer issues nothing else
  // meanwhile.
  std::uint32_t scalar_cycles = 0;
  // The earlier instructions that must complete first, encoded in
  // Program::dep_pool[dep_begin, dep_begin + dep_count) (entries, not ids:
  // runs are two entries; Program::deps() decodes). One pool for the
  // whole program instead of a vector per instruction: a training step has
  // millions of instructions, and their allocations were much of its time.
  std::uint32_t dep_count = 0;
  std::uint32_t dep_begin = 0;
  std::variant<MxuWork, VpuWork, XluWork, DmaWork, IciWork> work;
};
static_assert(sizeof(void*) != 8 || sizeof(Instr) <= 88, "Instr grew: see the comment above it");
static_assert(std::is_trivially_copyable_v<Instr>, "Instr must stay trivially copyable: see the comment above it");

// Program::dep_pool holds an instruction's waits run-length encoded: a
// run of kDepRunMin or more consecutive ids (the pieces of a split DMA,
// the instructions of one step) is two entries, its first id with
// kDepRunBit set and its length; any other id is itself. A training step's
// waits took 6x the entries unencoded (Qwen3-235B on v7, one layer: 124 M
// against 20 M), half a gigabyte the kernel faulted in for nothing.
inline constexpr InstrId kDepRunBit = InstrId{1} << 31;
inline constexpr std::uint32_t kDepRunMin = 3;

// Walks one instruction's encoded waits, yielding every id in order.
class DepIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = InstrId;
  using difference_type = std::ptrdiff_t;
  using pointer = const InstrId*;
  using reference = InstrId;

  DepIterator() = default;
  explicit DepIterator(const InstrId* p) : p_(p) {}
  InstrId operator*() const { return (*p_ & kDepRunBit) != 0 ? (*p_ & ~kDepRunBit) + offset_ : *p_; }
  DepIterator& operator++() {
    if ((*p_ & kDepRunBit) == 0) {
      ++p_;
    } else if (++offset_ == p_[1]) {
      p_ += 2;
      offset_ = 0;
    }
    return *this;
  }
  DepIterator operator++(int) {
    DepIterator t = *this;
    ++*this;
    return t;
  }
  bool operator==(const DepIterator& o) const { return p_ == o.p_ && offset_ == o.offset_; }
  bool operator!=(const DepIterator& o) const { return !(*this == o); }

 private:
  const InstrId* p_ = nullptr;
  std::uint32_t offset_ = 0;  // position inside a run
};

// An instruction's waits, for range-for.
struct DepRange {
  const InstrId* first = nullptr;
  const InstrId* last = nullptr;
  DepIterator begin() const { return DepIterator(first); }
  DepIterator end() const { return DepIterator(last); }
  bool empty() const { return first == last; }
};

// A lowered workload: instructions in issue order (each core issues its own
// instructions in this order); deps always point backwards.
struct Program {
  ChunkedVector<Instr> instrs;        // chunked: growing never copies it (chunked_vector.h)
  std::vector<InstrId> dep_pool;      // every instruction's waits, back to back, encoded (DepIterator)
  std::vector<std::string> op_names;  // indexed by Instr::op
  std::vector<CollectiveGroup> groups;  // indexed by IciWork::group
  int cores = 1;

  // Appends `in`, waiting for `deps` (any range of InstrId, each below
  // kDepRunBit); returns its id.
  template <typename Range>
  InstrId add(Instr in, const Range& deps) {
    if (instrs.size() >= kDepRunBit) throw std::length_error("program has more than 2^31 instructions");
    const std::size_t begin = dep_pool.size();
    for (auto it = std::begin(deps), end = std::end(deps); it != end;) {
      const InstrId first = *it;
      if (first >= kDepRunBit) {
        dep_pool.resize(begin);
        throw std::invalid_argument("instruction waits for id " + std::to_string(first) + ", beyond 2^31");
      }
      std::uint32_t n = 1;
      auto next = std::next(it);
      for (; next != end && first + n < kDepRunBit && *next == first + n; ++next) ++n;
      if (n >= kDepRunMin) {
        dep_pool.push_back(first | kDepRunBit);
        dep_pool.push_back(n);
      } else {
        for (; it != next; ++it) dep_pool.push_back(*it);
      }
      it = next;
    }
    if (dep_pool.size() > std::numeric_limits<std::uint32_t>::max())
      throw std::length_error("program has more than 2^32 dependencies");
    in.dep_begin = static_cast<std::uint32_t>(begin);
    in.dep_count = static_cast<std::uint32_t>(dep_pool.size() - begin);
    instrs.push_back(in);
    return static_cast<InstrId>(instrs.size() - 1);
  }
  InstrId add(Instr in, std::initializer_list<InstrId> deps) {
    return add<std::initializer_list<InstrId>>(in, deps);
  }
  InstrId add(Instr in) { return add(in, std::initializer_list<InstrId>{}); }
  DepRange deps(const Instr& in) const {
    const InstrId* b = dep_pool.data() + in.dep_begin;
    return {b, b + in.dep_count};
  }
  DepRange deps(InstrId id) const { return deps(instrs[id]); }
  // Adds a collective's group; returns its IciWork::group.
  std::uint32_t add_group(CollectiveGroup g) {
    groups.push_back(std::move(g));
    return static_cast<std::uint32_t>(groups.size() - 1);
  }
  const CollectiveGroup& group(const IciWork& w) const { return groups.at(w.group); }
};

// When each instruction ran, in cycles of the TensorCore clock.
struct InstrRecord {
  std::uint64_t issue = 0;
  std::uint64_t start = 0;
  std::uint64_t finish = 0;
  std::int16_t unit_index = 0;
};

}  // namespace tpusim::arch
