// results.csv columns, appends, reads, merge and status; see
// results_table.h for the crash-safety argument.
#include "sim/sweep/results_table.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "sim/results/format.h"

namespace tpusim::sim::sweep {

namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_all(int fd, const std::string& s, const std::string& path) {
  // A regular file takes the whole buffer in one write(); the loop only
  // guards against a signal interrupting it.
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
}

void fsync_dir(const std::string& file) {
  const std::string dir = fs::absolute(file).parent_path().string();
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::string join(const std::vector<std::string>& v, std::size_t max = 20) {
  std::string s;
  for (std::size_t i = 0; i < v.size() && i < max; ++i) s += (i ? ", " : "") + v[i];
  if (v.size() > max) s += ", ... (" + std::to_string(v.size() - max) + " more)";
  return s;
}

std::string results_path_of(const std::string& input) {
  if (input.size() > 4 && input.compare(input.size() - 4, 4, ".csv") == 0) return input;
  return (fs::path(input) / "results.csv").string();
}

}  // namespace

std::vector<std::string> results_header(const SweepSpec& spec) {
  std::vector<std::string> h = {"point", "config_hash"};
  for (const auto& a : spec.axes) h.push_back(a);
  h.push_back("status");
  h.push_back("message");
  for (const auto& m : metric_columns(spec)) {
    if (m == "config_hash") continue;
    if (std::find(spec.axes.begin(), spec.axes.end(), m) != spec.axes.end()) continue;
    h.push_back(m);
  }
  for (const auto& d : spec.derived) h.push_back(d.name);
  return h;
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    std::string f = fields[i];
    for (char& c : f)
      if (c == '\n' || c == '\r') c = ' ';
    if (i) line += ',';
    line += csv_field(f);
  }
  line += '\n';
  return line;
}

std::vector<std::vector<std::string>> parse_csv(const std::string& text, std::string* torn) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  std::size_t record_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n') {
      row.push_back(std::move(field));
      field.clear();
      rows.push_back(std::move(row));
      row.clear();
      any = false;
      record_start = i + 1;
    } else if (c != '\r') {
      field += c;
      any = true;
    }
  }
  if (any || quoted) {
    if (torn) *torn = text.substr(record_start);
  }
  return rows;
}

ResultsFile read_results(const std::string& path, const std::vector<std::string>* expected_header) {
  ResultsFile r;
  std::error_code ec;
  if (!fs::exists(path, ec)) return r;
  std::string torn;
  auto rows = parse_csv(slurp(path), &torn);
  if (!torn.empty()) ++r.dropped;
  if (rows.empty()) return r;
  r.header = rows.front();
  if (expected_header && r.header != *expected_header) {
    Diagnostic d;
    d.file = path;
    d.line = 1;
    d.column = 1;
    d.expected = "the columns of this spec (" + join(*expected_header, 100) + ")";
    d.found = "(" + join(r.header, 100) + "); it was written by another spec: use a new --out";
    throw ConfigError(d);
  }
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].size() != r.header.size()) {
      ++r.dropped;
      continue;
    }
    r.rows.push_back(std::move(rows[i]));
  }
  return r;
}

void write_results_atomically(const std::string& path, const std::vector<std::string>& header,
                              const std::vector<std::vector<std::string>>& rows) {
  std::string text = csv_line(header);
  for (const auto& r : rows) text += csv_line(r);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + tmp + ": " + std::strerror(errno));
  try {
    write_all(fd, text, tmp);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::fsync(fd);
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  fsync_dir(path);
}

ResultsAppender::ResultsAppender(const std::string& path, const std::vector<std::string>& header) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  const off_t size = ::lseek(fd_, 0, SEEK_END);
  if (size == 0) {
    write_all(fd_, csv_line(header), path_);
    ::fsync(fd_);
    fsync_dir(path_);
  }
}

ResultsAppender::~ResultsAppender() {
  if (fd_ >= 0) ::close(fd_);
}

void ResultsAppender::append(const std::vector<std::string>& fields) {
  write_all(fd_, csv_line(fields), path_);
  if (::fsync(fd_) != 0) throw std::runtime_error("cannot fsync " + path_ + ": " + std::strerror(errno));
}

void sort_rows(const SweepSpec& spec, std::vector<std::vector<std::string>>& rows) {
  std::map<std::string, std::size_t> order;
  for (const auto& p : spec.points) order[p.id] = p.index;
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    auto ia = order.find(a[0]), ib = order.find(b[0]);
    const std::size_t x = ia == order.end() ? SIZE_MAX : ia->second;
    const std::size_t y = ib == order.end() ? SIZE_MAX : ib->second;
    return x < y;
  });
}

MergeReport merge_results(const SweepSpec& spec, const std::vector<std::string>& inputs, const std::string& out_dir) {
  MergeReport rep;
  rep.total = spec.points.size();
  const std::vector<std::string> header = results_header(spec);
  std::set<std::string> ids;
  for (const auto& p : spec.points) ids.insert(p.id);
  std::map<std::string, std::string> where;  // id -> input
  std::vector<std::vector<std::string>> rows;
  for (const auto& in : inputs) {
    const std::string path = results_path_of(in);
    if (!fs::exists(path)) {
      Diagnostic d;
      d.file = path;
      d.expected = "a sweep results file";
      d.found = "no such file";
      throw ConfigError(d);
    }
    ResultsFile f = read_results(path, &header);
    for (auto& r : f.rows) {
      const std::string& id = r[0];
      if (!ids.count(id)) {
        rep.unknown.push_back(id + " (in " + in + ")");
        continue;
      }
      auto [it, fresh] = where.emplace(id, in);
      if (!fresh) {
        rep.duplicates.push_back(id + " (in " + it->second + " and " + in + ")");
        continue;
      }
      rows.push_back(std::move(r));
    }
  }
  for (const auto& p : spec.points)
    if (!where.count(p.id)) rep.missing.push_back(p.id);
  if (!rep.duplicates.empty() || !rep.unknown.empty()) return rep;
  sort_rows(spec, rows);
  const std::size_t status_col = 2 + spec.axes.size();
  for (const auto& r : rows) rep.failed += r[status_col] != "ok" ? 1 : 0;
  rep.merged = rows.size();
  fs::create_directories(out_dir);
  write_results_atomically((fs::path(out_dir) / "results.csv").string(), header, rows);
  return rep;
}

StatusReport sweep_status(const SweepSpec& spec, const std::string& dir, int shards) {
  StatusReport st;
  st.total = spec.points.size();
  const std::vector<std::string> header = results_header(spec);
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::exists(fs::path(dir) / "results.csv", ec)) files.push_back((fs::path(dir) / "results.csv").string());
  std::vector<std::string> shard_files;
  if (fs::is_directory(dir, ec))
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.is_directory() && e.path().filename().string().rfind("shard-", 0) == 0 &&
          fs::exists(e.path() / "results.csv"))
        shard_files.push_back((e.path() / "results.csv").string());
  std::sort(shard_files.begin(), shard_files.end());
  files.insert(files.end(), shard_files.begin(), shard_files.end());
  if (shards <= 0) {
    std::ifstream sf(fs::path(dir) / "shards.txt");
    int n = 0;
    if (sf >> n && n > 0) shards = n;
  }
  std::map<std::string, int> count;
  std::map<std::string, bool> ok;
  const std::size_t status_col = 2 + spec.axes.size();
  for (const auto& f : files) {
    ResultsFile r = read_results(f, &header);
    st.files.push_back(f);
    for (const auto& row : r.rows) {
      if (++count[row[0]] == 2) st.duplicates.push_back(row[0]);
      ok[row[0]] = row[status_col] == "ok";
    }
  }
  for (const auto& p : spec.points) {
    auto it = count.find(p.id);
    if (it == count.end()) {
      st.missing.push_back(p.id);
      if (shards > 0) ++st.missing_by_shard[static_cast<int>(p.index % static_cast<std::size_t>(shards))];
    } else if (ok[p.id]) {
      ++st.ok;
    } else {
      ++st.failed;
    }
  }
  return st;
}

}  // namespace tpusim::sim::sweep
