// The small expression language of sweep specs: `filters` (keep a point
// when true) and `derived` columns (a number from swept values and result
// metrics). Grammar, loosest binding first:
//   expr   := and ('or' and)*
//   and    := not ('and' not)*
//   not    := 'not' not | cmp
//   cmp    := sum (('<' | '<=' | '>' | '>=' | '==' | '!=') sum)?
//   sum    := term (('+' | '-') term)*
//   term   := unary (('*' | '/' | '%') unary)*
//   unary  := '-' unary | atom
//   atom   := number | 'string' | "string" | true | false | name
//           | func '(' expr (',' expr)* ')' | '(' expr ')'
//   name   := [A-Za-z_][A-Za-z0-9_]* ('.' [A-Za-z0-9_]+)*   (dotted: arch.mxu.rows)
//   func   := min | max | abs | log2 | sqrt | floor | ceil
// Values are numbers (doubles; true = 1, false = 0) or strings. Strings
// compare with == != < <= > >= only against strings; arithmetic on a string
// is an error. Division by zero gives NaN (an empty CSV cell), not an error.
// Limits: 16,384 characters, 4,096 tokens, 256 levels of nesting (tree
// depth, counting each binary operator of a chain): beyond them parse()
// throws ExprError, so that hostile input cannot overflow the stack.
// Leaves out: user functions, variables, short-circuit side effects (there
// are none), integer semantics (everything is double).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tpusim::sim::sweep {

// A parse or evaluation error; `column` is 1-based within the expression
// text (0 when the error has no position).
class ExprError : public std::runtime_error {
 public:
  ExprError(const std::string& what, int column) : std::runtime_error(what), column_(column) {}
  int column() const { return column_; }

 private:
  int column_;
};

struct Value {
  bool is_number = true;
  double number = 0;
  std::string text;  // strings only

  static Value num(double v) { return Value{true, v, {}}; }
  static Value str(std::string s) { return Value{false, 0, std::move(s)}; }
  // "128" -> number 128; "bf16" -> string; "true"/"false" -> 1/0.
  static Value from_text(const std::string& s);
  bool truthy() const { return is_number ? number != 0 : !text.empty(); }
};

// The value of a name, or nullopt if the name is unknown.
using Lookup = std::function<std::optional<Value>(const std::string& name)>;

struct ExprNode;

class Expr {
 public:
  // Throws ExprError with the column of the offending token.
  static Expr parse(const std::string& text);

  const std::string& text() const { return text_; }
  // Every name the expression reads, with its 1-based column, in order.
  const std::vector<std::pair<std::string, int>>& names() const { return names_; }
  // Throws ExprError for an unknown name or a type mismatch.
  Value eval(const Lookup& lookup) const;

 private:
  std::string text_;
  std::shared_ptr<const ExprNode> root_;
  std::vector<std::pair<std::string, int>> names_;
};

}  // namespace tpusim::sim::sweep
