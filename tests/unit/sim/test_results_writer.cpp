// The result files of a run, checked column by column against arithmetic
// done by hand on a small RunReport built here (no SystemC simulation):
// a compute-bound matmul with a fused bias, a memory-bound softmax and a
// tiny latency-bound op, on a made-up chip with round numbers.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "arch/common/errors.h"
#include "sim/results/results_writer.h"

namespace tpusim::sim {
namespace {

namespace fs = std::filesystem;
using arch::DmaWork;
using arch::MemSpace;
using arch::MxuWork;
using arch::UnitKind;
using arch::VpuWork;
using arch::XluWork;

// The chip: 1 TensorCore at 1 GHz with 2 MXUs of 128x128 (bf16 x1, int8
// x2). Peak MACs/cycle (bf16) = 1 x 2 x 128 x 128 x 1 = 32768.
// HBM: 1 stack x 8 channels x 2 pseudo-channels x 64 bit / 8 x 2e9 T/s
//    = 256e9 B/s = 256 B/cycle.
arch::TpuConfig test_chip() {
  arch::TpuConfig c;
  c.chip.name = "testchip";
  c.chip.tensorcores = 1;
  c.chip.clock_hz = 1e9;
  c.mxu.count = 2;
  c.mxu.rows = 128;
  c.mxu.cols = 128;
  c.mxu.throughput = {{arch::DType::bf16, 1.0}, {arch::DType::int8, 2.0}};
  c.hbm.stacks = 1;
  c.hbm.channels = 8;
  c.hbm.pseudo_channels = 2;
  c.hbm.bus_width_bits = 64;
  c.hbm.data_rate = 2e9;
  return c;
}

arch::Instr instr(UnitKind u, std::uint32_t op, decltype(arch::Instr::work) w, std::uint16_t core = 0) {
  arch::Instr in;
  in.unit = u;
  in.core = core;
  in.op = op;
  in.work = w;
  return in;
}

DmaWork dma(MemSpace src, MemSpace dst, std::uint64_t row_bytes, std::uint64_t rows = 1) {
  DmaWork d;
  d.src = src;
  d.dst = dst;
  d.row_bytes = row_bytes;
  d.rows = rows;
  return d;
}

constexpr std::uint64_t kMiB2 = 2097152;  // 1024 x 1024 bf16

struct Fixture {
  arch::TpuConfig cfg = test_chip();
  RunReport r;

  Fixture() {
    r.arch_name = "testchip";
    r.workload_name = "tiny_mlp";
    r.config = &cfg;
    r.config_yaml = "chip:\n  name: testchip\n  clock: 1 GHz\n";
    r.version = "0.1.0";
    r.sim.clock_hz = 1e9;
    r.sim.wall_seconds = 0.5;
    r.lowered.hbm_peak_bytes = 6291456;  // the matmul's inputs and output, 2 MiB each

    auto& ops = r.lowered.ops;
    ops.resize(4);
    // op 0: 1024^3 bf16 matmul. macs = 2^30, flops = 2^31.
    // hbm_bytes = 3 x 1024 x 1024 x 2 = 6291456 (two inputs, one output).
    // MXU bound = 2^30 / 32768 = 32768 cycles; memory bound = 6291456 / 256
    // = 24576 cycles; roofline = 32768.
    ops[0].name = "mm";
    ops[0].kind = "matmul";
    ops[0].shapes = "[1024,1024] x [1024,1024] -> [1024,1024]";
    ops[0].dtype = "bf16";
    ops[0].blocking = "bm=512, bk=1024, bn=512";
    ops[0].flops = 2147483648ULL;
    ops[0].macs = 1073741824ULL;
    ops[0].padded_macs = 1342177280ULL;  // 1.25 x macs -> 20% waste
    ops[0].hbm_bytes = 6291456;
    ops[0].dma_bytes = 6291456;
    ops[0].memory_cycles = 24576;  // what the lowering sets: hbm_bytes / 256
    ops[0].vmem_peak = 300000;
    ops[0].roofline_cycles = 32768;
    ops[0].fused = {1};
    // op 1: bias add fused into mm's epilogue.
    ops[1].name = "bias";
    ops[1].kind = "elementwise";
    ops[1].shapes = "[1024,1024] x [1024] -> [1024,1024]";
    ops[1].dtype = "bf16";
    ops[1].flops = 1048576;
    ops[1].fused_into = 0;
    // op 2: softmax on the VPU, 2^20 elements in and out:
    // hbm_bytes = 2 x 2 MiB = 4194304; memory bound = 4194304 / 256 = 16384.
    ops[2].name = "softmax";
    ops[2].kind = "softmax";
    ops[2].shapes = "[1024,1024] -> [1024,1024]";
    ops[2].dtype = "bf16";
    ops[2].blocking = "8 chunks";
    ops[2].flops = 5242880;
    ops[2].hbm_bytes = 4194304;
    ops[2].dma_bytes = 4194304;
    ops[2].memory_cycles = 16384;
    ops[2].vmem_peak = 2500000;
    ops[2].roofline_cycles = 16384;
    // op 3: a tiny op whose name needs CSV quoting: 1920 bytes -> 7.5 cycles.
    ops[3].name = "tiny,\"norm\"";
    ops[3].kind = "reduce";
    ops[3].shapes = "[960] -> [1]";
    ops[3].dtype = "bf16";
    ops[3].blocking = "1 chunks";
    ops[3].flops = 2048;
    ops[3].hbm_bytes = 1920;
    ops[3].dma_bytes = 2048;
    ops[3].memory_cycles = 7.5;
    ops[3].vmem_peak = 8192;
    ops[3].roofline_cycles = 7.5;

    auto& p = r.lowered.program;
    p.op_names = {"mm", "bias", "softmax", "tiny,\"norm\""};
    auto add = [&](arch::Instr in, std::uint64_t issue, std::uint64_t start, std::uint64_t finish, std::int16_t unit) {
      p.instrs.push_back(in);
      r.sim.records.push_back({issue, start, finish, unit});
    };
    // mm: loads on dma0/dma1, two MXU halves, store on dma2: cycles 10..40010.
    add(instr(UnitKind::dma, 0, dma(MemSpace::hbm, MemSpace::vmem, kMiB2)), 0, 10, 8202, 0);
    add(instr(UnitKind::dma, 0, dma(MemSpace::hbm, MemSpace::vmem, kMiB2)), 1, 10, 8202, 1);
    add(instr(UnitKind::mxu, 0, MxuWork{1024, 1024, 512, arch::DType::bf16}), 2, 8202, 30000, 0);
    add(instr(UnitKind::mxu, 0, MxuWork{1024, 1024, 512, arch::DType::bf16}), 3, 8202, 30000, 1);
    add(instr(UnitKind::dma, 0, dma(MemSpace::vmem, MemSpace::hbm, kMiB2)), 4, 30000, 40010, 2);
    // softmax: 40010..60010.
    add(instr(UnitKind::dma, 2, dma(MemSpace::hbm, MemSpace::vmem, kMiB2)), 5, 40010, 48202, 3);
    VpuWork v;
    v.elements = 1048576;
    v.alu_ops = 4;
    v.transcendental_ops = 1;
    add(instr(UnitKind::vpu, 2, v), 6, 48202, 52000, 0);
    XluWork x;
    x.elements = 1048576;
    add(instr(UnitKind::xlu, 2, x), 7, 48300, 52100, 1);
    add(instr(UnitKind::dma, 2, dma(MemSpace::vmem, MemSpace::hbm, kMiB2)), 8, 52100, 60010, 0);
    // tiny: 60010..60110, including a VMEM->SMEM copy that is not HBM traffic.
    add(instr(UnitKind::dma, 3, dma(MemSpace::hbm, MemSpace::vmem, 512, 2)), 9, 60010, 60060, 1);
    VpuWork v2;
    v2.elements = 512;
    add(instr(UnitKind::vpu, 3, v2), 10, 60060, 60080, 0);
    add(instr(UnitKind::dma, 3, dma(MemSpace::vmem, MemSpace::smem, 4096)), 11, 60060, 60070, 3);
    add(instr(UnitKind::dma, 3, dma(MemSpace::vmem, MemSpace::hbm, 1024)), 12, 60080, 60110, 2);
    r.sim.end_cycle = 60110;

    r.sim.block_stats = {
        {"tc0.mxu0",
         {{"busy_cycles", 21798, "cycles", "Cycles the MXU computed"},
          {"utilization", 0.123456789012, "ratio", "Busy cycles, as a fraction of the run"}}},
        {"hbm", {{"bytes_read", 8389632, "bytes", "Bytes read from \"HBM\""}}},
    };
  }
};

// --- small readers for the files under test --------------------------------

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// RFC 4180 reader: quoted fields may hold commas, doubled quotes, newlines.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
    } else if (c == '\n') {
      row.push_back(field);
      field.clear();
      rows.push_back(row);
      row.clear();
    } else {
      field += c;
    }
  }
  EXPECT_FALSE(quoted) << "unterminated quoted field";
  EXPECT_TRUE(field.empty() && row.empty()) << "last row lacks a newline";
  return rows;
}

// Columns by header name, one map per data row.
std::vector<std::map<std::string, std::string>> read_table(const fs::path& p) {
  const auto rows = parse_csv(slurp(p));
  std::vector<std::map<std::string, std::string>> out;
  if (rows.empty()) return out;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].size(), rows[0].size()) << p << " row " << i;
    std::map<std::string, std::string> m;
    for (std::size_t k = 0; k < rows[0].size() && k < rows[i].size(); ++k) m[rows[0][k]] = rows[i][k];
    out.push_back(m);
  }
  return out;
}

double num(const std::string& s) {
  EXPECT_FALSE(s.empty());
  return std::stod(s);
}

// A strict JSON reader (RFC 8259 grammar), enough to prove the trace
// parses and to inspect its events. Throws std::runtime_error on bad input
// and on duplicate keys.
struct Json {
  enum Type { null_t, boolean, number, string, array, object } type = null_t;
  double n = 0;
  bool b = false;
  std::string s;
  std::vector<Json> a;
  std::vector<std::pair<std::string, Json>> o;
  const Json& operator[](const std::string& k) const {
    for (const auto& kv : o)
      if (kv.first == k) return kv.second;
    throw std::runtime_error("no key " + k);
  }
  bool has(const std::string& k) const {
    for (const auto& kv : o)
      if (kv.first == k) return true;
    return false;
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& t) : t_(t) {}
  Json parse() {
    Json v = value();
    ws();
    if (i_ != t_.size()) fail("trailing characters");
    return v;
  }

 private:
  const std::string& t_;
  std::size_t i_ = 0;
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(i_));
  }
  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\r' || t_[i_] == '\t')) ++i_;
  }
  char peek() {
    ws();
    if (i_ >= t_.size()) fail("unexpected end");
    return t_[i_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected ") + c);
    ++i_;
  }
  void literal(const char* w) {
    for (const char* p = w; *p; ++p, ++i_)
      if (i_ >= t_.size() || t_[i_] != *p) fail("bad literal");
  }
  std::string str() {
    expect('"');
    std::string out;
    while (true) {
      if (i_ >= t_.size()) fail("unterminated string");
      const char c = t_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("raw control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= t_.size()) fail("bad escape");
      const char e = t_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (i_ + 4 > t_.size()) fail("bad \\u");
          const unsigned cp = static_cast<unsigned>(std::stoul(t_.substr(i_, 4), nullptr, 16));
          i_ += 4;
          if (cp >= 0x80) fail("test reader handles ASCII \\u only");
          out += static_cast<char>(cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }
  Json value() {
    Json v;
    const char c = peek();
    if (c == '{') {
      v.type = Json::object;
      ++i_;
      if (peek() == '}') {
        ++i_;
        return v;
      }
      while (true) {
        std::string k = str();
        if (v.has(k)) fail("duplicate key " + k);
        expect(':');
        v.o.emplace_back(k, value());
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.type = Json::array;
      ++i_;
      if (peek() == ']') {
        ++i_;
        return v;
      }
      while (true) {
        v.a.push_back(value());
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.type = Json::string;
      v.s = str();
      return v;
    }
    if (c == 't' || c == 'f') {
      v.type = Json::boolean;
      v.b = c == 't';
      literal(v.b ? "true" : "false");
      return v;
    }
    if (c == 'n') {
      literal("null");
      return v;
    }
    // number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    const std::size_t b = i_;
    if (t_[i_] == '-') ++i_;
    auto digits = [&] {
      const std::size_t s = i_;
      while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_]))) ++i_;
      if (i_ == s) fail("expected digits");
    };
    if (i_ < t_.size() && t_[i_] == '0')
      ++i_;
    else
      digits();
    if (i_ < t_.size() && t_[i_] == '.') {
      ++i_;
      digits();
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      ++i_;
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      digits();
    }
    v.type = Json::number;
    v.n = std::stod(t_.substr(b, i_ - b));
    return v;
  }
};

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tpusim_results_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

// --- tests ------------------------------------------------------------------

TEST(ResultsWriter, SummaryColumnsFollowTheFormulas) {
  Fixture f;
  const fs::path d = fresh_dir("summary");
  write_results(f.r, d.string(), {});
  const auto rows = read_table(d / "summary.csv");
  ASSERT_EQ(rows.size(), 1u);
  const auto& s = rows[0];
  // 16 run figures, 4 model/hardware FLOP figures, 8 energy columns
  // (empty: the fixture's config has no energy model), then 4 figures of
  // where the time went (tests/unit/sim/test_time_breakdown.cpp checks
  // their formulas).
  EXPECT_EQ(s.size(), 32u);
  EXPECT_EQ(s.at("energy_j"), "");
  EXPECT_EQ(s.at("over_tdp"), "");
  for (const char* k : {"compute_busy_seconds", "ici_busy_seconds", "ici_exposed_seconds", "hbm_exposed_seconds"}) {
    EXPECT_GE(num(s.at(k)), 0) << k;
    EXPECT_LE(num(s.at(k)), 60110 / 1e9 * (1 + 1e-9)) << k;
  }
  EXPECT_EQ(s.at("arch"), "testchip");
  EXPECT_EQ(s.at("workload"), "tiny_mlp");
  EXPECT_EQ(s.at("total_cycles"), "60110");
  EXPECT_EQ(num(s.at("clock_hz")), 1e9);
  // seconds = 60110 / 1e9.
  const double sec = 60110 / 1e9;
  EXPECT_NEAR(num(s.at("seconds")), sec, sec * 1e-9);
  // FLOPs of every op, fused ones included: 2^31 + 2^20 + 5242880 + 2048.
  const double flops = 2147483648.0 + 1048576 + 5242880 + 2048;
  EXPECT_EQ(s.at("total_flops"), "2153777152");
  EXPECT_NEAR(num(s.at("achieved_tflops")), flops / sec / 1e12, 1e-5 * flops / sec / 1e12);
  // Useful MACs 2^30 over 60110 cycles x 32768 MACs/cycle = 0.54513...
  const double mxu = 1073741824.0 / (60110.0 * 32768.0);
  EXPECT_NEAR(num(s.at("mxu_utilization")), mxu, 1e-5 * mxu);
  // HBM-side DMA: five 2 MiB copies + 1024 + 1024 bytes; the 4096-byte
  // VMEM->SMEM copy is not counted: 5 x 2097152 + 2048 = 10487808.
  EXPECT_EQ(s.at("hbm_bytes"), "10487808");
  const double bw = 10487808.0 / sec;
  EXPECT_NEAR(num(s.at("hbm_bandwidth")), bw, 1e-8 * bw);
  EXPECT_NEAR(num(s.at("hbm_bandwidth_utilization")), bw / 256e9, 1e-5 * bw / 256e9);
  EXPECT_EQ(s.at("vmem_peak_bytes"), "2500000");  // softmax's
  // The memory plan's HBM peak, as the lowering reported it.
  EXPECT_EQ(s.at("hbm_peak_bytes"), "6291456");
  EXPECT_EQ(num(s.at("sim_wall_seconds")), 0.5);
  EXPECT_EQ(s.at("tpusim_version"), "0.1.0");
  // No digest in the report: the writer hashes config_yaml.
  EXPECT_EQ(s.at("config_hash"), config_hash(f.r.config_yaml));
  EXPECT_EQ(s.at("config_hash").size(), 16u);
  // Nothing recomputed: model and hardware FLOPs are the 2^31 MXU FLOPs of
  // the matmul, and MFU = HFU = the MXU utilization.
  EXPECT_EQ(s.at("model_flops"), "2147483648");
  EXPECT_EQ(s.at("hardware_flops"), "2147483648");
  EXPECT_NEAR(num(s.at("mfu")), mxu, 1e-5 * mxu);
  EXPECT_NEAR(num(s.at("hfu")), mxu, 1e-5 * mxu);
  // The matmul named as rematerialized work: hardware FLOPs only.
  const std::string mm_name = f.r.lowered.ops[0].name;
  f.r.lowered.ops[0].name = "layers.0.recompute.mm";
  write_results(f.r, d.string(), {});
  const auto re = read_table(d / "summary.csv").at(0);
  EXPECT_EQ(re.at("model_flops"), "0");
  EXPECT_EQ(re.at("hardware_flops"), "2147483648");
  EXPECT_EQ(num(re.at("mfu")), 0.0);
  EXPECT_NEAR(num(re.at("hfu")), mxu, 1e-5 * mxu);
  f.r.lowered.ops[0].name = mm_name;
  f.r.config_hash = "00000000deadbeef";
  write_results(f.r, d.string(), {});
  EXPECT_EQ(read_table(d / "summary.csv")[0].at("config_hash"), "00000000deadbeef");
  fs::remove_all(d);
}

TEST(ResultsWriter, OpsRowsPerOperator) {
  Fixture f;
  const fs::path d = fresh_dir("ops");
  write_results(f.r, d.string(), {});
  const auto rows = read_table(d / "ops.csv");
  ASSERT_EQ(rows.size(), 4u);
  const auto& mm = rows[0];
  EXPECT_EQ(mm.at("index"), "0");
  EXPECT_EQ(mm.at("name"), "mm");
  EXPECT_EQ(mm.at("kind"), "matmul");
  EXPECT_EQ(mm.at("shapes"), "[1024,1024] x [1024,1024] -> [1024,1024]");
  EXPECT_EQ(mm.at("dtype"), "bf16");
  EXPECT_EQ(mm.at("flops"), "2147483648");
  EXPECT_EQ(mm.at("hbm_bytes"), "6291456");
  EXPECT_EQ(mm.at("dma_bytes"), "6291456");
  // min start 10, max finish 40010 over its five instructions.
  EXPECT_EQ(mm.at("start_cycle"), "10");
  EXPECT_EQ(mm.at("end_cycle"), "40010");
  EXPECT_EQ(mm.at("cycles"), "40000");
  EXPECT_EQ(mm.at("roofline_cycles"), "32768");
  // MXU bound 32768 >= memory bound 24576; 40000 <= 4 x 32768.
  EXPECT_EQ(mm.at("bound"), "compute");
  // 2^30 / (40000 x 32768) = 0.8192.
  EXPECT_NEAR(num(mm.at("mxu_utilization")), 0.8192, 1e-6);
  // 1 - 2^30 / (1.25 x 2^30) = 20 %.
  EXPECT_NEAR(num(mm.at("padding_waste_pct")), 20.0, 1e-6);
  EXPECT_EQ(mm.at("vmem_peak"), "300000");
  EXPECT_EQ(mm.at("blocking"), "bm=512, bk=1024, bn=512");
  EXPECT_EQ(mm.at("fused_into"), "");

  const auto& bias = rows[1];
  EXPECT_EQ(bias.at("name"), "bias");
  EXPECT_EQ(bias.at("flops"), "1048576");
  EXPECT_EQ(bias.at("fused_into"), "mm");
  for (const char* col :
       {"start_cycle", "end_cycle", "cycles", "roofline_cycles", "bound", "mxu_utilization", "padding_waste_pct"})
    EXPECT_EQ(bias.at(col), "") << col;

  const auto& sm = rows[2];
  EXPECT_EQ(sm.at("start_cycle"), "40010");
  EXPECT_EQ(sm.at("end_cycle"), "60010");
  EXPECT_EQ(sm.at("cycles"), "20000");
  EXPECT_EQ(sm.at("roofline_cycles"), "16384");
  // No MXU work, 20000 <= 4 x 16384: memory.
  EXPECT_EQ(sm.at("bound"), "memory");
  EXPECT_EQ(num(sm.at("mxu_utilization")), 0.0);
  EXPECT_EQ(sm.at("padding_waste_pct"), "");  // no MXU work
  EXPECT_EQ(sm.at("blocking"), "8 chunks");

  const auto& tiny = rows[3];
  EXPECT_EQ(tiny.at("name"), "tiny,\"norm\"");
  EXPECT_EQ(tiny.at("start_cycle"), "60010");
  EXPECT_EQ(tiny.at("end_cycle"), "60110");
  EXPECT_EQ(tiny.at("cycles"), "100");
  EXPECT_EQ(tiny.at("roofline_cycles"), "8");  // 7.5 rounded up
  // 100 > 4 x 7.5 and 7.5 cycles = 7.5 ns < 1 us.
  EXPECT_EQ(tiny.at("bound"), "latency");
  fs::remove_all(d);
}

TEST(ResultsWriter, CsvQuotingOnDisk) {
  Fixture f;
  const fs::path d = fresh_dir("quoting");
  write_results(f.r, d.string(), {});
  const std::string ops = slurp(d / "ops.csv");
  // The name with a comma and quotes, and the shapes with commas, appear
  // RFC 4180-quoted in the raw text.
  EXPECT_NE(ops.find(",\"tiny,\"\"norm\"\"\",reduce,"), std::string::npos) << ops;
  EXPECT_NE(ops.find("\"[1024,1024] x [1024,1024] -> [1024,1024]\""), std::string::npos);
  const std::string units = slurp(d / "units.csv");
  EXPECT_NE(units.find("\"Busy cycles, as a fraction of the run\""), std::string::npos);
  EXPECT_NE(units.find("\"Bytes read from \"\"HBM\"\"\""), std::string::npos);
  fs::remove_all(d);
}

TEST(ResultsWriter, UnitsAndConfigFiles) {
  Fixture f;
  const fs::path d = fresh_dir("units");
  write_results(f.r, d.string(), {});
  const auto rows = read_table(d / "units.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].at("block"), "tc0.mxu0");
  EXPECT_EQ(rows[0].at("stat"), "busy_cycles");
  EXPECT_EQ(rows[0].at("value"), "21798");
  EXPECT_EQ(rows[0].at("unit"), "cycles");
  EXPECT_EQ(rows[0].at("description"), "Cycles the MXU computed");
  EXPECT_EQ(rows[1].at("stat"), "utilization");
  EXPECT_EQ(rows[1].at("value"), "0.123456789");
  EXPECT_EQ(rows[2].at("block"), "hbm");
  EXPECT_EQ(rows[2].at("value"), "8389632");
  EXPECT_EQ(slurp(d / "config.effective.yaml"), f.r.config_yaml);
  EXPECT_FALSE(fs::exists(d / "trace.json"));  // not asked for
  fs::remove_all(d);
}

TEST(ResultsWriter, TraceIsValidJsonWithNamedTracks) {
  Fixture f;
  const fs::path d = fresh_dir("trace");
  write_results(f.r, d.string(), WriteOptions{true});
  const std::string text = slurp(d / "trace.json");
  Json root;
  ASSERT_NO_THROW(root = JsonParser(text).parse());
  ASSERT_EQ(root.type, Json::object);
  const Json& ev = root["traceEvents"];
  ASSERT_EQ(ev.type, Json::array);
  // 1 process name + 8 tracks x (thread name, sort index) + 13 instructions.
  EXPECT_EQ(ev.a.size(), 30u);

  std::map<int, std::string> thread_names;
  std::vector<const Json*> complete;
  std::string process;
  for (const Json& e : ev.a) {
    const std::string ph = e["ph"].s;
    EXPECT_EQ(e["pid"].n, 0);
    if (ph == "M" && e["name"].s == "thread_name")
      thread_names[static_cast<int>(e["tid"].n)] = e["args"]["name"].s;
    else if (ph == "M" && e["name"].s == "process_name")
      process = e["args"]["name"].s;
    else if (ph == "X")
      complete.push_back(&e);
  }
  EXPECT_EQ(process, "chip0 testchip");
  // One complete event per instruction.
  ASSERT_EQ(complete.size(), f.r.lowered.program.instrs.size());
  // The units the records used: 2 MXUs, the VPU, XLU 1, DMA engines 0..3;
  // TensorCore units first, then DMA.
  const std::vector<std::string> want = {"tc0.mxu0", "tc0.mxu1", "tc0.vpu", "tc0.xlu1", "dma0", "dma1", "dma2", "dma3"};
  std::vector<std::string> got;
  for (const auto& [tid, name] : thread_names) got.push_back(name);
  EXPECT_EQ(got, want);

  // Instruction 3: mm's second MXU half, cycles 8202..30000 at 1 GHz:
  // ts = 8.202 us, dur = 21.798 us, on tc0.mxu1.
  const Json& e3 = *complete[3];
  EXPECT_EQ(e3["name"].s, "mm");
  EXPECT_EQ(e3["cat"].s, "mxu");
  EXPECT_EQ(thread_names.at(static_cast<int>(e3["tid"].n)), "tc0.mxu1");
  EXPECT_NEAR(e3["ts"].n, 8.202, 1e-9);
  EXPECT_NEAR(e3["dur"].n, 21.798, 1e-9);
  EXPECT_EQ(e3["args"]["kind"].s, "mxu");
  EXPECT_EQ(e3["args"]["m"].n, 1024);
  EXPECT_EQ(e3["args"]["n"].n, 512);
  EXPECT_EQ(e3["args"]["dtype"].s, "bf16");
  // Instruction 12: the tiny op's 1024-byte store on dma2, 60080..60110:
  // ts = 60.08 us, dur = 0.03 us (sub-microsecond precision kept).
  const Json& e12 = *complete[12];
  EXPECT_EQ(e12["name"].s, "tiny,\"norm\"");  // escaped in the file, intact after parsing
  EXPECT_EQ(thread_names.at(static_cast<int>(e12["tid"].n)), "dma2");
  EXPECT_NEAR(e12["ts"].n, 60.08, 1e-9);
  EXPECT_NEAR(e12["dur"].n, 0.03, 1e-9);
  EXPECT_EQ(e12["args"]["bytes"].n, 1024);
  EXPECT_EQ(e12["args"]["src"].s, "vmem");
  EXPECT_EQ(e12["args"]["dst"].s, "hbm");

  // A second, independent parser when the machine has one (exit status
  // 127: the shell found no python3).
  const std::string cmd =
      "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
      "sys.exit(0 if len(d[\"traceEvents\"]) == 30 else 1)' " +
      (d / "trace.json").string() + " 2>/dev/null";
  const int rc = std::system(cmd.c_str());
  if (!(WIFEXITED(rc) && WEXITSTATUS(rc) == 127)) {
    EXPECT_EQ(rc, 0) << cmd;
  }
  fs::remove_all(d);
}

TEST(ResultsWriter, TraceTracksOfASecondTensorCore) {
  Fixture f;
  // Move the softmax's VPU and XLU work to TensorCore 1: its units get their
  // own tracks, after core 0's and before the chip's DMA engines.
  f.r.lowered.program.instrs[6].core = 1;
  f.r.lowered.program.instrs[7].core = 1;
  std::ostringstream os;
  write_chrome_trace(f.r, os);
  const Json root = JsonParser(os.str()).parse();
  std::map<int, std::string> names;
  for (const Json& e : root["traceEvents"].a)
    if (e["ph"].s == "M" && e["name"].s == "thread_name") names[static_cast<int>(e["tid"].n)] = e["args"]["name"].s;
  std::vector<std::string> got;
  for (const auto& [tid, name] : names) got.push_back(name);
  const std::vector<std::string> want = {"tc0.mxu0", "tc0.mxu1", "tc0.vpu", "tc1.vpu", "tc1.xlu1",
                                         "dma0",     "dma1",     "dma2",    "dma3"};
  EXPECT_EQ(got, want);
  EXPECT_EQ(track_name(f.r.lowered.program.instrs[7], f.r.sim.records[7]), "tc1.xlu1");
  EXPECT_EQ(track_name(f.r.lowered.program.instrs[0], f.r.sim.records[0]), "dma0");
}

TEST(ResultsWriter, TwoWritesAreByteIdenticalExceptWallTime) {
  Fixture f;
  const fs::path a = fresh_dir("det_a");
  const fs::path b = fresh_dir("det_b");
  write_results(f.r, a.string(), WriteOptions{true});
  f.r.sim.wall_seconds = 7.25;  // the one value allowed to differ
  write_results(f.r, b.string(), WriteOptions{true});
  for (const char* file : {"ops.csv", "units.csv", "config.effective.yaml", "trace.json"}) {
    const std::string x = slurp(a / file);
    EXPECT_FALSE(x.empty()) << file;
    EXPECT_EQ(x, slurp(b / file)) << file;
  }
  auto sa = read_table(a / "summary.csv");
  auto sb = read_table(b / "summary.csv");
  ASSERT_EQ(sa.size(), 1u);
  ASSERT_EQ(sb.size(), 1u);
  EXPECT_EQ(sa[0].at("sim_wall_seconds"), "0.5");
  EXPECT_EQ(sb[0].at("sim_wall_seconds"), "7.25");
  sa[0].erase("sim_wall_seconds");
  sb[0].erase("sim_wall_seconds");
  EXPECT_EQ(sa[0], sb[0]);
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST(ResultsWriter, BoundRule) {
  // At 1 GHz, 1 us of roofline = 1000 cycles.
  // Latency: cycles > 4 x roofline AND roofline < 1000 cycles.
  EXPECT_EQ(classify_bound(401, 100, 100, 50, 1e9), "latency");
  EXPECT_EQ(classify_bound(400, 100, 100, 50, 1e9), "compute");  // exactly 4x: not latency
  EXPECT_EQ(classify_bound(401, 100, 50, 100, 1e9), "latency");
  // Slow but long (roofline 1000 cycles = 1 us, not below): compute/memory rule.
  EXPECT_EQ(classify_bound(100000, 1000, 1000, 10, 1e9), "compute");
  EXPECT_EQ(classify_bound(100000, 1000, 10, 1000, 1e9), "memory");
  EXPECT_EQ(classify_bound(100000, 999, 10, 999, 1e9), "latency");
  // Ties go to compute; no MXU work is memory even when nothing is moved.
  EXPECT_EQ(classify_bound(500, 500, 500, 500, 1e9), "compute");
  EXPECT_EQ(classify_bound(0, 0, 0, 0, 1e9), "memory");
  // The 1 us limit scales with the clock: 1500 cycles at 2 GHz = 0.75 us.
  EXPECT_EQ(classify_bound(7000, 1500, 1500, 0, 2e9), "latency");
  EXPECT_EQ(classify_bound(7000, 1500, 1500, 0, 1e9), "compute");
}

TEST(ResultsWriter, MxuBoundUsesTheOpsDtype) {
  Fixture f;
  // int8 runs at 2x on this chip: MXU bound 2^30 / 65536 = 16384 cycles,
  // below the memory bound of 24576, so the matmul becomes memory bound.
  f.r.lowered.ops[0].dtype = "int8";
  const RunMetrics m = compute_metrics(f.r);
  EXPECT_DOUBLE_EQ(m.ops[0].mxu_bound_cycles, 16384.0);
  EXPECT_DOUBLE_EQ(m.ops[0].memory_bound_cycles, 24576.0);
  EXPECT_EQ(m.ops[0].bound, "memory");
  // Utilization is relative to the peak of the dtype the MXU ran, int8's:
  // 2^30 / (40000 x 65536) (against bf16's 32768 it would read 0.8192, and
  // a fast int8 op above 100%).
  ASSERT_TRUE(m.ops[0].mxu_utilization);
  EXPECT_DOUBLE_EQ(*m.ops[0].mxu_utilization, 0.4096);
  // The whole run likewise (one op): 2^30 x (32768 / 65536) / (cycles x 32768).
  ASSERT_TRUE(m.mxu_utilization);
  EXPECT_DOUBLE_EQ(*m.mxu_utilization, 0.5 * static_cast<double>(1u << 30) /
                                           (static_cast<double>(m.total_cycles) * 32768.0));
  // mxu_dtype, when the lowering set it, wins over the operand dtype (an
  // fp8 op converted to bf16 runs at bf16's peak).
  f.r.lowered.ops[0].mxu_dtype = "bf16";
  EXPECT_DOUBLE_EQ(compute_metrics(f.r).ops[0].mxu_bound_cycles, 32768.0);
  f.r.lowered.ops[0].mxu_dtype.clear();
  // A dtype the MXU lacks falls back to the bf16 rate.
  f.r.lowered.ops[0].dtype = "fp8_e4m3";
  EXPECT_DOUBLE_EQ(compute_metrics(f.r).ops[0].mxu_bound_cycles, 32768.0);
}

TEST(ResultsWriter, EmptyRunHasNoRatios) {
  Fixture f;
  f.r.lowered = LoweredWorkload{};
  f.r.sim.records.clear();
  f.r.sim.end_cycle = 0;
  const RunMetrics m = compute_metrics(f.r);
  EXPECT_EQ(m.total_cycles, 0u);
  EXPECT_FALSE(m.achieved_tflops);
  EXPECT_FALSE(m.mxu_utilization);
  EXPECT_FALSE(m.hbm_bandwidth_utilization);
  const fs::path d = fresh_dir("empty");
  write_results(f.r, d.string(), WriteOptions{true});
  const auto s = read_table(d / "summary.csv");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].at("achieved_tflops"), "");
  EXPECT_EQ(s[0].at("mxu_utilization"), "");
  EXPECT_EQ(read_table(d / "ops.csv").size(), 0u);
  EXPECT_NO_THROW(JsonParser(slurp(d / "trace.json")).parse());
  fs::remove_all(d);
}

TEST(ResultsWriter, InconsistentReportsAreInternalErrors) {
  {
    Fixture f;
    f.r.sim.records.pop_back();
    EXPECT_THROW(compute_metrics(f.r), arch::InternalError);
    const fs::path d = fresh_dir("bad");
    EXPECT_THROW(write_results(f.r, d.string(), {}), arch::InternalError);
    EXPECT_FALSE(fs::exists(d));  // nothing half-written
  }
  {
    Fixture f;
    f.r.lowered.program.instrs[0].op = 9;
    EXPECT_THROW(compute_metrics(f.r), arch::InternalError);
  }
  {
    Fixture f;
    f.r.sim.records[2].finish = f.r.sim.records[2].start - 1;
    EXPECT_THROW(compute_metrics(f.r), arch::InternalError);
    std::ostringstream os;
    EXPECT_THROW(write_chrome_trace(f.r, os), arch::InternalError);
  }
  {
    Fixture f;
    f.r.lowered.ops[1].fused_into = 4;  // there are 4 ops: 0..3
    EXPECT_THROW(compute_metrics(f.r), arch::InternalError);
  }
  {
    Fixture f;
    f.r.sim.clock_hz = 0;
    EXPECT_THROW(compute_metrics(f.r), arch::InternalError);
  }
  {
    Fixture f;
    f.r.config = nullptr;
    EXPECT_THROW(compute_metrics(f.r), arch::InternalError);
  }
}

TEST(ResultsWriter, UnwritableDirectoryIsResultsError) {
  Fixture f;
  const fs::path d = fresh_dir("blocked");
  { std::ofstream(d.string()) << "a file, not a directory"; }
  EXPECT_THROW(write_results(f.r, (d / "sub").string(), {}), ResultsError);
  fs::remove_all(d);
}

TEST(ResultsWriter, PrintSummaryRanksOperatorsAndShowsTotals) {
  Fixture f;
  std::ostringstream os;
  print_summary(f.r, os, 2);
  const std::string t = os.str();
  // Top 2 of the 3 timed ops by cycles: mm (40000) before softmax (20000);
  // the fused bias and the 100-cycle tiny op are not listed.
  const auto p_mm = t.find("mm ");
  const auto p_sm = t.find("softmax");
  ASSERT_NE(p_mm, std::string::npos) << t;
  ASSERT_NE(p_sm, std::string::npos) << t;
  EXPECT_LT(p_mm, p_sm);
  EXPECT_EQ(t.find("tiny,"), std::string::npos) << t;
  EXPECT_EQ(t.find("bias"), std::string::npos) << t;
  EXPECT_NE(t.find("Top 2 of 3 operators"), std::string::npos) << t;
  // Shares: 40000 / 60110 = 66.5 %, 20000 / 60110 = 33.3 %; mm's MXU util 81.9 %.
  EXPECT_NE(t.find("66.5%"), std::string::npos) << t;
  EXPECT_NE(t.find("33.3%"), std::string::npos) << t;
  EXPECT_NE(t.find("81.9%"), std::string::npos) << t;
  EXPECT_NE(t.find("compute"), std::string::npos) << t;
  // Totals: 60110 cycles = 60.11 us; 2153777152 FLOP / 60.11 us = 35.831 TFLOP/s;
  // MXU 54.5 %; HBM 10487808 B = 10.00 MiB at 174.5 GB/s = 68.2 % of 256.0 GB/s;
  // VMEM peak 2500000 B = 2.38 MiB.
  EXPECT_NE(t.find("60.11 us"), std::string::npos) << t;
  EXPECT_NE(t.find("35.831 TFLOP/s"), std::string::npos) << t;
  EXPECT_NE(t.find("54.5%"), std::string::npos) << t;
  EXPECT_NE(t.find("10.00 MiB"), std::string::npos) << t;
  EXPECT_NE(t.find("174.5 GB/s"), std::string::npos) << t;
  EXPECT_NE(t.find("68.2%"), std::string::npos) << t;
  EXPECT_NE(t.find("256.0 GB/s"), std::string::npos) << t;
  EXPECT_NE(t.find("2.38 MiB"), std::string::npos) << t;
}

}  // namespace
}  // namespace tpusim::sim
