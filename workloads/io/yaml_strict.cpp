// See yaml_strict.h.
#include "workloads/io/yaml_strict.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

namespace tpusim::workloads {

namespace {

// Largest document after aliases are expanded: a "billion laughs" of
// nested aliases would otherwise make every reader walk 10^9 nodes.
constexpr std::uint64_t kMaxExpandedNodes = 20'000'000;

// Identity of a map or sequence: its start in the text. Aliases share the
// node (and so the mark) of their anchor.
using Key = std::tuple<int, int, int>;
Key key_of(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return {m.pos, m.line, m.column};
}

// Iterative depth-first walk: a document nested thousands of levels deep
// must not overflow the stack here. Checks duplicate keys once per node,
// refuses an alias inside its own anchor (a cycle every reader would
// follow forever) and a document whose expansion is too large.
void walk(const YAML::Node& root) {
  struct Frame {
    YAML::Node node;
    std::vector<YAML::Node> kids;
    std::size_t next = 0;
    std::uint64_t size = 1;
  };
  std::map<Key, std::uint64_t> done;  // expanded size of each finished node
  std::set<Key> on_path;
  std::vector<Frame> stack;
  auto enter = [&](const YAML::Node& n) -> std::optional<std::uint64_t> {
    if (!n.IsMap() && !n.IsSequence()) return 1;
    const Key k = key_of(n);
    if (auto it = done.find(k); it != done.end()) return it->second;
    if (on_path.count(k)) throw YAML::ParserException(n.Mark(), "an alias refers to a node that contains it (a cycle)");
    Frame f{n, {}, 0, 1};
    if (n.IsMap()) {
      std::set<std::string> seen;
      for (const auto& kv : n) {
        if (kv.first.IsScalar() && !seen.insert(kv.first.Scalar()).second)
          throw YAML::ParserException(kv.first.Mark(),
                                      "duplicate key '" + kv.first.Scalar() + "' (each key may appear once in a map)");
        f.kids.push_back(kv.second);
      }
    } else {
      for (const auto& e : n) f.kids.push_back(e);
    }
    on_path.insert(k);
    stack.push_back(std::move(f));
    return std::nullopt;
  };
  auto add = [&](Frame& f, std::uint64_t n) {
    f.size += n;
    if (f.size > kMaxExpandedNodes)
      throw YAML::ParserException(f.node.Mark(), "the document expands to more than 20 million nodes (aliases)");
  };
  if (enter(root)) return;
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next < f.kids.size()) {
      const YAML::Node kid = f.kids[f.next++];
      if (auto n = enter(kid)) add(stack.back(), *n);
      continue;
    }
    const Key k = key_of(f.node);
    const std::uint64_t size = f.size;
    on_path.erase(k);
    done[k] = size;
    stack.pop_back();
    if (!stack.empty()) add(stack.back(), size);
  }
}

}  // namespace

void check_no_duplicate_keys(const YAML::Node& root) { walk(root); }

namespace {
// Records where the first content of a document is, if it has any.
class ContentProbe : public YAML::EventHandler {
 public:
  bool content = false;
  YAML::Mark at;
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { note(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { note(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    note(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    note(m);
  }
  void OnMapEnd() override {}

 private:
  void note(const YAML::Mark& m) {
    if (!content) at = m;
    content = true;
  }
};
}  // namespace

YAML::Node load_yaml_strict(const std::string& text) {
  // Not YAML::LoadAll: yaml-cpp 0.7 loops forever in it on some malformed
  // input (found by tests/fuzz/fuzz_workload_yaml). The first document is
  // loaded, and the parser is asked for exactly one more.
  YAML::Node root = YAML::Load(text);
  std::istringstream in(text);
  YAML::Parser parser(in);
  ContentProbe first, second;
  if (parser.HandleNextDocument(first) && parser.HandleNextDocument(second) && second.content)
    throw YAML::ParserException(second.at, "a second document (only one YAML document or JSON value per file)");
  walk(root);
  return root;
}

YAML::Node load_yaml_file_strict(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw YAML::BadFile(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return load_yaml_strict(ss.str());
}

}  // namespace tpusim::workloads
