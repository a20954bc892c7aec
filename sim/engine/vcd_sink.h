// The VCD file of a run (--vcd), written so that a write error is seen.
// SystemC's VCD writer prints through a FILE* it never checks: on a full
// disk the file is silently truncated. Here SystemC writes into a FIFO in a
// private temporary folder instead, and a reader thread copies every byte
// into the user's file with checked write(2) calls and a checked close, so
// a short or failed write ends the run with an error naming the path.
// Leaves out: fsync (the data reaches the page cache, as every other
// result file's does).
#pragma once

#include <string>
#include <thread>

#include <systemc>

namespace tpusim::sim {

class VcdSink {
 public:
  // Creates `path` (".vcd" appended unless it ends so), the FIFO and the
  // reader thread. ResultsError naming the path when it cannot be created.
  explicit VcdSink(const std::string& path);
  // Closes the trace file if close() was not reached (an exception), then
  // joins the reader; never throws.
  ~VcdSink();
  VcdSink(const VcdSink&) = delete;
  VcdSink& operator=(const VcdSink&) = delete;

  // The trace file SystemC writes into (valid until close()).
  sc_core::sc_trace_file* trace_file() const { return tf_; }
  // Closes the trace file, waits until every byte is in the user's file
  // and throws ResultsError naming the path if any write failed.
  void close();
  const std::string& path() const { return path_; }

 private:
  void finish() noexcept;
  void copy() noexcept;

  std::string path_;  // the user's file
  std::string dir_;   // private folder holding the FIFO
  int out_ = -1;      // the user's file
  int in_ = -1;       // FIFO, read end
  int keep_ = -1;     // FIFO, a write end held so that reads block until close()
  sc_core::sc_trace_file* tf_ = nullptr;
  std::thread reader_;
  int error_ = 0;  // first errno of a failed write or close
  unsigned long long written_ = 0;
};

}  // namespace tpusim::sim
