// End to end through the tpusim binary ($TPUSIM_BINARY): every command and
// exit code, and a table of malformed configs, each checked with
// `tpusim config check` for exit code 2 and the parts of its message
// (file, line:column, key path, expected/found, suggestion).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "../unit/sim/config_test_util.h"
#include "arch/common/errors.h"
#include "cli_test_util.h"
#include "sim/cli/cli.h"

namespace tpusim::sim {
namespace {

using testing::TempDir;

using Result = tpusim::test::CliResult;
using tpusim::test::slurp;

// Runs `tpusim <args>` (args already shell-quoted where needed).
Result tpusim(const std::string& args, const std::string& env = "") {
  TempDir d;
  return tpusim::test::run_tpusim_in(d.path(), args, env);
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Cli, Version) {
  Result r = tpusim("--version");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, std::string("tpusim ") + TPUSIM_VERSION + "\n");
}

TEST(Cli, HelpListsEveryCommand) {
  Result r = tpusim("--help");
  EXPECT_EQ(r.rc, 0);
  for (const char* c : {"list", "config show", "config check", "config keys", "--config-path"})
    EXPECT_TRUE(has(r.out, c)) << c;
  // Every command line of the list keeps its name apart from its summary,
  // the longest name ("shard-search point") too.
  EXPECT_TRUE(has(r.out, "  shard-search point  ")) << r.out;
  EXPECT_TRUE(has(r.out, "  list                ")) << r.out;
}

TEST(Cli, UsageErrorsExitTwo) {
  Result none = tpusim("");
  EXPECT_EQ(none.rc, 2);
  EXPECT_TRUE(has(none.err, "usage: tpusim"));
  Result unknown = tpusim("lst");
  EXPECT_EQ(unknown.rc, 2);
  EXPECT_TRUE(has(unknown.err, "unknown command 'lst'"));
  EXPECT_TRUE(has(unknown.err, "did you mean 'list'?"));
  Result group = tpusim("config");
  EXPECT_EQ(group.rc, 2);
  EXPECT_TRUE(has(group.err, "config show"));
  EXPECT_EQ(tpusim("config shw v5e").rc, 2);
  EXPECT_EQ(tpusim("--bogus list").rc, 2);
  Result fmt = tpusim("config show v5e --format xml");
  EXPECT_EQ(fmt.rc, 2);
  EXPECT_TRUE(has(fmt.err, "yaml or json"));
  Result opt = tpusim("config show v5e --frmat json");
  EXPECT_EQ(opt.rc, 2);
  EXPECT_TRUE(has(opt.err, "config show"));
  EXPECT_EQ(tpusim("config show").rc, 2);  // missing <arch>
}

TEST(Cli, PerCommandHelp) {
  for (const char* c : {"list", "config show", "config check", "config keys"}) {
    Result r = tpusim(std::string(c) + " --help");
    EXPECT_EQ(r.rc, 0) << c;
    EXPECT_TRUE(has(r.out, std::string("usage: tpusim ") + c)) << r.out;
  }
  EXPECT_TRUE(has(tpusim("config show --help").out, "--set"));
}

TEST(Cli, ListShowsEveryGeneration) {
  Result r = tpusim("list");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream in(r.out);
  std::map<std::string, std::string> rows;
  for (std::string line; std::getline(in, line);) rows[line.substr(0, line.find(' '))] = line;
  for (const char* g : {"v1", "v2", "v3", "v4", "v4i", "v5e", "v5p", "v6e", "v7"}) EXPECT_TRUE(rows.count(g)) << g;
  // v5e: 4 x 128 x 128 x 2 x 1.5 GHz = 196.6 TFLOP/s; 2 x 8 GiB; 819.2 GB/s; 4 x 45 GB/s.
  EXPECT_TRUE(has(rows["v5e"], "196.6 bf16")) << rows["v5e"];
  EXPECT_TRUE(has(rows["v5e"], "16.0")) << rows["v5e"];
  EXPECT_TRUE(has(rows["v5e"], "819.2")) << rows["v5e"];
  EXPECT_TRUE(has(rows["v5e"], "4 x  45.0")) << rows["v5e"];
  // v1 has no bf16: its peak is int8, 256 x 256 x 2 x 700 MHz = 91.8 TOP/s.
  EXPECT_TRUE(has(rows["v1"], "91.8 int8")) << rows["v1"];
}

TEST(Cli, ShowYamlJsonAndOverrides) {
  Result y = tpusim("config show v5e");
  ASSERT_EQ(y.rc, 0) << y.err;
  YAML::Node n = YAML::Load(y.out);
  EXPECT_EQ(n["chip"]["clock"].as<std::string>(), "1.5 GHz");
  EXPECT_EQ(n["hbm"]["preset"].as<std::string>(), "HBM2e");
  EXPECT_TRUE(n["derived"]["peak_tflops"]["bf16"]);
  Result j = tpusim("config show v5e --format json");
  ASSERT_EQ(j.rc, 0) << j.err;
  EXPECT_EQ(j.out[0], '{');
  YAML::Node jn = YAML::Load(j.out);  // JSON is YAML
  EXPECT_EQ(jn["mxu"]["rows"].as<int>(), 128);
  EXPECT_TRUE(has(j.out, "\"rows\": 128"));
  // 256x256 array: 4x the peak, so the published figures must go too.
  Result o = tpusim("config show v5e --set mxu.rows=256 --set mxu.cols=256 --set 'published.peak_tflops=~'");
  ASSERT_EQ(o.rc, 0) << o.err;
  YAML::Node on = YAML::Load(o.out);
  EXPECT_EQ(on["mxu"]["rows"].as<int>(), 256);
  // 4 x 256 x 256 x 2 x 1.5 GHz = 786.432 TFLOP/s.
  EXPECT_DOUBLE_EQ(on["derived"]["peak_tflops"]["bf16"].as<double>(), 786.432);
  // Keeping the published 197 makes the 3% check fail, with both numbers.
  Result bad = tpusim("config show v5e --set mxu.rows=256");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_TRUE(has(bad.err, "published.peak_tflops.bf16")) << bad.err;
  EXPECT_TRUE(has(bad.err, "393.2 TFLOP/s")) << bad.err;
  EXPECT_TRUE(has(bad.err, "197 TFLOP/s")) << bad.err;
  Result unk = tpusim("config show v5e --set hbm.stackz=4");
  EXPECT_EQ(unk.rc, 2);
  EXPECT_TRUE(has(unk.err, "--set hbm.stackz=4: hbm.stackz:")) << unk.err;
  EXPECT_TRUE(has(unk.err, "unknown key 'stackz'"));
  EXPECT_TRUE(has(unk.err, "did you mean 'stacks'?"));
  Result missing = tpusim("config show v5x");
  EXPECT_EQ(missing.rc, 2);
  EXPECT_TRUE(has(missing.err, "did you mean 'v5e'?"));
}

TEST(Cli, ShownConfigChecksAndReloadsIdentically) {
  TempDir d;
  Result a = tpusim("config show v4i");
  ASSERT_EQ(a.rc, 0);
  std::string f = d.write("v4i_resolved.yaml", a.out);
  Result c = tpusim("config check " + f);
  EXPECT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(c.out, f + ": ok\n");
  Result b = tpusim("config show " + f);
  EXPECT_EQ(b.rc, 0);
  // Identical except the name, which now comes from the file.
  EXPECT_EQ(b.out, a.out);
}

TEST(Cli, CheckReportsEveryFile) {
  TempDir d;
  std::string good = d.write("good.yaml", "extends: v5e\n");
  std::string bad = d.write("bad.yaml", "extends: v5e\nmxu: {rows: 0}\n");
  Result r = tpusim("config check " + good + " " + bad);
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.out, good + ": ok\n");
  EXPECT_TRUE(has(r.err, bad + ":2:13: mxu.rows: expected an integer >= 1 and <= 4096, found '0'")) << r.err;
  Result all = tpusim("config check v1 v2 v3 v4 v4i v5e v5p v6e v7");
  EXPECT_EQ(all.rc, 0) << all.err;
}

TEST(Cli, ConfigPathOptionAndEnv) {
  TempDir d;
  d.write("mychip.yaml", "extends: v5e\nchip: {generation: mine}\n");
  EXPECT_EQ(tpusim("config show mychip").rc, 2);
  Result a = tpusim("--config-path " + d.path() + " config show mychip");
  EXPECT_EQ(a.rc, 0) << a.err;
  EXPECT_TRUE(has(a.out, "generation: mine"));
  Result b = tpusim("config show mychip --config-path " + d.path());
  EXPECT_EQ(b.rc, 0) << b.err;
  Result c = tpusim("config show mychip", "TPUSIM_CONFIG_PATH=/nonexistent:" + d.path());
  EXPECT_EQ(c.rc, 0) << c.err;
  Result l = tpusim("--config-path=" + d.path() + " list");
  EXPECT_EQ(l.rc, 0) << l.err;
  EXPECT_TRUE(has(l.out, "mychip"));
  // A broken chip config on the path makes list fail loudly, after listing the rest.
  d.write("broken.yaml", "extends: v5e\nmxu: {rows: -1}\n");
  Result lb = tpusim("--config-path " + d.path() + " list");
  EXPECT_EQ(lb.rc, 2);
  EXPECT_TRUE(has(lb.out, "v5e"));
  EXPECT_TRUE(has(lb.err, "broken.yaml:2:13: mxu.rows"));
}

TEST(Cli, Keys) {
  Result r = tpusim("config keys");
  EXPECT_EQ(r.rc, 0);
  EXPECT_TRUE(has(r.out, "| `mxu.rows` | integer | 128 |"));
  EXPECT_TRUE(has(r.out, "| `chip.clock` | Hz | **required** |"));
}

// Exit codes of errors thrown from commands, in process: only cli_main
// maps exceptions to codes.
int run_in_process(std::vector<std::string> args) {
  std::vector<char*> argv;
  static std::string prog = "tpusim";
  argv.push_back(prog.data());
  for (auto& a : args) argv.push_back(a.data());
  return cli_main(static_cast<int>(argv.size()), argv.data());
}

TEST(Cli, ExceptionsMapToExitCodes) {
  register_command("test internal", "throws an internal error",
                   [](auto&, auto&) -> int { throw arch::InternalError("broken invariant"); });
  register_command("test archconfig", "throws a model's config error",
                   [](auto&, auto&) -> int { throw arch::ConfigError("buffers exceed VMEM"); });
  register_command("test runtime", "throws a simulation error",
                   [](auto&, auto&) -> int { throw std::runtime_error("deadlock"); });
  EXPECT_EQ(run_in_process({"test", "internal"}), 1);
  EXPECT_EQ(run_in_process({"test", "archconfig"}), 2);
  EXPECT_EQ(run_in_process({"test", "runtime"}), 1);
  EXPECT_EQ(run_in_process({"config", "check", "v5e"}), 0);
  EXPECT_THROW(register_command("list", "dup", [](auto&, auto&) { return 0; }), arch::InternalError);
}

// ---------------------------------------------------------------------------
// Malformed configs. Each file extends v5e where it needs a valid rest, so
// that the one mistake is the only error; `parts` must all appear in stderr.

struct Bad {
  const char* name;
  const char* text;
  std::vector<std::string> parts;  // "{f}" stands for the file path
};

const Bad kBad[] = {
    {"typo_key",
     "extends: v5e\nmxu:\n  rwos: 256\n",
     {"{f}:3:3: mxu.rwos:", "unknown key 'rwos'", "did you mean 'rows'?"}},
    {"typo_section",
     "extends: v5e\nhmb:\n  stacks: 2\n",
     {"{f}:2:1: hmb:", "a key of the top level", "did you mean 'hbm'?"}},
    {"key_in_wrong_section",
     "extends: v5e\nmxu: {stacks: 2}\n",
     {"{f}:2:7: mxu.stacks:", "did you mean 'hbm.stacks'?"}},
    {"not_integer",
     "extends: v5e\nmxu:\n  rows: abc\n",
     {"{f}:3:9: mxu.rows:", "expected an integer >= 1 and <= 4096, found 'abc'"}},
    {"fraction_for_integer", "extends: v5e\nmxu:\n  count: 1.5\n", {"{f}:3:10: mxu.count:", "found '1.5'"}},
    {"zero_rows",
     "extends: v5e\nmxu:\n  rows: 0\n",
     {"{f}:3:9: mxu.rows:", "expected an integer >= 1 and <= 4096, found '0'"}},
    {"negative_bandwidth",
     "extends: v5e\nici:\n  link_bandwidth: \"-45 GB/s\"\n",
     {"{f}:3:19: ici.link_bandwidth:", "expected a non-negative bandwidth", "'-45 GB/s'"}},
    {"zero_clock",
     "extends: v5e\nchip:\n  clock: 0 GHz\n",
     {"{f}:3:10: chip.clock:", "at least 1 MHz", "found '0 GHz'"}},
    {"missing_unit",
     "extends: v5e\nchip:\n  clock: 1500\n",
     {"{f}:3:10: chip.clock:", "expected a frequency such as '1.5 GHz'", "'1500' (no unit)"}},
    {"wrong_unit_kind",
     "extends: v5e\nvmem:\n  size: 819 GB/s\n",
     {"{f}:3:9: vmem.size:", "expected a size", "(that is a bandwidth)"}},
    {"unknown_unit",
     "extends: v5e\nhbm:\n  timings: {tCL: 14 nss}\n",
     {"{f}:3:18: hbm.timings.tCL:", "expected a time", "unknown unit 'nss'"}},
    {"yaml_syntax", "extends: v5e\nmxu: {rows: [1, 2}\n", {"{f}:2:", "expected valid YAML", "syntax error"}},
    {"missing_required",
     "chip:\n  generation: mine\nhbm:\n  preset: HBM2e\n  stacks: 2\n",
     {"{f}:1:1: chip.clock: expected a frequency", "(required), found no value",
      "{f}:3:1: hbm.capacity:", "{f}: vmem.size:"}},
    {"extends_missing",
     "extends: v99\n",
     {"{f}:1:10: extends:", "expected an existing config", "'v99' (extends chain: "}},
    {"published_peak_mismatch",
     "extends: v5e\npublished:\n  peak_tflops: {bf16: 250}\n",
     {"{f}:3:23: published.peak_tflops.bf16:", "within 3% of the derived 196.6 TFLOP/s", "found 250 TFLOP/s"}},
    {"published_hbm_mismatch",
     "extends: v5e\nhbm: {stacks: 4}\n",
     {"published.hbm_bandwidth:", "within 3% of the derived 1638 GB/s", "found 819 GB/s"}},
    {"unknown_dtype",
     "extends: v5e\nmxu:\n  throughput: {bf16: 1, bf61: 2}\n",
     {"{f}:3:25: mxu.throughput.bf61:", "unknown dtype 'bf61'", "did you mean 'bf16'?"}},
    {"bad_choice",
     "extends: v5e\nici:\n  topology: torus4d\n",
     {"{f}:3:13: ici.topology:", "expected one of torus2d, torus3d", "found 'torus4d'", "did you mean 'torus"}},
    {"unknown_preset",
     "extends: v5e\nhbm:\n  preset: HBM2f\n",
     {"{f}:3:11: hbm.preset:", "expected a memory preset", "found 'HBM2f'", "did you mean 'hbm2"}},
    {"section_not_map", "extends: v5e\nmxu: 5\n", {"{f}:2:6: mxu:", "expected a map of mxu keys", "found '5'"}},
    {"bad_boolean",
     "extends: v5e\nchip: {megacore: maybe}\n",
     {"{f}:2:18: chip.megacore:", "expected true or false, found 'maybe'"}},
    {"fractional_bytes",
     "extends: v5e\ndma: {request_bytes: 0.5 B}\n",
     {"{f}:2:22: dma.request_bytes:", "a whole number of bytes"}},
    {"bad_address_mapping",
     "extends: v5e\nhbm: {address_mapping: RoRoBgChPcCo}\n",
     {"{f}:2:24: hbm.address_mapping:", "a permutation of the fields"}},
    {"empty_file", "", {"{f}: expected a map of config keys, found an empty document"}},
    {"list_document", "- a\n- b\n", {"{f}:1:1: expected a map of config keys, found a list"}},
    {"ports_without_bandwidth",
     "extends: v5e\nici: {link_bandwidth: 0 GB/s}\n",
     {"ici.link_bandwidth:", "when ici.ports is 4"}},
    {"many_errors_collected",
     "extends: v5e\nmxu:\n  rows: 0\n  cols: -1\nfoo: 1\nchip: {clock: 2 GT/s}\n",
     {"{f}:3:9: mxu.rows:", "{f}:4:9: mxu.cols:", "{f}:5:1: foo:", "{f}:6:15: chip.clock:"}},
    {"integer_too_large",
     "extends: v5e\nmxu: {rows: 99999999999}\n",
     {"{f}:2:13: mxu.rows:", "<= 2147483647", "found '99999999999'"}},
    {"size_too_large", "extends: v5e\nvmem: {size: 1e30 B}\n", {"{f}:2:14: vmem.size:", "at most 1 TiB"}},
    {"extends_not_string", "extends: [v5e]\n", {"{f}:1:10: extends:", "found a list"}},
    {"throughput_not_map",
     "extends: v5e\nmxu: {throughput: 2}\n",
     {"{f}:2:19: mxu.throughput:", "expected a map of dtype to number", "found '2'"}},
    {"throughput_zero",
     "extends: v5e\nmxu: {throughput: {int8: 0}}\n",
     {"{f}:2:26: mxu.throughput.int8:", "expected a number > 0, found '0'"}},
};

TEST(MalformedConfigs, TableHasAtLeastTwenty) { EXPECT_GE(std::size(kBad), 20u); }

TEST(MalformedConfigs, EachFailsCheckWithItsMessage) {
  TempDir d;
  for (const Bad& b : kBad) {
    SCOPED_TRACE(b.name);
    std::string f = d.write(std::string(b.name) + ".yaml", b.text);
    Result r = tpusim("config check " + f);
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.out, "");
    for (std::string part : b.parts) {
      size_t at = part.find("{f}");
      if (at != std::string::npos) part.replace(at, 3, f);
      EXPECT_TRUE(has(r.err, part)) << "missing: " << part << "\nstderr:\n" << r.err;
    }
  }
}

TEST(MalformedConfigs, ExtendsCycleNamesTheChain) {
  TempDir d;
  d.write("a.yaml", "extends: b\n");
  std::string b = d.write("b.yaml", "extends: a\n");
  Result r = tpusim("config check " + d.path() + "/a.yaml");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(has(r.err, "extends: expected an extends chain without cycles")) << r.err;
  EXPECT_TRUE(has(r.err, "the cycle a -> b -> a")) << r.err;
}

TEST(MalformedConfigs, MissingFile) {
  Result r = tpusim("config check /nonexistent/x.yaml");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(has(r.err, "/nonexistent/x.yaml: expected a readable config file, found no such file"));
}

}  // namespace
}  // namespace tpusim::sim
