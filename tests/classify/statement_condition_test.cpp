// The blocks around a statement, read as a stream (src/classify/statement_condition.hpp): what makes a
// jax.distributed.initialize() conditional. The one-line `if c: stmt` and conditional
// expressions are the scanner's part (classifier_test.cpp, AnInitializeBehindAnIfSaysSo).
#include "classify/statement_condition.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace tpulaunch::scan {
namespace {

// Streams the logical lines of `source` into a tracker as the scanner does (at each line's end),
// up to the line that holds the name `name`, and returns the tracker's condition there.
std::optional<Condition> condition(std::string_view source, std::string_view name = "initialize") {
  const std::vector<Token> tokens = tokenize(source);
  BlockTracker tracker(source);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (t.kind == TokenKind::name && t.text == name) {
      return tracker.condition();
    }
    if (t.kind == TokenKind::newline) {
      const bool colon = i > 0 && tokens[i - 1].kind == TokenKind::op && tokens[i - 1].text == ":";
      tracker.on_line_end(t, colon ? static_cast<std::size_t>(tokens[i - 1].text.data() - source.data())
                                   : std::string_view::npos);
    }
  }
  ADD_FAILURE() << "no " << name << " in " << source;
  return std::nullopt;
}

TEST(StatementCondition, ABlockOfAConditionalStatement) {
  const struct {
    std::string_view source;
    std::string_view keyword;
    std::uint32_t line;
    std::string_view header;
  } cases[] = {
      {"import jax\nif args.multi_host:\n    jax.distributed.initialize()\n", "if", 2, "if args.multi_host:"},
      {"if a:\n    pass\nelif (b and\n      c):\n    initialize()\n", "elif", 3, "elif (b and c):"},
      {"if a:\n    pass\nelse:\n    x = 1\n    initialize()\n", "else", 3, "else:"},
      {"for host in hosts:\n    initialize()\n", "for", 1, "for host in hosts:"},
      {"async def f():\n    async for x in y:\n        initialize()\n", "for", 2, "async for x in y:"},
      {"while not ready():\n    initialize()\n", "while", 1, "while not ready():"},
      {"try:\n    pass\nexcept RuntimeError:\n    initialize()\n", "except", 3, "except RuntimeError:"},
      {"match mode:\n    case 'multi':\n        initialize()\n", "case", 2, "case 'multi':"},
      // Inside a function, inside a condition; comment and blank lines in between.
      {"def main():\n    if multi:  # on a pod\n\n        # join\n        with ctx():\n            initialize()\n", "if", 2,
       "if multi:"},
      // The innermost one is named; CRLF line ends and a tab indentation read the same.
      {"if a:\r\n    if b:\r\n        initialize()\r\n", "if", 2, "if b:"},
      {"if a:\n\tinitialize()\n", "if", 1, "if a:"},
  };
  for (const auto& c : cases) {
    const auto found = condition(c.source);
    ASSERT_TRUE(found.has_value()) << c.source;
    EXPECT_EQ(found->keyword, c.keyword) << c.source;
    EXPECT_EQ(found->line, c.line) << c.source;
    EXPECT_EQ(found->header, c.header) << c.source;
  }
}

TEST(StatementCondition, Unconditional) {
  for (std::string_view source : {
           "import jax\njax.distributed.initialize()\n",
           "def main():\n    jax.distributed.initialize()\n",
           "if __name__ == '__main__':\n    jax.distributed.initialize()\n",
           "if \"__main__\" == __name__:\n    initialize()\n",
           "if __name__==\"__main__\" :\n    initialize()\n",
           "with ctx():\n    try:\n        initialize()\n    finally:\n        pass\n",
           // A block that ended before it, at a lower indentation.
           "if a:\n    pass\ninitialize()\n",
           "if a:\n    x = 1\n\n    # a comment\ndef f():\n    initialize()\n",
           // Outside the function that the condition is in: the function may be called anywhere.
           "if a:\n    def setup():\n        initialize()\n",
           "for x in y:\n    class C:\n        initialize()\n",
           // A one-line `if a: b` holds no block.
           "if a: pass\ninitialize()\n",
       }) {
    EXPECT_FALSE(condition(source).has_value()) << source;
  }
}

TEST(StatementCondition, HeadersThatAreConditional) {
  const std::string_view source = "if args.multi_host:";
  const auto found = conditional_header(source, 0, source.size() - 1, 7);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->keyword, "if");
  EXPECT_EQ(found->line, 7U);
  EXPECT_EQ(found->header, "if args.multi_host:");
  for (std::string_view header : {"with ctx():", "def f():", "try:", "if __name__ == '__main__':"}) {
    EXPECT_FALSE(conditional_header(header, 0, header.size() - 1, 1).has_value()) << header;
  }
  const std::string long_header = "if " + std::string(100, 'x') + ":";
  const auto cut = conditional_header(long_header, 0, long_header.size() - 1, 1);
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->header.size(), 80U);
  EXPECT_EQ(cut->header.substr(77), "...");
}

} // namespace
} // namespace tpulaunch::scan
