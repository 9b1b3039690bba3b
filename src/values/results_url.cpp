#include "tpulaunch/values/results_url.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "tpulaunch/values/validate.hpp"

namespace tpulaunch {
namespace {

constexpr std::string_view k_scheme = "gs://";

bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower_alnum(char c) { return is_lower(c) || is_digit(c); }

// The parts of `text` between `separator`s (empty parts included).
template <typename F> void for_each_part(std::string_view text, char separator, F&& f) {
  std::size_t start = 0;
  while (true) {
    const auto end = text.find(separator, start);
    f(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) {
      return;
    }
    start = end + 1;
  }
}

// Four dot-separated runs of 1-3 digits: 192.168.5.4.
bool is_dotted_decimal(std::string_view name) {
  int parts = 0;
  bool ok = true;
  for_each_part(name, '.', [&](std::string_view part) {
    ++parts;
    ok = ok && !part.empty() && part.size() <= 3 &&
         std::all_of(part.begin(), part.end(), [](char c) { return is_digit(c); });
  });
  return ok && parts == 4;
}

// "google" with the digits people put for its letters ("g00gle", "goog1e") read as letters.
bool holds_google(std::string_view name) {
  std::string letters(name);
  for (char& c : letters) {
    c = c == '0' ? 'o' : c == '1' ? 'l' : c == '3' ? 'e' : c;
  }
  return letters.find("google") != std::string::npos;
}

} // namespace

std::string ResultsUrl::text() const {
  return prefix.empty() ? fmt::format("{}{}", k_scheme, bucket) : fmt::format("{}{}/{}", k_scheme, bucket, prefix);
}

std::string ResultsUrl::join(std::initializer_list<std::string_view> parts) const {
  std::string out = text();
  for (const std::string_view part : parts) {
    out += '/';
    out += part;
  }
  return out;
}

// cloud.google.com/storage/docs/buckets#naming, one rule per answer.
std::optional<std::string_view> bucket_name_problem(std::string_view bucket) {
  if (bucket.empty()) {
    return "the bucket name is missing";
  }
  if (!std::all_of(bucket.begin(), bucket.end(),
                   [](char c) { return is_lower_alnum(c) || c == '-' || c == '_' || c == '.'; })) {
    return "a bucket name holds only lowercase letters, digits, '-', '_' and '.'";
  }
  if (!is_lower_alnum(bucket.front()) || !is_lower_alnum(bucket.back())) {
    return "a bucket name starts and ends with a letter or digit";
  }
  const bool dotted = bucket.find('.') != std::string_view::npos;
  if (bucket.size() < 3 || bucket.size() > (dotted ? 222U : 63U)) {
    return "a bucket name has 3-63 characters (up to 222 when it holds dots)";
  }
  bool parts_ok = true;
  for_each_part(bucket, '.', [&](std::string_view part) { parts_ok = parts_ok && !part.empty() && part.size() <= 63; });
  if (!parts_ok) {
    return "each dot-separated part of a bucket name has 1-63 characters";
  }
  if (is_dotted_decimal(bucket)) {
    return "a bucket name is not an IP address";
  }
  if (bucket.starts_with("goog")) {
    return "a bucket name does not start with \"goog\"";
  }
  if (holds_google(bucket)) {
    return "a bucket name does not hold \"google\" or a close misspelling of it";
  }
  return std::nullopt;
}

std::optional<std::string_view> results_prefix_problem(std::string_view prefix) {
  if (prefix.empty()) {
    return std::nullopt; // the bucket's top level
  }
  if (prefix.size() > k_results_prefix_max) {
    return "the prefix is longer than 512 bytes";
  }
  for (const char c : prefix) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte > 0x7e) {
      return "the prefix holds only printable ASCII";
    }
    if (c == '*' || c == '?' || c == '[' || c == ']') {
      return "the prefix holds no wildcard (* ? [ ]), which gcloud storage would expand";
    }
    if (c == '#') {
      return "the prefix holds no '#', which gcloud storage reads as an object generation";
    }
  }
  std::optional<std::string_view> problem;
  for_each_part(prefix, '/', [&](std::string_view part) {
    if (!problem && (part.empty() || part == "." || part == "..")) {
      problem = "the prefix has no empty, '.' or '..' part";
    }
  });
  if (!problem && prefix.starts_with(".well-known/acme-challenge/")) {
    problem = "Cloud Storage refuses object names under .well-known/acme-challenge/";
  }
  return problem;
}

Result<ResultsUrl> parse_results_url(std::string_view value) {
  auto bad = [&](std::string_view why) {
    return usage_error(fmt::format("invalid results URL '{}' for --results: {}", printable(value), why));
  };
  if (!value.starts_with(k_scheme)) {
    return bad("it must be gs://BUCKET or gs://BUCKET/PREFIX");
  }
  std::string_view rest = value.substr(k_scheme.size());
  if (rest.ends_with('/')) {
    rest.remove_suffix(1);
  }
  const auto slash = rest.find('/');
  ResultsUrl url;
  url.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) {
    url.prefix = std::string(rest.substr(slash + 1));
    if (url.prefix.empty()) {
      return bad("the prefix has no empty, '.' or '..' part");
    }
  }
  if (const auto problem = bucket_name_problem(url.bucket)) {
    return bad(*problem);
  }
  if (const auto problem = results_prefix_problem(url.prefix)) {
    return bad(*problem);
  }
  return url;
}

} // namespace tpulaunch
