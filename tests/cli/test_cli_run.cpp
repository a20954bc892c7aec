// `tpusim run` end to end through the executable: the result files exist,
// the same run twice gives byte-identical CSVs (but for the wall-time
// column), --vcd writes a VCD of the main signals, --trace a trace.json,
// and bad input exits 2 with a message naming what is wrong.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "../unit/sim/config_test_util.h"
#include "cli_test_util.h"
#include "tiny_decoder.h"

namespace {

using tpusim::sim::testing::TempDir;

using tpusim::test::slurp;
using Result = tpusim::test::CliResult;

Result run_tpusim(const std::string& args, const TempDir& d) { return tpusim::test::run_tpusim_in(d.path(), args); }

// summary.csv without its sim_wall_seconds column (host time varies).
std::string summary_without_wall(const std::string& file) {
  std::istringstream in(slurp(file));
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  auto split = [](const std::string& s) {
    std::vector<std::string> v;
    std::stringstream ss(s);
    std::string f;
    while (std::getline(ss, f, ',')) v.push_back(f);
    return v;
  };
  const auto h = split(header), r = split(row);
  std::string out;
  for (std::size_t i = 0; i < h.size() && i < r.size(); ++i)
    if (h[i] != "sim_wall_seconds") out += h[i] + "=" + r[i] + ";";
  return out;
}

// A CSV file as rows of name -> cell (no quoted commas in these files'
// numeric columns; names are looked up by header).
std::vector<std::map<std::string, std::string>> read_rows(const std::string& file) {
  std::istringstream in(slurp(file));
  auto split = [](const std::string& line) {
    std::vector<std::string> v;
    std::string cell;
    bool quoted = false;
    for (char c : line) {
      if (c == '"')
        quoted = !quoted;
      else if (c == ',' && !quoted)
        v.push_back(std::exchange(cell, ""));
      else
        cell += c;
    }
    v.push_back(cell);
    return v;
  };
  std::string line;
  std::getline(in, line);
  const auto header = split(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    const auto cells = split(line);
    std::map<std::string, std::string> r;
    for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i) r[header[i]] = cells[i];
    rows.push_back(std::move(r));
  }
  return rows;
}

// Without --phase a model run decodes, but a model without decode (a
// ResNet, a UNet) runs its own phase, infer, instead of being refused for
// the default it was never asked for.
TEST(CliRun, ModelWithoutDecodeDefaultsToInfer) {
  TempDir d;
  const Result r = run_tpusim("run --arch v5e --model resnet50 --quiet --out " + d.path() + "/r", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string summary = slurp(d.path() + "/r/summary.csv");
  EXPECT_NE(summary.find(",resnet50.infer,"), std::string::npos) << summary;
  const Result decode = run_tpusim("run --arch v5e --model resnet50 --phase decode --quiet --out " + d.path() + "/x", d);
  EXPECT_EQ(decode.rc, 2);
  EXPECT_NE(decode.err.find("phase: expected one of infer for a resnet model, found decode"), std::string::npos)
      << decode.err;
}

}  // namespace

TEST(CliRun, NoCmemKeepsEveryTensorInHbm) {
  TempDir d;
  // Two matmuls with an activation between them: the hidden tensor is an
  // intermediate that is written once and read once.
  const std::string wl = d.path() + "/mlp.yaml";
  std::ofstream(wl) << "tpusim_workload: 1\nname: mlp2\ntensors:\n"
                       "  - {name: x,  shape: [512, 1024], dtype: bf16, kind: input}\n"
                       "  - {name: w1, shape: [1024, 2048], dtype: bf16, kind: weight}\n"
                       "  - {name: w2, shape: [2048, 1024], dtype: bf16, kind: weight}\n"
                       "ops:\n"
                       "  - {name: up, op: matmul, inputs: [x, w1]}\n"
                       "  - {name: act, op: gelu, inputs: [up]}\n"
                       "  - {name: down, op: matmul, inputs: [act, w2], output: y}\n";
  const std::string args = "run --arch v4 --workload " + wl + " --quiet --out ";
  ASSERT_EQ(run_tpusim(args + d.path() + "/cmem", d).rc, 0);
  ASSERT_EQ(run_tpusim(args + d.path() + "/hbm --no-cmem", d).rc, 0);
  const auto with = read_rows(d.path() + "/cmem/ops.csv"), without = read_rows(d.path() + "/hbm/ops.csv");
  ASSERT_EQ(with.size(), without.size());
  std::uint64_t cmem = 0;
  for (std::size_t i = 0; i < with.size(); ++i) {
    EXPECT_EQ(without[i].at("cmem_bytes"), "0") << without[i].at("name");
    cmem += std::stoull(with[i].at("cmem_bytes"));
    for (const auto* rows : {&with, &without}) {
      const auto& r = (*rows)[i];
      if (!r.at("cycles").empty()) {
        EXPECT_GE(std::stod(r.at("cycles")), std::stod(r.at("roofline_cycles"))) << r.at("name");
      }
    }
  }
  // The hidden activation (512 x 2048 bf16, 2 MiB: `up` with `act` fused
  // into it) moved to CMEM: written once by `up`, read once by `down`.
  EXPECT_EQ(cmem, 2u * (2u << 20));
  const auto sw = read_rows(d.path() + "/cmem/summary.csv"), so = read_rows(d.path() + "/hbm/summary.csv");
  EXPECT_LT(std::stoull(sw.at(0).at("hbm_bytes")), std::stoull(so.at(0).at("hbm_bytes")));
}

TEST(CliRun, SameRunTwiceGivesIdenticalResults) {
  TempDir d;
  const std::string args = "run --arch v5e --gemm 512,1024,768 --quiet --out ";
  ASSERT_EQ(run_tpusim(args + d.path() + "/a", d).rc, 0);
  ASSERT_EQ(run_tpusim(args + d.path() + "/b", d).rc, 0);
  for (const char* f : {"ops.csv", "units.csv", "config.effective.yaml"}) {
    const std::string a = slurp(d.path() + "/a/" + f);
    EXPECT_FALSE(a.empty()) << f;
    EXPECT_EQ(a, slurp(d.path() + "/b/" + f)) << f;
  }
  EXPECT_EQ(summary_without_wall(d.path() + "/a/summary.csv"), summary_without_wall(d.path() + "/b/summary.csv"));
}

TEST(CliRun, VcdAndTraceAreWritten) {
  TempDir d;
  const Result r = run_tpusim(
      "run --arch v5e --gemm 256,256,256 --quiet --trace --vcd " + d.path() + "/run.vcd --out " + d.path() + "/o", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string vcd = slurp(d.path() + "/run.vcd");
  for (const char* sig : {"$enddefinitions", "dma_in_flight", "tc0_mxu_in_flight", "tc0_vpu_in_flight"})
    EXPECT_NE(vcd.find(sig), std::string::npos) << sig;
  // Value changes were recorded after time 0 (some unit became busy and idle).
  EXPECT_NE(vcd.find("\n#"), std::string::npos);
  const std::string trace = slurp(d.path() + "/o/trace.json");
  EXPECT_NE(trace.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(trace.find("tc0.mxu0"), std::string::npos);
}

TEST(CliRun, BadInputExitsTwoWithTheReason) {
  TempDir d;
  const std::string bad = d.write("bad.yaml",
                                  "tpusim_workload: 1\n"
                                  "name: bad\n"
                                  "tensors:\n"
                                  "  - {name: x, shape: [8, 16], dtype: bf16, kind: input}\n"
                                  "  - {name: w, shape: [32, 8], dtype: bf16, kind: weight}\n"
                                  "ops:\n"
                                  "  - {name: mm, op: matmul, inputs: [x, w]}\n");
  Result r = run_tpusim("run --arch v5e --quiet --out " + d.path() + "/o --workload " + bad, d);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("bad.yaml:7"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mm"), std::string::npos) << r.err;

  r = run_tpusim("run --arch v5e --gemm 8,8 --quiet --out " + d.path() + "/o", d);
  EXPECT_EQ(r.rc, 2) << r.err;

  r = run_tpusim("run --arch v5e --gemm 64,64,64 --slice 3x5 --quiet --out " + d.path() + "/o", d);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("3x5"), std::string::npos) << r.err;

  r = run_tpusim("run --arch v5e --gemm 64,64,64 --slice 4x4 --mesh data=32 --quiet --out " + d.path() + "/o", d);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("data"), std::string::npos) << r.err;

  r = run_tpusim("run --arch v1 --gemm 64,64,64 --dtype bf16 --quiet --out " + d.path() + "/o", d);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("bf16"), std::string::npos) << r.err;

  r = run_tpusim("run --arch v5e --gemm 64,64,64 --recompute --quiet --out " + d.path() + "/o", d);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--recompute needs --model"), std::string::npos) << r.err;
}

// A one-layer encoder (small, so a train step takes a second) in `d`.
std::string tiny_encoder(const TempDir& d) {
  return d.write("tiny.yaml",
                 "name: tiny\nfamily: encoder\nhidden: 128\nlayers: 1\nvocab: 256\n"
                 "max_context: 64\nnorm: layernorm\nattention: {heads: 2}\n"
                 "ffn: {kind: gelu, size: 256}\n");
}

// --recompute re-emits each layer's forward before its backward: the train
// step of a one-layer encoder (small, so the two runs take a second) has the
// layers.0.recompute.* operators only with the flag.
TEST(CliRun, RecomputeAddsTheRecomputedForward) {
  TempDir d;
  const std::string model = tiny_encoder(d);
  const std::string base = "run --arch v5e --model " + model + " --phase train --batch 1 --seq 64 --quiet --out ";
  Result r = run_tpusim(base + d.path() + "/plain", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = run_tpusim(base + d.path() + "/re --recompute", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string plain = slurp(d.path() + "/plain/ops.csv"), re = slurp(d.path() + "/re/ops.csv");
  EXPECT_EQ(plain.find(".recompute."), std::string::npos);
  EXPECT_NE(re.find("layers.0.recompute."), std::string::npos);
}

// --remat none|minimal|selective|full on a one-layer encoder's train step:
// the model's FLOPs are the same under every policy; hardware FLOPs add the
// scores the backward attention kernels recompute (every policy) and the
// recomputed forward (full: the layer's matmuls and attention again;
// minimal: only its attention, the matmul outputs being kept; selective:
// attention and the FFN's input projection fc1). MFU and
// HFU are those FLOPs over 2 x cycles x the chip's peak MACs per cycle
// (v5e: 1 TensorCore x 4 MXUs x 128 x 128 = 65536).
// --fused-attention-backward: one grad_qkv op per attention instead of the
// dQ and dK/dV kernels; only S = QK^T is recomputed, so hardware FLOPs
// exceed model FLOPs by 2 heads x 64 x 64 pairs x 2 x 64 = 1048576 on the
// tiny encoder, and the model FLOPs are those of the separate kernels. It
// needs --model and --phase train.
TEST(CliRun, FusedAttentionBackwardIsOneKernel) {
  TempDir d;
  const std::string model = tiny_encoder(d);
  const std::string base = "run --arch v5e --model " + model + " --phase train --batch 1 --seq 64 --quiet --out ";
  ASSERT_EQ(run_tpusim(base + d.path() + "/sep", d).rc, 0);
  Result r = run_tpusim(base + d.path() + "/fused --fused-attention-backward", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto sep = read_rows(d.path() + "/sep/summary.csv").at(0);
  const auto fused = read_rows(d.path() + "/fused/summary.csv").at(0);
  EXPECT_EQ(std::stod(fused.at("hardware_flops")) - std::stod(fused.at("model_flops")), 1048576.0);
  EXPECT_EQ(std::stod(fused.at("model_flops")), std::stod(sep.at("model_flops")));
  const std::string ops = slurp(d.path() + "/fused/ops.csv");
  EXPECT_NE(ops.find("layers.0.attn.core.grad_qkv,attention"), std::string::npos);
  EXPECT_EQ(ops.find("layers.0.attn.core.grad_q,"), std::string::npos);
  r = run_tpusim(
      "run --arch v5e --model " + model + " --phase infer --quiet --fused-attention-backward --out " + d.path() + "/x",
      d);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--fused-attention-backward needs --phase train"), std::string::npos) << r.err;
  r = run_tpusim("run --arch v5e --gemm 8,8,8 --quiet --fused-attention-backward --out " + d.path() + "/y", d);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--fused-attention-backward needs --model"), std::string::npos) << r.err;
}

namespace {
// A usage error: exit code 2 and `part` in the message.
void expect_usage_error(const Result& r, const std::string& part) {
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
}
}  // namespace

// --attention-kernel dense: the attention as XLA's einsums (scores matmul,
// softmax, PV matmul) in ops.csv instead of one attention operator. A bad
// value, or the option without --model, is a usage error.
TEST(CliRun, DenseAttentionKernelIsEinsums) {
  TempDir d;
  const std::string model = tiny_encoder(d);
  const std::string base = "run --arch v5e --model " + model + " --phase infer --batch 1 --seq 64 --quiet --out ";
  Result r = run_tpusim(base + d.path() + "/dense --attention-kernel dense", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string ops = slurp(d.path() + "/dense/ops.csv");
  EXPECT_NE(ops.find("layers.0.attn.scores,matmul"), std::string::npos);
  EXPECT_NE(ops.find("layers.0.attn.softmax,softmax"), std::string::npos);
  EXPECT_NE(ops.find("layers.0.attn.core,matmul"), std::string::npos);
  EXPECT_EQ(ops.find(",attention,"), std::string::npos);
  expect_usage_error(run_tpusim(base + d.path() + "/x --attention-kernel sparse", d),
                     "--attention-kernel: expected flash, dense or batched, found 'sparse'");
  expect_usage_error(
      run_tpusim("run --arch v5e --gemm 8,8,8 --quiet --attention-kernel dense --out " + d.path() + "/y", d),
      "--attention-kernel needs --model");
}

// --attention-blocks: the flash kernels' fixed blocks (MaxText's
// sa_block_*), so the attention runs one query head per grid step; a
// malformed value, a workload that is not a model and a decode step are
// refused by name.
TEST(CliRun, AttentionBlocksFixTheFlashKernelsBlocks) {
  TempDir d;
  const std::string model = tiny_encoder(d);
  const std::string base = "run --arch v5e --model " + model + " --phase infer --batch 1 --seq 64 --quiet --out ";
  Result r = run_tpusim(base + d.path() + "/fixed --attention-blocks 512,512", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  // Blocks longer than the 64 positions are clamped to them (kv to a lane tile).
  const std::string ops = slurp(d.path() + "/fixed/ops.csv");
  EXPECT_NE(ops.find("splash q_heads=1 block_q=64 block_kv=128"), std::string::npos) << ops;
  r = run_tpusim(base + d.path() + "/searched", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(slurp(d.path() + "/searched/ops.csv").find("splash"), std::string::npos);
  r = run_tpusim(base + d.path() + "/x --attention-blocks 512,500", d);
  expect_usage_error(r, "--attention-blocks: expected Q,KV or");
  expect_usage_error(r, "found '512,500'");
  expect_usage_error(
      run_tpusim("run --arch v5e --gemm 8,8,8 --quiet --attention-blocks 512,512 --out " + d.path() + "/y", d),
      "--attention-blocks needs --model");
  expect_usage_error(
      run_tpusim("run --arch v5e --model llama3-8b --phase decode --layers 1 --quiet --attention-blocks 512,512 "
                 "--out " +
                     d.path() + "/z",
                 d),
      "attention_blocks: expected prefill, train or infer");
}

// --attention-kernel batched: a decode step's attention takes several
// sequences a grid step (ops.csv's blocking says how many), reading the
// same K/V bytes as the per-sequence kernel in fewer cycles at a short
// context, where the per-step costs are most of a sequence's, and as an
// operator of its own (--attention ...,seqs=16) near its K/V roofline;
// fixed (splash) blocks are refused with it.
TEST(CliRun, BatchedAttentionKernelTakesSeveralSequencesAStep) {
  TempDir d;
  const std::string base =
      "run --arch v6e --model llama3-8b --phase decode --layers 1 --batch 64 --context 256 --quiet --out ";
  Result r = run_tpusim(base + d.path() + "/flash", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = run_tpusim(base + d.path() + "/batched --attention-kernel batched", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  auto attention = [&](const std::string& dir) {
    for (const auto& row : read_rows(d.path() + "/" + dir + "/ops.csv"))
      if (row.at("name") == "layers.0.attn.core") return row;
    ADD_FAILURE() << "no layers.0.attn.core in " << dir;
    return std::map<std::string, std::string>{};
  };
  const auto flash = attention("flash"), batched = attention("batched");
  ASSERT_FALSE(flash.empty() || batched.empty());
  EXPECT_EQ(flash.at("blocking").find("seqs="), std::string::npos) << flash.at("blocking");
  EXPECT_NE(batched.at("blocking").find("seqs="), std::string::npos) << batched.at("blocking");
  EXPECT_EQ(batched.at("dma_bytes"), flash.at("dma_bytes"));
  EXPECT_LT(std::stod(batched.at("cycles")), std::stod(flash.at("cycles")));
  EXPECT_GE(std::stod(batched.at("cycles")), std::stod(batched.at("roofline_cycles")));
  // The operator alone (its query rows loaded and its outputs stored from
  // and to HBM, one copy per step for all its sequences): it streams its
  // K/V within 1.5x of the time HBM's peak takes.
  r = run_tpusim(
      "run --arch v6e --attention b=64,q=1,kv=256,h=32,kvh=8,d=128,seqs=16 --quiet --out " + d.path() + "/op", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto op = read_rows(d.path() + "/op/ops.csv").at(0);
  EXPECT_NE(op.at("blocking").find("seqs="), std::string::npos) << op.at("blocking");
  EXPECT_LE(std::stod(op.at("cycles")), 1.5 * std::stod(op.at("roofline_cycles"))) << op.at("blocking");
  expect_usage_error(run_tpusim("run --arch v5e --model llama3-8b --phase prefill --layers 1 --seq 512 --quiet "
                                "--attention-kernel batched --attention-blocks 512,512 --out " +
                                    d.path() + "/x",
                                d),
                     "attention_blocks: expected none with attention_kernel batched");
}

// --optimizer-dtype bf16: Adam's m and v in bf16 and no f32 master, so
// the optimizer moves fewer HBM bytes (per parameter: read and write
// 2 + 2 + 2 against 4 + 4 + 4, plus the bf16 weight's write) with the
// same matmuls. A bad value, another phase or no --model is a usage error.
TEST(CliRun, Bf16OptimizerStateMovesFewerBytes) {
  TempDir d;
  const std::string model = tiny_encoder(d);
  const std::string base = "run --arch v5e --model " + model + " --phase train --batch 1 --seq 64 --quiet --out ";
  std::map<std::string, std::map<std::string, std::string>> s;
  for (const char* dt : {"f32", "bf16"}) {
    Result r = run_tpusim(base + d.path() + "/" + dt + " --optimizer-dtype " + dt, d);
    ASSERT_EQ(r.rc, 0) << r.err;
    s[dt] = read_rows(d.path() + "/" + dt + "/summary.csv").at(0);
  }
  EXPECT_LT(std::stod(s["bf16"].at("hbm_bytes")), std::stod(s["f32"].at("hbm_bytes")));
  EXPECT_EQ(s["bf16"].at("model_flops"), s["f32"].at("model_flops"));
  // bf16: the weight itself, widened, is what the update subtracts from.
  EXPECT_NE(slurp(d.path() + "/bf16/ops.csv").find(".weight.w32,"), std::string::npos);
  EXPECT_EQ(slurp(d.path() + "/f32/ops.csv").find(".weight.w32,"), std::string::npos);
  Result r = run_tpusim(base + d.path() + "/x --optimizer-dtype f16", d);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--optimizer-dtype: expected f32 or bf16, found 'f16'"), std::string::npos) << r.err;
  r = run_tpusim("run --arch v5e --model " + model +
                     " --phase infer --batch 1 --seq 64 --quiet --optimizer-dtype bf16 --out " + d.path() + "/y",
                 d);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--optimizer-dtype bf16 needs --phase train"), std::string::npos) << r.err;
  r = run_tpusim("run --arch v5e --gemm 8,8,8 --quiet --optimizer-dtype bf16 --out " + d.path() + "/z", d);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--optimizer-dtype needs --model"), std::string::npos) << r.err;
}

TEST(CliRun, RematPoliciesAndModelVersusHardwareFlops) {
  TempDir d;
  const std::string model = tiny_encoder(d);
  const std::string base = "run --arch v5e --model " + model + " --phase train --batch 1 --seq 64 --quiet --out ";
  std::map<std::string, std::map<std::string, std::string>> s;
  const char* policies[] = {"none", "minimal", "selective", "full"};
  for (const char* p : policies) {
    Result r = run_tpusim(base + d.path() + "/" + p + " --remat " + p, d);
    ASSERT_EQ(r.rc, 0) << r.err;
    s[p] = read_rows(d.path() + "/" + p + "/summary.csv").at(0);
  }
  auto num = [&](const char* p, const char* k) { return std::stod(s[p].at(k)); };
  EXPECT_EQ(num("full", "model_flops"), num("none", "model_flops"));
  EXPECT_EQ(num("selective", "model_flops"), num("none", "model_flops"));
  EXPECT_EQ(num("minimal", "model_flops"), num("none", "model_flops"));
  // Forward of the layer at seq 64, hidden 128, 2 heads of 64, FFN 256:
  // q,k,v,o projections 4 x 2*64*128*128 = 8388608; FFN 2 x 2*64*128*256 =
  // 8388608; attention 2 heads x 64 x 64 pairs x 2 x (64 + 64) MAC-FLOPs =
  // 2097152 (not causal: an encoder). The backward kernels recompute
  // S = QK^T (the dQ and the dK/dV kernel) and dP = dO V^T (dK/dV):
  // 2 heads x 64 x 64 pairs x 2 x (64 + 64 + 64) = 3145728.
  const double bwd = 3145728.0;
  EXPECT_EQ(num("none", "hardware_flops") - num("none", "model_flops"), bwd);
  EXPECT_EQ(num("full", "hardware_flops") - num("full", "model_flops"), 8388608.0 + 8388608.0 + 2097152.0 + bwd);
  EXPECT_EQ(num("minimal", "hardware_flops") - num("minimal", "model_flops"), 2097152.0 + bwd);
  EXPECT_EQ(num("selective", "hardware_flops") - num("selective", "model_flops"), 2097152.0 + 4194304.0 + bwd);
  for (const char* p : policies) {
    const double peak = 2.0 * num(p, "total_cycles") * 65536.0;
    EXPECT_NEAR(num(p, "mfu"), num(p, "model_flops") / peak, 1e-5 * num(p, "mfu")) << p;
    EXPECT_NEAR(num(p, "hfu"), num(p, "hardware_flops") / peak, 1e-5 * num(p, "hfu")) << p;
  }
  std::string ops = slurp(d.path() + "/minimal/ops.csv");
  EXPECT_EQ(ops.find("layers.0.recompute.attn.q_proj,"), std::string::npos);
  EXPECT_NE(ops.find("layers.0.recompute."), std::string::npos);

  Result r = run_tpusim(base + d.path() + "/x --remat partial", d);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--remat: expected a remat policy: none, minimal, selective, full, qkv_proj_offloaded, "
                       "minimal_offloaded or custom[:name=place,...], found 'partial'"),
            std::string::npos)
      << r.err;
  r = run_tpusim(base + d.path() + "/x --remat selective --recompute", d);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--recompute means --remat full"), std::string::npos) << r.err;
  r = run_tpusim(
      "run --arch v5e --model " + model + " --phase infer --seq 64 --remat full --quiet --out " + d.path() + "/x", d);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("remat"), std::string::npos) << r.err;
}

// --remat qkv_proj_offloaded on the one-layer encoder: its q, k and v
// (64 tokens x 128 x bf16 = 16384 bytes each) go to host memory and come
// back: 6 x 16384 = 98304 bytes over the host link (units.csv), which is
// busy at least that over v5e's 16 GB/s (6.144 us). Hardware FLOPs: the
// encoder is post-norm (each residual sum is a norm's input, which the
// norm's backward reads), so everything but q, k, v is recomputed: the
// output projection 2*64*128*128 = 2097152, fc1 and fc2 2 x 4194304, and
// the attention 2097152; and the scores the backward attention kernels
// recompute, 3145728 (RematPoliciesAndModelVersusHardwareFlops). A chip
// without a host link rejects the run.
TEST(CliRun, OffloadedRematMovesActivationsOverTheHostLink) {
  TempDir d;
  const std::string model = tiny_encoder(d);
  const std::string base = "run --arch v5e --model " + model + " --phase train --batch 1 --seq 64 --quiet --out ";
  Result r = run_tpusim(base + d.path() + "/off --remat qkv_proj_offloaded", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  double host_bytes = -1, busy = -1;
  for (const auto& u : read_rows(d.path() + "/off/units.csv")) {
    if (u.at("block") != "dma") continue;
    if (u.at("stat") == "host_bytes") host_bytes = std::stod(u.at("value"));
    if (u.at("stat") == "host_link_busy") busy = std::stod(u.at("value"));
  }
  EXPECT_EQ(host_bytes, 98304.0);
  EXPECT_GE(busy, 98304.0 / 16e9 - 1e-12);
  const auto s = read_rows(d.path() + "/off/summary.csv").at(0);
  EXPECT_EQ(std::stod(s.at("hardware_flops")) - std::stod(s.at("model_flops")),
            2097152.0 + 2 * 4194304.0 + 2097152.0 + 3145728.0);
  const std::string ops = slurp(d.path() + "/off/ops.csv");
  EXPECT_NE(ops.find("layers.0.attn.q_proj.offload,copy"), std::string::npos);
  EXPECT_NE(ops.find("layers.0.reload.attn.q_proj,copy"), std::string::npos);
  r = run_tpusim(base + d.path() + "/x --remat qkv_proj_offloaded --set pcie_bandwidth=0", d);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("pcie_bandwidth"), std::string::npos) << r.err;
}

// MaxText's custom remat policy on the two-layer decoder (hidden 256, 4
// heads and 2 KV heads of 64) at 64 tokens: each layer's input
// (64 x 256 x bf16 = 32768 bytes), q (32768), k and v (16384 each) go to
// host memory and come back: 2 layers x 98304 x 2 = 393216 bytes over the
// host link. A bad entry is named with what was expected.
// `model export` takes the same step options as `run`: the exported
// training step has splash attention's fused backward kernel with
// --fused-attention-backward and its dQ and dK/dV kernels without; a MoE
// model with --moe-capacity-factor exports the dispatch and combine
// einsums; misuse is a usage or model error.
TEST(CliModelExport, TakesRunsStepOptions) {
  TempDir d;
  const std::string dense = d.path() + "/tiny.yaml", moe = d.path() + "/moe.yaml";
  std::ofstream(dense) << tpusim::test::kTinyDecoder;
  std::ofstream(moe) << tpusim::test::kTinyDecoder << "moe: {experts: 4, top_k: 2, expert_ffn_size: 512}\n";
  const std::string train = " --phase train --batch 1 --seq 64";
  Result r = run_tpusim("model export " + dense + train + " --fused-attention-backward", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("layers.0.attn.core.grad_qkv"), std::string::npos);
  EXPECT_EQ(r.out.find(".grad_kv"), std::string::npos);
  r = run_tpusim("model export " + dense + train, d);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find(".grad_qkv"), std::string::npos);
  EXPECT_NE(r.out.find("layers.0.attn.core.grad_kv"), std::string::npos);
  r = run_tpusim("model export " + moe + train + " --moe-capacity-factor 1.25", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("layers.0.mlp.dispatch"), std::string::npos);
  EXPECT_NE(r.out.find("bsm,bsec->ebcm"), std::string::npos);
  r = run_tpusim("model export " + moe + train, d);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find("bsm,bsec->ebcm"), std::string::npos);
  r = run_tpusim("model export " + dense + " --phase prefill --fused-attention-backward", d);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("model export: --fused-attention-backward needs --phase train"), std::string::npos) << r.err;
  r = run_tpusim("model export " + dense + train + " --moe-capacity-factor 2", d);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("moe_capacity_factor: expected 0 for a model without mixture-of-experts layers"),
            std::string::npos)
      << r.err;
}

TEST(CliRun, CustomRematOffloadsTheNamedActivations) {
  TempDir d;
  const std::string model = d.path() + "/tiny.yaml";
  {
    std::ofstream f(model);
    f << tpusim::test::kTinyDecoder;
  }
  const std::string base = "run --arch v5e --model " + model + " --phase train --batch 1 --seq 64 --quiet --out ";
  Result r = run_tpusim(base + d.path() + "/c --remat custom:decoder_layer_input=offload,qkv_proj=offload", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  double host_bytes = -1;
  for (const auto& u : read_rows(d.path() + "/c/units.csv"))
    if (u.at("block") == "dma" && u.at("stat") == "host_bytes") host_bytes = std::stod(u.at("value"));
  EXPECT_EQ(host_bytes, 393216.0);
  const std::string ops = slurp(d.path() + "/c/ops.csv");
  EXPECT_NE(ops.find("layers.0.mlp_residual.offload,copy"), std::string::npos);
  EXPECT_NE(ops.find("layers.1.reload.input.layers.0.mlp_residual,copy"), std::string::npos);
  EXPECT_NE(ops.find("layers.1.reload.attn.k_proj,copy"), std::string::npos);
  EXPECT_EQ(ops.find("layers.1.recompute.attn.q_proj,"), std::string::npos);
  EXPECT_NE(ops.find("layers.1.recompute.mlp.gate_proj,"), std::string::npos);
  r = run_tpusim("run --arch v5e --gemm 128,128,128 --moe-capacity-factor 1.25 --quiet --out " + d.path() + "/x", d);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--moe-capacity-factor needs --model"), std::string::npos) << r.err;
  r = run_tpusim(base + d.path() + "/x --moe-capacity-factor 1.25", d);  // the tiny decoder has no experts
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("moe_capacity_factor: expected 0 for a model without mixture-of-experts layers"),
            std::string::npos)
      << r.err;
  r = run_tpusim(base + d.path() + "/x --remat custom:query_proj=host", d);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--remat: expected a place remat, device or offload (entry 'query_proj=host'), found "
                       "'custom:query_proj=host'"),
            std::string::npos)
      << r.err;
}

// DLRM-v2 inference on v5p: with its 4 SparseCores (configs/v5p.yaml) the
// 26 embedding lookups run on them (blocking "... on 4 SparseCores", the
// sc<N> sequencers in units.csv) while the TensorCores run the bottom MLP:
// some lookup's [start, end) overlaps a matmul's, and the step is faster
// than the TensorCore-only lowering of the same run (--set sparsecores=0),
// where every lookup runs between TensorCore kernels.
TEST(CliRun, DlrmLookupsRunOnSparseCoresOverlappingTensorCores) {
  TempDir d;
  const std::string base = "run --arch v5p --model dlrm-v2 --phase infer --batch 512 --quiet --out ";
  Result r = run_tpusim(base + d.path() + "/sc", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = run_tpusim(base + d.path() + "/tc --set sparsecores=0", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto sc = read_rows(d.path() + "/sc/ops.csv"), tc = read_rows(d.path() + "/tc/ops.csv");
  int gathers = 0;
  bool overlap = false;
  for (const auto& g : sc) {
    if (g.at("kind") != "gather") continue;
    ++gathers;
    EXPECT_NE(g.at("blocking").find("on 4 SparseCores"), std::string::npos) << g.at("blocking");
    const double g0 = std::stod(g.at("start_cycle")), g1 = std::stod(g.at("end_cycle"));
    for (const auto& m : sc)
      if (m.at("kind") == "matmul" && !m.at("start_cycle").empty())
        overlap = overlap || (std::stod(m.at("start_cycle")) < g1 && g0 < std::stod(m.at("end_cycle")));
  }
  EXPECT_EQ(gathers, 26);
  EXPECT_TRUE(overlap);
  for (const auto& g : tc)
    if (g.at("kind") == "gather") {
      EXPECT_EQ(g.at("blocking").find("SparseCore"), std::string::npos);
    }
  const std::string units = slurp(d.path() + "/sc/units.csv");
  EXPECT_NE(units.find("sc3.tiles0"), std::string::npos);
  EXPECT_EQ(slurp(d.path() + "/tc/units.csv").find("sc0."), std::string::npos);
  const double t_sc = std::stod(read_rows(d.path() + "/sc/summary.csv").at(0).at("seconds"));
  const double t_tc = std::stod(read_rows(d.path() + "/tc/summary.csv").at(0).at("seconds"));
  EXPECT_LT(t_sc, t_tc);
}

// SCALE-Sim topologies carry no dtype: --dtype gives every tensor its dtype,
// so a topology runs on v1, whose MXU has int8 only (Jouppi et al., ISCA 2017).
TEST(CliRun, DtypeAppliesToScaleSimImports) {
  TempDir d;
  const std::string csv = d.write("topo.csv", "Layer, M, N, K,\nfc1, 256, 256, 256,\n");
  Result r = run_tpusim("run --arch v1 --workload " + csv + " --dtype int8 --quiet --out " + d.path() + "/int8", d);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string ops = slurp(d.path() + "/int8/ops.csv");
  EXPECT_NE(ops.find("int8"), std::string::npos) << ops;
  EXPECT_EQ(ops.find("bf16"), std::string::npos) << ops;
  // The default (bf16) does not run on v1, and the error says why.
  r = run_tpusim("run --arch v1 --workload " + csv + " --quiet --out " + d.path() + "/bf16", d);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("bf16"), std::string::npos) << r.err;
}

// Flags that shape a model, and --dtype for a workload file that gives its
// tensors their own dtypes, are refused where they would do nothing, rather
// than ignored: `--gemm ... --phase train` must not pass for a training run.
TEST(CliRun, FlagsThatWouldDoNothingAreRefused) {
  TempDir d;
  const std::string out = " --quiet --out " + d.path() + "/o";
  for (const std::string flag : {"--phase train", "--batch 8", "--seq 512", "--context 4096", "--image 384",
                                 "--lora-rank 8", "--lora-rank -1", "--lora-targets all"}) {
    const Result r = run_tpusim("run --arch v5e --gemm 64,64,64 " + flag + out, d);
    EXPECT_EQ(r.rc, 2) << flag << ": " << r.err;
    const std::string name = flag.substr(0, flag.find(' '));
    EXPECT_NE(r.err.find(name + " needs --model"), std::string::npos) << flag << ": " << r.err;
  }
  const std::string yaml = d.write("mm.yaml",
                                   "tpusim_workload: 1\nname: mm\ntensors:\n"
                                   "  - {name: a, shape: [64, 64], dtype: bf16, kind: input}\n"
                                   "  - {name: b, shape: [64, 64], dtype: bf16, kind: weight}\n"
                                   "ops:\n  - {name: mm, op: matmul, inputs: [a, b]}\n");
  Result r = run_tpusim("run --arch v5e --workload " + yaml + out, d);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = run_tpusim("run --arch v5e --workload " + yaml + " --dtype int8" + out, d);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--dtype applies to"), std::string::npos) << r.err;
  r = run_tpusim("run --arch v5e --gemm 64,64,64 --top -1" + out, d);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--top must be >= 0"), std::string::npos) << r.err;
  // With a model, adapter targets without a rank would be no adapters.
  const std::string model = d.write("tiny.yaml", tpusim::test::kTinyDecoder);
  r = run_tpusim("run --arch v5e --model " + model + " --phase decode --context 128" + " --lora-targets all" + out, d);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--lora-targets needs --lora-rank"), std::string::npos) << r.err;
}

// --mesh is parsed once; a bad one exits 2 naming the item, before any
// workload is built.
TEST(CliRun, BadMeshNamesTheItem) {
  TempDir d;
  Result r = run_tpusim(
      "run --arch v5e --gemm 64,64,64 --slice 4x4 --mesh data=4,tensor=0 --quiet --out " + d.path() + "/o", d);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("mesh.tensor: expected a size that is an integer >= 1, found '0'"), std::string::npos) << r.err;
  // With --model, only the model zoo's axis names.
  r = run_tpusim("run --arch v5e --model llama3-8b --slice 4x4 --mesh data=4,tensr=4 --quiet --out " + d.path() + "/o",
                 d);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("did you mean 'tensor'?"), std::string::npos) << r.err;
}
