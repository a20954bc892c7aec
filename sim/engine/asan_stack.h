// AddressSanitizer and SystemC's stack switching (issue 17, item 12).
// SystemC runs its threads on coroutine stacks (QuickThreads) and switches
// between them and the main stack without ASan's fiber annotations
// (Debian's libsystemc is not built with ASan;
// https://github.com/google/sanitizers/issues/189). After sc_start() ASan
// has lost the main stack's bounds, so a C++ throw on the main stack
// (__asan_handle_no_return: "ASan is ignoring requested
// __asan_handle_no_return ... False positive error reports may follow")
// leaves the poison of the frames it unwinds, and the next no-return call
// reports a false stack-buffer-overflow or stack-use-after-scope.
// restore_main_stack_bounds() tells ASan the main thread's real stack
// again through the documented fiber API (a switch from the main stack to
// itself); the engine calls it after every sc_start(), so its error paths
// (time limit, VCD write error) run sanitizer-checked. A no-op without
// ASan.
// Leaves out: throws inside SystemC threads (on the coroutine stacks);
// the engine's threads throw nothing a user can cause.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>

#include <cstddef>
#endif

namespace tpusim::sim {

#if defined(__SANITIZE_ADDRESS__)
inline void restore_main_stack_bounds() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* bottom = nullptr;
  std::size_t size = 0;
  const int rc = pthread_attr_getstack(&attr, &bottom, &size);
  pthread_attr_destroy(&attr);
  if (rc != 0) return;
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, bottom, size);
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
}
#else
inline void restore_main_stack_bounds() {}
#endif

}  // namespace tpusim::sim
