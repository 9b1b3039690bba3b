#include "tpulaunch/classify/module_graph.hpp"

#include <algorithm>

#include <gtest/gtest.h>

namespace tpulaunch {
namespace {

using Strings = std::vector<std::string>;

bool has(const Strings& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(ModuleGraph, TopLevelFunctionsWithTheirBodiesAndWhatTheyName) {
  const auto graph = read_module_graph("import jax\n"
                                       "\n"
                                       "def make_mesh(n=DEFAULT):\n"
                                       "    return helper(n)\n"
                                       "\n"
                                       "async def helper(n): return jax.devices()\n"
                                       "\n"
                                       "class Mesh:\n"
                                       "    def method(self):\n"
                                       "        return other()\n"
                                       "x = make_mesh\n");
  ASSERT_EQ(graph.functions.size(), 2U);
  EXPECT_EQ(graph.functions[0].name, "make_mesh");
  EXPECT_EQ(graph.functions[0].line, 3U);
  EXPECT_EQ(graph.functions[0].body_line, 4U);
  EXPECT_EQ(graph.functions[0].end_line, 4U);
  EXPECT_TRUE(has(graph.functions[0].names, "helper"));
  EXPECT_FALSE(has(graph.functions[0].names, "DEFAULT")); // a default value runs at import: module level
  EXPECT_EQ(graph.functions[1].name, "helper");
  EXPECT_EQ(graph.functions[1].body_line, 6U); // a one-line body
  EXPECT_TRUE(has(graph.reached, "DEFAULT"));
  EXPECT_TRUE(has(graph.reached, "make_mesh")); // x = make_mesh
  EXPECT_TRUE(has(graph.reached, "other"));     // a method is part of its class, which runs at import
  EXPECT_TRUE(graph.open.empty());
  EXPECT_EQ(graph.function_at(4, 12), &graph.functions[0]);
  EXPECT_EQ(graph.function_at(6, 30), &graph.functions[1]);
  EXPECT_EQ(graph.function_at(3, 5), nullptr);   // the header
  EXPECT_EQ(graph.function_at(10, 16), nullptr); // the method of a class
}

TEST(ModuleGraph, ADecoratedFunctionIsReached) {
  const auto graph =
      read_module_graph("@register\n@functools.cache\ndef hook():\n    pass\n\ndef plain():\n    pass\n");
  EXPECT_TRUE(has(graph.reached, "hook"));
  EXPECT_FALSE(has(graph.reached, "plain"));
}

TEST(ModuleGraph, CallsByNameOpenTheModule) {
  for (const char* source :
       {"def f():\n    return globals()['g']()\n", "import sys\nf = getattr(sys.modules[__name__], n)\n",
        "x = vars()\n", "eval(s)\n", "def f(o):\n    return o.__dict__\n"}) {
    EXPECT_FALSE(read_module_graph(source).open.empty()) << source;
  }
  EXPECT_EQ(read_module_graph("def f():\n    return globals()\n").open, "globals at line 2");
}

TEST(ModuleGraph, AFormFeedBeforeAStatementKeepsItAtTopLevel) {
  const auto graph = read_module_graph("def f():\n    pass\n\fx = g()\n");
  ASSERT_EQ(graph.functions.size(), 1U);
  EXPECT_EQ(graph.functions[0].end_line, 2U);
  EXPECT_TRUE(has(graph.reached, "g"));
}

// What the importer reads of the module "common.mesh" (or ".mesh" from inside its package).
ModuleUse use_of_mesh(std::string_view importer) {
  return read_module_use(importer, [](std::uint32_t level, std::string_view dotted) {
    return (level == 0 && dotted == "common.mesh") || (level == 1 && dotted == "mesh");
  });
}

TEST(ModuleUse, NamesImportedAndAttributesRead) {
  EXPECT_EQ(use_of_mesh("from common.mesh import make_mesh, Axis as A\n").names, (Strings{"make_mesh", "Axis"}));
  EXPECT_EQ(use_of_mesh("import common.mesh as m\nm.make_mesh(m.size)\n").names, (Strings{"make_mesh", "size"}));
  EXPECT_EQ(use_of_mesh("import common.mesh\ncommon.mesh.make_mesh()\ncommon.other.f()\n").names, Strings{"make_mesh"});
  EXPECT_EQ(use_of_mesh("from common import mesh\nmesh.make_mesh()\n").names, Strings{"make_mesh"});
  EXPECT_EQ(use_of_mesh("from . import mesh as m\nm.f()\n").names, Strings{"f"});
  EXPECT_EQ(use_of_mesh("def run():\n    from .mesh import f\n    return f()\n").names, Strings{"f"});
  EXPECT_TRUE(use_of_mesh("import common.other\nimport jax\n").names.empty());
  EXPECT_TRUE(use_of_mesh("x = 'import common.mesh'\n").names.empty());
}

TEST(ModuleUse, AStarImportOrTheModuleAsAValueReachesEverything) {
  EXPECT_EQ(use_of_mesh("from common.mesh import *\n").all, "it is star-imported at line 1");
  EXPECT_EQ(use_of_mesh("import common.mesh as m\n\nrun(m)\n").all,
            "the module common.mesh is used as a value at line 3");
  EXPECT_FALSE(use_of_mesh("import common.mesh as m\nf = getattr(m, name)\n").all.empty());
  EXPECT_FALSE(use_of_mesh("import common.mesh\nmodule = common.mesh\n").all.empty());
  EXPECT_TRUE(use_of_mesh("import common.mesh as m\nm.f()\n").all.empty());
}

} // namespace
} // namespace tpulaunch
