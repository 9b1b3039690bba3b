// When a statement runs only under a condition (src/statement_condition.hpp): what qualifies a
// jax.distributed.initialize() as conditional.
#include "statement_condition.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace tpulaunch::scan {
namespace {

// The condition of the first token named `name` in `source`.
std::optional<Condition> condition(std::string_view source, std::string_view name = "initialize") {
  const std::vector<Token> tokens = tokenize(source);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].kind == TokenKind::name && tokens[i].text == name) {
      return condition_of(tokens, i);
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
      {"while not ready():\n    initialize()\n", "while", 1, "while not ready():"},
      {"try:\n    pass\nexcept RuntimeError:\n    initialize()\n", "except", 3, "except RuntimeError:"},
      {"match mode:\n    case 'multi':\n        initialize()\n", "case", 2, "case 'multi':"},
      {"if a: initialize()\n", "if", 1, "if a:"},
      // Inside a function, inside a condition.
      {"def main():\n    if multi:\n        with ctx():\n            initialize()\n", "if", 2, "if multi:"},
      // The innermost one is named.
      {"if a:\n    if b:\n        initialize()\n", "if", 2, "if b:"},
  };
  for (const auto& c : cases) {
    const auto found = condition(c.source);
    ASSERT_TRUE(found.has_value()) << c.source;
    EXPECT_EQ(found->keyword, c.keyword) << c.source;
    EXPECT_EQ(found->line, c.line) << c.source;
    EXPECT_EQ(found->header, c.header) << c.source;
  }
}

TEST(StatementCondition, AConditionalExpression) {
  for (std::string_view source : {
           "x = jax.distributed.initialize() if multi else None\n",
           "x = None if single else jax.distributed.initialize()\n",
           "multi and jax.distributed.initialize()\n",
           "single or jax.distributed.initialize()\n",
       }) {
    const auto found = condition(source);
    ASSERT_TRUE(found.has_value()) << source;
    EXPECT_TRUE(found->keyword.empty()) << source;
    EXPECT_EQ(found->line, 1U) << source;
  }
}

TEST(StatementCondition, Unconditional) {
  for (std::string_view source : {
           "import jax\njax.distributed.initialize()\n",
           "def main():\n    jax.distributed.initialize()\n",
           "if __name__ == '__main__':\n    jax.distributed.initialize()\n",
           "if \"__main__\" == __name__:\n    initialize()\n",
           "with ctx():\n    try:\n        initialize()\n    finally:\n        pass\n",
           // A condition that ended before it, at a lower indentation.
           "if a:\n    pass\ninitialize()\n",
           "if a:\n    x = 1\n\n    # a comment\ndef f():\n    initialize()\n",
           // Outside the function that the condition is in: the function may be called anywhere.
           "if a:\n    def setup():\n        initialize()\n",
           // Evaluated whatever follows it, and a condition in another argument or statement.
           "initialize() and report()\n",
           "f(initialize(), x if c else y)\n",
           "y = a if b else c; initialize()\n",
           "if initialize():\n    pass\n",
       }) {
    EXPECT_FALSE(condition(source).has_value()) << source;
  }
}

} // namespace
} // namespace tpulaunch::scan
