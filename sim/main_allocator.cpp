// The executables' global operator new/delete: malloc and free, with the
// kernel asked for transparent huge pages (madvise MADV_HUGEPAGE) on every
// block of 4 MiB or more. A whole training step holds millions of
// instructions, their waits and their records in vectors of hundreds of
// MiB; with 4 KiB pages a fifth of such a run went to page faults and the
// rest paid TLB misses (the 405B v5p validation step, 2 layers: 11.2 s ->
// 8.6 s with glibc's own `glibc.malloc.hugetlb=1`, which this does without
// the environment variable; docs/performance.md). Only advice: where THP is
// off (`never`) nothing changes, and a failed madvise is ignored.
//
// Linked into tpusim and the benchmarks only (sim/CMakeLists.txt): the
// sanitizer builds keep their own allocator, which checks new/delete pairs.
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(__SANITIZE_HWADDRESS__)
#define TPUSIM_OWN_NEW 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer) || \
    __has_feature(hwaddress_sanitizer)
#define TPUSIM_OWN_NEW 0
#endif
#endif
#ifndef TPUSIM_OWN_NEW
#define TPUSIM_OWN_NEW 1
#endif

#if TPUSIM_OWN_NEW

namespace {

constexpr std::size_t kAdviseFrom = std::size_t{4} << 20;  // bytes
constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;

// The whole 2 MiB pages inside [p, p + n): the kernel backs those with
// huge pages on first touch. glibc serves such a block with mmap or, once
// its mmap threshold has risen (up to 32 MiB after a large free), from
// the heap, whose advised range then stays advised after free: more
// resident memory at worst, never a different result.
void advise_huge(void* p, std::size_t n) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t b = (a + kHugePage - 1) & ~(kHugePage - 1);
  const std::uintptr_t e = (a + n) & ~(kHugePage - 1);
  if (e > b) (void)madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);
}

// operator new's contract: retry through the new-handler, else bad_alloc.
void* allocate(std::size_t n) {
  if (n == 0) n = 1;
  for (;;) {
    if (void* p = std::malloc(n)) {
      if (n >= kAdviseFrom) advise_huge(p, n);
      return p;
    }
    const std::new_handler h = std::get_new_handler();
    if (h == nullptr) throw std::bad_alloc();
    h();
  }
}

}  // namespace

void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void* operator new(std::size_t n, const std::nothrow_t& /*tag*/) noexcept {
  try {
    return allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& /*tag*/) noexcept {
  try {
    return allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t /*n*/) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t /*n*/) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t& /*tag*/) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t& /*tag*/) noexcept { std::free(p); }

#endif  // TPUSIM_OWN_NEW
