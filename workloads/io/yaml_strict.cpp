// See yaml_strict.h.
#include "workloads/io/yaml_strict.h"

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

namespace tpusim::workloads {

namespace {

// Iterative walk: a document nested thousands of levels deep must not
// overflow the stack here (yaml-cpp's own parser stops at its depth limit).
void walk(const YAML::Node& root) {
  std::vector<YAML::Node> todo{root};
  while (!todo.empty()) {
    YAML::Node n = todo.back();
    todo.pop_back();
    if (n.IsMap()) {
      std::set<std::string> seen;
      for (const auto& kv : n) {
        if (kv.first.IsScalar() && !seen.insert(kv.first.Scalar()).second)
          throw YAML::ParserException(kv.first.Mark(),
                                      "duplicate key '" + kv.first.Scalar() + "' (each key may appear once in a map)");
        todo.push_back(kv.second);
      }
    } else if (n.IsSequence()) {
      for (const auto& e : n) todo.push_back(e);
    }
  }
}

}  // namespace

void check_no_duplicate_keys(const YAML::Node& root) { walk(root); }

YAML::Node load_yaml_strict(const std::string& text) {
  std::vector<YAML::Node> docs = YAML::LoadAll(text);
  for (std::size_t i = 1; i < docs.size(); ++i)
    if (!docs[i].IsNull())
      throw YAML::ParserException(docs[i].Mark(),
                                  "a second document (only one YAML document or JSON value per file)");
  YAML::Node root = docs.empty() ? YAML::Node() : docs[0];
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
