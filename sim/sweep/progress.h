// The progress display of a batch of child processes (sweeps,
// shard-search, serve's step simulations and requests): done/total, failures, rate, elapsed time and ETA, as a
// live bar on a terminal or a line every 5 s otherwise.
// Leaves out: per-child detail (the callers print failures themselves).
#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>

namespace tpusim::sim::sweep {

// "m:ss" or "h:mm:ss"; "?" for a negative or non-finite time.
std::string duration_text(double seconds);

class Progress {
 public:
  // `label` starts each line without a terminal ("sweep: ..."); `unit`
  // names what is counted ("points").
  Progress(std::ostream* os, bool tty, std::size_t total, std::size_t already, std::string label, std::string unit);

  void finished(bool ok);
  // Progress reported as a running count (serve's step simulations and
  // requests): `done` items finished in all, none failed.
  void set_done(std::size_t done);
  void tick() { show(false); }
  void end() { show(true); }

 private:
  using Clock = std::chrono::steady_clock;
  void show(bool final);

  std::ostream* os_;
  bool tty_;
  std::size_t total_, done_, session_ = 0, failed_ = 0;
  std::string label_, unit_;
  Clock::time_point start_, last_;
};

}  // namespace tpusim::sim::sweep
