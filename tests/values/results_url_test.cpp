#include "tpulaunch/values/results_url.hpp"

#include <gtest/gtest.h>

#include "tpulaunch/values/validate.hpp"

namespace tpulaunch {
namespace {

bool bucket_ok(std::string_view name) { return !bucket_name_problem(name).has_value(); }
bool prefix_ok(std::string_view prefix) { return !results_prefix_problem(prefix).has_value(); }

TEST(ResultsUrl, ParsesBucketAndPrefix) {
  auto url = parse_results_url("gs://lab-results/course/2026");
  ASSERT_TRUE(url.ok()) << url.error().message;
  EXPECT_EQ(url->bucket, "lab-results");
  EXPECT_EQ(url->prefix, "course/2026");
  EXPECT_EQ(url->text(), "gs://lab-results/course/2026");
  EXPECT_EQ(url->join({"pod", "lesson", "r1"}), "gs://lab-results/course/2026/pod/lesson/r1");
}

TEST(ResultsUrl, BucketAloneAndOneFinalSlash) {
  auto bare = parse_results_url("gs://lab-results");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->prefix, "");
  EXPECT_EQ(bare->text(), "gs://lab-results");
  EXPECT_EQ(bare->join({"pod"}), "gs://lab-results/pod");
  auto slash = parse_results_url("gs://lab-results/");
  ASSERT_TRUE(slash.ok());
  EXPECT_EQ(slash->text(), "gs://lab-results");
  auto prefixed = parse_results_url("gs://lab-results/runs/");
  ASSERT_TRUE(prefixed.ok());
  EXPECT_EQ(prefixed->text(), "gs://lab-results/runs");
  EXPECT_FALSE(parse_results_url("gs://lab-results//").ok());
  EXPECT_FALSE(parse_results_url("gs://lab-results/runs//").ok());
}

TEST(ResultsUrl, NeedsTheGsScheme) {
  for (const char* value : {"lab-results/runs", "s3://lab-results", "GS://lab-results", "gs:/lab-results", "",
                            "file:///tmp/x", " gs://lab-results"}) {
    EXPECT_FALSE(parse_results_url(value).ok()) << value;
  }
}

TEST(ResultsUrl, BucketNamingRules) {
  EXPECT_TRUE(bucket_ok("abc"));
  EXPECT_TRUE(bucket_ok("my_bucket-01"));
  EXPECT_TRUE(bucket_ok(std::string(63, 'a')));
  EXPECT_TRUE(bucket_ok("results.example.com"));
  EXPECT_FALSE(bucket_ok(""));
  EXPECT_FALSE(bucket_ok("ab"));                        // fewer than 3
  EXPECT_FALSE(bucket_ok(std::string(64, 'a')));        // more than 63 without dots
  EXPECT_FALSE(bucket_ok("Lab-Results"));               // upper case
  EXPECT_FALSE(bucket_ok("lab results"));               // space
  EXPECT_FALSE(bucket_ok("lab$(id)"));                  // shell characters
  EXPECT_FALSE(bucket_ok("-lab"));                      // must start with a letter or digit
  EXPECT_FALSE(bucket_ok("lab_"));                      // ... and end with one
  EXPECT_FALSE(bucket_ok("lab."));
  EXPECT_FALSE(bucket_ok("a..b"));                      // an empty dot-separated part
  EXPECT_FALSE(bucket_ok("192.168.5.4"));               // an IP address
  EXPECT_TRUE(bucket_ok("192.168.5.4.5"));              // five parts: not one
  EXPECT_FALSE(bucket_ok("goog-results"));              // the goog prefix
  EXPECT_FALSE(bucket_ok("my-google-results"));         // google
  EXPECT_FALSE(bucket_ok("my-g00gle-results"));         // a close misspelling
  EXPECT_TRUE(bucket_ok("my-goo-gle"));
}

TEST(ResultsUrl, DottedBucketNamesUpTo222With63PerPart) {
  const std::string part(63, 'a');
  const std::string longest = part + "." + part + "." + part + "." + std::string(30, 'b'); // 63*3 + 30 + 3 = 222
  ASSERT_EQ(longest.size(), 222U);
  EXPECT_TRUE(bucket_ok(longest));
  EXPECT_FALSE(bucket_ok(longest + "c"));
  EXPECT_FALSE(bucket_ok(std::string(64, 'a') + ".com")); // one part over 63
}

TEST(ResultsUrl, PrefixRules) {
  EXPECT_TRUE(prefix_ok(""));
  EXPECT_TRUE(prefix_ok("course/2026-spring"));
  EXPECT_TRUE(prefix_ok("odd name/with 'quotes' and $dollars"));
  EXPECT_TRUE(prefix_ok(std::string(512, 'p')));
  EXPECT_FALSE(prefix_ok(std::string(513, 'p')));
  for (const char* value : {"runs/*", "runs/?", "runs/[ab]", "runs]", "runs#12", "a//b", "/a", "a/", "a/./b", "..",
                            "a/../b", "a\nb", "a\tb", "caf\xc3\xa9", "x\x7f", ".well-known/acme-challenge/x"}) {
    EXPECT_FALSE(prefix_ok(value)) << printable(value);
  }
}

TEST(ResultsUrl, ErrorNamesTheValueAndTheRule) {
  auto url = parse_results_url("gs://Lab/runs");
  ASSERT_FALSE(url.ok());
  EXPECT_EQ(url.error().code, ExitCode::usage);
  EXPECT_EQ(url.error().message, "invalid results URL 'gs://Lab/runs' for --results: a bucket name holds only "
                                 "lowercase letters, digits, '-', '_' and '.'");
  auto wildcard = parse_results_url("gs://lab-results/runs/*");
  ASSERT_FALSE(wildcard.ok());
  EXPECT_NE(wildcard.error().message.find("'gs://lab-results/runs/*'"), std::string::npos);
  EXPECT_NE(wildcard.error().message.find("wildcard"), std::string::npos);
  auto control = parse_results_url("gs://lab-results/a\nb");
  ASSERT_FALSE(control.ok());
  EXPECT_NE(control.error().message.find("'gs://lab-results/a\\x0ab'"), std::string::npos) << control.error().message;
}

TEST(ResultsUrl, IsARowOfTheValueRules) {
  EXPECT_TRUE(validate_value(ValueKind::results_url, "gs://lab-results/runs").ok());
  auto bad = validate_value(ValueKind::results_url, "gs://lab-results/runs/*");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--results"), std::string::npos);
}

} // namespace
} // namespace tpulaunch
