#include "tpulaunch/util/spelling.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace tpulaunch {
namespace {

// Edits a typo may take and still be suggested: short names allow two, longer ones a third.
std::size_t distance_limit(std::string_view word) { return std::max<std::size_t>(2, word.size() / 3); }

char folded(char c) {
  if (c == '_') {
    return '-';
  }
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

} // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t width = b.size() + 1;
  std::vector<std::size_t> d((a.size() + 1) * width);
  auto at = [&](std::size_t i, std::size_t j) -> std::size_t& { return d[i * width + j]; };
  for (std::size_t i = 0; i <= a.size(); ++i) {
    at(i, 0) = i;
  }
  for (std::size_t j = 0; j <= b.size(); ++j) {
    at(0, j) = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
      }
    }
  }
  return at(a.size(), b.size());
}

bool same_but_separators(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return folded(x) == folded(y); });
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = distance_limit(word) + 1;
  for (const auto& candidate : candidates) {
    const std::size_t distance = edit_distance(word, candidate);
    // On a tie, a candidate of the same length is the likelier typo (a transposition).
    const bool better = distance < best_distance ||
                        (distance == best_distance && !best.empty() && candidate.size() == word.size() &&
                         best.size() != word.size());
    if (better) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::vector<std::string> nearest_matches(std::string_view word, const std::vector<std::string>& candidates,
                                         std::size_t limit) {
  std::vector<std::string> out;
  for (const auto& candidate : candidates) {
    if (out.size() < limit && candidate != word && same_but_separators(word, candidate)) {
      out.push_back(candidate);
    }
  }
  std::size_t best = distance_limit(word) + 1;
  std::vector<std::string> at_best;
  for (const auto& candidate : candidates) {
    if (candidate == word || same_but_separators(word, candidate)) {
      continue;
    }
    const std::size_t distance = edit_distance(word, candidate);
    if (distance < best) {
      best = distance;
      at_best.clear();
    }
    if (distance == best) {
      at_best.push_back(candidate);
    }
  }
  for (auto& candidate : at_best) {
    if (out.size() < limit) {
      out.push_back(std::move(candidate));
    }
  }
  return out;
}

std::string did_you_mean(const std::vector<std::string>& suggestions) {
  if (suggestions.empty()) {
    return {};
  }
  std::string list = fmt::format("'{}'", suggestions.front());
  for (std::size_t i = 1; i < suggestions.size(); ++i) {
    list += fmt::format("{}'{}'", i + 1 == suggestions.size() ? " or " : ", ", suggestions[i]);
  }
  return fmt::format(" (did you mean {}?)", list);
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string best = closest_match(word, candidates);
  return best.empty() ? std::string() : did_you_mean(std::vector<std::string>{best});
}

} // namespace tpulaunch
