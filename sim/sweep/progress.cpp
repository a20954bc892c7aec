// The progress display; see progress.h.
#include "sim/sweep/progress.h"

#include <cmath>
#include <cstdio>
#include <utility>

namespace tpusim::sim::sweep {

std::string duration_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = std::lround(s);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

Progress::Progress(std::ostream* os, bool tty, std::size_t total, std::size_t already, std::string label,
                   std::string unit)
    : os_(os),
      tty_(tty),
      total_(total),
      done_(already),
      label_(std::move(label)),
      unit_(std::move(unit)),
      start_(Clock::now()),
      last_(start_) {}

void Progress::finished(bool ok) {
  ++done_;
  ++session_;
  failed_ += ok ? 0 : 1;
  show(false);
}

void Progress::set_done(std::size_t done) {
  session_ += done > done_ ? done - done_ : 0;
  done_ = done;
  show(false);
}

void Progress::show(bool final) {
  if (!os_) return;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  const double now = since(start_);
  const double gap = since(last_);
  if (!final && gap < (tty_ ? 0.2 : 5.0)) return;
  last_ = Clock::now();
  const double rate = now > 0 ? static_cast<double>(session_) / now : 0;
  const double eta = rate > 0 ? static_cast<double>(total_ - done_) / rate : NAN;
  char stats[240];
  std::snprintf(stats, sizeof stats, "%zu/%zu %s, %zu failed, %.2f %s/s, elapsed %s, ETA %s", done_, total_,
                unit_.c_str(), failed_, rate, unit_.c_str(), duration_text(now).c_str(),
                done_ == total_ ? "0:00" : duration_text(eta).c_str());
  if (tty_) {
    constexpr int kWidth = 30;
    const int fill = total_ ? static_cast<int>(kWidth * done_ / total_) : kWidth;
    *os_ << "\r[" << std::string(fill, '#') << std::string(kWidth - fill, '.') << "] " << stats << "\x1b[K";
    if (final) *os_ << "\n";
  } else {
    *os_ << label_ << ": " << stats << "\n";
  }
  os_->flush();
}

}  // namespace tpusim::sim::sweep
