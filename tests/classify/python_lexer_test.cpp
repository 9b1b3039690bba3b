#include "tpulaunch/classify/python_lexer.hpp"
#include "support/token_batches.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace tpulaunch {
namespace {

std::vector<Token> lex(std::string_view source, std::optional<LexError>* error = nullptr) {
  return tokenize(source, error);
}

// "kind:text" for every token except the final end token, to compare whole streams at once.
std::vector<std::string> describe(std::string_view source) {
  std::vector<std::string> out;
  for (const auto& token : lex(source)) {
    if (token.kind == TokenKind::end) {
      break;
    }
    out.push_back(std::string(to_string(token.kind)) + ":" +
                  (token.kind == TokenKind::newline ? std::string("\\n") : std::string(token.text)));
  }
  return out;
}

std::vector<std::string_view> names(std::string_view source) {
  std::vector<std::string_view> out;
  for (const auto& token : lex(source)) {
    if (token.kind == TokenKind::name) {
      out.push_back(token.text);
    }
  }
  return out;
}

std::vector<Token> strings(std::string_view source) {
  std::vector<Token> out;
  for (const auto& token : lex(source)) {
    if (token.kind == TokenKind::string) {
      out.push_back(token);
    }
  }
  return out;
}

bool contains_name(std::string_view source, std::string_view name) {
  for (auto n : names(source)) {
    if (n == name) {
      return true;
    }
  }
  return false;
}

TEST(PythonLexer, SimpleStatementTokens) {
  EXPECT_EQ(describe("x = jax.devices('cpu')\n"),
            (std::vector<std::string>{"name:x", "op:=", "name:jax", "op:.", "name:devices", "op:(", "string:'cpu'",
                                      "op:)", "newline:\\n"}));
}

TEST(PythonLexer, EndTokenIsLastAndRepeats) {
  PythonLexer lexer("a");
  Token token;
  EXPECT_TRUE(testing::next_token(lexer, token));
  EXPECT_EQ(token.kind, TokenKind::name);
  EXPECT_TRUE(testing::next_token(lexer, token));
  EXPECT_EQ(token.kind, TokenKind::newline); // implicit at end of input
  EXPECT_TRUE(token.text.empty());
  EXPECT_FALSE(testing::next_token(lexer, token));
  EXPECT_EQ(token.kind, TokenKind::end);
  EXPECT_FALSE(testing::next_token(lexer, token));
  EXPECT_EQ(token.kind, TokenKind::end);
  EXPECT_FALSE(lexer.error().has_value());
}

TEST(PythonLexer, EmptyAndBlankInputHaveOnlyEnd) {
  for (std::string_view source : {"", "\n\n", "   \t\n", "# only a comment\n", "\xEF\xBB\xBF"}) {
    const auto tokens = lex(source);
    ASSERT_EQ(tokens.size(), 1U) << source;
    EXPECT_EQ(tokens[0].kind, TokenKind::end);
  }
}

TEST(PythonLexer, MultiCharacterOperatorsLongestFirst) {
  EXPECT_EQ(describe("a==b!=c**=d->e:=f//=g...h<<=i>>j**k<=l>=m@=n"),
            (std::vector<std::string>{"name:a", "op:==", "name:b", "op:!=", "name:c", "op:**=", "name:d", "op:->",
                                      "name:e", "op::=", "name:f", "op://=", "name:g", "op:...", "name:h", "op:<<=",
                                      "name:i", "op:>>", "name:j", "op:**", "name:k", "op:<=", "name:l", "op:>=",
                                      "name:m", "op:@=", "name:n", "newline:\\n"}));
}

TEST(PythonLexer, NumbersIncludingExponentsHexAndImaginary) {
  EXPECT_EQ(describe("1_000 0xFFe1 1e-5 3.14j .5 1. 0b101 0o17 2E+3"),
            (std::vector<std::string>{"number:1_000", "number:0xFFe1", "number:1e-5", "number:3.14j", "number:.5",
                                      "number:1.", "number:0b101", "number:0o17", "number:2E+3", "newline:\\n"}));
  // `e` without digits is not an exponent; `0x1e+1` is an addition.
  EXPECT_EQ(describe("1else 0x1e+1"),
            (std::vector<std::string>{"number:1", "name:else", "number:0x1e", "op:+", "number:1", "newline:\\n"}));
}

TEST(PythonLexer, SingleAndDoubleQuotedStrings) {
  const auto s = strings(R"(a = 'one' + "two" + '' + "it's")");
  ASSERT_EQ(s.size(), 4U);
  EXPECT_EQ(s[0].body(), "one");
  EXPECT_EQ(s[1].body(), "two");
  EXPECT_EQ(s[2].body(), "");
  EXPECT_EQ(s[3].body(), "it's");
  for (const auto& t : s) {
    EXPECT_TRUE(t.terminated);
    EXPECT_EQ(t.quote_length, 1);
    EXPECT_FALSE(t.raw || t.bytes || t.fstring);
  }
}

TEST(PythonLexer, EscapedQuotesDoNotEndAString) {
  const auto s = strings(R"(x = "say \"hi\"" + 'it\'s')");
  ASSERT_EQ(s.size(), 2U);
  EXPECT_EQ(s[0].body(), R"(say \"hi\")");
  EXPECT_EQ(string_value(s[0]), R"(say "hi")");
  EXPECT_EQ(string_value(s[1]), "it's");
}

TEST(PythonLexer, TripleQuotedStringsSpanLines) {
  const std::string source = "x = '''a\n'b'\n''c'''\ny = \"\"\"d\"\"\"\nz\n";
  const auto tokens = lex(source);
  const auto s = strings(source);
  ASSERT_EQ(s.size(), 2U);
  EXPECT_EQ(s[0].body(), "a\n'b'\n''c");
  EXPECT_EQ(s[0].quote_length, 3);
  EXPECT_EQ(s[0].line, 1U);
  EXPECT_EQ(s[1].body(), "d");
  EXPECT_EQ(s[1].line, 4U);
  // The name after the multi-line string is on line 5.
  EXPECT_EQ(tokens[tokens.size() - 3].text, "z");
  EXPECT_EQ(tokens[tokens.size() - 3].line, 5U);
}

TEST(PythonLexer, AllPrefixesCaseInsensitively) {
  struct Case {
    std::string_view source;
    bool raw;
    bool bytes;
    bool fstring;
    std::uint8_t prefix;
  };
  const Case cases[] = {
      {"r'x'", true, false, false, 1},  {"R'x'", true, false, false, 1},  {"b'x'", false, true, false, 1},
      {"B\"x\"", false, true, false, 1}, {"u'x'", false, false, false, 1}, {"U'x'", false, false, false, 1},
      {"f'x'", false, false, true, 1},  {"F'x'", false, false, true, 1},  {"rb'x'", true, true, false, 2},
      {"Rb'x'", true, true, false, 2},  {"bR'x'", true, true, false, 2},  {"BR'x'", true, true, false, 2},
      {"fr'x'", true, false, true, 2},  {"rF'x'", true, false, true, 2},  {"FR'''x'''", true, false, true, 2},
  };
  for (const auto& c : cases) {
    const auto tokens = lex(c.source);
    ASSERT_EQ(tokens.size(), 3U) << c.source; // string, newline, end
    const auto& t = tokens[0];
    EXPECT_EQ(t.kind, TokenKind::string) << c.source;
    EXPECT_EQ(t.text, c.source);
    EXPECT_EQ(t.raw, c.raw) << c.source;
    EXPECT_EQ(t.bytes, c.bytes) << c.source;
    EXPECT_EQ(t.fstring, c.fstring) << c.source;
    EXPECT_EQ(t.prefix_length, c.prefix) << c.source;
    EXPECT_EQ(t.body(), "x") << c.source;
  }
}

TEST(PythonLexer, NamesThatLookLikePrefixesAreNames) {
  EXPECT_EQ(describe("rbx 'a' ur 'b' bb'c'"),
            (std::vector<std::string>{"name:rbx", "string:'a'", "name:ur", "string:'b'", "name:bb", "string:'c'",
                                      "newline:\\n"}));
}

TEST(PythonLexer, RawStringsKeepBackslashes) {
  const auto s = strings(R"(r"a\nb" r"\"" 'a\nb')");
  ASSERT_EQ(s.size(), 3U);
  EXPECT_EQ(string_value(s[0]), R"(a\nb)");
  EXPECT_EQ(string_value(s[1]), R"(\")");
  EXPECT_EQ(string_value(s[2]), "a\nb");
}

TEST(PythonLexer, StringValueProcessesEscapes) {
  const auto s = strings(R"('\x41\101\t\\\u00e9\q' b'\xff' 'a\
b')");
  ASSERT_EQ(s.size(), 3U);
  EXPECT_EQ(string_value(s[0]), "AA\t\\\xC3\xA9\\q");
  EXPECT_EQ(string_value(s[1]), "\xFF");
  EXPECT_EQ(string_value(s[2]), "ab"); // backslash-newline inside a string joins lines
}

TEST(PythonLexer, FStringIsOneTokenWithNestedQuotesAndBraces) {
  const std::string_view source = R"(x = f"{d['k']:>{width}} {{lit}} {f'{y}'}" + z)";
  EXPECT_EQ(describe(source), (std::vector<std::string>{"name:x", "op:=",
                                                         R"(string:f"{d['k']:>{width}} {{lit}} {f'{y}'}")", "op:+",
                                                         "name:z", "newline:\\n"}));
}

TEST(PythonLexer, FStringWithPep701SameQuotesStaysOneToken) {
  EXPECT_EQ(describe(R"(f"{os.environ["JAX_PLATFORMS"]}" + a)"),
            (std::vector<std::string>{R"(string:f"{os.environ["JAX_PLATFORMS"]}")", "op:+", "name:a",
                                      "newline:\\n"}));
}

TEST(PythonLexer, TripleQuotedFStringFieldSpansLines) {
  const std::string source = "s = f'''{\n  x  # note\n}'''\nafter\n";
  const auto tokens = lex(source);
  ASSERT_GE(tokens.size(), 5U);
  EXPECT_EQ(tokens[2].kind, TokenKind::string);
  EXPECT_EQ(tokens[2].text, "f'''{\n  x  # note\n}'''");
  EXPECT_EQ(tokens[4].text, "after");
  EXPECT_EQ(tokens[4].line, 4U);
}

TEST(PythonLexer, CommentsAreSkipped) {
  EXPECT_EQ(describe("a = 1  # jax.devices('cpu')\n# whole line\nb"),
            (std::vector<std::string>{"name:a", "op:=", "number:1", "newline:\\n", "name:b", "newline:\\n"}));
}

TEST(PythonLexer, CallTextInCommentDocstringAndStringsIsNotNames) {
  const std::string_view sources[] = {
      "# jax.devices(\"cpu\")\nx = 1\n",
      "def f():\n    \"\"\"Uses jax.devices(\"cpu\") here.\"\"\"\n    return 1\n",
      "msg = 'jax.devices(\"cpu\")'\n",
      "msg = f\"jax.devices('cpu') {value}\"\n",
      "msg = rb'jax.devices(\"cpu\")'\n",
  };
  for (auto source : sources) {
    EXPECT_FALSE(contains_name(source, "jax")) << source;
    EXPECT_FALSE(contains_name(source, "devices")) << source;
  }
  EXPECT_TRUE(contains_name("jax.devices('cpu')", "devices")); // the control
}

TEST(PythonLexer, LineAndColumnAreOneBasedBytes) {
  const auto tokens = lex("import jax\n\n  x = jax.devices( 'cpu' )\n\tz\n");
  // import jax NL x = jax . devices ( 'cpu' ) NL z NL end
  ASSERT_EQ(tokens.size(), 15U);
  EXPECT_EQ(tokens[0].line, 1U);
  EXPECT_EQ(tokens[0].column, 1U);
  EXPECT_EQ(tokens[1].column, 8U);
  EXPECT_EQ(tokens[2].kind, TokenKind::newline);
  EXPECT_EQ(tokens[2].column, 11U);
  EXPECT_EQ(tokens[3].text, "x");
  EXPECT_EQ(tokens[3].line, 3U);
  EXPECT_EQ(tokens[3].column, 3U);
  EXPECT_EQ(tokens[7].text, "devices");
  EXPECT_EQ(tokens[7].column, 11U);
  EXPECT_EQ(tokens[9].text, "'cpu'");
  EXPECT_EQ(tokens[9].column, 20U);
  EXPECT_EQ(tokens[12].text, "z");
  EXPECT_EQ(tokens[12].line, 4U);
  EXPECT_EQ(tokens[12].column, 2U); // a tab is one byte
}

TEST(PythonLexer, ByteOrderMarkIsSkipped) {
  const auto tokens = lex("\xEF\xBB\xBFimport os\n");
  ASSERT_EQ(tokens.size(), 4U);
  EXPECT_EQ(tokens[0].text, "import");
  EXPECT_EQ(tokens[0].column, 1U);
}

TEST(PythonLexer, BackslashContinuationJoinsLines) {
  const auto tokens = lex("x = 1 + \\\n    2\ny\n");
  EXPECT_EQ(describe("x = 1 + \\\n    2\ny\n"),
            (std::vector<std::string>{"name:x", "op:=", "number:1", "op:+", "number:2", "newline:\\n", "name:y",
                                      "newline:\\n"}));
  EXPECT_EQ(tokens[4].line, 2U);
  EXPECT_EQ(tokens[4].column, 5U);
  EXPECT_EQ(tokens[6].line, 3U);
}

TEST(PythonLexer, NoNewlinesInsideNestedBrackets) {
  EXPECT_EQ(describe("f(a,\n  [b,\n   {c: (d,\n)}],\n)\ng\n"),
            (std::vector<std::string>{"name:f", "op:(", "name:a", "op:,", "op:[", "name:b", "op:,", "op:{", "name:c",
                                      "op::", "op:(", "name:d", "op:,", "op:)", "op:}", "op:]", "op:,", "op:)",
                                      "newline:\\n", "name:g", "newline:\\n"}));
}

TEST(PythonLexer, CrLfAndCrLineEndings) {
  for (std::string_view source : {"a = 1\r\nb = 'x'\r\n\r\nc\r\n", "a = 1\rb = 'x'\r\rc\r"}) {
    const auto tokens = lex(source);
    ASSERT_EQ(tokens.size(), 11U) << source;
    EXPECT_EQ(tokens[3].kind, TokenKind::newline);
    EXPECT_EQ(tokens[4].text, "b");
    EXPECT_EQ(tokens[4].line, 2U);
    EXPECT_EQ(tokens[6].body(), "x");
    EXPECT_EQ(tokens[8].text, "c");
    EXPECT_EQ(tokens[8].line, 4U);
    EXPECT_EQ(tokens[8].column, 1U);
  }
  // A triple-quoted string with CRLF counts each CRLF as one line.
  const auto tokens = lex("s = '''a\r\nb\r\n'''\r\nz");
  EXPECT_EQ(tokens[4].text, "z");
  EXPECT_EQ(tokens[4].line, 4U);
}

TEST(PythonLexer, UnterminatedStringStopsAtEndOfLine) {
  std::optional<LexError> error;
  const auto tokens = lex("x = 'abc\ny = 2\n", &error);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->line, 1U);
  EXPECT_EQ(error->column, 5U);
  EXPECT_EQ(error->message, "unterminated string literal");
  EXPECT_EQ(tokens[2].kind, TokenKind::string);
  EXPECT_FALSE(tokens[2].terminated);
  EXPECT_EQ(tokens[2].body(), "abc");
  // Lexing resumes on the next line.
  EXPECT_EQ(tokens[4].text, "y");
  EXPECT_EQ(tokens[4].line, 2U);
}

TEST(PythonLexer, UnterminatedTripleQuotedStringRunsToEnd) {
  std::optional<LexError> error;
  const auto tokens = lex("x = \"\"\"abc\njax.devices('cpu')\n", &error);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->message, "unterminated triple-quoted string literal");
  EXPECT_EQ(error->line, 1U);
  for (const auto& t : tokens) {
    EXPECT_NE(t.text, "jax");
  }
  EXPECT_EQ(tokens.back().kind, TokenKind::end);
}

TEST(PythonLexer, UnclosedBracketIsReportedAtItsOpener) {
  std::optional<LexError> error;
  const auto tokens = lex("a = 1\nf(x,\n  y\n", &error);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->message, "'(' was never closed");
  EXPECT_EQ(error->line, 2U);
  EXPECT_EQ(error->column, 2U);
  EXPECT_EQ(tokens.back().kind, TokenKind::end);
}

TEST(PythonLexer, UnmatchedClosingBracketIsAnError) {
  std::optional<LexError> error;
  (void)lex("x)\ny\n", &error);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->message, "unmatched ')'");
  EXPECT_EQ(error->column, 2U);
}

TEST(PythonLexer, OnlyTheFirstErrorIsKept) {
  std::optional<LexError> error;
  (void)lex("a $ b\n'unterminated\n", &error);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->message, "unexpected byte 0x24");
  EXPECT_EQ(error->line, 1U);
  EXPECT_EQ(error->column, 3U);
}

TEST(PythonLexer, NulBytesAreSkippedWithAnError) {
  const std::string source("a\0b = '\0'\n", 10);
  std::optional<LexError> error;
  const auto tokens = lex(source, &error);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->message, "unexpected byte 0x00");
  EXPECT_EQ(tokens[0].text, "a");
  EXPECT_EQ(tokens[1].text, "b");
  EXPECT_EQ(tokens[3].kind, TokenKind::string);
  EXPECT_EQ(tokens[3].body(), std::string_view("\0", 1));
}

TEST(PythonLexer, NonUtf8BytesDoNotBreakTokenizing) {
  const std::string source = "x\xff\xfe = '\xc3\x28'\n\x80\x81 jax\n";
  std::optional<LexError> error;
  const auto tokens = lex(source, &error);
  EXPECT_EQ(tokens[0].kind, TokenKind::name);
  EXPECT_EQ(tokens[0].text, "x\xff\xfe");
  EXPECT_EQ(tokens[2].body(), "\xc3\x28");
  EXPECT_EQ(tokens[5].text, "jax");
  EXPECT_EQ(tokens[5].line, 2U);
  EXPECT_EQ(tokens.back().kind, TokenKind::end);
}

TEST(PythonLexer, StrayBackslashIsAnError) {
  std::optional<LexError> error;
  const auto tokens = lex("a \\ b\n", &error);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->message, "unexpected character after line continuation character");
  EXPECT_EQ(tokens[1].text, "b");
}

TEST(PythonLexer, DeeplyNestedFStringsTerminate) {
  std::string source = "x = ";
  for (int i = 0; i < 200; ++i) {
    source += "f'{";
  }
  source += "\n";
  const auto tokens = lex(source);
  EXPECT_EQ(tokens.back().kind, TokenKind::end);
}

TEST(PythonLexer, HugeLineAndRandomBytesNeverHang) {
  std::string huge(1 << 20, 'a');
  huge += " = ((((\"";
  const auto tokens = lex(huge);
  EXPECT_EQ(tokens.front().text.size(), 1U << 20);
  EXPECT_EQ(tokens.back().kind, TokenKind::end);

  std::mt19937 rng(1234);
  const std::string_view alphabet = "'\"\\{}()[]#\n\r fbr:=.x0\t\x00\xff";
  for (int round = 0; round < 2000; ++round) {
    std::string garbage(static_cast<std::size_t>(rng() % 200), ' ');
    for (auto& c : garbage) {
      c = rng() % 4 == 0 ? static_cast<char>(rng() & 0xFF) : alphabet[rng() % alphabet.size()];
    }
    const auto result = lex(garbage);
    ASSERT_EQ(result.back().kind, TokenKind::end);
    for (const auto& t : result) {
      ASSERT_GE(t.text.data(), garbage.data());
      ASSERT_LE(t.text.data() + t.text.size(), garbage.data() + garbage.size());
    }
  }
}

const std::string_view k_mixed_source =
    "import jax  # c\nx = (a,\n  'b' f\"{c}\")[0] ** 2\n\"\"\"doc\n\"\"\"\ny = x.z != 1.5e3\n";

TEST(PythonLexer, BatchesOfAnySizeEqualOneAtATime) {
  const auto expected = lex(k_mixed_source);
  for (std::size_t size : {1U, 2U, 3U, 7U, 64U}) {
    PythonLexer lexer(k_mixed_source);
    std::vector<Token> got;
    std::vector<Token> batch(size);
    for (;;) {
      const std::size_t count = testing::next_batch(lexer, batch);
      ASSERT_GT(count, 0U);
      got.insert(got.end(), batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(count));
      if (got.back().kind == TokenKind::end) {
        break;
      }
    }
    ASSERT_EQ(got.size(), expected.size()) << size;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].kind, expected[i].kind) << i;
      EXPECT_EQ(got[i].text, expected[i].text) << i;
      EXPECT_EQ(got[i].line, expected[i].line) << i;
      EXPECT_EQ(got[i].column, expected[i].column) << i;
      EXPECT_EQ(got[i].fstring, expected[i].fstring) << i;
    }
  }
}

// Records which callback saw each token, to check PythonLexer::run's dispatch.
struct RecordingSink {
  Token token;
  std::vector<std::string> calls;
  Token& slot() { return token; }
  bool record(std::string_view what) {
    calls.push_back(std::string(what) + ":" + std::string(token.text));
    return true;
  }
  bool on_name(Token&) { return record("name"); }
  bool on_number(Token&) { return record("number"); }
  bool on_string(Token&) { return record("string"); }
  bool on_open(Token&) { return record("open"); }
  bool on_close(Token&) { return record("close"); }
  bool on_op(Token&) { return record("op"); }
  bool on_newline(Token&) { return record("newline"); }
  void on_end(Token&) { (void)record("end"); }
};

TEST(PythonLexer, RunCallsOneCallbackPerKind) {
  PythonLexer lexer("f(x, 'y')[1] ... .5\n");
  RecordingSink sink;
  EXPECT_TRUE(lexer.run(sink));
  EXPECT_EQ(sink.calls, (std::vector<std::string>{"name:f", "open:(", "name:x", "op:,", "string:'y'", "close:)",
                                                  "open:[", "number:1", "close:]", "op:...", "number:.5",
                                                  "newline:\n", "end:"}));
}

// Pauses after every token, as a caller with a one-token buffer would.
struct PausingSink : RecordingSink {
  bool on_name(Token&) {
    (void)record("name");
    return false;
  }
  bool on_op(Token&) {
    (void)record("op");
    return false;
  }
};

TEST(PythonLexer, RunResumesAfterASinkPauses) {
  PythonLexer lexer("a.b\n");
  PausingSink sink;
  int runs = 1;
  while (!lexer.run(sink)) {
    ++runs;
  }
  EXPECT_EQ(runs, 4); // paused after a, ., b; the last run delivers the newline and end
  EXPECT_EQ(sink.calls, (std::vector<std::string>{"name:a", "op:.", "name:b", "newline:\n", "end:"}));
}

TEST(PythonLexer, LongIdentifiersAndIndentationAcrossSimdBlocks) {
  // Identifier and space runs longer than one 16-byte block, ending at every offset, and at
  // the very end of the input (the scalar tail).
  for (std::size_t length = 1; length <= 40; ++length) {
    const std::string name(length, 'n');
    const std::string source = std::string(length, ' ') + name + "_9\xc3\xa9+" + name;
    const auto tokens = lex(source);
    ASSERT_EQ(tokens.size(), 5U) << length;
    EXPECT_EQ(tokens[0].text, name + "_9\xc3\xa9");
    EXPECT_EQ(tokens[0].column, length + 1);
    EXPECT_EQ(tokens[1].text, "+");
    EXPECT_EQ(tokens[2].text, name);
  }
  // Bytes that only look like identifier bytes after case folding are not identifiers.
  EXPECT_EQ(describe("abcdefghijklmnopq@rstuvwxyz0123456789[x]`"),
            (std::vector<std::string>{"name:abcdefghijklmnopq", "op:@", "name:rstuvwxyz0123456789", "op:[", "name:x",
                                      "op:]", "newline:\\n"}));
}

} // namespace
} // namespace tpulaunch
