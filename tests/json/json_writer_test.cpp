// dump_json writes what nlohmann's dump(2) writes, byte for byte, for any value: it only takes a
// faster road for plain ASCII strings and integers.
#include "tpulaunch/json/json_writer.hpp"

#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace tpulaunch {
namespace {

using Json = nlohmann::ordered_json;

// The same text as dump(2), or both throw nlohmann's type_error (invalid UTF-8).
void expect_same_text(const Json& value) {
  std::string expected;
  bool expected_throws = false;
  try {
    expected = value.dump(2);
  } catch (const nlohmann::json::type_error&) {
    expected_throws = true;
  }
  if (expected_throws) {
    EXPECT_THROW((void)dump_json(value), nlohmann::json::type_error);
    return;
  }
  EXPECT_EQ(dump_json(value), expected);
}

TEST(JsonWriter, EveryByteInAStringIsWrittenAsNlohmannWritesIt) {
  for (int byte = 0; byte < 256; ++byte) {
    // Alone, and in the middle of a long ASCII run (the eight-byte road and its tail).
    const std::string one(1, static_cast<char>(byte));
    expect_same_text(Json(one));
    expect_same_text(Json(std::string(13, 'a') + one + std::string(21, 'b')));
  }
}

TEST(JsonWriter, ShapesAndScalarsMatchDump) {
  expect_same_text(Json::object());
  expect_same_text(Json::array());
  expect_same_text(Json(nullptr));
  expect_same_text(Json{{"a", Json::object()}, {"b", Json::array()}, {"c", {1, 2, {{"d", nullptr}}}}});
  expect_same_text(Json{{"t", true}, {"f", false}, {"pi", 3.25}, {"tiny", 1e-300}, {"neg", -7}});
  expect_same_text(Json(std::numeric_limits<std::int64_t>::min()));
  expect_same_text(Json(std::numeric_limits<std::uint64_t>::max()));
  expect_same_text(Json{{"k\"ey\n\x01", "caf\xc3\xa9 \xe6\x97\xa5"}, {"", ""}});
}

TEST(JsonWriter, RandomDocumentsMatchDump) {
  std::mt19937 rng(20261204);
  const auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  const auto random_string = [&]() {
    std::string s;
    const int length = pick(3) == 0 ? pick(300) : pick(12);
    for (int i = 0; i < length; ++i) {
      // Mostly printable ASCII, sometimes anything (control bytes, UTF-8, invalid UTF-8).
      s += static_cast<char>(pick(8) == 0 ? pick(256) : 0x20 + pick(95));
    }
    return s;
  };
  std::function<Json(int)> random_value = [&](int depth) -> Json {
    switch (depth > 3 ? pick(4) : pick(6)) {
    case 0:
      return random_string();
    case 1:
      return pick(2) == 0 ? Json(pick(1000000) - 500000) : Json(static_cast<std::uint64_t>(pick(1000)));
    case 2:
      return pick(3) == 0 ? Json(nullptr) : Json(pick(2) == 0);
    case 3:
      return Json(static_cast<double>(pick(1000)) / 7.0);
    case 4: {
      Json object = Json::object();
      for (int i = pick(5); i > 0; --i) {
        object[random_string()] = random_value(depth + 1);
      }
      return object;
    }
    default: {
      Json array = Json::array();
      for (int i = pick(5); i > 0; --i) {
        array.push_back(random_value(depth + 1));
      }
      return array;
    }
    }
  };
  for (int i = 0; i < 2000; ++i) {
    expect_same_text(random_value(0));
  }
}

} // namespace
} // namespace tpulaunch
