// Recursive-descent parser and tree evaluator for sweep expressions; see
// expr.h for the grammar.
#include "sim/sweep/expr.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace tpusim::sim::sweep {

Value Value::from_text(const std::string& s) {
  if (s == "true") return num(1);
  if (s == "false") return num(0);
  if (!s.empty()) {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    // Only a complete, finite number counts: "1e3" yes, "256x" or "nan" no.
    if (end && *end == '\0' && std::isfinite(v) && !std::isspace(static_cast<unsigned char>(s[0]))) return num(v);
  }
  return str(s);
}

struct ExprNode {
  enum Kind { literal, name, unary, binary, call } kind = literal;
  int column = 0;
  Value value;     // literal
  std::string op;  // name: the name; unary/binary: the operator; call: function
  std::vector<std::shared_ptr<const ExprNode>> args;
  int depth = 1;  // of the tree below and including this node
};

namespace {

using NodePtr = std::shared_ptr<const ExprNode>;

struct Token {
  enum Kind { number, string, name, op, end } kind = end;
  std::string text;
  int column = 0;  // 1-based
};

std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    const int col = static_cast<int>(i) + 1;
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      char* end = nullptr;
      std::strtod(s.c_str() + i, &end);
      const size_t n = static_cast<size_t>(end - (s.c_str() + i));
      out.push_back({Token::number, s.substr(i, n), col});
      i += n;
      if (i < s.size() && (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_'))
        throw ExprError("a number directly followed by '" + std::string(1, s[i]) + "'", static_cast<int>(i) + 1);
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size()) {
        const char d = s[j];
        if (std::isalnum(static_cast<unsigned char>(d)) || d == '_') {
          ++j;
        } else if (d == '.' && j + 1 < s.size() &&
                   (std::isalnum(static_cast<unsigned char>(s[j + 1])) || s[j + 1] == '_')) {
          ++j;
        } else {
          break;
        }
      }
      out.push_back({Token::name, s.substr(i, j - i), col});
      i = j;
    } else if (c == '\'' || c == '"') {
      const size_t close = s.find(c, i + 1);
      if (close == std::string::npos) throw ExprError("unterminated string", col);
      out.push_back({Token::string, s.substr(i + 1, close - i - 1), col});
      i = close + 1;
    } else {
      static const char* const two[] = {"<=", ">=", "==", "!="};
      bool matched = false;
      for (const char* t : two)
        if (s.compare(i, 2, t) == 0) {
          out.push_back({Token::op, t, col});
          i += 2;
          matched = true;
          break;
        }
      if (matched) continue;
      if (std::string("+-*/%<>(),").find(c) == std::string::npos) {
        if (c == '=') throw ExprError("'=' is not an operator (use '==' to compare)", col);
        if (c == '&' || c == '|') throw ExprError(std::string("'") + c + "' is not an operator (use 'and', 'or')", col);
        throw ExprError(std::string("unexpected character '") + c + "'", col);
      }
      out.push_back({Token::op, std::string(1, c), col});
      ++i;
    }
  }
  out.push_back({Token::end, "", static_cast<int>(s.size()) + 1});
  return out;
}

// Limits that keep the recursive parser and evaluator far from the stack's
// end: real filters and derived columns are a few dozen tokens deep at most.
constexpr std::size_t kMaxExprChars = 16384;
constexpr std::size_t kMaxExprTokens = 4096;
constexpr int kMaxExprDepth = 256;

const char* const kFunctions[] = {"min", "max", "abs", "log2", "sqrt", "floor", "ceil"};

class Parser {
 public:
  Parser(std::vector<Token> toks, std::vector<std::pair<std::string, int>>& names)
      : t_(std::move(toks)), names_(names) {}

  NodePtr parse_all() {
    if (t_[0].kind == Token::end) throw ExprError("empty expression", 1);
    if (t_.size() > kMaxExprTokens)
      throw ExprError("expression too long: " + std::to_string(t_.size() - 1) + " tokens, at most " +
                          std::to_string(kMaxExprTokens) + " allowed",
                      t_[kMaxExprTokens].column);
    NodePtr n = parse_or();
    if (peek().kind != Token::end)
      throw ExprError("unexpected '" + peek().text + "' after a complete expression", peek().column);
    return n;
  }

 private:
  const Token& peek() const { return t_[pos_]; }
  bool is_op(const char* op) const { return peek().kind == Token::op && peek().text == op; }
  bool is_word(const char* w) const { return peek().kind == Token::name && peek().text == w; }

  // Every inner node goes through here, so the tree depth (and with it the
  // recursion of eval and of the node destructors) stays bounded.
  static NodePtr make(ExprNode::Kind k, int col, std::string op, std::vector<NodePtr> args) {
    auto n = std::make_shared<ExprNode>();
    n->kind = k;
    n->column = col;
    n->op = std::move(op);
    n->args = std::move(args);
    for (const auto& a : n->args) n->depth = std::max(n->depth, a->depth + 1);
    if (n->depth > kMaxExprDepth)
      throw ExprError("expression nested too deeply: more than " + std::to_string(kMaxExprDepth) +
                          " levels of operators, parentheses or calls",
                      col);
    return n;
  }

  // Parentheses, unary '-' and 'not' recurse in the parser before any node
  // is made; this counts them on the way down.
  struct Nest {
    Parser& p;
    Nest(Parser& parser, int col) : p(parser) {
      if (++p.nest_ > kMaxExprDepth)
        throw ExprError("expression nested too deeply: more than " + std::to_string(kMaxExprDepth) +
                            " levels of operators, parentheses or calls",
                        col);
    }
    ~Nest() { --p.nest_; }
  };

  NodePtr parse_or() {
    NodePtr l = parse_and();
    while (is_word("or")) {
      const int col = t_[pos_++].column;
      l = make(ExprNode::binary, col, "or", {l, parse_and()});
    }
    return l;
  }
  NodePtr parse_and() {
    NodePtr l = parse_not();
    while (is_word("and")) {
      const int col = t_[pos_++].column;
      l = make(ExprNode::binary, col, "and", {l, parse_not()});
    }
    return l;
  }
  NodePtr parse_not() {
    if (is_word("not")) {
      const int col = t_[pos_++].column;
      Nest guard(*this, col);
      return make(ExprNode::unary, col, "not", {parse_not()});
    }
    return parse_cmp();
  }
  NodePtr parse_cmp() {
    NodePtr l = parse_sum();
    for (const char* op : {"<", "<=", ">", ">=", "==", "!="})
      if (is_op(op)) {
        const int col = t_[pos_++].column;
        l = make(ExprNode::binary, col, op, {l, parse_sum()});
        for (const char* op2 : {"<", "<=", ">", ">=", "==", "!="})
          if (is_op(op2)) throw ExprError("comparisons do not chain; write 'a < b and b < c'", peek().column);
        break;
      }
    return l;
  }
  NodePtr parse_sum() {
    NodePtr l = parse_term();
    while (is_op("+") || is_op("-")) {
      const Token& o = t_[pos_++];
      l = make(ExprNode::binary, o.column, o.text, {l, parse_term()});
    }
    return l;
  }
  NodePtr parse_term() {
    NodePtr l = parse_unary();
    while (is_op("*") || is_op("/") || is_op("%")) {
      const Token& o = t_[pos_++];
      l = make(ExprNode::binary, o.column, o.text, {l, parse_unary()});
    }
    return l;
  }
  NodePtr parse_unary() {
    if (is_op("-")) {
      const int col = t_[pos_++].column;
      Nest guard(*this, col);
      return make(ExprNode::unary, col, "-", {parse_unary()});
    }
    return parse_atom();
  }
  NodePtr parse_atom() {
    const Token tok = peek();
    switch (tok.kind) {
      case Token::end: throw ExprError("expression ends where a value was expected", tok.column);
      case Token::number: {
        ++pos_;
        auto n = std::make_shared<ExprNode>();
        n->kind = ExprNode::literal;
        n->column = tok.column;
        n->value = Value::num(std::strtod(tok.text.c_str(), nullptr));
        if (!std::isfinite(n->value.number)) throw ExprError("number '" + tok.text + "' is out of range", tok.column);
        return n;
      }
      case Token::string: {
        ++pos_;
        auto n = std::make_shared<ExprNode>();
        n->kind = ExprNode::literal;
        n->column = tok.column;
        n->value = Value::str(tok.text);
        return n;
      }
      case Token::op:
        if (tok.text == "(") {
          ++pos_;
          Nest guard(*this, tok.column);
          NodePtr inner = parse_or();
          if (!is_op(")")) throw ExprError("expected ')'", peek().column);
          ++pos_;
          return inner;
        }
        throw ExprError("unexpected '" + tok.text + "' where a value was expected", tok.column);
      case Token::name: break;
    }
    ++pos_;
    if (tok.text == "true" || tok.text == "false") {
      auto n = std::make_shared<ExprNode>();
      n->kind = ExprNode::literal;
      n->column = tok.column;
      n->value = Value::num(tok.text == "true" ? 1 : 0);
      return n;
    }
    if (tok.text == "and" || tok.text == "or" || tok.text == "not")
      throw ExprError("unexpected '" + tok.text + "' where a value was expected", tok.column);
    if (is_op("(")) {
      bool known = false;
      for (const char* f : kFunctions) known = known || tok.text == f;
      if (!known)
        throw ExprError("unknown function '" + tok.text + "' (min, max, abs, log2, sqrt, floor, ceil)", tok.column);
      ++pos_;
      Nest guard(*this, tok.column);
      std::vector<NodePtr> args{parse_or()};
      while (is_op(",")) {
        ++pos_;
        args.push_back(parse_or());
      }
      if (!is_op(")")) throw ExprError("expected ')' or ','", peek().column);
      ++pos_;
      const bool binary = tok.text == "min" || tok.text == "max";
      if (binary ? args.size() < 2 : args.size() != 1)
        throw ExprError(tok.text + "() takes " + (binary ? "two or more arguments" : "one argument"), tok.column);
      return make(ExprNode::call, tok.column, tok.text, std::move(args));
    }
    names_.emplace_back(tok.text, tok.column);
    auto n = std::make_shared<ExprNode>();
    n->kind = ExprNode::name;
    n->column = tok.column;
    n->op = tok.text;
    return n;
  }

  std::vector<Token> t_;
  size_t pos_ = 0;
  int nest_ = 0;
  std::vector<std::pair<std::string, int>>& names_;
};

std::string describe(const Value& v) { return v.is_number ? "a number" : "the string '" + v.text + "'"; }

double need_number(const Value& v, const ExprNode& at, const std::string& what) {
  if (!v.is_number) throw ExprError("'" + what + "' needs numbers, found " + describe(v), at.column);
  return v.number;
}

Value eval_node(const ExprNode& n, const Lookup& lookup) {
  switch (n.kind) {
    case ExprNode::literal: return n.value;
    case ExprNode::name: {
      std::optional<Value> v = lookup(n.op);
      if (!v) throw ExprError("unknown name '" + n.op + "'", n.column);
      return *v;
    }
    case ExprNode::unary: {
      const Value a = eval_node(*n.args[0], lookup);
      if (n.op == "not") return Value::num(a.truthy() ? 0 : 1);
      return Value::num(-need_number(a, n, "-"));
    }
    case ExprNode::call: {
      std::vector<double> xs;
      for (const auto& a : n.args) xs.push_back(need_number(eval_node(*a, lookup), n, n.op + "()"));
      double r = xs[0];
      if (n.op == "min") {
        for (double x : xs) r = std::min(r, x);
      } else if (n.op == "max") {
        for (double x : xs) r = std::max(r, x);
      } else if (n.op == "abs") {
        r = std::fabs(r);
      } else if (n.op == "log2") {
        r = r > 0 ? std::log2(r) : NAN;
      } else if (n.op == "sqrt") {
        r = r >= 0 ? std::sqrt(r) : NAN;
      } else if (n.op == "floor") {
        r = std::floor(r);
      } else {
        r = std::ceil(r);
      }
      return Value::num(r);
    }
    case ExprNode::binary: break;
  }
  if (n.op == "and") {
    if (!eval_node(*n.args[0], lookup).truthy()) return Value::num(0);
    return Value::num(eval_node(*n.args[1], lookup).truthy() ? 1 : 0);
  }
  if (n.op == "or") {
    if (eval_node(*n.args[0], lookup).truthy()) return Value::num(1);
    return Value::num(eval_node(*n.args[1], lookup).truthy() ? 1 : 0);
  }
  const Value a = eval_node(*n.args[0], lookup);
  const Value b = eval_node(*n.args[1], lookup);
  const std::string& op = n.op;
  if (op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=") {
    if (a.is_number != b.is_number) throw ExprError("cannot compare " + describe(a) + " with " + describe(b), n.column);
    int c = 0;
    if (a.is_number) {
      c = a.number < b.number ? -1 : (a.number > b.number ? 1 : 0);
    } else {
      c = a.text.compare(b.text);
      c = c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    bool r = op == "=="   ? c == 0
             : op == "!=" ? c != 0
             : op == "<"  ? c < 0
             : op == "<=" ? c <= 0
             : op == ">"  ? c > 0
                          : c >= 0;
    return Value::num(r ? 1 : 0);
  }
  const double x = need_number(a, n, op), y = need_number(b, n, op);
  if (op == "+") return Value::num(x + y);
  if (op == "-") return Value::num(x - y);
  if (op == "*") return Value::num(x * y);
  if (op == "/") return Value::num(y == 0 ? NAN : x / y);
  return Value::num(y == 0 ? NAN : std::fmod(x, y));
}

}  // namespace

Expr Expr::parse(const std::string& text) {
  if (text.size() > kMaxExprChars)
    throw ExprError("expression too long: " + std::to_string(text.size()) + " characters, at most " +
                        std::to_string(kMaxExprChars) + " allowed",
                    static_cast<int>(kMaxExprChars) + 1);
  Expr e;
  e.text_ = text;
  Parser p(tokenize(text), e.names_);
  e.root_ = p.parse_all();
  return e;
}

Value Expr::eval(const Lookup& lookup) const { return eval_node(*root_, lookup); }

}  // namespace tpusim::sim::sweep
