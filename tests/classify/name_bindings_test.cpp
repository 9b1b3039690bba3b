// The classifier's file-wide name bindings (src/classify/name_bindings.hpp): a name has a value only when
// it is bound exactly once, by a plain assignment of a string literal.
#include "classify/name_bindings.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace tpulaunch::scan {
namespace {

std::optional<std::string> value(std::string_view source, std::string_view name) {
  const auto tokens = tokenize(source);
  return NameBindings(tokens).value_of(name).value;
}

std::string why(std::string_view source, std::string_view name) {
  const auto tokens = tokenize(source);
  return NameBindings(tokens).value_of(name).why_unknown;
}

TEST(NameBindings, PlainAnnotatedAndChainedLiterals) {
  EXPECT_EQ(value("P = 'cpu'\n", "P"), "cpu");
  EXPECT_EQ(value("P = 'c' \"pu\"\n", "P"), "cpu");
  EXPECT_EQ(value("P: str = 'cpu'\n", "P"), "cpu");
  EXPECT_EQ(value("A = 'cpu'\nP = A\n", "P"), "cpu");
  EXPECT_EQ(value("x = 1; P = 'tpu'; y = 2\n", "P"), "tpu");
  EXPECT_EQ(value("if a: P = 'cpu'\n", "P"), "cpu");
  EXPECT_EQ(value("f(P='x')\nP = 'cpu'\n", "P"), "cpu"); // a keyword argument binds nothing
  EXPECT_EQ(value("P = 'cpu'\ng = lambda x=1: x\n", "P"), "cpu");
}

TEST(NameBindings, EveryOtherBindingMakesTheValueUnknown) {
  const std::string_view sources[] = {
      "P = 'cpu'\nP = 'tpu'\n",        "P = 'cpu'\nP += 'x'\n",           "P = 'cpu'\nfor P in x:\n    pass\n",
      "P = 'cpu'\na, P = 1, 2\n",       "P = 'cpu'\n[P] = ['tpu']\n",     "P = 'cpu'\nwith f() as P:\n    pass\n",
      "P = 'cpu'\nimport P\n",          "P = 'cpu'\nfrom m import x as P\n", "P = 'cpu'\ndef f(a, P='x'):\n    pass\n",
      "P = 'cpu'\ndef P():\n    pass\n", "P = 'cpu'\nclass P:\n    pass\n", "P = 'cpu'\ny = [1 for P in z]\n",
      "P = 'cpu'\nif (P := g()):\n    pass\n", "P = 'cpu'\nh = lambda P: P\n", "P = 'cpu'\ndel P\n",
      "P = 'cpu'\nglobal P\n",          "P = 'cpu'\ntry:\n    pass\nexcept E as P:\n    pass\n",
      "P = 'cpu'\nmatch v:\n    case P:\n        pass\n", "from m import *\nP = 'cpu'\n",
      "P = Q = 'cpu'\n",                "P = f'{x}'\n",                    "P = g()\n",
      "P = 'a' + 'b'\n",                "def f(P):\n    pass\n",           "x = 1\n",
      "A = g()\nP = A\n",
  };
  for (const auto source : sources) {
    EXPECT_FALSE(value(source, "P").has_value()) << source;
    EXPECT_FALSE(why(source, "P").empty()) << source;
  }
}

TEST(NameBindings, ANameReadInATargetBindsNothing) {
  // `os.environ[KEY] = ...` reads os and KEY; `obj.P = ...` and `d[P] += ...` bind neither.
  EXPECT_EQ(value("KEY = 'JAX_PLATFORMS'\nos.environ[KEY] = 'cpu'\n", "KEY"), "JAX_PLATFORMS");
  EXPECT_EQ(value("P = 'cpu'\nobj.P = 1\nd[P] += 1\nf(P)[0] = 2\ndel d[P]\nfor x[P] in y:\n    pass\n", "P"), "cpu");
  EXPECT_EQ(value("P = 'cpu'\na, d[P] = 1, 2\n", "P"), "cpu");
  // A bare name in a tuple or list target, or after `del`, still binds.
  EXPECT_FALSE(value("P = 'cpu'\n(a, P) = 1, 2\n", "P").has_value());
  EXPECT_FALSE(value("P = 'cpu'\nd[k], P = 1, 2\n", "P").has_value());
  EXPECT_FALSE(value("P = 'cpu'\n*rest, P = xs\n", "P").has_value());
}

TEST(NameBindings, ReasonsNameTheLines) {
  EXPECT_EQ(why("P = 'cpu'\nP = 'tpu'\n", "P"), "'P' is bound 2 times (lines 1, 2)");
  EXPECT_EQ(why("x = 1\n", "P"), "'P' is not assigned in this file");
  EXPECT_EQ(why("P = g()\n", "P"), "'P' is assigned at line 1 a value that is not a string literal");
  EXPECT_EQ(why("def f(P):\n    pass\n", "P"), "'P' is bound at line 1 by a parameter, a loop, an import or the like");
  EXPECT_EQ(why("from m import *\n", "P"), "a star import may bind 'P'");
}

TEST(NameBindings, AliasCyclesEnd) {
  EXPECT_FALSE(value("A = B\nB = A\n", "A").has_value());
}

} // namespace
} // namespace tpulaunch::scan
