#include "tpulaunch/check/check.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

#include <gtest/gtest.h>

#include "support/test_catalog.hpp"

#include "tpulaunch/util/sha256.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

class AuditTest : public ::testing::Test {
protected:
  void SetUp() override {
    m_root = fs::temp_directory_path() / ("tpulaunch-audit-" + std::to_string(::getpid()) + "-" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_root);
    fs::create_directories(m_root / "ex");
  }
  void TearDown() override { fs::remove_all(m_root); }

  void script(const std::string& id, const std::string& source) { std::ofstream(m_root / "ex" / (id + ".py")) << source; }
  void entry(const std::string& id, ScriptClass cls, const std::string& sha) {
    MatrixEntry e;
    e.id = id;
    e.script_class = cls;
    e.class_name = std::string(to_string(cls));
    e.sha256 = sha;
    m_matrix.scripts[id] = e;
  }
  AuditReport audit(const std::vector<RouteAsk>& routes = {}, bool strict = false) {
    m_matrix.exercises_dir = "ex";
    m_matrix.base_dir = m_root.string();
    auto result = audit_course(m_matrix, *m_catalog, routes, strict);
    EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
    return result.ok() ? std::move(result).value() : AuditReport{};
  }
  static std::vector<std::string> kinds(const AuditReport& r) {
    std::vector<std::string> out;
    for (const auto& f : r.findings) {
      out.push_back(std::string(to_string(f.kind)) + (f.severity == Severity::error ? "!" : "?"));
    }
    return out;
  }

  const Catalog* m_catalog = &test_support::embedded_catalog();
  Matrix m_matrix;
  fs::path m_root;
};

TEST_F(AuditTest, ACleanCourseHasNoFindings) {
  const std::string source = "import jax\nprint(jax.devices())\n";
  script("a", source);
  entry("a", ScriptClass::single_host_compatible, sha256_hex(source));
  const auto report = audit();
  EXPECT_TRUE(report.findings.empty());
  EXPECT_EQ(report.scripts, 1U);
}

TEST_F(AuditTest, UnreviewedIsAWarningUnlessStrict) {
  script("a", "x = 1\n");
  EXPECT_EQ(kinds(audit()), (std::vector<std::string>{"unreviewed?"}));
  EXPECT_EQ(kinds(audit({}, true)), (std::vector<std::string>{"unreviewed!"}));
}

TEST_F(AuditTest, StaleUnknownAndMissingAreErrors) {
  script("stale", "x = 2\n");
  entry("stale", ScriptClass::cpu_only, sha256_hex("x = 1\n"));
  script("odd", "x = 1\n");
  entry("odd", ScriptClass::cpu_only, sha256_hex("x = 1\n"));
  m_matrix.scripts["odd"].script_class.reset();
  m_matrix.scripts["odd"].class_name = "gpu-only";
  entry("gone", ScriptClass::cpu_only, sha256_hex("x = 1\n"));
  EXPECT_EQ(kinds(audit()), (std::vector<std::string>{"unknown-class!", "stale-digest!", "missing-file!"}));
}

TEST_F(AuditTest, ClassThatContradictsEvidenceIsAnError) {
  const std::string source = "import jax\njax.distributed.initialize()\nd = jax.devices('cpu')\n";
  script("a", source);
  entry("a", ScriptClass::multi_host_qualified, sha256_hex(source));
  const auto report = audit();
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings[0].kind, FindingKind::contradiction);
  EXPECT_EQ(report.findings[0].line, 3U);
  // cpu-only over the same evidence is safe: the CPU route cannot reach a TPU.
  m_matrix.scripts["a"].script_class = ScriptClass::cpu_only;
  m_matrix.scripts["a"].class_name = "cpu-only";
  EXPECT_TRUE(audit().findings.empty());
}

TEST_F(AuditTest, HelpersAreNotScriptsAndTheirEvidenceCountsForTheScript) {
  const std::string source = "from lesson_helpers import mesh\nprint(mesh())\n";
  const std::string helper = "import jax\n\n\ndef mesh():\n    return jax.devices('cpu')\n";
  script("lesson", source);
  script("lesson_helpers", helper);
  entry("lesson", ScriptClass::single_host_compatible, sha256_hex(source));
  m_matrix.scripts["lesson"].files = {MatrixFile{"ex/lesson_helpers.py", sha256_hex(helper), false}};
  // Not marked: the helper is a script of its own, unreviewed.
  EXPECT_EQ(kinds(audit({}, true)), (std::vector<std::string>{"contradiction!", "unreviewed!"}));
  m_matrix.helpers = {"ex/lesson_helpers.py"};
  const auto report = audit({}, true);
  EXPECT_EQ(kinds(report), (std::vector<std::string>{"contradiction!"}));
  EXPECT_EQ(report.scripts, 1U);
  ASSERT_EQ(report.findings.size(), 1U);
  // Reported where the evidence is: the helper's file and line.
  EXPECT_EQ(report.findings[0].path, (m_root / "ex" / "lesson_helpers.py").string());
  EXPECT_EQ(report.findings[0].line, 5U);
  EXPECT_NE(report.findings[0].message.find("selects CPU devices in a file it imports [devices-cpu]"), std::string::npos)
      << report.findings[0].message;
  // A route refused by the helper's evidence names the helper's line too.
  const auto refused = audit({RouteAsk{"lesson", "v5litepod-8"}});
  ASSERT_EQ(refused.findings.size(), 2U);
  EXPECT_EQ(refused.findings[1].kind, FindingKind::route_refused);
  EXPECT_EQ(refused.findings[1].path, (m_root / "ex" / "lesson_helpers.py").string());
  // A "helpers" path that names nothing.
  m_matrix.helpers.push_back("ex/gone.py");
  EXPECT_EQ(kinds(audit()), (std::vector<std::string>{"missing-helper?", "contradiction!"}));
}

TEST_F(AuditTest, RefusedRoutesAreErrors) {
  const std::string source = "x = 1\n";
  script("a", source);
  entry("a", ScriptClass::single_host_compatible, sha256_hex(source));
  EXPECT_TRUE(audit({{"a", "v5litepod-8"}}).findings.empty());
  const auto report = audit({{"a", "v5litepod-16"}, {"a", "cpu"}});
  EXPECT_EQ(kinds(report), (std::vector<std::string>{"route-refused!", "route-refused!"}));
  EXPECT_NE(report.findings[0].message.find("multi-host-needs-qualified"), std::string::npos);
}

TEST_F(AuditTest, UnknownSliceInARouteIsAUsageError) {
  m_matrix.exercises_dir = "ex";
  m_matrix.base_dir = m_root.string();
  auto result = audit_course(m_matrix, *m_catalog, {{"a", "v9-8"}}, false);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ExitCode::usage);
}

TEST_F(AuditTest, AScriptThatCannotBeReadExitsAsAConfigErrorWithItsPosition) {
  script("fine", "x = 1\n");
  entry("fine", ScriptClass::cpu_only, sha256_hex("x = 1\n"));
  EXPECT_EQ(audit().exit_code(), ExitCode::success);
  script("stale", "x = 2\n");
  entry("stale", ScriptClass::cpu_only, sha256_hex("x = 1\n"));
  EXPECT_EQ(audit().exit_code(), ExitCode::refused);
  script("latin", "print(1)\ns = \"caf\xe9\"\n");
  const auto report = audit();
  EXPECT_EQ(report.exit_code(), ExitCode::config);
  const auto it = std::find_if(report.findings.begin(), report.findings.end(),
                               [](const AuditFinding& f) { return f.kind == FindingKind::unreadable; });
  ASSERT_NE(it, report.findings.end());
  EXPECT_EQ(it->code, ExitCode::config);
  EXPECT_EQ(it->line, 2U);
  EXPECT_EQ(it->column, 9U);
  // A warning alone never fails the gate, whatever else it says.
  AuditReport warnings;
  warnings.findings.push_back(AuditFinding{Severity::warning, FindingKind::unreviewed, "a", "a.py", 0, "m"});
  EXPECT_EQ(warnings.exit_code(), ExitCode::success);
}

// A finding whose message names a line carries it, and the file it is in: a cpu-only script's
// refused route names its CPU selection in words ("at line 2", "at helper.py line 5"), and an
// imported course file that is not UTF-8 is named with its position.
TEST_F(AuditTest, FindingsCarryTheLineTheirMessageNames) {
  const std::string source = "import jax\njax.config.update('jax_platforms', 'cpu')\n";
  script("cpu", source);
  entry("cpu", ScriptClass::cpu_only, sha256_hex(source));
  auto report = audit({{"cpu", "v5litepod-8"}});
  ASSERT_EQ(report.findings.size(), 1U);
  EXPECT_NE(report.findings[0].message.find("at line 2 ("), std::string::npos) << report.findings[0].message;
  EXPECT_EQ(report.findings[0].line, 2U);
  EXPECT_EQ(report.findings[0].path, (m_root / "ex" / "cpu.py").string());

  const std::string lesson = "from helper import pick\npick()\n";
  const std::string helper = "import jax\n\n\ndef pick():\n    return jax.devices('cpu')\n";
  script("lesson", lesson);
  script("helper", helper);
  m_matrix.helpers = {"ex/helper.py"};
  entry("lesson", ScriptClass::cpu_only, sha256_hex(lesson));
  m_matrix.scripts["lesson"].files = {MatrixFile{"ex/helper.py", sha256_hex(helper), false}};
  report = audit({{"lesson", "v5litepod-8"}});
  const auto refused = std::find_if(report.findings.begin(), report.findings.end(),
                                    [](const AuditFinding& f) { return f.script == "lesson"; });
  ASSERT_NE(refused, report.findings.end());
  EXPECT_NE(refused->message.find("at helper.py line 5 ("), std::string::npos) << refused->message;
  EXPECT_EQ(refused->path, (m_root / "ex" / "helper.py").string());
  EXPECT_EQ(refused->line, 5U);

  // The helper, no longer UTF-8: the lesson's finding is at the helper's byte.
  script("helper", "import jax\nx = 'caf\xe9'\n");
  report = audit();
  const auto unreadable = std::find_if(report.findings.begin(), report.findings.end(),
                                       [](const AuditFinding& f) { return f.script == "lesson"; });
  ASSERT_NE(unreadable, report.findings.end());
  EXPECT_EQ(unreadable->kind, FindingKind::unreadable) << unreadable->message;
  EXPECT_EQ(unreadable->line, 2U) << unreadable->message;
  EXPECT_NE(unreadable->path.find("helper.py"), std::string::npos) << unreadable->path;
}

TEST(Audit, RouteAskSyntax) {
  EXPECT_EQ(parse_route_ask("a@v5litepod-8")->slice, "v5litepod-8");
  EXPECT_EQ(parse_route_ask("a@cpu")->script, "a");
  for (const char* bad : {"a", "@x", "a@", ""}) {
    EXPECT_EQ(parse_route_ask(bad).error().code, ExitCode::usage) << bad;
  }
}

TEST_F(AuditTest, SubfolderScriptsAreListedAndNothingIsSkippedSilently) {
  fs::create_directories(m_root / "ex/advanced");
  fs::create_directories(m_root / "ex/.drafts");
  std::ofstream(m_root / "ex/advanced/sub_lesson.py") << "print(1)\n";
  std::ofstream(m_root / "ex/.drafts/d.py") << "print(2)\n";
  const AuditReport report = audit();
  EXPECT_EQ(kinds(report), (std::vector<std::string>{"invalid-name?", "unreviewed?"}));
  ASSERT_EQ(report.findings.size(), 2U);
  EXPECT_EQ(report.findings[1].script, "advanced/sub_lesson");
}

TEST_F(AuditTest, AnnotationPathsAreRelativeToTheRepositoryRoot) {
  fs::create_directories(m_root / ".git");
  fs::create_directories(m_root / "courses/jax");
  EXPECT_EQ(repository_root((m_root / "courses/jax").string(), "/fallback"), m_root.string());
  EXPECT_EQ(path_from_root((m_root / "courses/jax/ex/a.py").string(), m_root.string()), "courses/jax/ex/a.py");
  // A worktree's .git is a file, and it counts too.
  fs::remove_all(m_root / ".git");
  std::ofstream(m_root / ".git") << "gitdir: /elsewhere\n";
  EXPECT_EQ(repository_root((m_root / "courses/jax").string(), "/fallback"), m_root.string());
}

} // namespace
} // namespace tpulaunch
