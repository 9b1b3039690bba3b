#pragma once
// Spelling suggestions for names a user typed (slice names, script ids, subcommands, flags): the
// "did you mean" part of a usage error, by edit distance.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tpulaunch {

// Optimal string alignment distance: Levenshtein plus adjacent transpositions, so the typo
// "v5litepod-61" is one edit from "v5litepod-16".
std::size_t edit_distance(std::string_view a, std::string_view b);

// True when `a` and `b` differ only in letter case and in '-' against '_' ("Tpu_Hello" and
// "tpu-hello"): the likeliest slip of all, ranked before any edit.
bool same_but_separators(std::string_view a, std::string_view b);

// The candidate closest to `word` by edit distance, if it is close enough to be a likely typo
// (distance ≤ max(2, |word|/3)); empty otherwise. On a tie, one of the same length wins.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// Up to `limit` candidates that are likely typos of `word`: separator and case slips first, then
// every candidate at the smallest edit distance within the limit above, in candidate order.
std::vector<std::string> nearest_matches(std::string_view word, const std::vector<std::string>& candidates,
                                         std::size_t limit = 3);

// " (did you mean 'x'?)", " (did you mean 'x' or 'y'?)", or "" when `suggestions` is empty — for
// appending to an error message.
std::string did_you_mean(const std::vector<std::string>& suggestions);

// did_you_mean() of the one closest_match().
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

} // namespace tpulaunch
