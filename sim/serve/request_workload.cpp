// Request generation and trace reading (see request_workload.h).
#include "sim/serve/request_workload.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "sim/cli/cli.h"

namespace tpusim::sim::serve {

namespace {

std::uint64_t splitmix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// A number of the whole text, or an error naming it.
double number(const std::string& what, const std::string& text, const std::string& part) {
  try {
    std::size_t used = 0;
    const double v = std::stod(part, &used);
    if (used == part.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw UsageError(what + " '" + text + "': expected a number, found '" + part + "'");
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

constexpr double kMaxTokens = 1 << 24;

}  // namespace

Rng::Rng(std::uint64_t seed) {
  for (auto& s : s_) s = splitmix(seed);
}

std::uint64_t Rng::next() {
  const std::uint64_t r = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return r;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

std::int64_t LengthDist::sample(Rng& rng) const {
  switch (kind) {
    case Kind::fixed: return static_cast<std::int64_t>(a);
    case Kind::uniform: {
      const auto lo = static_cast<std::int64_t>(a), hi = static_cast<std::int64_t>(b);
      return lo + static_cast<std::int64_t>(rng.uniform() * static_cast<double>(hi - lo + 1));
    }
    case Kind::normal: {
      // Box-Muller; one of the pair is used so each sample takes two draws.
      const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      return std::max<std::int64_t>(1, std::llround(a + b * z));
    }
    case Kind::histogram: {
      const double u = rng.uniform();
      const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), u);
      return values[std::min<std::size_t>(static_cast<std::size_t>(it - cumulative.begin()), values.size() - 1)];
    }
  }
  return 1;
}

std::int64_t LengthDist::max_value() const {
  switch (kind) {
    case Kind::fixed: return static_cast<std::int64_t>(a);
    case Kind::uniform: return static_cast<std::int64_t>(b);
    case Kind::normal: return std::max<std::int64_t>(1, std::llround(a + 6 * b));
    case Kind::histogram: return *std::max_element(values.begin(), values.end());
  }
  return 1;
}

double LengthDist::mean() const {
  switch (kind) {
    case Kind::fixed: return a;
    case Kind::uniform: return (a + b) / 2;
    case Kind::normal: return a;
    case Kind::histogram: {
      double m = 0, prev = 0;
      for (std::size_t i = 0; i < values.size(); ++i) {
        m += static_cast<double>(values[i]) * (cumulative[i] - prev);
        prev = cumulative[i];
      }
      return m;
    }
  }
  return 1;
}

LengthDist parse_length_dist(const std::string& what, const std::string& text) {
  LengthDist d;
  d.text = text;
  const auto colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : text.substr(colon + 1);
  auto tokens = [&](const std::string& part) {
    const double v = number(what, text, part);
    if (v < 1 || v > kMaxTokens || v != std::floor(v))
      throw UsageError(what + " '" + text + "': a token count must be a whole number in [1, 2^24], found '" + part +
                       "'");
    return v;
  };
  const auto args = split(rest, ':');
  if (kind == "fixed" && args.size() == 1) {
    d.kind = LengthDist::Kind::fixed;
    d.a = d.b = tokens(args[0]);
  } else if (kind == "uniform" && args.size() == 2) {
    d.kind = LengthDist::Kind::uniform;
    d.a = tokens(args[0]);
    d.b = tokens(args[1]);
    if (d.b < d.a) throw UsageError(what + " '" + text + "': uniform:LO:HI needs LO <= HI");
  } else if (kind == "normal" && args.size() == 2) {
    d.kind = LengthDist::Kind::normal;
    d.a = tokens(args[0]);
    d.b = number(what, text, args[1]);
    if (d.b < 0 || d.a + 6 * d.b > kMaxTokens)
      throw UsageError(what + " '" + text + "': normal:MEAN:SD needs SD >= 0 and MEAN + 6 SD <= 2^24");
  } else if (kind == "hist" && !rest.empty()) {
    d.kind = LengthDist::Kind::histogram;
    std::vector<std::pair<std::string, std::string>> rows;  // value, weight (text)
    std::string src = what + " '" + text + "'";
    if (rest.find('=') == std::string::npos) {  // a file
      check_input_file(what, rest);
      std::ifstream in(rest);
      std::string line;
      int n = 0;
      while (std::getline(in, line)) {
        ++n;
        line = trim(line);
        if (line.empty() || line[0] == '#') continue;
        const auto f = split(line, ',');
        if (f.size() != 2)
          throw UsageError(rest + ":" + std::to_string(n) + ": expected 'tokens,weight', found '" + line + "'");
        if (n == 1 && f[0].find_first_not_of("0123456789. ") != std::string::npos) continue;  // header
        rows.emplace_back(trim(f[0]), trim(f[1]));
      }
      src = rest;
    } else {
      for (const auto& item : split(rest, ',')) {
        const auto eq = item.find('=');
        if (eq == std::string::npos) throw UsageError(src + ": expected TOKENS=WEIGHT, found '" + item + "'");
        rows.emplace_back(item.substr(0, eq), item.substr(eq + 1));
      }
    }
    if (rows.empty()) throw UsageError(src + ": the histogram has no rows");
    std::vector<std::pair<std::int64_t, double>> vw;
    double total = 0;
    for (const auto& [v, w] : rows) {
      const double wt = number(what, text, w);
      if (wt < 0) throw UsageError(src + ": weight must be >= 0, found '" + w + "'");
      vw.emplace_back(static_cast<std::int64_t>(tokens(v)), wt);
      total += wt;
    }
    if (!(total > 0)) throw UsageError(src + ": the weights sum to 0");
    if (!std::isfinite(total)) throw UsageError(src + ": the weights' sum is beyond a double's range");
    double acc = 0;
    for (const auto& [v, w] : vw) {
      acc += w;
      d.values.push_back(v);
      d.cumulative.push_back(acc / total);
    }
    d.cumulative.back() = 1.0;
  } else {
    throw UsageError(what + " '" + text +
                     "': expected fixed:N, uniform:LO:HI, normal:MEAN:SD, hist:V=W,... or hist:FILE.csv");
  }
  return d;
}

const char* arrival_name(Arrival a) {
  switch (a) {
    case Arrival::poisson: return "poisson";
    case Arrival::closed: return "closed";
    case Arrival::offline: return "offline";
    case Arrival::trace: return "trace";
  }
  return "?";
}

std::vector<Request> synthesize(const WorkloadSpec& spec) {
  // Separate streams for arrivals and lengths: changing the rate keeps
  // every request's lengths.
  Rng arrivals(spec.seed * 2 + 1), lengths(spec.seed * 2 + 2);
  std::vector<Request> out;
  out.reserve(static_cast<std::size_t>(spec.count));
  double t = 0;
  for (std::int64_t i = 0; i < spec.count; ++i) {
    Request r;
    r.id = i;
    if (spec.arrival == Arrival::poisson) {
      t += -std::log(1.0 - arrivals.uniform()) / spec.rate;
      r.arrival = t;
    }
    r.input = spec.input.sample(lengths);
    r.output = spec.output.sample(lengths);
    out.push_back(r);
  }
  return out;
}

namespace {

// An adapter id of a trace row: a whole number in [0, 2^20); empty: the
// base model without an adapter.
std::int64_t parse_adapter_cell(const std::string& where, const std::string& s) {
  if (s.empty()) return -1;
  std::int64_t a = -1;
  try {
    std::size_t used = 0;
    a = std::stoll(s, &used);
    if (used != s.size()) a = -1;
  } catch (const std::exception&) {
    a = -1;
  }
  if (a < 0 || a >= (std::int64_t{1} << 20))
    throw UsageError(where + ": adapter: expected an adapter id in [0, 2^20) or nothing, found '" + s + "'");
  return a;
}

}  // namespace

std::vector<Request> read_trace_csv(const std::string& path) {
  check_input_file("serve: --trace-csv", path);
  std::ifstream in(path);
  std::string line;
  std::vector<Request> out;
  int n = 0;
  bool header = false;
  std::size_t ncols = 3;  // 4 with the optional adapter column (LoRA)
  while (std::getline(in, line)) {
    ++n;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const auto f = split(line, ',');
    const std::string where = path + ":" + std::to_string(n);
    if (!header) {
      header = true;
      ncols = f.size();
      if ((f.size() != 3 && f.size() != 4) || trim(f[0]) != "arrival" || trim(f[1]) != "input_tokens" ||
          trim(f[2]) != "output_tokens" || (f.size() == 4 && trim(f[3]) != "adapter"))
        throw UsageError(where +
                         ": expected the header 'arrival,input_tokens,output_tokens' (and optionally "
                         "',adapter'), found '" +
                         line + "'");
      continue;
    }
    if (f.size() != ncols)
      throw UsageError(where + ": expected " + std::to_string(ncols) + " columns, found " + std::to_string(f.size()));
    static const char* const cols[] = {"arrival", "input_tokens", "output_tokens"};
    double v[3];
    for (int c = 0; c < 3; ++c) {
      const std::string s = trim(f[static_cast<std::size_t>(c)]);
      try {
        std::size_t used = 0;
        v[c] = std::stod(s, &used);
        if (used != s.size() || !std::isfinite(v[c])) throw std::invalid_argument(s);
      } catch (const std::exception&) {
        throw UsageError(where + ": " + cols[c] + ": expected a number, found '" + s + "'");
      }
      const bool count = c > 0;
      if (v[c] < (count ? 1 : 0) || v[c] > (count ? kMaxTokens : 1e9) || (count && v[c] != std::floor(v[c])))
        throw UsageError(where + ": " + cols[c] + ": expected " +
                         (count ? "a whole number of tokens in [1, 2^24]" : "seconds in [0, 1e9]") + ", found '" + s +
                         "'");
    }
    Request r;
    r.arrival = v[0];
    r.input = static_cast<std::int64_t>(v[1]);
    r.output = static_cast<std::int64_t>(v[2]);
    if (f.size() == 4) r.adapter = parse_adapter_cell(where, trim(f[3]));
    out.push_back(r);
  }
  if (!header) throw UsageError(path + ": empty trace (expected the header 'arrival,input_tokens,output_tokens')");
  if (out.empty()) throw UsageError(path + ": the trace has no requests");
  std::stable_sort(out.begin(), out.end(), [](const Request& a, const Request& b) { return a.arrival < b.arrival; });
  for (std::size_t i = 0; i < out.size(); ++i) out[i].id = static_cast<std::int64_t>(i);
  return out;
}

}  // namespace tpusim::sim::serve
