#include "tpulaunch/json/json_reader.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace tpulaunch {
namespace {

std::string error_of(std::string_view text) {
  auto result = parse_json(text, "f.json");
  EXPECT_FALSE(result.ok()) << text;
  return result.ok() ? std::string() : result.error().message;
}

TEST(JsonReader, ParsesValuesOfEveryType) {
  auto doc = parse_json(R"({"a": [1, -2, 3.5, 1e3, true, false, null, "x\u00e9\ud83d\ude00"], "b": {}})", "f.json");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  const auto& a = doc->value["a"];
  EXPECT_EQ(a[0].get<int>(), 1);
  EXPECT_EQ(a[1].get<int>(), -2);
  EXPECT_DOUBLE_EQ(a[2].get<double>(), 3.5);
  EXPECT_DOUBLE_EQ(a[3].get<double>(), 1000.0);
  EXPECT_TRUE(a[4].get<bool>());
  EXPECT_TRUE(a[6].is_null());
  EXPECT_EQ(a[7].get<std::string>(), "x\xc3\xa9\xf0\x9f\x98\x80");
}

// Integers keep the value nlohmann::json::parse gives them (fuzz/json_diff_fuzz.cpp holds the two
// readers to the same values): an integer up to 2^64 - 1 stays an integer (signed when it fits,
// else unsigned; nlohmann makes every non-negative one unsigned, which compares equal), and only
// beyond that range is it a double, in both.
TEST(JsonReader, StoresIntegersWithTheValuesNlohmannGives) {
  const std::string text = "[9223372036854775807, -9223372036854775808, 9223372036854775808, "
                           "18446744073709551615, 18446744073709551616, -9223372036854775809]";
  auto doc = parse_json(text, "f.json");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  const nlohmann::json theirs = nlohmann::json::parse(text);
  ASSERT_EQ(doc->value.size(), theirs.size());
  for (std::size_t i = 0; i < theirs.size(); ++i) {
    EXPECT_EQ(doc->value[i], theirs[i]) << i;
    EXPECT_EQ(doc->value[i].is_number_integer(), theirs[i].is_number_integer()) << i;
    EXPECT_EQ(doc->value[i].dump(), theirs[i].dump()) << i;
  }
  EXPECT_TRUE(doc->value[3].is_number_unsigned());
  EXPECT_EQ(doc->value[3].get<std::uint64_t>(), 18446744073709551615ULL);
  EXPECT_TRUE(doc->value[4].is_number_float());
}

TEST(JsonReader, RefusesDuplicateKeysWithTheirPosition) {
  EXPECT_EQ(error_of("{\"a\": 1,\n \"a\": 2}"), "f.json:2:2: duplicate key \"a\"");
}

TEST(JsonReader, RemembersPositionsOfValues) {
  auto doc = parse_json("{\n  \"s\": [\n    {\"h\": 0}\n  ]\n}", "f.json");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->where("/s/0/h"), "f.json:3:11");
  EXPECT_EQ(doc->where("/s/0/missing"), "f.json:3:5");
}

TEST(JsonReader, RefusesWhatRfc8259Refuses) {
  EXPECT_NE(error_of("[1,]").find("expected a JSON value"), std::string::npos);
  EXPECT_NE(error_of("{\"a\":1,}").find("expected a member name"), std::string::npos);
  EXPECT_NE(error_of("[01]").find("leading zero"), std::string::npos);
  EXPECT_NE(error_of("[NaN]").find("expected a JSON value"), std::string::npos);
  EXPECT_NE(error_of("// c\n{}").find("f.json:1:1:"), std::string::npos);
  EXPECT_NE(error_of("{} x").find("unexpected text after"), std::string::npos);
  EXPECT_NE(error_of("[\"a\nb\"]").find("control character"), std::string::npos);
  EXPECT_NE(error_of("[\"\\x\"]").find("invalid escape: backslash followed by 'x'"), std::string::npos);
  EXPECT_NE(error_of("[\"\\ud800\"]").find("unpaired surrogate"), std::string::npos);
  EXPECT_NE(error_of("[\"\xff\"]").find("invalid UTF-8"), std::string::npos);
  EXPECT_NE(error_of("[\"\xc0\xaf\"]").find("invalid UTF-8"), std::string::npos); // overlong '/'
  EXPECT_NE(error_of("").find("end of input"), std::string::npos);
  EXPECT_NE(error_of("[1e999]").find("out of range"), std::string::npos);
}

TEST(JsonReader, TruncatedInputIsAnErrorNotACrash) {
  const std::string full = R"({"version": 1, "scripts": {"a": {"class": "cpu-only", "sha256": "00"}}, "x": [1, 2.5e-3, "\u0041"]})";
  for (std::size_t n = 0; n < full.size(); ++n) {
    auto result = parse_json(std::string_view(full).substr(0, n), "t.json");
    EXPECT_FALSE(result.ok()) << n;
    EXPECT_EQ(result.error().code, ExitCode::config);
  }
  EXPECT_TRUE(parse_json(full, "t.json").ok());
}

TEST(JsonReader, RefusesNestingDeeperThanTheLimit) {
  const std::string deep(static_cast<std::size_t>(k_max_json_depth) + 2, '[');
  EXPECT_NE(error_of(deep).find("nesting deeper than"), std::string::npos);
  std::string ok(static_cast<std::size_t>(k_max_json_depth), '[');
  ok += std::string(static_cast<std::size_t>(k_max_json_depth), ']');
  EXPECT_TRUE(parse_json(ok, "f").ok());
}

TEST(JsonReader, ObjectAccessorsNameTheFieldAndPosition) {
  auto doc = parse_json("{\"n\": \"x\", \"i\": 7}", "f.json");
  ASSERT_TRUE(doc.ok());
  const JsonObject object(*doc, doc->value, "", "thing");
  EXPECT_EQ(*object.string("n"), "x");
  EXPECT_EQ(*object.integer("i", 0, 10), 7);
  EXPECT_EQ(object.integer("i", 8, 10).error().message, "f.json:1:17: thing: field \"i\" must be between 8 and 10, not 7");
  EXPECT_EQ(object.string("i").error().message, "f.json:1:17: thing: field \"i\" must be a string, not an integer");
  EXPECT_EQ(object.string("z").error().message, "f.json:1:1: thing: missing field \"z\"");
}

} // namespace
} // namespace tpulaunch
