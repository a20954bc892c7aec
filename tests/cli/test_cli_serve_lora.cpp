// LoRA end to end: `tpusim serve step` costs of multi-adapter steps on the
// cycle-level engine (llama3-8b on a v5e 2x2, tensor=4), `tpusim serve`
// with adapters (a two-layer decoder), and LoRA fine-tuning's fit check
// through `tpusim run`.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "tiny_decoder.h"

namespace {

using tpusim::test::CliResult;
using tpusim::test::slurp;
using tpusim::test::TmpDir;

double step_seconds(const CliResult& r) {
  std::istringstream in(r.out);
  std::string w;
  double s = 0;
  while (in >> w)
    if (w == "step_seconds" && (in >> s)) return s;
  ADD_FAILURE() << "no step_seconds in: " << r.out << r.err;
  return 0;
}

double step(const TmpDir& d, std::int64_t batch, std::int64_t adapters) {
  const std::string lora =
      adapters > 0 ? " --lora-rank 16 --lora-targets q,v --adapters " + std::to_string(adapters) : "";
  CliResult r = tpusim::test::run_tpusim_in(d.p.string(),
                                            "serve step --arch v5e --slice 2x2 --mesh tensor=4 "
                                            "--model llama3-8b --context 1024 --decode " +
                                                std::to_string(batch) + lora);
  EXPECT_EQ(r.rc, 0) << r.err;
  return step_seconds(r);
}

// A decode step of 64 sequences over 8 adapters reads 8 adapters'
// weights and runs a grouped matmul per adapter factor: it costs more than
// the same step on one adapter, and less than 8 servers each decoding its
// 8 sequences on its own adapter (8 steps of batch 8, each streaming the
// base weights again).
TEST(CliServeLora, MixedBatchOfEightAdaptersCostsBetweenOneAndEightServers) {
  TmpDir d{"cli_lora_steps_"};
  const double base = step(d, 64, 0), one = step(d, 64, 1), eight = step(d, 64, 8), small = step(d, 8, 1);
  EXPECT_GT(one, base);
  EXPECT_GT(eight, one);
  EXPECT_LT(eight, 8 * small);
}

constexpr const char* kTiny = tpusim::test::kTinyDecoder;

// One CSV row's fields; a quoted field may hold commas ("q,k,v").
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::map<std::string, std::string> summary(const std::string& file) {
  std::istringstream in(slurp(file));
  std::string h, v;
  std::getline(in, h);
  std::getline(in, v);
  const auto hs = fields(h), vs = fields(v);
  EXPECT_EQ(hs.size(), vs.size());
  std::map<std::string, std::string> m;
  for (std::size_t i = 0; i < hs.size() && i < vs.size(); ++i) m[hs[i]] = vs[i];
  return m;
}

struct Serve {
  TmpDir d{"cli_serve_lora_"};
  Serve() { std::ofstream(d / "tiny.yaml") << kTiny; }
  CliResult run(const std::string& extra) {
    return tpusim::test::run_tpusim_in(d.p.string(), "serve --model " + (d / "tiny.yaml") +
                                                         " --requests 24 --rate 200 --max-batch 4 --max-tokens 64"
                                                         " --input fixed:32 --output fixed:16 --jobs 2 --quiet"
                                                         " --step-cache " +
                                                         (d / "cache.txt") + " --out " + (d / "out") + " " + extra);
  }
};

// Four adapters, two slots: adapters are loaded and evicted, the steps
// record their distinct adapters, the cache holds points with an
// adapters field, and a second run simulates nothing new.
TEST(CliServeLora, ServesAdaptersWithLoadsAndEvictions) {
  Serve s;
  CliResult r = s.run("--lora-rank 8 --lora-targets all --adapters 4 --adapter-slots 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto m = summary(s.d / "out/summary.csv");
  EXPECT_EQ(m["adapters"], "4");
  EXPECT_EQ(m["lora_targets"], "q,k,v,o,gate,up,down");
  EXPECT_EQ(m["adapter_slots"], "2");
  EXPECT_GE(std::stoi(m["adapter_loads"]), 4);
  EXPECT_EQ(std::stoi(m["adapter_evictions"]), std::stoi(m["adapter_loads"]) - 2);
  // Per chip: 2 layers x (q 256+256, k 256+128, v 256+128, o 256+256,
  // gate 256+512, up 256+512, down 512+256) x rank 8 x 2 bytes.
  EXPECT_EQ(m["adapter_bytes_per_chip"], std::to_string(2 * (512 + 384 + 384 + 512 + 768 + 768 + 768) * 8 * 2));
  const std::string steps = slurp(s.d / "out/steps.csv");
  EXPECT_NE(steps.find(",adapters,adapter_loads,prefill_prefix,prefill_chunks\n"), std::string::npos);
  std::istringstream cache(slurp(s.d / "cache.txt"));
  int with_adapters = 0;
  for (std::string line; std::getline(cache, line);) {
    std::istringstream ls(line);
    std::vector<std::string> f;
    for (std::string w; ls >> w;) f.push_back(w);
    // KEY P B C SECONDS ADAPTERS [PREFIX]: the sixth field > 0.
    if (line[0] != '#' && f.size() >= 6 && std::stol(f[5]) > 0) ++with_adapters;
  }
  EXPECT_GT(with_adapters, 0);
  CliResult again = s.run("--lora-rank 8 --lora-targets all --adapters 4 --adapter-slots 2");
  ASSERT_EQ(again.rc, 0) << again.err;
  EXPECT_NE(again.out.find("step costs: 0 simulated now"), std::string::npos) << again.out;
}

TEST(CliServeLora, RejectsInconsistentLoraFlags) {
  Serve s;
  for (const char* bad : {"--adapters 4", "--lora-rank 8", "--lora-rank 8 --adapters 4 --adapter-slots 0",
                          "--lora-rank 8 --lora-targets q,x --adapters 2", "--adapter-slots 2",
                          "--lora-rank 8 --adapters 2 --adapter-dist zipf:-1"}) {
    CliResult r = s.run(bad);
    EXPECT_NE(r.rc, 0) << bad;
    EXPECT_NE(r.err.find("serve"), std::string::npos) << bad << ": " << r.err;
  }
  std::ofstream(s.d / "trace.csv") << "arrival,input_tokens,output_tokens,adapter\n0,32,16,1\n0.1,32,16,\n";
  CliResult r =
      tpusim::test::run_tpusim_in(s.d.p.string(), "serve --model " + (s.d / "tiny.yaml") + " --quiet --trace-csv " +
                                                      (s.d / "trace.csv") + " --out " + (s.d / "t"));
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("--lora-rank"), std::string::npos) << r.err;
  std::ofstream(s.d / "bad.csv") << "arrival,input_tokens,output_tokens,adapter\n0,32,16,-3\n";
  r = tpusim::test::run_tpusim_in(s.d.p.string(), "serve --model " + (s.d / "tiny.yaml") +
                                                      " --quiet --lora-rank 8 --trace-csv " + (s.d / "bad.csv") +
                                                      " --out " + (s.d / "t"));
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("bad.csv:2: adapter"), std::string::npos) << r.err;
}

// Full fine-tuning of llama3-8b needs 16 B of weights, gradients and Adam
// state per parameter: 8.0e9 x 16 / 4 chips = 32 GB per chip on a v5e 2x2,
// over its 16 GiB, and `run` refuses it; with LoRA only the adapters carry
// gradients and state (the weights, 2 B per parameter, and activations
// under full rematerialization leave room), the fit check passes and the
// run reaches the program-size limit instead (set to 1 event so that it
// stops there).
TEST(CliServeLora, LoraFineTuningFitsWhereFullFineTuningDoesNot) {
  TmpDir d{"cli_lora_fit_"};
  const std::string cmd =
      "run --arch v5e --slice 2x2 --mesh fsdp=4 --model llama3-8b --phase train --batch 4 "
      "--seq 2048 --remat full --max-events 1 --out " +
      (d / "out");
  CliResult full = tpusim::test::run_tpusim_in(d.p.string(), cmd);
  EXPECT_NE(full.rc, 0);
  EXPECT_NE(full.err.find("does not fit"), std::string::npos) << full.err;
  CliResult lora = tpusim::test::run_tpusim_in(d.p.string(), cmd + " --lora-rank 16 --lora-targets all");
  EXPECT_NE(lora.rc, 0);
  EXPECT_EQ(lora.err.find("does not fit"), std::string::npos) << lora.err;
  EXPECT_NE(lora.err.find("events"), std::string::npos) << lora.err;
}

}  // namespace
