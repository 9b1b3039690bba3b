#include "tpulaunch/matrix/lesson.hpp"

#include <algorithm>
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

// --- code that arrives by other doors (issue 35 §1) -----------------------------------------------

const Evidence* row_of(const Lesson& lesson, std::string_view rule) {
  for (const auto& e : lesson.classification.evidence) {
    if (to_string(e.rule) == rule) {
      return &e;
    }
  }
  return nullptr;
}

TEST_F(LessonFiles, AModuleLoadedByANameIsFollowedLikeAnImport) {
  write("common/__init__.py", "");
  write("common/backends.py", "import jax\njax.config.update('jax_platforms', 'cpu')\n");
  for (const std::string load :
       {"importlib.import_module('common.backends')", "importlib.import_module('.backends', package='common')",
        "__import__('common.backends')", "__import__('common', fromlist=['backends'])",
        "runpy.run_module('common.backends')"}) {
    write("lesson.py", "import importlib, runpy\nimport jax\n\nbackend = " + load + "\n");
    auto lesson = read("lesson.py");
    ASSERT_TRUE(lesson.ok()) << lesson.error().message;
    EXPECT_EQ(staged(*lesson), (std::vector<std::string>{"common/__init__.py", "common/backends.py"})) << load;
    const Evidence* row = row_of(*lesson, "config-platforms-cpu");
    ASSERT_NE(row, nullptr) << load;
    EXPECT_EQ(row->file, "common/backends.py");
    EXPECT_EQ(lesson->classification.suggested, ScriptClass::cpu_only) << load;
  }
}

TEST_F(LessonFiles, AFileLoadedByAPathIsFollowedAndItsRowGoes) {
  write("setup_cpu.py", "import os\nos.environ['JAX_PLATFORMS'] = 'cpu'\n");
  write("advanced/cpu.py", "import jax\njax.devices('cpu')\n");
  for (const std::string& load :
       std::vector<std::string>{"runpy.run_path('setup_cpu.py')", "exec(open('setup_cpu.py').read())",
                                "importlib.util.spec_from_file_location('s', 'setup_cpu.py')"}) {
    write("lesson.py", "import importlib.util, runpy\n" + load + "\n");
    auto lesson = read("lesson.py");
    ASSERT_TRUE(lesson.ok()) << lesson.error().message;
    EXPECT_EQ(staged(*lesson), std::vector<std::string>{"setup_cpu.py"}) << load;
    EXPECT_EQ(row_of(*lesson, "import-unresolved"), nullptr) << load; // followed: nothing left undecided
    ASSERT_NE(row_of(*lesson, "env-platforms-cpu"), nullptr) << load;
    EXPECT_EQ(row_of(*lesson, "env-platforms-cpu")->file, "setup_cpu.py");
  }
  // Relative to the loading file's folder (`__file__`), from a script in a subfolder.
  write("advanced/lesson.py", "import os, runpy\nrunpy.run_path(os.path.join(os.path.dirname(__file__), 'cpu.py'))\n");
  auto nested = read("advanced/lesson.py");
  ASSERT_TRUE(nested.ok()) << nested.error().message;
  EXPECT_EQ(staged(*nested), std::vector<std::string>{"advanced/cpu.py"});
  ASSERT_NE(row_of(*nested, "devices-cpu"), nullptr);
  EXPECT_EQ(row_of(*nested, "devices-cpu")->file, "cpu.py");
  // A file no import names is still a helper: init lists it, as it lists imported ones.
  EXPECT_TRUE(std::all_of(nested->files.begin(), nested->files.end(), [](const LessonFile& f) { return !f.declared; }));
}

TEST_F(LessonFiles, APathThatNamesNoCourseFileStaysUndecided) {
  std::ofstream(m_folder.path() / "outside.py") << "x = 1\n";
  for (const std::string& load :
       std::vector<std::string>{"runpy.run_path('gone.py')", "runpy.run_path('../outside.py')",
                                "runpy.run_path('/etc/setup.py')", "exec(open(path).read())"}) {
    write("lesson.py", "import runpy\n" + load + "\n");
    auto lesson = read("lesson.py");
    ASSERT_TRUE(lesson.ok()) << lesson.error().message;
    EXPECT_TRUE(lesson->files.empty()) << load;
    const Evidence* row = row_of(*lesson, "import-unresolved");
    ASSERT_NE(row, nullptr) << load;
    EXPECT_EQ(row->line, 2U);
    EXPECT_FALSE(lesson->classification.suggested.has_value()) << load;
  }
  write("lesson.py", "import runpy\nrunpy.run_path('gone.py')\n");
  auto lesson = read("lesson.py");
  ASSERT_TRUE(lesson.ok());
  EXPECT_EQ(row_of(*lesson, "import-unresolved")->detail,
            "runpy.run_path() loads 'gone.py', which names no file of the course (a path relative to the working "
            "folder, looked for below the lesson's folder and next to the script): what it runs is only known at run "
            "time");
}

// --- constants imported from course modules ----------------------------------------------------------

TEST_F(LessonFiles, APlatformImportedFromACourseModuleIsResolved) {
  write("common/__init__.py", "from .cfg import PLATFORM as DEFAULT_PLATFORM\n");
  write("common/cfg.py", "# the platform every lesson uses\nPLATFORM = 'cpu'\nTPU = 'tpu'\n");
  const std::string update = "jax.config.update('jax_platforms', ";
  for (const std::string& source :
       std::vector<std::string>{"from common.cfg import PLATFORM\n" + update + "PLATFORM)\n",
                                "from common.cfg import PLATFORM as P\n" + update + "P)\n",
                                "import common.cfg as cfg\n" + update + "cfg.PLATFORM)\n",
                                "import common.cfg\n" + update + "common.cfg.PLATFORM)\n",
                                "from common import cfg\n" + update + "cfg.PLATFORM)\n",
                                "from common import DEFAULT_PLATFORM\n" + update + "DEFAULT_PLATFORM)\n"}) {
    write("lesson.py", "import jax\n" + source);
    auto lesson = read("lesson.py");
    ASSERT_TRUE(lesson.ok()) << lesson.error().message;
    const Evidence* row = row_of(*lesson, "config-platforms-cpu");
    ASSERT_NE(row, nullptr) << source;
    EXPECT_TRUE(row->file.empty());
    EXPECT_EQ(row->line, 3U);
    EXPECT_NE(row->detail.find("is 'cpu', bound in "), std::string::npos) << row->detail;
    EXPECT_NE(row->detail.find("(common/cfg.py line 2)"), std::string::npos) << row->detail;
    EXPECT_EQ(row_of(*lesson, "platform-unresolved"), nullptr) << source;
    EXPECT_EQ(lesson->classification.suggested, ScriptClass::cpu_only) << source;
  }
  // A platform that is not the CPU is no evidence; one the module does not bind once is undecided.
  write("lesson.py", "import jax\nfrom common.cfg import TPU\njax.config.update('jax_platforms', TPU)\n");
  auto tpu = read("lesson.py");
  ASSERT_TRUE(tpu.ok());
  EXPECT_TRUE(tpu->classification.evidence.empty());
  EXPECT_EQ(tpu->classification.suggested, ScriptClass::single_host_compatible);
  write("common/cfg.py", "PLATFORM = 'tpu'\nif DEBUG:\n    PLATFORM = 'cpu'\n");
  write("lesson.py", "import jax\nfrom common.cfg import PLATFORM\njax.config.update('jax_platforms', PLATFORM)\n");
  auto twice = read("lesson.py");
  ASSERT_TRUE(twice.ok());
  const Evidence* unresolved = row_of(*twice, "platform-unresolved");
  ASSERT_NE(unresolved, nullptr);
  EXPECT_EQ(unresolved->detail,
            "the value of jax_platforms is the name 'PLATFORM', whose value is unknown: 'PLATFORM' "
            "comes from common.cfg (common/cfg.py), where 'PLATFORM' is bound 2 times (lines 1, 3)");
  // Not a course module: unknown, as before.
  write("lesson.py", "import jax\nfrom settings import PLATFORM\njax.config.update('jax_platforms', PLATFORM)\n");
  auto installed = read("lesson.py");
  ASSERT_TRUE(installed.ok());
  ASSERT_NE(row_of(*installed, "platform-unresolved"), nullptr);
  EXPECT_NE(row_of(*installed, "platform-unresolved")->detail.find("no file of the course"), std::string::npos);
}

// --- a course package's submodule that is not there (issue 34 §2) -----------------------------------

TEST_F(LessonFiles, AMissingSubmoduleOfACoursePackageIsAnError) {
  write("common/__init__.py", "from .mesh import make_mesh\nVERSION = 2\n");
  write("common/mesh.py", "def make_mesh():\n    return None\n");
  write("lesson_helpers.py", "x = 1\n");
  write("ns/mod.py", "x = 1\n"); // a namespace package (no __init__.py)
  const auto error_of = [&](const std::string& source) {
    write("lesson.py", "import jax\n" + source + "\n");
    auto lesson = read("lesson.py");
    return lesson.ok() ? std::string() : lesson.error().message;
  };
  const std::string lesson_path = (root() / "lesson.py").string();
  const std::string common = (root() / "common").string();
  EXPECT_EQ(error_of("import common.missing"),
            lesson_path + ":2: script 'lesson.py' imports common.missing, but the course package " + common +
                "/ has no module 'missing' (no missing.py, no missing/ in it): Python would fail, or import a copy "
                "left elsewhere; add the module or change the import");
  EXPECT_NE(error_of("from common.missing import f").find(":2: script 'lesson.py' imports common.missing, but"),
            std::string::npos);
  EXPECT_EQ(error_of("from common import mesh, missing_mod"),
            lesson_path + ":2: script 'lesson.py' imports missing_mod from the course package " + common +
                "/, which has no module 'missing_mod' (no missing_mod.py, no missing_mod/ in it) and whose "
                "__init__.py does not define it: Python would fail, or import a copy left elsewhere; add the module "
                "or change the import");
  EXPECT_NE(error_of("import lesson_helpers.sub").find("is a module of the course, not a package"), std::string::npos);
  EXPECT_NE(error_of("import importlib\nimportlib.import_module('common.gone')").find("imports common.gone"),
            std::string::npos);
  // Names __init__.py defines, submodules that are there, namespace packages, installed modules: fine.
  EXPECT_EQ(error_of("from common import make_mesh, VERSION, mesh"), "");
  EXPECT_EQ(error_of("import common.mesh"), "");
  EXPECT_EQ(error_of("from ns import other\nimport ns.more"), "");
  EXPECT_EQ(error_of("import jax.numpy\nfrom jax import missing_in_jax"), "");
  // In a helper: the error names the helper's line.
  write("common/mesh.py", "from . import gone\n");
  EXPECT_NE(
      error_of("import common.mesh")
          .find((root() / "common/mesh.py").string() + ":1: script 'lesson.py' imports gone from the course package"),
      std::string::npos);
  // A package whose __init__.py star-imports or has a module __getattr__ may define any name.
  write("common/mesh.py", "x = 1\n");
  write("common/__init__.py", "from .mesh import *\n");
  EXPECT_EQ(error_of("from common import anything"), "");
  write("common/__init__.py", "def __getattr__(name):\n    return name\n");
  EXPECT_EQ(error_of("from common import anything"), "");
}

// --- evidence in functions nothing calls (issue 35 §1) --------------------------------------------------

class UncalledFunctions : public LessonFiles {
protected:
  UncalledFunctions() {
    write("common/__init__.py", "");
    write("common/mesh.py", "import jax\n\n\ndef make_mesh():\n    return jax.devices()\n\n\n"
                            "def cpu_debug_devices():\n    return jax.devices('cpu')\n");
  }
  // The rows of the lesson `source` and whether its devices-cpu row counts.
  const Evidence* cpu_row(const std::string& source) {
    write("lesson.py", "import jax\n" + source);
    auto lesson = read("lesson.py");
    EXPECT_TRUE(lesson.ok()) << lesson.error().message;
    m_lesson = lesson.ok() ? std::move(*lesson) : Lesson{};
    return row_of(m_lesson, "devices-cpu");
  }
  Lesson m_lesson;
};

TEST_F(UncalledFunctions, ARowInAFunctionNothingCallsCountsForNothing) {
  const Evidence* row = cpu_row("from common.mesh import make_mesh\nprint(make_mesh())\n");
  ASSERT_NE(row, nullptr); // reported...
  EXPECT_EQ(row->uncalled, "cpu_debug_devices");
  EXPECT_EQ(row->detail, "uncalled: it is in cpu_debug_devices() (common/mesh.py line 8), which nothing in the lesson "
                         "calls, so it counts for nothing");
  EXPECT_FALSE(m_lesson.classification.has_category(Category::cpu_selection)); // ...and counts for nothing
  EXPECT_EQ(m_lesson.classification.suggested, ScriptClass::single_host_compatible);
  for (const std::string source :
       {"import common.mesh as m\nm.make_mesh()\n", "import common.mesh\ncommon.mesh.make_mesh()\n",
        "from common import mesh\nmesh.make_mesh()\n", "import common\nprint(1)\n"}) {
    const Evidence* other = cpu_row(source);
    if (source.find("mesh") == std::string::npos) {
      EXPECT_EQ(other, nullptr) << source; // common/mesh.py is no file of this lesson
      continue;
    }
    ASSERT_NE(other, nullptr) << source;
    EXPECT_EQ(other->uncalled, "cpu_debug_devices") << source;
  }
}

TEST_F(UncalledFunctions, ARowInAFunctionSomethingCallsCounts) {
  const std::vector<std::string> called{
      "from common.mesh import cpu_debug_devices\ncpu_debug_devices()\n",
      "from common.mesh import cpu_debug_devices as d\n",
      "import common.mesh as m\nm.cpu_debug_devices()\n",
      "import common.mesh\nprint(common.mesh.cpu_debug_devices())\n",
      "from common import mesh\nf = mesh.cpu_debug_devices\n",
      // fails closed where the call graph is not clear
      "from common.mesh import *\n",
      "import common.mesh as m\nrun(m)\n",
      "import common.mesh as m\nf = getattr(m, 'cpu_debug_devices')\n",
      "import importlib\nm = importlib.import_module('common.mesh')\n",
  };
  for (const auto& source : called) {
    const Evidence* row = cpu_row(source);
    ASSERT_NE(row, nullptr) << source;
    EXPECT_TRUE(row->counts()) << source;
    EXPECT_EQ(m_lesson.classification.suggested, ScriptClass::cpu_only) << source;
  }
}

TEST_F(UncalledFunctions, TheModulesOwnCodeAndOtherHelpersReachItsFunctions) {
  const std::vector<std::pair<std::string, std::string>> reached{
      {"transitively", "def make_mesh():\n    return cpu_debug_devices()\n\n\ndef cpu_debug_devices():\n    return "
                       "jax.devices('cpu')\n"},
      {"at module level",
       "def cpu_debug_devices():\n    return jax.devices('cpu')\n\n\nDEVICES = cpu_debug_devices()\n"},
      {"as a value", "def cpu_debug_devices():\n    return jax.devices('cpu')\n\n\nHOOKS = [cpu_debug_devices]\n"},
      {"decorated", "@register\ndef cpu_debug_devices():\n    return jax.devices('cpu')\n"},
      {"by name",
       "def cpu_debug_devices():\n    return jax.devices('cpu')\n\n\ndef run(n):\n    return globals()[n]()\n"},
      {"module level", "DEVICES = jax.devices('cpu')\n"},
      {"a class body", "class Debug:\n    devices = jax.devices('cpu')\n"},
      {"a method", "class Debug:\n    def devices(self):\n        return jax.devices('cpu')\n"},
      {"after a form feed", "def unused():\n    pass\n\fjax.devices('cpu')\n"},
  };
  for (const auto& [name, helper] : reached) {
    write("common/mesh.py", "import jax\n\n\ndef make_mesh():\n    return 1\n\n\n" + helper);
    if (name == "transitively") {
      write("common/mesh.py", "import jax\n\n\n" + helper);
    }
    const Evidence* row = cpu_row("from common.mesh import make_mesh\nmake_mesh()\n");
    ASSERT_NE(row, nullptr) << name;
    EXPECT_TRUE(row->counts()) << name << ": " << row->uncalled;
  }
  // Another helper that calls it reaches it too.
  write("common/mesh.py", "import jax\n\n\ndef make_mesh():\n    return 1\n\n\ndef cpu_debug_devices():\n"
                          "    return jax.devices('cpu')\n");
  write("common/debug.py", "from .mesh import cpu_debug_devices\n");
  const Evidence* row = cpu_row("from common.mesh import make_mesh\nimport common.debug\n");
  ASSERT_NE(row, nullptr);
  EXPECT_TRUE(row->counts());
  // A declared module may be loaded any way: every row counts.
  write("lesson.py", "import jax\nfrom common.mesh import make_mesh\n");
  auto declared = read("lesson.py", {"common/mesh.py"});
  ASSERT_TRUE(declared.ok());
  ASSERT_NE(row_of(*declared, "devices-cpu"), nullptr);
  EXPECT_TRUE(row_of(*declared, "devices-cpu")->counts());
}

TEST_F(UncalledFunctions, TheScriptsOwnFunctionsAlwaysCount) {
  write("lesson.py", "import jax\n\n\ndef never_called():\n    return jax.devices('cpu')\n");
  auto lesson = read("lesson.py");
  ASSERT_TRUE(lesson.ok());
  ASSERT_NE(row_of(*lesson, "devices-cpu"), nullptr);
  EXPECT_TRUE(row_of(*lesson, "devices-cpu")->counts());
  EXPECT_EQ(lesson->classification.suggested, ScriptClass::cpu_only);
}

} // namespace
} // namespace tpulaunch
