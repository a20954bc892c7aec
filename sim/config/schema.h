// The config schema: every YAML key, its type, unit, range, whether it is
// required, its meaning, and where it lands in arch::TpuConfig. The loader
// validates against this table, the writer prints from it and
// `tpusim config keys` documents it, so a key is declared exactly once.
// Defaults are not repeated here: they are whatever a default-constructed
// arch::TpuConfig holds (arch/common/chip_config.h).
// Leaves out: cross-key rules (the loader checks those).
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "arch/common/chip_config.h"
#include "sim/config/units.h"

namespace tpusim::sim {

enum class FieldType {
  integer,    // a whole number
  real,       // a plain number
  boolean,    // true | false
  string,     // free text, or one of `choices`
  quantity,   // number with a unit of kind `unit`
  dtype,      // a DType name
  dtype_map,  // {dtype: number, ...}; numbers x `scale` are stored
};

// Integers are held as double (exact below 2^53).
using FieldValue = std::variant<double, bool, std::string, std::map<arch::DType, double>>;

struct FieldSpec {
  std::string path;  // dotted key, e.g. "mxu.rows"
  FieldType type = FieldType::integer;
  UnitKind unit = UnitKind::frequency;  // quantity only
  double min = -std::numeric_limits<double>::infinity();
  bool min_exclusive = false;  // value must be > min (else >= min)
  // Physical upper bound (inclusive): what any plausible accelerator could
  // have, so that one config line cannot ask for terabytes of model state
  // or a clock below the 1 ps time resolution.
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;  // string: allowed values (empty = any)
  double scale = 1;                  // dtype_map: stored = written x scale
  bool required = false;
  std::string doc;
  std::function<void(arch::TpuConfig&, const FieldValue&)> set;
  std::function<FieldValue(const arch::TpuConfig&)> get;
  // False if an optional value is unset (the writer then omits it).
  std::function<bool(const arch::TpuConfig&)> present;

  // "an integer >= 1", "a frequency > 0 such as '1.5 GHz' (...)", ...
  std::string expected() const;
  FieldSpec& bounded(double upper) {
    max = upper;
    return *this;
  }
  FieldSpec& at_least(double lower) {
    min = lower;
    min_exclusive = false;
    return *this;
  }
};

// In the order the writer prints them; a section's keys are contiguous.
const std::vector<FieldSpec>& schema();
const FieldSpec* find_field(const std::string& path);
// Dotted names of every section (map of keys): "chip", ..., "hbm.timings".
const std::vector<std::string>& schema_sections();
bool is_section(const std::string& path);
// Direct children (last segments) of a section; "" is the top level.
std::vector<std::string> section_children(const std::string& section);
// Sections whose presence in a file switches the block on (cmem, energy).
bool is_presence_section(const std::string& section);

// Text of a field's value as it would be written in YAML.
std::string format_field(const FieldSpec& f, const FieldValue& v);

}  // namespace tpusim::sim
