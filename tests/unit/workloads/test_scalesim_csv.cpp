// SCALE-Sim topology CSV import: both forms, the mapping, malformed rows.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "workloads/io/scalesim_csv.h"
#include "workloads/ir/cost.h"

using namespace tpusim::workloads;
using tpusim::arch::DType;

namespace {

class ScaleSimCsv : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("tpusim_scalesim_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::string error_of(const std::string& path) {
    try {
      read_scalesim_csv(path);
    } catch (const WorkloadError& e) {
      return e.what();
    }
    return "";
  }
  std::filesystem::path dir_;
};

}  // namespace

TEST_F(ScaleSimCsv, ConvForm) {
  std::string p =
      write("resnet_part.csv",
            "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
            "Conv1, 230, 230, 7, 7, 3, 64, 2,\n"
            "\n"
            "CB2a_1, 56, 56, 1, 1, 64, 64, 1,\n"
            "Rect, 20, 30, 3, 5, 8, 16, 2, 3,\n");
  Workload wl = read_scalesim_csv(p);
  EXPECT_EQ(wl.name, "resnet_part");
  ASSERT_EQ(wl.ops.size(), 3u);
  const Op& c1 = wl.ops[0];
  EXPECT_EQ(c1.kind, OpKind::conv2d);
  EXPECT_EQ(c1.name, "Conv1");
  EXPECT_EQ(wl.find_tensor("Conv1.ifmap")->shape, (Shape{1, 230, 230, 3}));
  EXPECT_EQ(wl.find_tensor("Conv1.filter")->shape, (Shape{7, 7, 3, 64}));
  // Valid padding: (230 - 7) / 2 + 1 = 112
  EXPECT_EQ(wl.find_tensor("Conv1")->shape, (Shape{1, 112, 112, 64}));
  EXPECT_EQ(wl.find_tensor("Conv1")->kind, TensorKind::output);
  // 112*112*64 * 7*7*3 = 118,013,952 MACs
  EXPECT_EQ(op_cost(wl, c1).macs, 118013952u);
  EXPECT_EQ(c1.loc.line, 2);
  EXPECT_EQ(wl.ops[1].loc.line, 4);  // blank line skipped, numbering kept
  // 9th column: separate width stride. H: (20-3)/2+1 = 9; W: (30-5)/3+1 = 9
  EXPECT_EQ(wl.find_tensor("Rect")->shape, (Shape{1, 9, 9, 16}));
  EXPECT_EQ(wl.ops[2].as<Conv2dAttrs>().stride_w, 3);
  EXPECT_EQ(wl.find_tensor("Rect.ifmap")->dtype, DType::bf16);
}

TEST_F(ScaleSimCsv, GemmFormAndDtypeOption) {
  std::string p = write("gpt.csv", "Layer, M, N, K,\nQKT, 1024, 1024, 64,\nFF1, 1024, 3072, 1600,\n");
  ScaleSimOptions o;
  o.dtype = DType::int8;
  o.name = "gpt_layers";
  Workload wl = read_scalesim_csv(p, o);
  EXPECT_EQ(wl.name, "gpt_layers");
  ASSERT_EQ(wl.ops.size(), 2u);
  EXPECT_EQ(wl.ops[1].kind, OpKind::matmul);
  EXPECT_EQ(wl.find_tensor("FF1.a")->shape, (Shape{1024, 1600}));  // M x K
  EXPECT_EQ(wl.find_tensor("FF1.b")->shape, (Shape{1600, 3072}));  // K x N
  EXPECT_EQ(wl.find_tensor("FF1")->shape, (Shape{1024, 3072}));
  EXPECT_EQ(wl.find_tensor("FF1.a")->dtype, DType::int8);
  // M*N*K = 1024 * 3072 * 1600 = 5,033,164,800
  EXPECT_EQ(op_cost(wl, wl.ops[1]).macs, 5033164800ull);
}

TEST_F(ScaleSimCsv, ShippedExamplesRead) {
  const char* src = std::getenv("TPUSIM_SOURCE_DIR");
  std::string root = src ? src : TPUSIM_SOURCE_DIR;
  EXPECT_EQ(read_scalesim_csv(root + "/configs/workloads/scalesim_conv_example.csv").ops.size(), 5u);
  EXPECT_EQ(read_scalesim_csv(root + "/configs/workloads/scalesim_gemm_example.csv").ops.size(), 4u);
}

TEST_F(ScaleSimCsv, FormDetection) {
  EXPECT_EQ(detect_scalesim_form("Layer, M, N, K,"), ScaleSimForm::gemm);
  EXPECT_EQ(detect_scalesim_form("layer,m,n,k"), ScaleSimForm::gemm);
  EXPECT_EQ(detect_scalesim_form("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, "
                                 "Channels, Num Filter, Strides,"),
            ScaleSimForm::conv);
  EXPECT_THROW(detect_scalesim_form("name, rows, cols"), WorkloadError);
}

TEST_F(ScaleSimCsv, MalformedRows) {
  const std::string conv_h =
      "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n";
  struct Case {
    std::string text;
    std::vector<std::string> parts;
  };
  std::vector<Case> cases = {
      {conv_h + "C1, 56, 56, 3, 3, 64, 64, 1,\nC2, 56, fifty, 3, 3, 64, 64, 1,\n",
       {"bad.csv:3", "row 'C2', column 'IFMAP Width'", "expected a positive integer, found 'fifty'"}},
      {conv_h + "C1, 56, 56, 3, 3, 64,\n", {"bad.csv:2", "row 'C1'", "expected 8 or 9 columns, found 6"}},
      {conv_h + "C1, 5, 56, 7, 3, 64, 64, 1,\n", {"bad.csv:2", "column 'Filter Height'", "larger than IFMAP"}},
      {conv_h + "C1, 56, 56, 3, 3, 64, 64, 0,\n", {"bad.csv:2", "column 'Strides'", "found '0'"}},
      {conv_h + "C1, 56, 56, 3, 3, 64, 64, 1,\nC1, 56, 56, 3, 3, 64, 64, 1,\n",
       {"bad.csv:3", "layer name 'C1' used twice"}},
      {"Layer, M, N, K,\nL1, 10, 20,\n", {"bad.csv:2", "row 'L1'", "expected 4 columns, found 3"}},
      {"Layer, M, N, K,\nL1, 10, -20, 5,\n", {"bad.csv:2", "column 'N'", "found '-20'"}},
      {"Layer, M, N, K,\n, 10, 20, 5,\n", {"bad.csv:2", "column 'Layer'", "expected a layer name"}},
      {"Name, Rows, Cols,\nL1, 1, 2,\n", {"bad.csv:1", "header", "expected a SCALE-Sim header"}},
      {"Layer, M, N, K,\n", {"bad.csv", "no layer rows"}},
      {"", {"bad.csv", "empty SCALE-Sim topology file"}},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::string msg = error_of(write("bad.csv", cases[i].text));
    EXPECT_FALSE(msg.empty()) << "case " << i;
    for (const auto& p : cases[i].parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "case " << i << ": '" << p << "' not in: " << msg;
  }
}

TEST_F(ScaleSimCsv, AllBadRowsAreReported) {
  std::string p = write("two_bad.csv", "Layer, M, N, K,\nA, x, 1, 1,\nB, 1, 1, y,\n");
  try {
    read_scalesim_csv(p);
    FAIL() << "expected an error";
  } catch (const WorkloadError& e) {
    EXPECT_EQ(e.diagnostics().size(), 2u) << e.what();
  }
}
