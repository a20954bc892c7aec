// Rendering of config diagnostics and the typo suggester; see config_error.h.
#include "sim/config/config_error.h"

#include <algorithm>

namespace tpusim::sim {
namespace {

std::string render_all(const std::vector<Diagnostic>& ds) {
  std::string s;
  for (const Diagnostic& d : ds) {
    if (!s.empty()) s += "\n";
    s += d.render();
  }
  return s;
}

}  // namespace

std::string Diagnostic::render() const {
  std::string s = file;
  if (line > 0) s += ":" + std::to_string(line) + ":" + std::to_string(column);
  s += ": ";
  if (!key.empty()) s += key + ": ";
  s += "expected " + expected + ", found " + found;
  if (!suggestion.empty()) s += " (did you mean '" + suggestion + "'?)";
  return s;
}

ConfigError::ConfigError(std::vector<Diagnostic> diagnostics)
    : arch::ConfigError(render_all(diagnostics)), diagnostics_(std::move(diagnostics)) {}

// Optimal string alignment distance: Levenshtein plus adjacent
// transpositions, the commonest typo ("hmb" for "hbm" is 1, not 2).
int edit_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  int best_d = 1 << 30;
  for (const std::string& c : candidates) {
    int d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  int limit = std::max<int>(2, static_cast<int>(word.size()) / 3);
  return best_d <= limit ? best : std::string();
}

}  // namespace tpusim::sim
