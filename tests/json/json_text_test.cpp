// json_text prints nlohmann's dump(2) of a document, or refuses, by name, a string JSON cannot
// carry (not UTF-8) instead of throwing or altering it.
#include "tpulaunch/json/json_text.hpp"

#include <string>

#include <gtest/gtest.h>

#include "tpulaunch/util/utf8.hpp"

namespace tpulaunch {
namespace {

using Json = nlohmann::ordered_json;

TEST(JsonText, IsDumpTwoWithAFinalNewline) {
  const Json document = {
      {"a", 1}, {"b", {true, nullptr, "caf\xc3\xa9\n\x01"}}, {"c", Json::object()}, {"d", Json::array()}};
  const auto text = json_text(document);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, document.dump(2) + "\n");
  EXPECT_EQ(*text,
            "{\n  \"a\": 1,\n  \"b\": [\n    true,\n    null,\n    \"caf\xc3\xa9\\n\\u0001\"\n  ],\n  \"c\": {},\n"
            "  \"d\": []\n}\n");
}

TEST(JsonText, RefusesAStringThatIsNotUtf8NamingWhereValueAndByte) {
  const Json document = {{"env", {{"OK", "fine"}, {"SEED", "caf\xe9"}}}, {"args", {"x"}}};
  const auto text = json_text(document);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().code, ExitCode::usage);
  EXPECT_EQ(text.error().message,
            "--format json cannot carry the value at /env/SEED: 'caf\\xe9' is not UTF-8 (byte 0xe9 at offset 3), and "
            "JSON text is UTF-8; give the value in UTF-8, or choose another --format");
}

TEST(JsonText, NamesArrayElementsKeysAndTheDocumentItself) {
  const auto message = [](const Json& document) {
    const auto text = json_text(document);
    return text.ok() ? std::string("printed") : text.error().message;
  };
  EXPECT_NE(message({{"args", {"a", "b", "\xff"}}}).find("at /args/2: '\\xff'"), std::string::npos);
  // A key is named by itself; '/' and '~' in a key are escaped as a JSON Pointer escapes them.
  EXPECT_NE(message({{"a/b~c", {{"k\xc3", 1}}}}).find("at /a~1b~0c/k\\xc3: 'k\\xc3'"), std::string::npos);
  EXPECT_NE(message(Json("\xc3\x28")).find("at /: '\\xc3(' is not UTF-8 (byte 0xc3 at offset 0)"), std::string::npos);
  // Overlong forms and surrogates are not UTF-8 either; the first bad byte after ASCII is found.
  EXPECT_NE(message(Json(std::string(20, 'a') + "\xc0\xaf")).find("(byte 0xc0 at offset 20)"), std::string::npos);
  EXPECT_NE(message(Json("\xed\xa0\x80")).find("(byte 0xed at offset 0)"), std::string::npos);
  constexpr char k_emoji_and_nul[] = "\xf0\x9f\x98\x80 and NUL \0 too";
  EXPECT_EQ(message(Json(std::string(k_emoji_and_nul, sizeof k_emoji_and_nul - 1))), "printed");
}

TEST(Utf8, FirstNonUtf8ByteAndCutKeepSequencesWhole) {
  EXPECT_FALSE(first_non_utf8_byte("plain ascii, long enough for words").has_value());
  EXPECT_EQ(first_non_utf8_byte("0123456789\x80"), 10U);
  EXPECT_EQ(first_non_utf8_byte("caf\xc3\xa9 \xc3"), 6U); // a sequence cut short at the end
  const std::string text = "ab\xc3\xa9"
                           "cd"; // a, b, é (2 bytes), c, d
  EXPECT_EQ(utf8_cut(text, 2), 2U);
  EXPECT_EQ(utf8_cut(text, 3), 2U); // byte 3 continues é: cut before it
  EXPECT_EQ(utf8_cut(text, 4), 4U);
  EXPECT_EQ(utf8_cut(text, 99), text.size());
}

} // namespace
} // namespace tpulaunch
