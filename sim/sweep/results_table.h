// results.csv of a sweep: its columns, crash-safe appends, reading back
// (dropping a torn last line), and the merge of shard outputs.
// Crash safety rests on two POSIX facts: a single write() to an O_APPEND
// descriptor lands as one piece at the end of the file, and fsync() makes
// it durable. A row is either entirely in the file or (after a crash in
// the middle of write or before fsync) at worst a torn last line without
// its '\n', which read_results() drops. Whole-file rewrites (compaction,
// merge) go to a temporary file that is renamed over the old one.
// Leaves out: locking between two sweeps writing the same directory (the
// user must not run the same --out twice at once).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "sim/sweep/sweep_spec.h"

namespace tpusim::sim::sweep {

// point, config_hash, <axes>, status, message, <summary.csv metrics except
// config_hash and names already taken by an axis>, <derived>.
std::vector<std::string> results_header(const SweepSpec& spec);

// One CSV line (RFC 4180 quoting, '\n' ended). Line breaks inside fields
// are replaced by spaces first, so that a row is always one line.
std::string csv_line(const std::vector<std::string>& fields);

// RFC 4180 records of `text` (quoted fields may span lines). A last record
// without its terminating '\n' is returned in `torn` instead of the result.
std::vector<std::vector<std::string>> parse_csv(const std::string& text, std::string* torn = nullptr);

struct ResultsFile {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each as wide as the header
  std::size_t dropped = 0;                     // torn or malformed lines dropped
};

// Reads `path`. Missing file: empty result. Throws ConfigError when the
// header differs from `expected_header` (when given), naming both.
ResultsFile read_results(const std::string& path, const std::vector<std::string>* expected_header = nullptr);

// Writes header + rows to a temporary file, fsyncs and renames it over
// `path`.
void write_results_atomically(const std::string& path, const std::vector<std::string>& header,
                              const std::vector<std::vector<std::string>>& rows);

// An open results.csv that rows are appended to as points finish.
class ResultsAppender {
 public:
  // Opens (creating if needed) `path` for appending; writes `header` first
  // if the file is empty.
  ResultsAppender(const std::string& path, const std::vector<std::string>& header);
  ~ResultsAppender();
  ResultsAppender(const ResultsAppender&) = delete;
  ResultsAppender& operator=(const ResultsAppender&) = delete;
  // One write() and one fsync(); throws std::runtime_error on failure.
  void append(const std::vector<std::string>& fields);

 private:
  int fd_ = -1;
  std::string path_;
};

// Sorts rows into spec order (rows of ids the spec does not know go last,
// in their original order).
void sort_rows(const SweepSpec& spec, std::vector<std::vector<std::string>>& rows);

struct MergeReport {
  std::size_t total = 0;                // points of the spec
  std::size_t merged = 0;               // rows written
  std::size_t failed = 0;               // rows with status error
  std::vector<std::string> missing;     // point ids of the spec with no row
  std::vector<std::string> duplicates;  // "id (in A and B)"
  std::vector<std::string> unknown;     // "id (in A)" not a point of the spec
};

// Reads DIR/results.csv (or the file itself when an input is a .csv) of
// every input and, when there are no duplicates or unknown ids, writes the
// rows in spec order to out_dir/results.csv. Returns what it found; writes
// nothing when duplicates or unknown is non-empty.
MergeReport merge_results(const SweepSpec& spec, const std::vector<std::string>& inputs, const std::string& out_dir);

struct StatusReport {
  std::size_t total = 0, ok = 0, failed = 0;
  std::vector<std::string> missing;             // point ids
  std::vector<std::string> duplicates;          // ids with more than one row
  std::map<int, std::size_t> missing_by_shard;  // shard -> missing points (when shards is > 0)
  std::vector<std::string> files;               // results files read
};

// Looks at dir/results.csv and dir/shard-*/results.csv. With shards > 0
// (or a dir/shards.txt written by `tpusim sweep slurm`) it also says which
// shards still have missing points.
StatusReport sweep_status(const SweepSpec& spec, const std::string& dir, int shards = 0);

}  // namespace tpusim::sim::sweep
