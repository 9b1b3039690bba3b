#include "tpulaunch/matrix/matrix.hpp"

#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "tpulaunch/matrix/exercises.hpp"
#include "tpulaunch/util/sha256.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

// A config Error (exit 4) whose message holds `part`.
::testing::AssertionResult is_config_error(const Result<ScriptStatus>& status, std::string_view part) {
  if (status.ok()) {
    return ::testing::AssertionFailure() << "resolved, but a config error was expected";
  }
  if (status.error().code != ExitCode::config || status.error().message.find(part) == std::string::npos) {
    return ::testing::AssertionFailure() << status.error().message;
  }
  return ::testing::AssertionSuccess();
}

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
  EXPECT_TRUE(is_config_error(resolve_script(matrix, "a"), "leads outside the exercises folder"));
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

TEST(Matrix, MistakesInProvesAndInitializeConditionAreConfigErrorsAtTheirPosition) {
  const std::string head =
      R"({"version": 1, "exercises_dir": "ex", "scripts": {"a": {"class": "cpu-only", "sha256": ")" +
      std::string(64, 'a') + "\", ";
  for (const auto& [fields, expected] : std::vector<std::pair<std::string, std::string>>{
           {R"("proves": "receipts")", "m.json:1:166: script 'a': \"proves\" is 'receipts': expected training, "
                                       "discovery or logs"},
           {R"("proves": 1)", "field \"proves\" must be a string"},
           {R"("initialize_condition": {"line": 0, "reason": "r"})", "\"line\" must be between 1 and"},
           {R"("initialize_condition": {"line": 3})",
            "m.json:1:180: script 'a' initialize_condition: missing field \"reason\""},
           {R"("initialize_condition": "yes")", "\"initialize_condition\" must be an object"},
       }) {
    auto result = parse_matrix(head + fields + "}}}", "m.json");
    ASSERT_FALSE(result.ok()) << fields;
    EXPECT_EQ(result.error().code, ExitCode::config);
    EXPECT_NE(result.error().message.find(expected), std::string::npos) << result.error().message;
  }
}

// What a review declares its script proves, and the acceptance of a conditional initialize(),
// are typed fields written in the entry's fixed order, before the overrides.
TEST(Matrix, ProvesAndInitializeConditionAreTypedAndRoundTrip) {
  const std::string sha(64, 'd');
  const std::string text = R"({"version": 1, "exercises_dir": "ex", "scripts": {"s": {"class": "multi-host-qualified",
    "initialize_condition": {"reason": "the launcher sets NUM_HOSTS", "condition": "inside `if n > 1:`", "line": 4},
    "proves": "training", "sha256": ")" +
                           sha + R"(", "overrides": [{"rule": "devices-cpu", "line": 3, "reason": "r"}]},
    "t": {"class": "single-host-compatible", "sha256": ")" +
                           sha + R"("}}})";
  auto matrix = parse_matrix(text, "m.json");
  ASSERT_TRUE(matrix.ok()) << matrix.error().message;
  const MatrixEntry& s = *matrix->find("s");
  ASSERT_TRUE(s.proves.has_value());
  EXPECT_EQ(*s.proves, Proves::training);
  ASSERT_TRUE(s.initialize_condition.has_value());
  EXPECT_EQ(s.initialize_condition->line, 4U);
  EXPECT_EQ(s.initialize_condition->file, "");
  EXPECT_EQ(s.initialize_condition->reason, "the launcher sets NUM_HOSTS");
  EXPECT_TRUE(s.extra.empty()) << s.extra.dump();
  EXPECT_FALSE(matrix->find("t")->proves.has_value());
  EXPECT_FALSE(matrix->find("t")->initialize_condition.has_value());
  const std::string out = serialize_matrix(*matrix);
  EXPECT_LT(out.find("\"sha256\""), out.find("\"proves\": \"training\""));
  EXPECT_LT(out.find("\"proves\""), out.find("\"initialize_condition\""));
  EXPECT_LT(out.find("\"initialize_condition\""), out.find("\"overrides\""));
  EXPECT_LT(out.find("\"line\": 4"), out.find("\"reason\": \"the launcher sets NUM_HOSTS\""));
  auto again = parse_matrix(out, "m.json");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_TRUE(same_content(*matrix, *again));
  EXPECT_EQ(serialize_matrix(*again), out);
  EXPECT_EQ(parse_proves("discovery"), Proves::discovery);
  EXPECT_FALSE(parse_proves("Training").has_value());
}

TEST(Matrix, UnknownFieldsAreKeptInTheirOrder) {
  const std::string sha(64, 'c');
  const std::string text = R"({"version": 1, "zeta": [1, {"b": 2, "a": 1}], "exercises_dir": "ex", "alpha": null,
    "scripts": {"s": {"path": "ex/s.py", "class": "cpu-only", "zz": true, "sha256": ")" + sha +
                           R"(", "aa": {"y": 1, "x": 2}, "evidence": [{"k": 2, "j": 1}], "mm": -0.5}}})";
  auto matrix = parse_matrix(text, "m.json");
  ASSERT_TRUE(matrix.ok()) << matrix.error().message;
  const std::string out = serialize_matrix(*matrix);
  // Known fields in their fixed order, then the unknown ones as they were written.
  const auto at = [&](std::string_view needle) { return out.find(needle); };
  EXPECT_NE(at("\"path\": \"ex/s.py\""), std::string::npos) << out;
  EXPECT_LT(at("\"sha256\""), at("\"path\""));
  EXPECT_LT(at("\"path\""), at("\"zz\""));
  EXPECT_LT(at("\"zz\""), at("\"aa\""));
  EXPECT_LT(at("\"aa\""), at("\"mm\""));
  EXPECT_LT(at("\"y\": 1"), at("\"x\": 2"));
  EXPECT_LT(at("\"k\": 2"), at("\"j\": 1"));
  EXPECT_LT(at("\"zeta\""), at("\"alpha\""));
  EXPECT_LT(at("\"b\": 2"), at("\"a\": 1"));
  auto again = parse_matrix(out, "m.json");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_TRUE(same_content(*matrix, *again));
  EXPECT_EQ(serialize_matrix(*again), out);
}

// Parse -> serialise -> parse is the identity on many generated matrices (fuzz/matrix_fuzz.cpp
// checks the same on arbitrary bytes).
TEST(Matrix, RoundTripIsTheIdentityOnGeneratedMatrices) {
  std::mt19937 rng(14);
  const auto pick = [&](std::initializer_list<const char*> options) {
    return std::string(*(options.begin() + rng() % options.size()));
  };
  const auto value = [&](int depth, auto&& self) -> std::string {
    switch (rng() % (depth > 2 ? 4 : 6)) {
    case 0: return std::to_string(static_cast<int>(rng() % 2000) - 1000);
    case 1: return pick({"\"x\"", "\"\\u00e9\\n\"", "\"\"", "\"path/with/slash\""});
    case 2: return pick({"true", "false", "null", "1.5e300", "-0.25"});
    case 3: return "18446744073709551615";
    case 4: return "[" + self(depth + 1, self) + ", " + self(depth + 1, self) + "]";
    default: return "{\"q" + std::to_string(rng() % 9) + "\": " + self(depth + 1, self) + ", \"p\": " +
                    self(depth + 1, self) + "}";
    }
  };
  for (int round = 0; round < 300; ++round) {
    std::string scripts;
    const int count = static_cast<int>(rng() % 5);
    for (int i = 0; i < count; ++i) {
      std::string entry = "\"" + pick({"a", "b/c", "lesson_1", "x.y"}) + std::to_string(i) + "\": {";
      entry += "\"class\": \"" + pick({"cpu-only", "multi-host-qualified", "gpu-only"}) + "\", ";
      entry += "\"sha256\": \"" + std::string(64, "0123456789abcdef"[rng() % 16]) + "\"";
      if (rng() % 2 == 0) {
        entry += ", \"note\": \"n\", \"reason\": " + pick({"\"\"", "\"r\""});
      }
      if (rng() % 2 == 0) {
        entry += ", \"overrides\": [{\"rule\": \"devices-cpu\", \"line\": " + std::to_string(rng() % 50) +
                 ", \"reason\": \"why\"}]";
      }
      if (rng() % 2 == 0) {
        entry += ", \"evidence\": [" + value(1, value) + "]";
      }
      if (rng() % 3 == 0) {
        entry += ", \"proves\": \"" + pick({"training", "discovery", "logs"}) + "\"";
      }
      if (rng() % 3 == 0) {
        entry += ", \"initialize_condition\": {\"reason\": \"set by the launcher\", \"line\": " +
                 std::to_string(1 + rng() % 50) + pick({"", ", \"file\": \"pkg/mod.py\""}) +
                 pick({"", ", \"condition\": \"conditional: inside `if x:`\""}) + "}";
      }
      for (int u = 0; u < static_cast<int>(rng() % 3); ++u) {
        entry += ", \"u" + std::to_string(rng() % 100) + std::to_string(u) + "\": " + value(0, value);
      }
      scripts += (i == 0 ? "" : ", ") + entry + "}";
    }
    const std::string text = "{\"k" + std::to_string(rng() % 7) + "\": " + value(0, value) +
                             ", \"version\": 1, \"exercises_dir\": \"" + pick({"ex", "public/exercises", "a b"}) +
                             "\", \"scripts\": {" + scripts + "}, \"tail\": " + value(0, value) + "}";
    auto first = parse_matrix(text, "m.json");
    ASSERT_TRUE(first.ok()) << text << "\n" << first.error().message;
    const std::string once = serialize_matrix(*first);
    auto second = parse_matrix(once, "m.json");
    ASSERT_TRUE(second.ok()) << once;
    EXPECT_TRUE(same_content(*first, *second)) << text;
    EXPECT_EQ(serialize_matrix(*second), once);
  }
}

// Edge cases of the JSON and of the matrix's own rules: each text either reads, keeping the origin
// and its folder, or is one config Error line naming the file.
TEST(Matrix, EachTextReadsOrIsOneConfigErrorLine) {
  const std::string sha(64, 'c');
  const std::string e = R"({"class": "cpu-only", "sha256": ")" + sha + R"("})";
  const auto with_scripts = [&](const std::string& scripts) {
    return R"({"version": 1, "exercises_dir": "ex", "scripts": {)" + scripts + "}}";
  };
  std::string deep = "0";
  for (int i = 0; i < 70; ++i) {
    deep = "[" + deep + "]";
  }
  // Each text, and whether it reads.
  const std::vector<std::pair<std::string, bool>> texts = {
      {with_scripts(""), true},
      {with_scripts(R"("b": )" + e + R"(, "a": )" + e + R"(, "c": )" + e), true}, // not sorted
      {with_scripts(R"("b": )" + e + R"(, "a": )" + e + R"(, "b": )" + e), false}, // a duplicate, not next to the first
      {with_scripts(R"("a": )" + e + R"(, "a": )" + e), false},
      {"\xEF\xBB\xBF" + with_scripts(R"("a": )" + e), true},
      {" \n\t" + with_scripts(R"("a": )" + e) + " \r\n", true},
      {with_scripts(R"("a": )" + e) + " x", false},
      {with_scripts(R"("\u0061": {"cl\u0061ss": "cpu-only", "sha256": ")" + sha + R"("})"), true},
      {with_scripts(R"("a": {"class": "cpu-only", "class": "cpu-only", "sha256": ")" + sha + R"("})"), false},
      {with_scripts(R"("a": {"class": "", "sha256": ")" + sha + R"("})"), false},
      {with_scripts(R"("a": {"class": "tpu-only", "sha256": ")" + sha + R"("})"), true},
      {with_scripts(R"("a": {"class": "cpu-only", "sha256": ")" + std::string(64, 'C') + R"("})"), false},
      {with_scripts(R"("a": {"class": "cpu-only"})"), false},
      {with_scripts(R"("a": {"class": "cpu-only", "sha256": ")" + sha + R"(", "reason": 3})"), false},
      {with_scripts(R"("a": {"class": "cpu-only", "sha256": ")" + sha + R"(", "reason": "", "note": "\u00e9\"\n"})"), true},
      {with_scripts(R"("a": {"class": "cpu-only", "sha256": ")" + sha + "\", \"note\": \"\xff\"}"), false},
      {with_scripts(R"("a": {"class": "cpu-only", "sha256": ")" + sha + R"(", "u": 1, "u": 2})"), false},
      {with_scripts(R"("a": {"class": "cpu-only", "sha256": ")" + sha + R"(", "u": {"k": 1, "k": 2}})"), false},
      {with_scripts(R"("a": {"class": "cpu-only", "sha256": ")" + sha + R"(", "evidence": {}})"), false},
      {with_scripts(R"("a": {"class": "cpu-only", "sha256": ")" + sha + R"(", "evidence": [)" + deep + "]}"), false},
      {with_scripts(R"("a": {"class": "cpu-only", "sha256": ")" + sha + R"(", "evidence": [[[[1]]]]})"), true},
      {with_scripts(R"("a": {"class": "cpu-only", "sha256": ")" + sha +
                    R"(", "overrides": [{"rule": "devices-cpu", "line": 4, "reason": "why", "extra": [1]}]})"), true},
      {with_scripts(R"("a": {"class": "cpu-only", "sha256": ")" + sha +
                    R"(", "overrides": [{"rule": "r", "line": -1, "reason": "w"}]})"), false},
      {with_scripts(R"("a": {"class": "cpu-only", "sha256": ")" + sha + R"(", "overrides": [3]})"), false},
      {with_scripts(R"("a": {"class": "cpu-only", "sha256": ")" + sha + R"(", "overrides": {}})"), false},
      {with_scripts(R"("../a": )" + e), false},
      {with_scripts(R"("a": [])"), false},
      {R"({"version": 1.0, "exercises_dir": "ex", "scripts": {}})", false},
      {R"({"version": "1", "exercises_dir": "ex", "scripts": {}})", false},
      {R"({"version": 18446744073709551617, "exercises_dir": "ex", "scripts": {}})", false},
      {R"({"version": 1, "version": 1, "exercises_dir": "ex", "scripts": {}})", false},
      {R"({"version": 1, "exercises_dir": "", "scripts": {}})", false},
      {R"({"version": 1, "exercises_dir": "../ex", "scripts": {}})", false},
      {R"({"version": 1, "exercises_dir": "ex"})", false},
      {R"({"scripts": {}, "t": [1, {"a": null}], "exercises_dir": "ex", "version": 1, "s": "x"})", true},
      {R"({"version": 1, "exercises_dir": "ex", "scripts": {}, "t": 1, "t": 2})", false},
      {R"([])", false},
      {"", false},
  };
  for (const auto& [text, reads] : texts) {
    const auto matrix = parse_matrix(text, "course/m.json");
    ASSERT_EQ(matrix.ok(), reads) << text << "\n" << (matrix.ok() ? "" : matrix.error().message);
    if (matrix.ok()) {
      EXPECT_EQ(matrix->origin, "course/m.json");
      EXPECT_EQ(matrix->base_dir, "course");
      EXPECT_TRUE(same_content(*matrix, parse_matrix(serialize_matrix(*matrix), "course/m.json").value())) << text;
    } else {
      EXPECT_EQ(matrix.error().code, ExitCode::config) << text;
      EXPECT_TRUE(matrix.error().message.starts_with("course/m.json")) << matrix.error().message;
      EXPECT_EQ(matrix.error().message.find('\n'), std::string::npos) << matrix.error().message;
    }
  }
}

TEST_F(MatrixTest, TheMatrixIsFoundInTheNearestFolderAboveAsGitFindsDotGit) {
  fs::create_directories(m_root / "ex" / "advanced" / "deeper");
  std::ofstream(m_root / "execution-matrix.json") << "{}";
  EXPECT_EQ(find_matrix_upward(m_root.string(), "execution-matrix.json"), "execution-matrix.json");
  EXPECT_EQ(find_matrix_upward((m_root / "ex").string(), "execution-matrix.json"), "../execution-matrix.json");
  EXPECT_EQ(find_matrix_upward((m_root / "ex" / "advanced" / "deeper").string() + "/", "execution-matrix.json"),
            "../../../execution-matrix.json");
  // The nearest one wins; a folder of that name is not a matrix.
  std::ofstream(m_root / "ex" / "advanced" / "execution-matrix.json") << "{}";
  EXPECT_EQ(find_matrix_upward((m_root / "ex" / "advanced" / "deeper").string(), "execution-matrix.json"),
            "../execution-matrix.json");
  fs::create_directories(m_root / "ex" / "m.json");
  EXPECT_EQ(find_matrix_upward((m_root / "ex").string(), "m.json"), std::nullopt);
}

TEST_F(MatrixTest, ScriptArgumentMayBeAnIdAPathOrAFileName) {
  write("ex/distributed-02.py", k_source);
  fs::create_directories(m_root / "ex/advanced");
  write("ex/advanced/sub_lesson.py", k_source);
  const Matrix matrix = matrix_with(entry("tpu-hello", "cpu-only", sha256_hex(k_source)));
  EXPECT_EQ(*script_id_from_argument(matrix, "distributed-02"), "distributed-02"); // a file, no entry
  EXPECT_EQ(*script_id_from_argument(matrix, "tpu-hello"), "tpu-hello");           // an entry, no file
  EXPECT_EQ(*script_id_from_argument(matrix, (m_root / "ex/distributed-02.py").string()), "distributed-02");
  EXPECT_EQ(*script_id_from_argument(matrix, "distributed-02.py"), "distributed-02"); // a file name in the folder
  EXPECT_EQ(*script_id_from_argument(matrix, "advanced/sub_lesson"), "advanced/sub_lesson");
  EXPECT_EQ(*script_id_from_argument(matrix, "advanced/sub_lesson.py"), "advanced/sub_lesson");
  EXPECT_EQ(*script_id_from_argument(matrix, (m_root / "ex/advanced/sub_lesson.py").string()), "advanced/sub_lesson");
  EXPECT_EQ(script_id_from_argument(matrix, "other/x.py").error().code, ExitCode::usage);
  EXPECT_EQ(script_id_from_argument(matrix, "a;b").error().code, ExitCode::usage);
  EXPECT_EQ(script_id_from_argument(matrix, "-rf").error().code, ExitCode::usage);
  // An id with neither an entry nor a file is a typo: the nearest ids, '-' and '_' swaps first.
  const auto typo = script_id_from_argument(matrix, "distributed_02");
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.error().code, ExitCode::usage);
  EXPECT_NE(typo.error().message.find("(did you mean 'distributed-02'?)"), std::string::npos) << typo.error().message;
  const auto near = script_id_from_argument(matrix, "tpu-helo");
  EXPECT_NE(near.error().message.find("did you mean 'tpu-hello'?"), std::string::npos) << near.error().message;
}

TEST_F(MatrixTest, ScriptInASubfolderResolves) {
  fs::create_directories(m_root / "ex/advanced");
  write("ex/advanced/sub_lesson.py", k_source);
  const Matrix matrix = matrix_with(entry("advanced/sub_lesson", "single-host-compatible", sha256_hex(k_source)));
  auto status = resolve_script(matrix, "advanced/sub_lesson");
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(status->state, ReviewState::reviewed);
  EXPECT_EQ(status->path, (m_root / "ex/advanced/sub_lesson.py").string());
}

TEST_F(MatrixTest, SymlinkedSubfolderLeadingOutIsRefused) {
  fs::create_directories(m_root / "elsewhere");
  write("elsewhere/x.py", k_source);
  fs::create_directory_symlink(m_root / "elsewhere", m_root / "ex" / "linked");
  const Matrix matrix = matrix_with(entry("linked/x", "cpu-only", sha256_hex(k_source)));
  EXPECT_TRUE(is_config_error(resolve_script(matrix, "linked/x"), "leads outside the exercises folder"));
}

TEST_F(MatrixTest, SymlinkedExercisesFolderLeadingOutOfTheCourseIsRefused) {
  const fs::path outside = m_root.string() + "-outside";
  fs::remove_all(outside);
  fs::create_directories(outside);
  std::ofstream(outside / "a.py") << k_source;
  fs::remove_all(m_root / "ex");
  fs::create_directory_symlink(outside, m_root / "ex");
  const Matrix matrix = matrix_with(entry("a", "cpu-only", sha256_hex(k_source)));
  auto status = resolve_script(matrix, "a");
  fs::remove_all(outside);
  EXPECT_TRUE(is_config_error(status, "\"exercises_dir\" 'ex' leads outside the course folder"));
}

TEST_F(MatrixTest, SymlinkedExercisesFolderInsideTheCourseIsFine) {
  fs::remove_all(m_root / "ex");
  fs::create_directories(m_root / "lessons");
  write("lessons/a.py", k_source);
  fs::create_directory_symlink(m_root / "lessons", m_root / "ex");
  const Matrix matrix = matrix_with(entry("a", "cpu-only", sha256_hex(k_source)));
  auto status = resolve_script(matrix, "a");
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(status->state, ReviewState::reviewed);
}

// Loading finds where the exercises folder is, once; a matrix only parsed has no location and is
// looked up at each use without being written to: a const Matrix stays as it was loaded.
TEST_F(MatrixTest, TheExercisesFolderIsLocatedWhenTheMatrixIsLoaded) {
  const Matrix loaded = matrix_with("");
  ASSERT_TRUE(loaded.exercises_location.has_value());
  EXPECT_EQ(loaded.exercises_location->real, real_path(m_root / "ex").string());
  EXPECT_EQ(loaded.exercises_location->error, "");

  const std::string origin = (m_root / "execution-matrix.json").string();
  const Matrix parsed = parse_matrix(R"({"version": 1, "exercises_dir": "ex", "scripts": {}})", origin).value();
  EXPECT_FALSE(parsed.exercises_location.has_value());
  EXPECT_EQ(real_exercises(parsed).value(), loaded.exercises_location->real);
  EXPECT_FALSE(parsed.exercises_location.has_value());

  const fs::path outside = m_root.string() + "-outside";
  fs::create_directories(outside);
  fs::remove_all(m_root / "ex");
  fs::create_directory_symlink(outside, m_root / "ex");
  const Matrix leading_out = matrix_with("");
  fs::remove_all(outside);
  ASSERT_TRUE(leading_out.exercises_location.has_value());
  EXPECT_EQ(leading_out.exercises_location->real, "");
  const auto refused = real_exercises(leading_out);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ExitCode::config);
  EXPECT_EQ(refused.error().message, leading_out.exercises_location->error);
  EXPECT_NE(refused.error().message.find("\"exercises_dir\" 'ex' leads outside the course folder"), std::string::npos);
}

// --- lessons of more than one file ----------------------------------------------------------------

const std::string k_lesson = "from lesson_helpers import make_mesh\nprint(make_mesh())\n";
const std::string k_helpers = "import jax\n\n\ndef make_mesh():\n    return jax.devices()\n";

std::string lesson_entry(const std::string& files_json, const std::string& cls = "single-host-compatible") {
  return "\"lesson\": {\"class\": \"" + cls + "\", \"sha256\": \"" + sha256_hex(k_lesson) + "\", \"files\": " +
         files_json + "}";
}

std::string file_json(const std::string& path, const std::string& sha, bool declared = false) {
  return "{\"path\": \"" + path + "\"" + (sha.empty() ? "" : ", \"sha256\": \"" + sha + "\"") +
         (declared ? ", \"declared\": true" : "") + "}";
}

TEST_F(MatrixTest, AReviewedLessonListsTheCourseFilesToStage) {
  write("ex/lesson.py", k_lesson);
  write("ex/lesson_helpers.py", k_helpers);
  const Matrix matrix = matrix_with(lesson_entry("[" + file_json("ex/lesson_helpers.py", sha256_hex(k_helpers)) + "]"));
  auto status = resolve_script(matrix, "lesson");
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(status->state, ReviewState::reviewed) << status->explanation();
  ASSERT_EQ(status->files.size(), 1U);
  const LessonFile& file = status->files[0];
  EXPECT_EQ(file.course_path, "ex/lesson_helpers.py");
  EXPECT_EQ(file.staged, "lesson_helpers.py");
  EXPECT_EQ(file.path, (m_root / "ex/lesson_helpers.py").string());
  EXPECT_EQ(file.sha256, sha256_hex(k_helpers));
  EXPECT_FALSE(file.declared);
  ASSERT_TRUE(status->classification.has_value());
  EXPECT_TRUE(status->classification->evidence.empty());
}

TEST_F(MatrixTest, AChangedCourseFileMakesTheScriptStale) {
  write("ex/lesson.py", k_lesson);
  write("ex/lesson_helpers.py", k_helpers + "jax.devices('cpu')\n");
  const Matrix matrix = matrix_with(lesson_entry("[" + file_json("ex/lesson_helpers.py", sha256_hex(k_helpers)) + "]"));
  auto status = resolve_script(matrix, "lesson");
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(status->state, ReviewState::stale_digest);
  EXPECT_FALSE(status->route_class());
  const std::string now = sha256_hex(k_helpers + "jax.devices('cpu')\n");
  EXPECT_NE(status->explanation().find("'lesson' changed since it was reviewed: its course file ex/lesson_helpers.py "
                                       "changed (sha256 " + sha256_hex(k_helpers).substr(0, 12) + " reviewed, " +
                                       now.substr(0, 12) + " now); review it again"),
            std::string::npos)
      << status->explanation();
}

TEST_F(MatrixTest, TheSetOfCourseFilesIsPinnedToo) {
  write("ex/lesson.py", k_lesson);
  write("ex/lesson_helpers.py", k_helpers);
  // Reviewed before the helper was a file of the course (or before this version): stale.
  const Matrix without = matrix_with(lesson_entry("[]"));
  auto added = resolve_script(without, "lesson");
  ASSERT_TRUE(added.ok()) << added.error().message;
  EXPECT_EQ(added->state, ReviewState::stale_digest);
  EXPECT_NE(added->explanation().find("it now brings the course file ex/lesson_helpers.py with it, which was not "
                                      "reviewed with it"),
            std::string::npos)
      << added->explanation();
  // A helper imported at review but not now (a file that went away; the script is unchanged).
  const Matrix extra = matrix_with(lesson_entry("[" + file_json("ex/gone.py", std::string(64, 'a')) + ", " +
                                                file_json("ex/lesson_helpers.py", sha256_hex(k_helpers)) + "]"));
  auto gone = resolve_script(extra, "lesson");
  ASSERT_TRUE(gone.ok()) << gone.error().message;
  EXPECT_EQ(gone->state, ReviewState::stale_digest);
  EXPECT_NE(gone->explanation().find("no longer brings its course file ex/gone.py"), std::string::npos)
      << gone->explanation();
}

TEST_F(MatrixTest, DeclaredFilesAreStagedAndPinned) {
  write("ex/lesson.py", k_lesson);
  write("ex/lesson_helpers.py", k_helpers);
  write("ex/points.csv", "1,2\n");
  const std::string helpers = file_json("ex/lesson_helpers.py", sha256_hex(k_helpers));
  const Matrix matrix =
      matrix_with(lesson_entry("[" + helpers + ", " + file_json("ex/points.csv", sha256_hex("1,2\n"), true) + "]"));
  auto status = resolve_script(matrix, "lesson");
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(status->state, ReviewState::reviewed) << status->explanation();
  ASSERT_EQ(status->files.size(), 2U);
  EXPECT_EQ(status->files[1].staged, "points.csv");
  EXPECT_TRUE(status->files[1].declared);
  // Changed, missing, or never pinned: stale, each saying so.
  write("ex/points.csv", "3,4\n");
  EXPECT_NE(resolve_script(matrix, "lesson")->explanation().find("its course file ex/points.csv changed"),
            std::string::npos);
  fs::remove(m_root / "ex/points.csv");
  EXPECT_NE(resolve_script(matrix, "lesson")->explanation().find("its course file ex/points.csv is missing"),
            std::string::npos);
  write("ex/points.csv", "1,2\n");
  const Matrix unpinned = matrix_with(lesson_entry("[" + helpers + ", " + file_json("ex/points.csv", "", true) + "]"));
  auto status_unpinned = resolve_script(unpinned, "lesson");
  EXPECT_EQ(status_unpinned->state, ReviewState::stale_digest);
  EXPECT_NE(status_unpinned->explanation().find("the digest of its course file ex/points.csv is not recorded"),
            std::string::npos);
}

TEST_F(MatrixTest, HelpersAreNotScripts) {
  write("ex/lesson.py", k_lesson);
  write("ex/lesson_helpers.py", k_helpers);
  fs::create_directories(m_root / "ex/lib");
  write("ex/lib/__init__.py", "");
  write("ex/lib/more.py", "x = 1\n");
  write("execution-matrix.json", R"({"version": 1, "exercises_dir": "ex", "helpers": ["ex/lesson_helpers.py", "ex/lib/"], "scripts": {}})");
  auto matrix = load_matrix_file((m_root / "execution-matrix.json").string());
  ASSERT_TRUE(matrix.ok()) << matrix.error().message;
  EXPECT_TRUE(matrix->is_helper("lesson_helpers.py"));
  EXPECT_TRUE(matrix->is_helper("lib/more.py"));
  EXPECT_FALSE(matrix->is_helper("lesson.py"));
  EXPECT_FALSE(matrix->is_helper("library.py"));
  auto status = resolve_script(*matrix, "lesson_helpers");
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_TRUE(status->helper);
  EXPECT_FALSE(status->route_class());
  EXPECT_NE(status->explanation().find("'lesson_helpers' is a helper (the matrix's \"helpers\" name"),
            std::string::npos)
      << status->explanation();
  EXPECT_FALSE(resolve_script(*matrix, "lesson")->helper);
}

TEST(Matrix, FilesAndHelpersRoundTripInCanonicalOrder) {
  const std::string sha(64, 'c');
  const std::string text = R"({"scripts": {"lesson": {"note": "n", "files": [{"declared": true, "path": "ex/data.csv", "sha256": ")" +
                           sha + R"("}, {"path": "ex/h.py"}], "overrides": [{"rule": "devices-cpu", "reason": "r", "file": "h.py", "line": 4}], "sha256": ")" +
                           sha + R"(", "class": "cpu-only"}}, "helpers": ["ex/h.py", "ex/lib/"], "exercises_dir": "ex", "version": 1})";
  auto matrix = parse_matrix(text, "m.json");
  ASSERT_TRUE(matrix.ok()) << matrix.error().message;
  const MatrixEntry& entry = *matrix->find("lesson");
  ASSERT_EQ(entry.files.size(), 2U);
  EXPECT_EQ(entry.files[0], (MatrixFile{"ex/data.csv", sha, true}));
  EXPECT_EQ(entry.files[1], (MatrixFile{"ex/h.py", "", false}));
  EXPECT_EQ(entry.overrides.at(0).file, "h.py");
  EXPECT_EQ(matrix->helpers, (std::vector<std::string>{"ex/h.py", "ex/lib/"}));
  EXPECT_TRUE(matrix->extra.empty());
  EXPECT_EQ(serialize_matrix(*matrix), R"({
  "version": 1,
  "exercises_dir": "ex",
  "helpers": [
    "ex/h.py",
    "ex/lib/"
  ],
  "scripts": {
    "lesson": {
      "class": "cpu-only",
      "sha256": ")" + sha + R"(",
      "files": [
        {
          "path": "ex/data.csv",
          "sha256": ")" + sha + R"(",
          "declared": true
        },
        {
          "path": "ex/h.py"
        }
      ],
      "note": "n",
      "overrides": [
        {
          "rule": "devices-cpu",
          "line": 4,
          "file": "h.py",
          "reason": "r"
        }
      ]
    }
  }
}
)");
}

// Overrides are read into their typed form, and written back as the file had them: a missing
// marker's "rule" is "missing:<marker>" on disk, its name and OverrideOf::missing_marker in memory.
TEST(Matrix, OverridesOfMissingMarkersAreTypedAndWrittenAsBefore) {
  const std::string sha(64, 'c');
  const std::string text = R"({"version": 1, "exercises_dir": "ex", "scripts": {"lesson": {"class": "multi-host-qualified", "sha256": ")" +
                           sha + R"(", "overrides": [{"rule": "missing:per-process data", "line": 0, "reason": "r"}, )" +
                           R"({"rule": "devices-cpu", "line": 3, "reason": "s"}]}}})";
  const auto matrix = parse_matrix(text, "m.json");
  ASSERT_TRUE(matrix.ok()) << matrix.error().message;
  const auto& overrides = matrix->find("lesson")->overrides;
  ASSERT_EQ(overrides.size(), 2U);
  EXPECT_EQ(overrides[0], (EvidenceOverride{"per-process data", 0, "r", "", OverrideOf::missing_marker}));
  EXPECT_EQ(overrides[1], (EvidenceOverride{"devices-cpu", 3, "s", "", OverrideOf::evidence}));
  const std::string written = serialize_matrix(*matrix);
  EXPECT_NE(written.find(R"("rule": "missing:per-process data")"), std::string::npos) << written;
  EXPECT_NE(written.find(R"("rule": "devices-cpu")"), std::string::npos) << written;
}

TEST(Matrix, FilesAndHelpersPathsAreChecked) {
  const std::string sha(64, 'c');
  const auto with = [&](const std::string& files, const std::string& helpers = "[]", const std::string& dir = "ex") {
    return R"({"version": 1, "exercises_dir": ")" + dir + R"(", "helpers": )" + helpers +
           R"(, "scripts": {"lesson": {"class": "cpu-only", "sha256": ")" + sha + R"(", "files": )" + files + "}}}";
  };
  const std::vector<std::pair<std::string, std::string>> bad = {
      {with(R"([{"path": "other/h.py"}])"), "'other/h.py' is not in the exercises folder 'ex'"},
      {with(R"([{"path": "ex/../h.py"}])"), "must be a path relative to the course folder, in its plain form"},
      {with(R"([{"path": "/ex/h.py"}])"), "must be a path relative to the course folder"},
      {with(R"([{"path": "ex//h.py"}])"), "in its plain form"},
      {with(R"([{"path": "ex/h.py/"}])"), "in its plain form"},
      {with(R"([{"path": "ex/h.py"}, {"path": "ex/h.py"}])"), "'ex/h.py' is listed twice"},
      {with(R"([{"path": "ex/lesson.py"}])"), "'ex/lesson.py' is the script itself"},
      {with(R"([{"path": "ex/h.py", "sha256": "x"}])"), "\"sha256\" must be 64 lower-case hex digits"},
      {with(R"([{"path": "ex/h.py", "declared": "yes"}])"), "declared"},
      {with(R"(["ex/h.py"])"), "file"},
      {with("[]", R"(["ex/lesson.py"])"), "'ex/lesson.py' is the file of script 'lesson'"},
      {with("[]", R"(["ex/"])"), "\"helpers\": 'ex/' is not in the exercises folder"},
      {R"({"version": 1, "exercises_dir": "ex", "helpers": ["ex/sub/"], "scripts": {"sub/lesson": {"class": "cpu-only", "sha256": ")" +
           sha + R"("}}})",
       "'ex/sub/' holds the file of script 'sub/lesson'"},
      {with("[]", R"(["lib/h.py"])"), "\"helpers\": 'lib/h.py' is not in the exercises folder"},
      {with("[]", R"([3])"), "\"helpers\" holds paths"},
      {with("[]", R"({})"), "helpers"},
  };
  for (const auto& [text, part] : bad) {
    const auto matrix = parse_matrix(text, "m.json");
    ASSERT_FALSE(matrix.ok()) << text;
    EXPECT_EQ(matrix.error().code, ExitCode::config);
    EXPECT_NE(matrix.error().message.find(part), std::string::npos) << text << "\n" << matrix.error().message;
  }
  // The exercises folder written another way, or the course folder itself.
  EXPECT_TRUE(parse_matrix(with(R"([{"path": "ex/h.py"}])", "[]", "./ex/"), "m.json").ok());
  auto top = parse_matrix(with(R"([{"path": "h.py"}])", R"(["lib/"])", "."), "m.json");
  ASSERT_TRUE(top.ok()) << top.error().message;
  EXPECT_EQ(top->course_path("h.py"), "h.py");
  EXPECT_TRUE(top->is_helper("lib/x.py"));
}

} // namespace
} // namespace tpulaunch
