#include "tpulaunch/matrix/lesson.hpp"

#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "support/temp_folder.hpp"
#include "tpulaunch/util/sha256.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;
using test_support::TempFolder;

// --- imports read as tokens ---------------------------------------------------------------------

TEST(LessonImports, EveryFormOfImportIsReadAsTokens) {
  const auto c = classify_source("import x\n"
                                 "import x.y as z\n"
                                 "from x import y\n"
                                 "from . import y\n"
                                 "from .x import y, w as v\n"
                                 "from .. import (q,\n    r)\n"
                                 "import a, b.c as d, e\n"
                                 "from ...deep.er import *\n"
                                 "s = 'import fake'  # import not_this\n"
                                 "def f():\n    import inner\n"
                                 "raise E from e\n");
  const std::vector<ImportedModule> expected = {
      {0, "x", {}, 1},          {0, "x.y", {}, 2},   {0, "x", {"y"}, 3},       {1, "", {"y"}, 4},
      {1, "x", {"y", "w"}, 5},  {2, "", {"q", "r"}, 6}, {0, "a", {}, 8},       {0, "b.c", {}, 8},
      {0, "e", {}, 8},          {3, "deep.er", {}, 9}, {0, "inner", {}, 12},
  };
  EXPECT_EQ(c.imports, expected);
}

TEST(LessonImports, ImportsDoNotChangeTheEvidence) {
  const std::string source = "import lesson_helpers\nfrom lesson_helpers import cpu\nimport jax\nd = jax.devices('cpu')\n";
  const auto c = classify_source(source);
  ASSERT_EQ(c.evidence.size(), 1U);
  EXPECT_EQ(to_string(c.evidence[0].rule), "devices-cpu");
  EXPECT_TRUE(c.evidence[0].file.empty());
  EXPECT_EQ(c.suggested, ScriptClass::cpu_only);
}

// --- which files an import names ------------------------------------------------------------------

class FakeProbe final : public ImportProbe {
public:
  FakeProbe(std::set<std::string, std::less<>> files, std::set<std::string, std::less<>> folders)
      : m_files(std::move(files)), m_folders(std::move(folders)) {}
  [[nodiscard]] bool is_file(std::string_view relative) const override { return m_files.contains(relative); }
  [[nodiscard]] bool is_folder(std::string_view relative) const override { return m_folders.contains(relative); }

private:
  std::set<std::string, std::less<>> m_files;
  std::set<std::string, std::less<>> m_folders;
};

std::vector<std::string> targets(const std::string& import_line, const std::string& importer, const std::string& script,
                                 const ImportProbe& probe) {
  const auto c = classify_source(import_line + "\n");
  EXPECT_EQ(c.imports.size(), 1U) << import_line;
  return c.imports.empty() ? std::vector<std::string>{} : import_targets(c.imports[0], importer, script, probe);
}

using Files = std::vector<std::string>;

TEST(LessonImports, ModulesAndPackagesNextToTheScript) {
  const FakeProbe probe({"lesson.py", "lesson_helpers.py", "pkg/__init__.py", "pkg/mod.py", "pkg/sub/__init__.py",
                         "pkg/sub/deep.py", "both/__init__.py", "both.py", "ns/mod.py", "advanced/h.py"},
                        {"pkg", "pkg/sub", "both", "ns", "advanced"});
  EXPECT_EQ(targets("import lesson_helpers", "lesson.py", "lesson.py", probe), Files{"lesson_helpers.py"});
  EXPECT_EQ(targets("from lesson_helpers import make_mesh", "lesson.py", "lesson.py", probe), Files{"lesson_helpers.py"});
  EXPECT_EQ(targets("import lesson_helpers as h", "lesson.py", "lesson.py", probe), Files{"lesson_helpers.py"});
  // Every package on the way is imported too.
  EXPECT_EQ(targets("import pkg.sub.deep", "lesson.py", "lesson.py", probe),
            (Files{"pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/deep.py"}));
  // A name taken from a package may be a submodule, or only a name defined in __init__.py.
  EXPECT_EQ(targets("from pkg import mod, helper", "lesson.py", "lesson.py", probe),
            (Files{"pkg/__init__.py", "pkg/mod.py"}));
  // A package folder comes before a module file of the same name, as Python looks for them.
  EXPECT_EQ(targets("import both", "lesson.py", "lesson.py", probe), Files{"both/__init__.py"});
  // A folder with no __init__.py is a namespace package: only its modules are files.
  EXPECT_EQ(targets("from ns import mod", "lesson.py", "lesson.py", probe), Files{"ns/mod.py"});
  EXPECT_EQ(targets("import ns.mod", "lesson.py", "lesson.py", probe), Files{"ns/mod.py"});
  // Not a file of the course: the standard library, an installed package, a name of a module.
  EXPECT_EQ(targets("import jax.numpy as jnp", "lesson.py", "lesson.py", probe), Files{});
  EXPECT_EQ(targets("import os", "lesson.py", "lesson.py", probe), Files{});
  EXPECT_EQ(targets("import lesson_helpers.sub", "lesson.py", "lesson.py", probe), Files{"lesson_helpers.py"});
  // A script in a subfolder finds its modules in its own folder (sys.path[0]).
  EXPECT_EQ(targets("import h", "advanced/lesson.py", "advanced/lesson.py", probe), Files{"advanced/h.py"});
  EXPECT_EQ(targets("import h", "lesson.py", "lesson.py", probe), Files{});
}

TEST(LessonImports, AbsoluteImportsOfAHelperStartAtTheScriptsFolder) {
  const FakeProbe probe({"other.py", "pkg/__init__.py", "pkg/other.py", "pkg/mod.py"}, {"pkg"});
  // Python 3 has no implicit relative import: `import other` inside pkg/mod.py is ./other.py.
  EXPECT_EQ(targets("import other", "pkg/mod.py", "lesson.py", probe), Files{"other.py"});
  EXPECT_EQ(targets("from . import other", "pkg/mod.py", "lesson.py", probe),
            (Files{"pkg/__init__.py", "pkg/other.py"}));
  EXPECT_EQ(targets("from .other import x", "pkg/mod.py", "lesson.py", probe),
            (Files{"pkg/__init__.py", "pkg/other.py"}));
}

TEST(LessonImports, RelativeImportsClimbNoHigherThanTheRoot) {
  const FakeProbe probe({"top.py", "pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/m.py", "pkg/up.py"},
                        {"pkg", "pkg/sub"});
  EXPECT_EQ(targets("from .. import up", "pkg/sub/m.py", "lesson.py", probe), (Files{"pkg/__init__.py", "pkg/up.py"}));
  EXPECT_EQ(targets("from ... import top", "pkg/sub/m.py", "lesson.py", probe), Files{"top.py"});
  // One level more would leave the root: nothing there is a file of this course.
  EXPECT_EQ(targets("from .... import top", "pkg/sub/m.py", "lesson.py", probe), Files{});
  EXPECT_EQ(targets("from .. import top", "lesson.py", "lesson.py", probe), Files{});
}

// --- reading a lesson from files ----------------------------------------------------------------

class LessonFiles : public ::testing::Test {
protected:
  LessonFiles() : m_folder("lesson") { fs::create_directories(root()); }

  [[nodiscard]] fs::path root() const { return m_folder.path() / "ex"; }
  void write(const std::string& relative, const std::string& text) const {
    fs::create_directories((root() / relative).parent_path());
    std::ofstream(root() / relative, std::ios::binary) << text;
  }
  [[nodiscard]] Result<Lesson> read(const std::string& script, std::vector<std::string> declared = {},
                                    const ImportProbe* probe = nullptr) {
    m_source = read_back(script);
    LessonRequest request;
    request.root = root().string();
    request.course_prefix = "public/exercises";
    request.script = script;
    request.source = m_source;
    request.declared = std::move(declared);
    request.what = "script '" + script + "'";
    request.probe = probe;
    return read_lesson(request);
  }
  [[nodiscard]] std::string read_back(const std::string& relative) const {
    std::ifstream in(root() / relative, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static std::vector<std::string> staged(const Lesson& lesson) {
    std::vector<std::string> out;
    for (const auto& file : lesson.files) {
      out.push_back(file.staged);
    }
    return out;
  }

  TempFolder m_folder;
  std::string m_source;
};

TEST_F(LessonFiles, AHelpersCpuSelectionIsEvidenceForTheScriptAtTheHelpersLine) {
  write("lesson.py", "import jax\nfrom lesson_helpers import make_mesh\nprint(make_mesh())\n");
  write("lesson_helpers.py", "import jax\n\n\ndef make_mesh():\n    return jax.devices(\"cpu\")\n");
  auto lesson = read("lesson.py");
  ASSERT_TRUE(lesson.ok()) << lesson.error().message;
  ASSERT_EQ(lesson->classification.evidence.size(), 1U);
  const Evidence& e = lesson->classification.evidence[0];
  EXPECT_EQ(to_string(e.rule), "devices-cpu");
  EXPECT_EQ(e.file, "lesson_helpers.py");
  EXPECT_EQ(e.line, 5U);
  EXPECT_EQ(e.text, "return jax.devices(\"cpu\")");
  EXPECT_EQ(evidence_place(e), "lesson_helpers.py line 5");
  EXPECT_EQ(evidence_path("public/exercises/lesson.py", e), "public/exercises/lesson_helpers.py");
  EXPECT_EQ(lesson->classification.suggested, ScriptClass::cpu_only);
  EXPECT_EQ(lesson->classification.why, "selects CPU devices at lesson_helpers.py line 5 (devices-cpu)");
  ASSERT_EQ(lesson->files.size(), 1U);
  const LessonFile& file = lesson->files[0];
  EXPECT_EQ(file.staged, "lesson_helpers.py");
  EXPECT_EQ(file.course_path, "public/exercises/lesson_helpers.py");
  EXPECT_EQ(file.path, (root() / "lesson_helpers.py").string());
  EXPECT_EQ(file.sha256, sha256_hex(read_back("lesson_helpers.py")));
  EXPECT_FALSE(file.declared);
  // The script alone, as classify_source sees it, has no evidence: the helper's is what counts.
  EXPECT_TRUE(classify_source(m_source).evidence.empty());
}

TEST_F(LessonFiles, HelpersAreFollowedTransitively) {
  write("lesson.py", "import a\n");
  write("a.py", "from pkg import b\n");
  write("pkg/__init__.py", "");
  write("pkg/b.py", "from . import c\n");
  write("pkg/c.py", "import jax\njax.config.update('jax_platforms', 'cpu')\n");
  auto lesson = read("lesson.py");
  ASSERT_TRUE(lesson.ok()) << lesson.error().message;
  EXPECT_EQ(staged(*lesson), (std::vector<std::string>{"a.py", "pkg/__init__.py", "pkg/b.py", "pkg/c.py"}));
  ASSERT_EQ(lesson->classification.evidence.size(), 1U);
  EXPECT_EQ(lesson->classification.evidence[0].file, "pkg/c.py");
  EXPECT_EQ(lesson->classification.evidence[0].line, 2U);
}

TEST_F(LessonFiles, AScriptInASubfolderBringsItsNeighbours) {
  write("advanced/lesson.py", "import helpers\n");
  write("advanced/helpers.py", "import jax\nx = jax.devices('cpu')\n");
  write("helpers.py", "print('not this one')\n");
  auto lesson = read("advanced/lesson.py");
  ASSERT_TRUE(lesson.ok()) << lesson.error().message;
  ASSERT_EQ(lesson->files.size(), 1U);
  EXPECT_EQ(lesson->files[0].staged, "advanced/helpers.py");
  EXPECT_EQ(lesson->files[0].course_path, "public/exercises/advanced/helpers.py");
  ASSERT_EQ(lesson->classification.evidence.size(), 1U);
  EXPECT_EQ(lesson->classification.evidence[0].file, "helpers.py"); // relative to the script's folder
}

TEST_F(LessonFiles, ACycleEndsAtAFileAlreadyRead) {
  write("lesson.py", "import a\n");
  write("a.py", "import b\nimport lesson\n");
  write("b.py", "import a\nimport b\nimport jax\njax.devices('cpu')\n");
  auto lesson = read("lesson.py");
  ASSERT_TRUE(lesson.ok()) << lesson.error().message;
  EXPECT_EQ(staged(*lesson), (std::vector<std::string>{"a.py", "b.py"})); // never the script itself
  ASSERT_EQ(lesson->classification.evidence.size(), 1U);
  EXPECT_EQ(lesson->classification.evidence[0].file, "b.py");
}

TEST_F(LessonFiles, TheNumberOfFilesIsBounded) {
  write("lesson.py", "import m0\n");
  for (std::size_t i = 0; i <= k_max_lesson_files; ++i) {
    write("m" + std::to_string(i) + ".py", "import m" + std::to_string(i + 1) + "\n");
  }
  auto lesson = read("lesson.py");
  ASSERT_FALSE(lesson.ok());
  EXPECT_EQ(lesson.error().code, ExitCode::config);
  EXPECT_NE(lesson.error().message.find("more than 256 course files"), std::string::npos) << lesson.error().message;
  // One fewer is fine.
  fs::remove(root() / ("m" + std::to_string(k_max_lesson_files - 1) + ".py"));
  auto fewer = read("lesson.py");
  ASSERT_TRUE(fewer.ok()) << fewer.error().message;
  EXPECT_EQ(fewer->files.size(), k_max_lesson_files - 1);
}

TEST_F(LessonFiles, NothingOutsideTheRootIsRead) {
  // Above the root: a relative import that would climb there is not followed.
  std::ofstream(m_folder.path() / "up.py") << "import jax\njax.devices('cpu')\n";
  write("lesson.py", "from .. import up\nimport jax\n");
  auto lesson = read("lesson.py");
  ASSERT_TRUE(lesson.ok()) << lesson.error().message;
  EXPECT_TRUE(lesson->files.empty());
  EXPECT_TRUE(lesson->classification.evidence.empty());
  // A course file that leads out of the root (a symlink) is refused, naming it.
  write("lesson.py", "import linked\n");
  fs::create_symlink("../up.py", root() / "linked.py");
  auto refused = read("lesson.py");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ExitCode::config);
  EXPECT_NE(refused.error().message.find("script 'lesson.py': " + (root() / "linked.py").string() +
                                         " leads outside the folder"),
            std::string::npos)
      << refused.error().message;
  // So is a module inside a symlinked package folder that leads out.
  fs::remove(root() / "linked.py");
  fs::create_directories(m_folder.path() / "elsewhere");
  std::ofstream(m_folder.path() / "elsewhere" / "mod.py") << "x = 1\n";
  fs::create_directory_symlink("../elsewhere", root() / "pkg");
  write("lesson.py", "from pkg import mod\n");
  EXPECT_FALSE(read("lesson.py").ok());
  // A symlink that stays inside is followed like the file it names.
  fs::remove(root() / "pkg");
  write("real_helpers.py", "import jax\njax.devices('cpu')\n");
  fs::create_symlink("real_helpers.py", root() / "lesson_helpers.py");
  write("lesson.py", "import lesson_helpers\n");
  auto inside = read("lesson.py");
  ASSERT_TRUE(inside.ok()) << inside.error().message;
  EXPECT_EQ(staged(*inside), std::vector<std::string>{"lesson_helpers.py"});
  EXPECT_EQ(inside->classification.suggested, ScriptClass::cpu_only);
}

TEST_F(LessonFiles, DeclaredFilesArePinnedAndPythonOnesRead) {
  write("lesson.py", "import numpy as np\nx = np.load('points.npy')\n");
  write("points.npy", std::string("\x93NUMPY\x00\xff", 8));
  write("extra.py", "import jax\njax.devices('cpu')\n");
  auto lesson = read("lesson.py", {"points.npy", "extra.py", "gone.csv"});
  ASSERT_TRUE(lesson.ok()) << lesson.error().message;
  ASSERT_EQ(lesson->files.size(), 3U);
  EXPECT_EQ(lesson->files[0].staged, "extra.py");
  EXPECT_TRUE(lesson->files[0].declared);
  EXPECT_EQ(lesson->files[1].staged, "gone.csv");
  EXPECT_TRUE(lesson->files[1].sha256.empty()); // missing: listed, no digest
  EXPECT_EQ(lesson->files[2].staged, "points.npy");
  EXPECT_EQ(lesson->files[2].sha256, sha256_hex(std::string("\x93NUMPY\x00\xff", 8)));
  ASSERT_EQ(lesson->classification.evidence.size(), 1U); // from extra.py; the data file is not Python
  EXPECT_EQ(lesson->classification.evidence[0].file, "extra.py");
}

TEST_F(LessonFiles, ListedFoldersAnswerAsTheFileSystemDoes) {
  write("lesson.py", "import pkg.mod\nimport linked\nimport ln.mod\nimport dangling\nimport jax\n");
  write("pkg/__init__.py", "");
  write("pkg/mod.py", "import jax\njax.devices('cpu')\n");
  write("real.py", "x = 1\n");
  fs::create_symlink("real.py", root() / "linked.py");
  fs::create_directory_symlink("pkg", root() / "ln");
  fs::create_symlink("nowhere.py", root() / "dangling.py");
  const ListedFolders listed(root().string());
  EXPECT_TRUE(listed.is_file("lesson.py"));
  EXPECT_FALSE(listed.is_folder("lesson.py"));
  EXPECT_TRUE(listed.is_folder("pkg"));
  EXPECT_FALSE(listed.is_file("pkg"));
  EXPECT_TRUE(listed.is_file("pkg/__init__.py"));
  EXPECT_TRUE(listed.is_file("linked.py")); // symlinks followed, as Python's import follows them
  EXPECT_TRUE(listed.is_folder("ln"));
  EXPECT_TRUE(listed.is_file("ln/mod.py"));
  EXPECT_FALSE(listed.is_file("dangling.py"));
  EXPECT_FALSE(listed.is_file("jax.py"));
  EXPECT_FALSE(listed.is_folder("jax"));
  EXPECT_FALSE(listed.is_file("no/such/folder.py"));
  // The same lesson either way.
  auto by_stat = read("lesson.py");
  auto by_listing = read("lesson.py", {}, &listed);
  ASSERT_TRUE(by_stat.ok()) << by_stat.error().message;
  ASSERT_TRUE(by_listing.ok()) << by_listing.error().message;
  EXPECT_EQ(by_listing->files, by_stat->files);
  EXPECT_EQ(staged(*by_listing), (std::vector<std::string>{"linked.py", "ln/__init__.py", "ln/mod.py", "pkg/__init__.py",
                                                           "pkg/mod.py"}));
  EXPECT_EQ(by_listing->classification.evidence.size(), 2U); // pkg/mod.py, and again as ln/mod.py
}

TEST_F(LessonFiles, AHelperThatIsNotTextIsRefusedByName) {
  write("lesson.py", "import lesson_helpers\n");
  write("lesson_helpers.py", "x = '\xff'\n");
  auto lesson = read("lesson.py");
  ASSERT_FALSE(lesson.ok());
  EXPECT_EQ(lesson.error().code, ExitCode::config);
  EXPECT_NE(lesson.error().message.find("lesson_helpers.py:1:6: course file of script 'lesson.py' is not UTF-8"),
            std::string::npos)
      << lesson.error().message;
}

TEST_F(LessonFiles, AHelperThatDoesNotTokenizeFailsClosed) {
  write("lesson.py", "import lesson_helpers\n");
  write("lesson_helpers.py", "def f(:\n  x = (\n");
  auto lesson = read("lesson.py");
  ASSERT_TRUE(lesson.ok()) << lesson.error().message;
  EXPECT_FALSE(lesson->classification.suggested.has_value());
  ASSERT_FALSE(lesson->classification.evidence.empty());
  EXPECT_EQ(lesson->classification.evidence.back().file, "lesson_helpers.py");
}

} // namespace
} // namespace tpulaunch
