// A sweep spec (docs/sweeps.md): one base run, axes that vary dotted keys
// (grid = cartesian product, zip = parallel lists, points = explicit
// lists), filters that drop points and derived columns computed from swept
// values and result metrics. Loading expands every point, applies the
// filters and resolves each point's chip config in-process
// (load_tpu_config), so that mistakes surface before anything runs.
// Swept keys:
//   arch                 chip config name or file (run --arch)
//   arch.<config key>    any key of docs/config.md (run --set key=value)
//   model.name|phase|batch|seq|context|image      (run --model, --phase, ...)
//   workload.file|gemm|conv|attention|dtype|fusion
// Leaves out: running points (runner.h), random or adaptive sampling,
// nested specs.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/config_loader.h"
#include "sim/sweep/expr.h"

namespace tpusim::sim::sweep {

// Where a value was written in the spec (1-based; 0 = not from the file).
struct SpecPos {
  int line = 0;
  int column = 0;
};

struct SweptValue {
  std::string key;   // axis key, e.g. "arch.mxu.rows"
  std::string text;  // value as written (YAML scalar text)
  SpecPos pos;
};

struct SweepPoint {
  std::size_t index = 0;           // position in the spec's expansion order, after filters
  std::string id;                  // "p" + 12 hex digits, from the swept values only
  std::vector<SweptValue> values;  // in axis column order (absent axes omitted)

  // The value of a swept key in this point, or nullptr.
  const SweptValue* find(const std::string& key) const;
};

struct NamedExpr {
  std::string name;  // derived column name; the expression text for a filter
  Expr expr;
  SpecPos pos;  // of the expression's first character
};

struct SweepSpec {
  std::string file;  // path as given
  std::string dir;   // directory holding the spec (relative paths in it resolve here)
  std::string name;  // `name:` or the file stem
  // Base run parameters under their canonical dotted names ("arch",
  // "model.batch", "workload.gemm", ...) and fixed config overrides
  // ("arch.mxu.rows"), each with its position.
  std::map<std::string, SweptValue> base;
  std::vector<std::string> axes;  // swept keys, in order of first appearance
  std::vector<NamedExpr> filters;
  std::vector<NamedExpr> derived;
  std::vector<SweepPoint> points;  // after filters
  std::size_t expanded = 0;        // points before filters
  bool serve = false;              // some point sets a serve.* key: points run `tpusim serve` (serve_points.h)
};

// Parses and expands `file`. Throws ConfigError whose diagnostics name the
// spec file, line, column and key (unknown keys with a suggestion, zip
// lists of unequal length, malformed expressions, names an expression reads
// that no point defines, duplicate points, two workload sources in one
// point).
SweepSpec load_sweep_spec(const std::string& file);

// The same from text already read (`file` is used in messages and to
// resolve relative paths).
SweepSpec parse_sweep_spec(const std::string& text, const std::string& file);

// Canonical run parameters and config overrides of one point: the base
// overlaid with the point's values.
std::map<std::string, std::string> point_params(const SweepSpec& spec, const SweepPoint& p);

// Looks up a name for an expression: a run parameter or config key of the
// point (quantities of the config schema become SI numbers: "819 GB/s" ->
// 8.19e11), then `metrics` (a summary.csv row by column name).
std::optional<Value> lookup_point_value(const SweepSpec& spec, const SweepPoint& p, const std::string& name,
                                        const std::map<std::string, std::string>* metrics = nullptr);

// A point made ready to run: the `tpusim run` arguments (without --out and
// the executable) and the digest of its resolved config, or the reason it
// cannot run (config or workload error found in-process).
struct PreparedPoint {
  const SweepPoint* point = nullptr;
  std::vector<std::string> run_args;
  std::string config_hash;  // config_hash(write_config(load_tpu_config(...)))
  std::string error;        // non-empty: the point becomes an error row without running
};

// Resolves every point. Throws ConfigError if no point is valid (the first
// point's problem, so that a broken base is a spec error rather than N
// error rows).
std::vector<PreparedPoint> prepare_points(const SweepSpec& spec, const ConfigSearchPath& path);

// Points of shard `index` of `count`: round robin over expansion order, so
// shards are disjoint, complete and differ in size by at most one.
bool in_shard(const SweepPoint& p, int index, int count);

// The columns of summary.csv that `tpusim run` writes (from the writer
// itself, so that they never drift).
const std::vector<std::string>& summary_columns();
// The metric columns of a row: summary_columns(), or for a serve sweep
// those of `tpusim serve`'s summary.csv (serve_points.h).
const std::vector<std::string>& metric_columns(const SweepSpec& spec);

}  // namespace tpusim::sim::sweep
