// Hostile workload input (issue 17): sizes that do not fit 64 bits, ops in
// any order, duplicate keys and extra documents, non-regular files. Each
// case must end in a WorkloadError naming the tensor or op, never in a
// wrapped number, a crash or a hang.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "workload_test_util.h"
#include "workloads/builtin.h"
#include "workloads/io/scalesim_csv.h"
#include "workloads/io/workload_file.h"
#include "workloads/ir/cost.h"

using namespace tpusim::workloads;

namespace {

using tpusim::workloads::testing::error_of;

std::string wl_with_shape(const std::string& shape, const std::string& dtype = "bf16") {
  return "tpusim_workload: 1\nname: big\ntensors:\n  - {name: x, shape: " + shape + ", dtype: " + dtype +
         "}\nops:\n  - {name: r, op: relu, inputs: [x]}\n";
}

TEST(HostileWorkload, ElementCountOverflowNamesTheTensor) {
  // 2^32 * 2^32 * 2^32 = 2^96 elements: wrapped to 0 in int64 before.
  const std::string e =
      error_of([] { read_workload_string(wl_with_shape("[4294967296, 4294967296, 4294967296]"), "w.yaml"); });
  EXPECT_NE(e.find("tensors[0].shape (tensor 'x')"), std::string::npos) << e;
  EXPECT_NE(e.find("overflows"), std::string::npos) << e;
  EXPECT_NE(e.find("w.yaml:4:"), std::string::npos) << e;
}

TEST(HostileWorkload, TensorAboveOnePebibyteIsRefused) {
  // 2^31 * 2^31 f32 elements = 2^64 bytes: the byte count itself overflows;
  // 2^48 bf16 elements = 2^49 bytes is the largest power of two allowed.
  EXPECT_NE(
      error_of([] { read_workload_string(wl_with_shape("[2147483648, 2147483648]", "f32"), "w.yaml"); }).find("1 PiB"),
      std::string::npos);
  EXPECT_NE(error_of([] { read_workload_string(wl_with_shape("[1073741824, 1048576]"), "w.yaml"); }).find("1 PiB"),
            std::string::npos);  // 2^50 elements x 2 bytes = 2^51 bytes
  EXPECT_EQ(error_of([] { read_workload_string(wl_with_shape("[262144, 1073741824]"), "w.yaml"); }), "");  // 2^49 B
}

TEST(HostileWorkload, BuiltinGemmOverflowIsAWorkloadError) {
  EXPECT_NE(error_of([] { builtin::parse_gemm("4294967296,4294967296,4294967296"); }).find("overflows"),
            std::string::npos);
  EXPECT_NE(error_of([] { builtin::parse_gemm("2147483648,2147483648,1"); }).find("1 PiB"), std::string::npos);
  // Each operand 2^42 elements (8 TiB, allowed) but 2^63 MACs: 2^64 FLOPs.
  const std::string e = error_of([] { builtin::parse_gemm("2097152,2097152,2097152"); });
  EXPECT_NE(e.find("exceeds 2^64"), std::string::npos) << e;
}

TEST(HostileWorkload, HugeConvStrideAndDilationAreBounded) {
  const std::string base =
      "tpusim_workload: 1\nname: c\ntensors:\n  - {name: x, shape: [1, 8, 8, 4], dtype: bf16}\n"
      "  - {name: w, shape: [3, 3, 4, 8], dtype: bf16, kind: weight}\nops:\n";
  const std::string e1 = error_of([&] {
    read_workload_string(base + "  - {name: c, op: conv2d, inputs: [x, w], stride: [4611686018427387904, 1]}\n",
                         "c.yaml");
  });
  EXPECT_NE(e1.find("<= 1048576"), std::string::npos) << e1;
  const std::string e2 = error_of([&] {
    read_workload_string(base + "  - {name: c, op: conv2d, inputs: [x, w], dilation: [4611686018427387904, 1]}\n",
                         "c.yaml");
  });
  EXPECT_NE(e2.find("<= 1048576"), std::string::npos) << e2;
}

TEST(HostileWorkload, ScaleSimRowWithHugeDimsIsRefused) {
  const std::string e = error_of(
      [] { read_scalesim_csv_string("Layer, M, N, K,\nbig, 4294967296, 4294967296, 4294967296,\n", "t.csv", {}); });
  EXPECT_NE(e.find("overflows"), std::string::npos) << e;
  EXPECT_NE(e.find("t.csv:2"), std::string::npos) << e;
}

TEST(HostileWorkload, CausalAttentionPairsInClosedForm) {
  // Brute force over queries for small sizes (the definition in cost.h).
  for (std::int64_t q = 1; q <= 9; ++q)
    for (std::int64_t kv = 1; kv <= 9; ++kv) {
      std::uint64_t n = 0;
      for (std::int64_t i = 0; i < q; ++i)
        n += static_cast<std::uint64_t>(std::clamp<std::int64_t>(i + kv - q + 1, 0, kv));
      EXPECT_EQ(attention_score_pairs(q, kv, true), n) << q << " " << kv;
    }
  // 2^40 queries: a loop over them would run for hours; the closed form
  // answers at once, 2^40 (2^40 + 1) / 2 = 2^79 + 2^39: beyond 64 bits.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(attention_score_pairs(std::int64_t{1} << 40, std::int64_t{1} << 40, true), UINT64_MAX);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(attention_score_pairs(std::int64_t{1} << 20, std::int64_t{1} << 20, true),
            (std::uint64_t{1} << 39) + (std::uint64_t{1} << 19));
}

TEST(HostileWorkload, MeshAxisSizeIsBounded) {
  const std::string e = error_of([] {
    read_workload_string(
        "tpusim_workload: 1\nname: m\nmesh: {data: 4611686018427387904}\ntensors:\n"
        "  - {name: x, shape: [8], dtype: bf16}\nops:\n  - {name: r, op: relu, inputs: [x]}\n",
        "m.yaml");
  });
  EXPECT_NE(e.find("mesh.data"), std::string::npos) << e;
}

TEST(HostileWorkload, ConsumerListedBeforeProducerIsOrderedOnLoad) {
  const std::string text =
      "tpusim_workload: 1\nname: rev\ntensors:\n  - {name: x, shape: [128, 256], dtype: bf16}\n"
      "  - {name: w, shape: [256, 128], dtype: bf16, kind: weight}\n"
      "  - {name: mm, shape: [128, 128], dtype: bf16, kind: activation}\n"
      "  - {name: act, shape: [128, 128], dtype: bf16, kind: output}\n"
      "ops:\n  - {name: act, op: relu, inputs: [mm], output: act}\n"
      "  - {name: mm, op: matmul, inputs: [x, w], output: mm}\n";
  const Workload wl = read_workload_string(text, "rev.yaml");
  ASSERT_EQ(wl.ops.size(), 2u);
  EXPECT_EQ(wl.ops[0].name, "mm");  // the producer comes first now
  EXPECT_EQ(wl.ops[1].name, "act");
  EXPECT_EQ(wl.ops[1].loc.line, 9);  // each op keeps its own line
  // 128 x 256 x 128 MACs, whatever the file order.
  EXPECT_EQ(workload_cost(wl).macs, 128u * 256u * 128u);
}

TEST(HostileWorkload, DuplicateKeysAndSecondDocumentsAreErrors) {
  const std::string dup =
      error_of([] { read_workload_string("tpusim_workload: 1\nname: a\nname: b\nops: []\n", "d.yaml"); });
  EXPECT_NE(dup.find("d.yaml:3:1"), std::string::npos) << dup;
  EXPECT_NE(dup.find("duplicate key 'name'"), std::string::npos) << dup;
  const std::string nested = error_of([] {
    read_workload_string(
        "tpusim_workload: 1\nname: a\ntensors:\n  - {name: x, name: y, shape: [1], dtype: bf16}\nops: []\n", "n.yaml");
  });
  EXPECT_NE(nested.find("duplicate key 'name'"), std::string::npos) << nested;
  const std::string doc =
      error_of([] { read_workload_string("tpusim_workload: 1\nname: a\nops: []\n---\nname: b\n", "m.yaml"); });
  EXPECT_NE(doc.find("second document"), std::string::npos) << doc;
  const std::string json = error_of(
      [] { read_workload_string(R"({"tpusim_workload": 1, "name": "a", "ops": []}{"name": "b"})", "m.json"); });
  EXPECT_NE(json.find("second document"), std::string::npos) << json;
  const std::string jdup = error_of(
      [] { read_workload_string(R"({"tpusim_workload": 1, "name": "a", "name": "b", "ops": []})", "d.json"); });
  EXPECT_NE(jdup.find("duplicate key 'name'"), std::string::npos) << jdup;
}

TEST(HostileWorkload, AliasCyclesAndAliasBombsAreRefused) {
  // An alias inside its own anchor made the config loader spin forever.
  const std::string cyc =
      error_of([] { read_workload_string("tpusim_workload: 1\nname: a\nops: &a [*a]\n", "c.yaml"); });
  EXPECT_NE(cyc.find("cycle"), std::string::npos) << cyc;
  // Ten levels of ten aliases each: 10^10 nodes once expanded.
  std::string bomb = "tpusim_workload: 1\nname: a\nx0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (int i = 1; i <= 10; ++i) {
    bomb += "x" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) bomb += (k ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = error_of([&] { read_workload_string(bomb + "ops: []\n", "b.yaml"); });
  EXPECT_NE(e.find("more than 20 million nodes"), std::string::npos) << e;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // A plain shared alias is fine (and still an unknown key here).
  const std::string ok =
      error_of([] { read_workload_string("tpusim_workload: 1\nname: a\nx: &s [1]\ny: *s\nops: []\n", "s.yaml"); });
  EXPECT_EQ(ok.find("cycle"), std::string::npos) << ok;
  EXPECT_NE(ok.find("unknown key 'x'"), std::string::npos) << ok;
}

// Inputs the fuzzers found (tests/fuzz/regressions/).
TEST(HostileWorkload, FuzzFindingYamlLoadAllLoopEndsInAnError) {
  // A mutated JSON workload on which yaml-cpp's LoadAll never returned.
  std::ifstream in(std::string(TPUSIM_SOURCE_DIR) + "/tests/fuzz/regressions/workload_yaml_loadall_hang.json",
                   std::ios::binary);
  ASSERT_TRUE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(error_of([&] { read_workload_string(text, "hang.json"); }), "");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

// A zero dim on an op's input reached the op's shape inference (attention
// divided the query heads by a zero kv_heads): now an error at the op.
TEST(HostileWorkload, FuzzFindingZeroDimInputIsAnErrorNotADivision) {
  std::ifstream in(
      std::string(TPUSIM_SOURCE_DIR) + "/tests/fuzz/regressions/workload_yaml_attention_zero_kv_heads.yaml",
      std::ios::binary);
  ASSERT_TRUE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string e = error_of([&] { read_workload_string(text, "zero.yaml"); });
  EXPECT_NE(e.find("zero.yaml:10:"), std::string::npos) << e;
  EXPECT_NE(e.find("input 'latent': shape: expected dims >= 1, found [32, 8192, 0, 576]"), std::string::npos) << e;
}

TEST(HostileWorkload, NonRegularFilesAreRefusedWithoutReading) {
  EXPECT_NE(error_of([] { read_workload_file("/dev/zero"); }).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of([] { read_scalesim_csv("/dev/zero"); }).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of([] { read_workload_file("/"); }).find("directory"), std::string::npos);
  const std::string fifo =
      (std::filesystem::temp_directory_path() / ("tpusim_fifo_" + std::to_string(::getpid()))).string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opening a FIFO for reading would block until a writer comes: refused first.
  EXPECT_NE(error_of([&] { read_workload_file(fifo); }).find("not a regular file"), std::string::npos);
  std::filesystem::remove(fifo);
}

}  // namespace
