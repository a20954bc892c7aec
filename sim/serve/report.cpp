// Serving statistics and result files (see report.h).
#include "sim/serve/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "sim/cli/cli.h"

namespace tpusim::sim::serve {

namespace {

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

const char* const kMetrics[] = {"ttft", "tpot", "itl", "e2e"};
const char* const kStats[] = {"p50", "p90", "p99", "mean"};

double stat(const Stats& s, const std::string& which) {
  if (which == "p50") return s.p50;
  if (which == "p90") return s.p90;
  if (which == "p99") return s.p99;
  return s.mean;
}

// A CSV field, quoted when it holds a comma, quote or newline.
std::string field(const std::string& v) {
  if (v.find_first_of(",\"\n") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

void check_stream(std::ofstream& f, const std::string& path) {
  if (!f) throw UsageError("serve: cannot write " + path);
}

}  // namespace

Slo parse_slo(const std::string& text) {
  Slo slo;
  slo.text = text;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const auto us = key.find('_');
    bool known = false;
    if (us != std::string::npos)
      for (const char* m : kMetrics)
        for (const char* s : kStats) known = known || key == std::string(m) + "_" + s;
    if (eq == std::string::npos || !known)
      throw UsageError("serve: --slo '" + text + "': expected METRIC_STAT=TIME with METRIC ttft, tpot, itl or e2e " +
                       "and STAT p50, p90, p99 or mean (e.g. ttft_p99=2s), found '" + item + "'");
    const std::string v = item.substr(eq + 1);
    double scale = 0;
    std::size_t cut = 0;
    if (v.size() > 2 && v.compare(v.size() - 2, 2, "ms") == 0) {
      scale = 1e-3;
      cut = 2;
    } else if (v.size() > 2 && v.compare(v.size() - 2, 2, "us") == 0) {
      scale = 1e-6;
      cut = 2;
    } else if (v.size() > 1 && v.back() == 's') {
      scale = 1;
      cut = 1;
    }
    double x = -1;
    try {
      std::size_t used = 0;
      const std::string n = v.substr(0, v.size() - cut);
      x = std::stod(n, &used);
      if (used != n.size()) x = -1;
    } catch (const std::exception&) {
    }
    if (scale == 0 || !(x > 0) || !std::isfinite(x))
      throw UsageError("serve: --slo '" + text + "': " + key + ": expected a time > 0 with a unit (s, ms, us), found '" +
                       v + "'");
    slo.limits[key] = x * scale;
  }
  if (slo.limits.empty()) throw UsageError("serve: --slo '" + text + "': no limits given");
  return slo;
}

Stats stats_of(std::vector<double> v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  auto rank = [&](double p) {
    const auto k = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
    return v[std::min(v.size(), std::max<std::size_t>(1, k)) - 1];
  };
  s.p50 = rank(50);
  s.p90 = rank(90);
  s.p99 = rank(99);
  s.max = v.back();
  return s;
}

double Summary::metric(const std::string& key) const {
  const auto us = key.find('_');
  const std::string m = key.substr(0, us), w = key.substr(us + 1);
  const Stats& s = m == "ttft" ? ttft : m == "tpot" ? tpot : m == "itl" ? itl : e2e;
  return stat(s, w);
}

bool Summary::meets(const Slo& slo) const {
  for (const auto& [k, v] : slo.limits)
    if (metric(k) > v) return false;
  return true;
}

Summary summarize(const ServeResult& r, const Slo& slo, int replicas) {
  Summary s;
  s.requests = static_cast<std::int64_t>(r.requests.size());
  std::vector<double> ttft, tpot, itl, e2e, queue;
  double first = 1e300, last_arrival = 0, in_tok = 0, out_tok = 0;
  std::int64_t good = 0;
  for (const auto& q : r.requests) {
    first = std::min(first, q.req.arrival);
    last_arrival = std::max(last_arrival, q.req.arrival);
    in_tok += static_cast<double>(q.req.input);
    out_tok += static_cast<double>(q.req.output);
    const double t = q.first_token - q.req.arrival, e = q.finish - q.req.arrival;
    const double p = q.req.output > 1 ? (q.finish - q.first_token) / static_cast<double>(q.req.output - 1) : 0;
    ttft.push_back(t);
    e2e.push_back(e);
    queue.push_back(q.scheduled - q.req.arrival);
    if (q.req.output > 1) tpot.push_back(p);
    itl.insert(itl.end(), q.itl.begin(), q.itl.end());
    s.preemptions += q.preemptions;
    bool ok = true;
    for (const auto& [k, v] : slo.limits) {
      const std::string m = k.substr(0, k.find('_'));
      if ((m == "ttft" && t > v) || (m == "tpot" && p > v) || (m == "e2e" && e > v)) ok = false;
      if (m == "itl")
        for (double g : q.itl) ok = ok && g <= v;
    }
    good += ok ? 1 : 0;
  }
  s.duration = r.end_time - (r.requests.empty() ? 0 : first);
  if (s.duration > 0) {
    s.request_rate = static_cast<double>(s.requests) / s.duration;
    s.input_tps = in_tok / s.duration;
    s.output_tps = out_tok / s.duration;
    s.goodput = static_cast<double>(good) / s.duration;
  }
  s.good_fraction = s.requests ? static_cast<double>(good) / static_cast<double>(s.requests) : 1;
  s.ttft = stats_of(ttft);
  s.tpot = stats_of(tpot);
  s.itl = stats_of(itl);
  s.e2e = stats_of(e2e);
  s.queue = stats_of(queue);
  s.steps = static_cast<std::int64_t>(r.steps.size());
  if (r.end_time > 0 && r.kv_capacity > 0) {
    s.kv_util_mean = r.kv_pages_integral / (r.end_time * static_cast<double>(r.kv_capacity) * replicas);
    s.kv_util_peak = static_cast<double>(r.kv_pages_peak) / static_cast<double>(r.kv_capacity);
  }
  if (r.end_time > 0) {
    s.mean_in_system = r.in_system_integral / r.end_time;
    s.mean_waiting = r.waiting_integral / r.end_time;
  }
  s.arrival_rate = last_arrival > 0 ? static_cast<double>(s.requests) / last_arrival : 0;
  return s;
}

void write_serve_results(const std::string& dir, const ServeResult& r, const Summary& s,
                         const std::vector<std::pair<std::string, std::string>>& setup, bool trace) {
  {
    const std::string p = dir + "/requests.csv";
    std::ofstream f(p);
    f << "id,replica,arrival_s,scheduled_s,first_token_s,finish_s,input_tokens,output_tokens,ttft_s,tpot_s,"
         "itl_p50_s,itl_p99_s,itl_max_s,e2e_s,preemptions,adapter\n";
    for (const auto& q : r.requests) {
      const Stats g = stats_of(q.itl);
      const double tpot =
          q.req.output > 1 ? (q.finish - q.first_token) / static_cast<double>(q.req.output - 1) : 0;
      f << q.req.id << "," << q.replica << "," << num(q.req.arrival) << "," << num(q.scheduled) << ","
        << num(q.first_token) << "," << num(q.finish) << "," << q.req.input << "," << q.req.output << ","
        << num(q.first_token - q.req.arrival) << "," << num(tpot) << "," << num(g.p50) << "," << num(g.p99) << ","
        << num(g.max) << "," << num(q.finish - q.req.arrival) << "," << q.preemptions << ","
        << (q.req.adapter < 0 ? std::string() : std::to_string(q.req.adapter)) << "\n";
    }
    check_stream(f, p);
  }
  {
    const std::string p = dir + "/steps.csv";
    std::ofstream f(p);
    f << "step,replica,start_s,duration_s,prefill_tokens,prefill_seqs,decode_seqs,mean_context,running,waiting,"
         "kv_pages_used,kv_pages_total,preempted,decode_tokens_out,adapters,adapter_loads,prefill_prefix,"
         "prefill_chunks\n";
    std::size_t i = 0;
    for (const auto& st : r.steps)
      f << i++ << "," << st.replica << "," << num(st.start) << "," << num(st.duration) << "," << st.prefill_tokens
        << "," << st.prefill_seqs << "," << st.decode_seqs << "," << num(st.mean_context) << "," << st.running << ","
        << st.waiting << "," << st.kv_pages_used << "," << r.kv_capacity << "," << st.preempted << ","
        << st.decode_tokens_out << "," << st.adapters << "," << st.adapter_loads << "," << num(st.prefill_prefix) << ","
        << num(st.prefill_chunks) << "\n";
    check_stream(f, p);
  }
  {
    const std::string p = dir + "/summary.csv";
    std::ofstream f(p);
    std::vector<std::pair<std::string, std::string>> cols = setup;
    auto add = [&](const std::string& k, double v) { cols.emplace_back(k, num(v)); };
    add("requests", static_cast<double>(s.requests));
    add("duration_s", s.duration);
    add("throughput_rps", s.request_rate);
    add("input_tps", s.input_tps);
    add("output_tps", s.output_tps);
    auto st = [&](const std::string& m, const Stats& x) {
      add(m + "_mean_s", x.mean);
      add(m + "_p50_s", x.p50);
      add(m + "_p90_s", x.p90);
      add(m + "_p99_s", x.p99);
    };
    st("ttft", s.ttft);
    st("tpot", s.tpot);
    st("itl", s.itl);
    st("e2e", s.e2e);
    st("queue", s.queue);
    add("goodput_rps", s.goodput);
    add("good_fraction", s.good_fraction);
    add("kv_util_mean", s.kv_util_mean);
    add("kv_util_peak", s.kv_util_peak);
    add("kv_pages", static_cast<double>(r.kv_capacity));
    add("preemptions", static_cast<double>(s.preemptions));
    add("steps", static_cast<double>(s.steps));
    add("mean_in_system", s.mean_in_system);
    add("mean_waiting", s.mean_waiting);
    for (std::size_t i = 0; i < cols.size(); ++i) f << (i ? "," : "") << field(cols[i].first);
    f << "\n";
    for (std::size_t i = 0; i < cols.size(); ++i) f << (i ? "," : "") << field(cols[i].second);
    f << "\n";
    check_stream(f, p);
  }
  if (trace) {
    // Chrome trace events (Perfetto): pid 1 the engine (one thread per
    // replica), pid 2 the requests (one thread each: queued, prefill, decode).
    const std::string p = dir + "/trace.json";
    std::ofstream f(p);
    f << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
    f << "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"engine\"}},\n";
    f << "{\"ph\":\"M\",\"pid\":2,\"name\":\"process_name\",\"args\":{\"name\":\"requests\"}}";
    auto us = [](double t) { return num(t * 1e6); };
    for (const auto& st : r.steps)
      f << ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":" << st.replica << ",\"ts\":" << us(st.start)
        << ",\"dur\":" << us(st.duration) << ",\"name\":\"step P" << st.prefill_tokens << " D" << st.decode_seqs
        << "\",\"args\":{\"prefill_tokens\":" << st.prefill_tokens << ",\"decode_seqs\":" << st.decode_seqs
        << ",\"mean_context\":" << num(st.mean_context) << ",\"prefill_prefix\":" << num(st.prefill_prefix)
        << ",\"prefill_chunks\":" << num(st.prefill_chunks) << ",\"kv_pages_used\":" << st.kv_pages_used << "}}";
    for (const auto& q : r.requests) {
      const auto id = q.req.id;
      f << ",\n{\"ph\":\"M\",\"pid\":2,\"tid\":" << id << ",\"name\":\"thread_name\",\"args\":{\"name\":\"request "
        << id << "\"}}";
      auto span = [&](const char* name, double a, double b) {
        if (b > a)
          f << ",\n{\"ph\":\"X\",\"pid\":2,\"tid\":" << id << ",\"ts\":" << us(a) << ",\"dur\":" << us(b - a)
            << ",\"name\":\"" << name << "\"}";
      };
      span("queued", q.req.arrival, q.scheduled);
      span("prefill", q.scheduled, q.first_token);
      span("decode", q.first_token, q.finish);
    }
    f << "\n]}\n";
    check_stream(f, p);
  }
}

}  // namespace tpusim::sim::serve
