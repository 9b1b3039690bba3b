#include "tpulaunch/matrix.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tpulaunch/sha256.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

// A throw-away course folder: <tmp>/execution-matrix.json and <tmp>/ex/*.py.
class MatrixTest : public ::testing::Test {
protected:
  void SetUp() override {
    m_root = fs::temp_directory_path() / fs::path("tpulaunch-matrix-" + std::to_string(::getpid()) + "-" +
                                                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_root);
    fs::create_directories(m_root / "ex");
  }
  void TearDown() override { fs::remove_all(m_root); }

  void write(const fs::path& relative, const std::string& text) {
    std::ofstream(m_root / relative, std::ios::binary) << text;
  }
  Matrix matrix_with(const std::string& scripts_json) {
    const std::string text = R"({"version": 1, "exercises_dir": "ex", "scripts": {)" + scripts_json + "}}";
    write("execution-matrix.json", text);
    auto result = load_matrix_file((m_root / "execution-matrix.json").string());
    EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
    return result.ok() ? std::move(result).value() : Matrix{};
  }
  static std::string entry(const std::string& id, const std::string& cls, const std::string& sha) {
    return "\"" + id + "\": {\"class\": \"" + cls + "\", \"sha256\": \"" + sha + "\"}";
  }

  fs::path m_root;
};

const std::string k_source = "import jax\nprint(jax.devices())\n";

TEST_F(MatrixTest, ReviewedScriptWithMatchingDigest) {
  write("ex/a.py", k_source);
  const Matrix matrix = matrix_with(entry("a", "single-host-compatible", sha256_hex(k_source)));
  auto status = resolve_script(matrix, "a");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->state, ReviewState::reviewed);
  EXPECT_EQ(status->route_class(), ScriptClass::single_host_compatible);
  EXPECT_EQ(status->path, (m_root / "ex/a.py").string());
}

TEST_F(MatrixTest, ChangedFileIsStale) {
  write("ex/a.py", k_source + "# edited\n");
  const Matrix matrix = matrix_with(entry("a", "cpu-only", sha256_hex(k_source)));
  auto status = resolve_script(matrix, "a");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->state, ReviewState::stale_digest);
  EXPECT_FALSE(status->route_class());
  EXPECT_NE(status->explanation().find("changed since it was reviewed"), std::string::npos);
}

TEST_F(MatrixTest, NoEntryUnknownClassAndMissingFileAreReviewRequired) {
  write("ex/a.py", k_source);
  write("ex/b.py", k_source);
  const Matrix matrix = matrix_with(entry("b", "gpu-only", sha256_hex(k_source)) + "," +
                                    entry("c", "cpu-only", sha256_hex(k_source)));
  EXPECT_EQ(resolve_script(matrix, "a")->state, ReviewState::no_entry);
  EXPECT_EQ(resolve_script(matrix, "b")->state, ReviewState::unknown_class);
  EXPECT_NE(resolve_script(matrix, "b")->explanation().find("unknown class \"gpu-only\""), std::string::npos);
  EXPECT_EQ(resolve_script(matrix, "c")->state, ReviewState::missing_file);
  EXPECT_EQ(resolve_script(matrix, "nothing")->state, ReviewState::no_entry);
  for (const char* id : {"a", "b", "c"}) {
    EXPECT_FALSE(resolve_script(matrix, id)->route_class()) << id;
  }
}

TEST_F(MatrixTest, SymlinkOutOfTheCourseIsRefused) {
  write("outside.py", k_source);
  fs::create_symlink(m_root / "outside.py", m_root / "ex/a.py");
  const Matrix matrix = matrix_with(entry("a", "cpu-only", sha256_hex(k_source)));
  auto status = resolve_script(matrix, "a");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ExitCode::config);
  EXPECT_NE(status.error().message.find("leads outside the exercises folder"), std::string::npos);
}

TEST_F(MatrixTest, BinaryOrNonUtf8ScriptIsRefusedWithPosition) {
  write("ex/a.py", std::string("x = 1\ny = '\xff'\n"));
  const Matrix matrix = matrix_with(entry("a", "cpu-only", sha256_hex(k_source)));
  auto status = resolve_script(matrix, "a");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("a.py:2:6: script 'a' is not UTF-8 text (byte 0xff)"), std::string::npos)
      << status.error().message;
  write("ex/a.py", std::string("x = 1\0", 6));
  EXPECT_FALSE(resolve_script(matrix, "a").ok());
}

TEST(Matrix, MalformedFieldsAreConfigErrors) {
  struct Case {
    const char* json;
    const char* expected;
  };
  const std::string good_sha(64, 'a');
  for (const Case& c : {
           Case{R"({"version": 2, "exercises_dir": "ex", "scripts": {}})", "\"version\" must be between 1 and 1"},
           Case{R"({"version": 1, "exercises_dir": "/abs", "scripts": {}})", "must be relative"},
           Case{R"({"version": 1, "exercises_dir": "../up", "scripts": {}})", "must stay inside the course"},
           Case{R"({"version": 1, "exercises_dir": "ex", "scripts": []})", "\"scripts\" must be an object"},
           Case{R"({"version": 1, "exercises_dir": "ex", "scripts": {"a": {"class": 3, "sha256": "x"}}})",
                "script 'a': field \"class\" must be a string"},
           Case{R"({"version": 1, "exercises_dir": "ex", "scripts": {"a": {"class": "cpu-only", "sha256": "abc"}}})",
                "\"sha256\" must be 64 lower-case hex digits"},
           Case{R"({"version": 1, "exercises_dir": "ex", "scripts": {"../a": {"class": "cpu-only", "sha256": "abc"}}})",
                "invalid script ID"},
           Case{R"({"version": 1, "exercises_dir": "ex", "scripts": {"a": {}, "a": {}}})", "duplicate key \"a\""},
       }) {
    auto result = parse_matrix(c.json, "m.json");
    ASSERT_FALSE(result.ok()) << c.json;
    EXPECT_EQ(result.error().code, ExitCode::config);
    EXPECT_NE(result.error().message.find(c.expected), std::string::npos) << result.error().message;
    EXPECT_EQ(result.error().message.rfind("m.json:", 0), 0U) << result.error().message;
  }
}

TEST(Matrix, SerializesInCanonicalOrderAndRoundTrips) {
  const std::string sha(64, 'b');
  const std::string text = R"({"scripts": {"z": {"sha256": ")" + sha + R"(", "class": "cpu-only", "custom": 1},
    "a": {"class": "multi-host-qualified", "sha256": ")" + sha + R"(", "overrides": [{"rule": "devices-cpu", "line": 3, "reason": "debug path"}]}},
    "exercises_dir": "ex", "version": 1, "course": "x"})";
  auto matrix = parse_matrix(text, "m.json");
  ASSERT_TRUE(matrix.ok()) << matrix.error().message;
  const std::string out = serialize_matrix(*matrix);
  EXPECT_LT(out.find("\"version\""), out.find("\"exercises_dir\""));
  EXPECT_LT(out.find("\"exercises_dir\""), out.find("\"scripts\""));
  EXPECT_LT(out.find("\"a\""), out.find("\"z\""));
  EXPECT_LT(out.find("\"class\": \"cpu-only\""), out.find("\"custom\": 1"));
  EXPECT_NE(out.find("\"course\": \"x\""), std::string::npos);
  auto again = parse_matrix(out, "m.json");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(serialize_matrix(*again), out);
  EXPECT_EQ(again->find("a")->overrides.at(0).reason, "debug path");
}

TEST(Matrix, ScriptArgumentMayBeAnIdOrAPathInTheExercisesFolder) {
  Matrix matrix;
  matrix.exercises_dir = "public/exercises";
  EXPECT_EQ(*script_id_from_argument(matrix, "distributed-02"), "distributed-02");
  EXPECT_EQ(*script_id_from_argument(matrix, "public/exercises/distributed-02.py"), "distributed-02");
  EXPECT_EQ(*script_id_from_argument(matrix, "./public/exercises/x.py"), "x");
  EXPECT_EQ(script_id_from_argument(matrix, "other/x.py").error().code, ExitCode::usage);
  EXPECT_EQ(script_id_from_argument(matrix, "a;b").error().code, ExitCode::usage);
  EXPECT_EQ(script_id_from_argument(matrix, "-rf").error().code, ExitCode::usage);
}

} // namespace
} // namespace tpulaunch
