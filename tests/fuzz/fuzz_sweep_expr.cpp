// Fuzzes the sweep expression parser and evaluator: only ExprError may
// leave. Names read as numbers (or a string for names starting with 's').
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/sweep/expr.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim::sim::sweep;
  try {
    const Expr e = Expr::parse(std::string(reinterpret_cast<const char*>(data), size));
    e.eval([](const std::string& n) -> std::optional<Value> {
      if (n.empty() || n[0] == 'u') return std::nullopt;
      return n[0] == 's' ? Value::str(n) : Value::num(static_cast<double>(n.size()));
    });
  } catch (const ExprError&) {}
  return 0;
}
