// See vcd_sink.h.
#include "sim/engine/vcd_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <sysc/tracing/sc_tracing_ids.h>

#include "sim/results/results_writer.h"

namespace tpusim::sim {

namespace {
std::string with_vcd_suffix(const std::string& p) {
  return p.size() > 4 && p.compare(p.size() - 4, 4, ".vcd") == 0 ? p : p + ".vcd";
}
}  // namespace

VcdSink::VcdSink(const std::string& path) : path_(with_vcd_suffix(path)) {
  out_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_ < 0) throw ResultsError("cannot create the VCD file " + path_ + ": " + std::strerror(errno));
  std::string tmpl = (std::filesystem::temp_directory_path() / "tpusim-vcd-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) {
    const int e = errno;
    ::close(out_);
    throw ResultsError("cannot create a temporary folder for the VCD file " + path_ + ": " + std::strerror(e));
  }
  dir_ = tmpl;
  const std::string fifo = dir_ + "/trace.vcd";
  // Read end first (non-blocking open of a FIFO without a writer
  // succeeds), then our own write end so that the reader sees EOF only
  // once both it and SystemC's are closed; then reads may block.
  if (::mkfifo(fifo.c_str(), 0600) != 0 || (in_ = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0 ||
      (keep_ = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC)) < 0 ||
      ::fcntl(in_, F_SETFL, ::fcntl(in_, F_GETFL) & ~O_NONBLOCK) != 0) {
    const int e = errno;
    finish();
    throw ResultsError("cannot set up the VCD file " + path_ + ": " + std::strerror(e));
  }
  reader_ = std::thread([this] { copy(); });
  try {
    tf_ = sc_core::sc_create_vcd_trace_file((dir_ + "/trace").c_str());  // SystemC appends ".vcd"
    // SystemC's note on the time unit would name the FIFO, not the user's file.
    sc_core::sc_report_handler::set_actions(sc_core::SC_ID_TRACING_TIMESCALE_UNIT_, sc_core::SC_DO_NOTHING);
    tf_->set_time_unit(1, sc_core::SC_PS);
  } catch (...) {
    finish();  // no destructor runs after a throwing constructor: join the reader here
    throw;
  }
}

void VcdSink::copy() noexcept {
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(in_, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (!error_) error_ = errno;
      break;
    }
    // After a failed write keep draining the FIFO, so SystemC never blocks.
    for (ssize_t done = 0; done < n && !error_;) {
      const ssize_t w = ::write(out_, buf + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error_ = w < 0 ? errno : EIO;
        break;
      }
      done += w;
      written_ += static_cast<unsigned long long>(w);
    }
  }
}

void VcdSink::finish() noexcept {
  if (tf_) {
    sc_core::sc_close_vcd_trace_file(tf_);  // SystemC flushes and closes its end
    tf_ = nullptr;
  }
  if (keep_ >= 0) ::close(keep_);
  keep_ = -1;
  if (reader_.joinable()) reader_.join();
  if (in_ >= 0) ::close(in_);
  in_ = -1;
  if (out_ >= 0 && ::close(out_) != 0 && !error_) error_ = errno;
  out_ = -1;
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }
}

void VcdSink::close() {
  finish();
  if (error_)
    throw ResultsError("cannot write the VCD file " + path_ + " (" + std::to_string(written_) +
                       " bytes written): " + std::strerror(error_));
}

VcdSink::~VcdSink() { finish(); }

}  // namespace tpusim::sim
