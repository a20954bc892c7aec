// Multislice runs through the executable: `--slice N*SHAPE` joins N
// identical slices by the data-centre network. A collective over the DCN
// takes the closed form of its ring over the slices (IciDcn unit tests)
// plus the collective start-up; a model's mesh puts its first axis on the
// DCN; bad shapes and meshes are usage errors that name what is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "../unit/sim/config_test_util.h"
#include "cli_test_util.h"
#include "csv_rows.h"
#include "sim/config/config_loader.h"
#include "tiny_decoder.h"

namespace {

using tpusim::sim::testing::TempDir;
using tpusim::test::rows_of;

tpusim::test::CliResult tpusim_in(const TempDir& d, const std::string& args) {
  return tpusim::test::run_tpusim_in(d.path(), args);
}

// An all_reduce of a 1 MiB buffer over `axes` of `mesh`, then a matmul on
// it.
std::string workload(const std::string& mesh, const std::string& axes) {
  return "tpusim_workload: 1\nname: ar_mm\nmesh: {" + mesh +
         "}\n"
         "tensors:\n"
         "  - {name: g, shape: [512, 1024], dtype: bf16, kind: input}\n"
         "  - {name: w, shape: [1024, 1024], dtype: bf16, kind: weight}\n"
         "ops:\n"
         "  - {name: ar, op: all_reduce, inputs: [g], mesh_axes: [" +
         axes +
         "]}\n"
         "  - {name: mm, op: matmul, inputs: [ar, w]}\n";
}

const std::map<std::string, std::string>& op_row(const std::vector<std::map<std::string, std::string>>& rows,
                                                 const std::string& name) {
  for (const auto& r : rows)
    if (r.at("name") == name) return r;
  throw std::runtime_error("no operator " + name);
}

}  // namespace

TEST(CliMultislice, DcnAllReduceTakesItsRingOverTheSlices) {
  TempDir d;
  d.write("w.yaml", workload("dcn: 4, x: 2, y: 2", "dcn"));
  const auto r =
      tpusim_in(d, "run --arch v5e --workload " + d.path() + "/w.yaml --slice '4*2x2' --out " + d.path() + "/out");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto rows = rows_of(d.path() + "/out/ops.csv");
  const auto& ar = op_row(rows, "ar");
  EXPECT_NE(ar.at("ici_algorithm").find("dcn_ring(dcn=4)"), std::string::npos) << ar.at("ici_algorithm");
  // Start-up, then 2 x 3 steps of a quarter of 1 MiB through the NIC share
  // and the DCN latency, from v5e's own config.
  const auto cfg = tpusim::sim::load_tpu_config("v5e");
  const double step = 262144.0 / cfg.ici.dcn_bandwidth + cfg.ici.dcn_latency;
  const double want = (cfg.ici.collective_latency + 6 * step) * cfg.chip.clock_hz;
  EXPECT_NEAR(std::stod(ar.at("cycles")), want, 2.0);
  // Its lower bound counts the DCN: 2 x 3/4 MiB through the NIC share.
  const double bound = 2 * 0.75 * 1048576.0 / cfg.ici.dcn_bandwidth * cfg.chip.clock_hz;
  EXPECT_NEAR(std::stod(ar.at("roofline_cycles")), bound, 1.0);  // whole cycles
  EXPECT_GE(std::stod(ar.at("cycles")), std::stod(ar.at("roofline_cycles")));
  // units.csv counts what left for the other slices: 6 steps x 4 chips.
  bool counted = false;
  for (const auto& u : rows_of(d.path() + "/out/units.csv"))
    if (u.at("stat") == "dcn.bytes_sent") {
      counted = true;
      EXPECT_EQ(std::stod(u.at("value")), 6.0 * 4 * 262144);
    }
  EXPECT_TRUE(counted);
}

TEST(CliMultislice, ModelMeshPutsDataOnTheDcnAndCostsMoreThanOneSlice) {
  // llama2-7b, one layer, FSDP over a 4x4 slice; then two such slices
  // with twice the batch and data=2 on the DCN: the same work per chip
  // plus the gradients' all-reduce between the slices.
  TempDir d;
  const std::string common =
      "run --arch v5e --model llama2-7b --phase train --seq 512 --layers 1 "
      "--set hbm.model=calibrated --quiet ";
  const auto one = tpusim_in(d, common + "--batch 16 --slice 4x4 --mesh fsdp=16 --out " + d.path() + "/one");
  ASSERT_EQ(one.rc, 0) << one.err;
  const auto two = tpusim_in(d, common + "--batch 32 --slice '2*4x4' --mesh data=2,fsdp=16 --out " + d.path() + "/two");
  ASSERT_EQ(two.rc, 0) << two.err;
  const double t1 = std::stod(rows_of(d.path() + "/one/summary.csv").at(0).at("total_cycles"));
  const double t2 = std::stod(rows_of(d.path() + "/two/summary.csv").at(0).at("total_cycles"));
  EXPECT_GT(t2, t1);
  int over_dcn = 0;
  for (const auto& r : rows_of(d.path() + "/two/ops.csv"))
    if (r.at("ici_axes") == "data") {
      ++over_dcn;
      EXPECT_NE(r.at("ici_algorithm").find("dcn_ring(dcn=2)"), std::string::npos) << r.at("name");
    }
  EXPECT_GT(over_dcn, 0);  // the weight gradients' all-reduces
}

TEST(CliMultislice, BadShapesAndMeshesAreUsageErrors) {
  TempDir d;
  d.write("w.yaml", workload("dcn: 2, x: 2, y: 2", "dcn"));
  const std::string run = "run --arch v5e --workload " + d.path() + "/w.yaml --out " + d.path() + "/out ";
  for (const char* bad : {"'0*2x2'", "'x*2x2'", "'2*'", "'9999*2x2'"}) {
    const auto r = tpusim_in(d, run + "--slice " + bad);
    EXPECT_EQ(r.rc, 2) << bad;
    EXPECT_NE(r.err.find("slice shape"), std::string::npos) << bad << ": " << r.err;
  }
  // v1 reaches other chips only through its host: no DCN, no multislice.
  const auto v1 = tpusim_in(d, "run --arch v1 --gemm 128,128,128 --slice '2*2x2' --out " + d.path() + "/v1");
  EXPECT_EQ(v1.rc, 2);
  EXPECT_NE(v1.err.find("dcn_bandwidth"), std::string::npos) << v1.err;
  // The DCN's length comes first: a first axis of another size does not
  // land on whole dimensions.
  const auto mesh = tpusim_in(d, run + "--slice '4*2x2' --mesh fsdp=2,data=8");
  EXPECT_EQ(mesh.rc, 2);
  EXPECT_NE(mesh.err.find("the slice count first"), std::string::npos) << mesh.err;
  // A collective the DCN model does not cover is refused with its reason.
  d.write("b.yaml",
          "tpusim_workload: 1\nname: b\nmesh: {dcn: 2, x: 2, y: 2}\ntensors:\n  - {name: g, shape: [64, 64], dtype: "
          "bf16, kind: input}\n"
          "ops:\n  - {name: bc, op: broadcast, inputs: [g], mesh_axes: [dcn]}\n");
  const auto bc =
      tpusim_in(d, "run --arch v5e --workload " + d.path() + "/b.yaml --slice '2*2x2' --out " + d.path() + "/bc");
  EXPECT_NE(bc.rc, 0);
  EXPECT_NE(bc.err.find("broadcast over the DCN"), std::string::npos) << bc.err;
}

TEST(CliMultislice, ShardSearchPlacesAxesOverTheSlices) {
  // Two 2x2 slices: the meshes cover all 8 chips, the slice count taken by
  // the first axis (data over the DCN, or fsdp spanning it), and each is
  // simulated on the multislice.
  TempDir d;
  d.write("tiny.yaml", tpusim::test::kTinyDecoder);
  const auto r = tpusim_in(d, "shard-search --arch v5e --model " + d.path() +
                                  "/tiny.yaml --phase train --batch 16 --seq 128 --slice '2*2x2' --jobs 2 --out " +
                                  d.path() + "/ss");
  ASSERT_EQ(r.rc, 0) << r.err;
  bool data_over_dcn = false;
  int simulated = 0;
  for (const auto& row : rows_of(d.path() + "/ss/shard_search.csv")) {
    if (row.at("status") != "ok") continue;
    ++simulated;
    int product = 1;
    const std::string text = row.at("mesh");
    for (std::size_t at = text.find('='); at != std::string::npos; at = text.find('=', at + 1))
      product *= std::stoi(text.substr(at + 1));
    EXPECT_EQ(product, 8) << text;
    data_over_dcn = data_over_dcn || text.rfind("data=2,", 0) == 0;
  }
  EXPECT_GT(simulated, 2);
  EXPECT_TRUE(data_over_dcn);
}

TEST(CliMultislice, SweepOverTheSliceCount) {
  // One run sweep over 1, 2 and 4 slices of the same 2x2 (data over the
  // DCN, batch per chip fixed): one row each, the same work per chip, the
  // DCN's all-reduces on top from 2 slices on.
  TempDir d;
  d.write("tiny.yaml", tpusim::test::kTinyDecoder);
  d.write("spec.yaml",
          "base: {arch: v5e, model: tiny.yaml, phase: train, seq: 128}\n"
          "axes:\n  zip:\n    run.slice: ['2x2', '2*2x2', '4*2x2']\n"
          "    run.mesh: ['fsdp=4', 'data=2,fsdp=4', 'data=4,fsdp=4']\n"
          "    model.batch: [4, 8, 16]\n");
  const auto r = tpusim_in(d, "sweep " + d.path() + "/spec.yaml --out " + d.path() + "/out --jobs 2 --quiet");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto rows = rows_of(d.path() + "/out/results.csv");
  ASSERT_EQ(rows.size(), 3u);
  std::map<std::string, double> cycles;
  for (const auto& row : rows) {
    ASSERT_EQ(row.at("status"), "ok") << row.at("message");
    cycles[row.at("run.slice")] = std::stod(row.at("total_cycles"));
  }
  EXPECT_GT(cycles.at("2*2x2"), cycles.at("2x2"));
  EXPECT_GT(cycles.at("4*2x2"), cycles.at("2x2"));
}
