#include "tpulaunch/run/stage.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tpulaunch/remote/remote_program.hpp"
#include "tpulaunch/util/sha256.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

class StageTest : public ::testing::Test {
protected:
  void SetUp() override {
    m_root = fs::temp_directory_path() / ("tpulaunch-stage-" + std::to_string(::getpid()) + "-" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_root);
    fs::create_directories(m_root / "course/public/exercises/common");
    write(m_root / "course/public/exercises/lesson.py", "import common.mesh\n");
    write(m_root / "course/public/exercises/common/mesh.py", "MESH = 1\n");
    m_request.run_dir = (m_root / "course/tpu-runs/pod/lesson/r1").string();
    m_request.plan = PlanRecord{"lesson", "r1", std::string(64, 'a'), "v5litepod-16", 1, "", 0};
    m_request.guard_sha256 = run_guard_program().sha256;
    m_request.files = {file("public/exercises/lesson.py"), file("public/exercises/common/mesh.py")};
  }
  void TearDown() override { fs::remove_all(m_root); }

  static void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }
  static std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream out;
    out << in.rdbuf();
    return out.str();
  }
  StageFile file(const std::string& path) const {
    const fs::path local = m_root / "course" / path;
    return StageFile{local.string(), path, sha256_hex(read(local))};
  }
  fs::path staged() const { return fs::path(m_request.run_dir) / "stage/jax-tpu-lab/runs/lesson/r1/staged-aaaaaaaaaaaaaaaa"; }

  fs::path m_root;
  StageRequest m_request;
};

TEST_F(StageTest, TheStageFolderMirrorsTheWorkersRunFolderAndThePlanRecordSaysWhoseItIs) {
  auto written = write_stage(m_request);
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ(staged_folder(*written), "stage/jax-tpu-lab/runs/lesson/r1/staged-aaaaaaaaaaaaaaaa");
  EXPECT_EQ(read(staged() / "tpulaunch-run-guard.sh"), run_guard_program().text);
  EXPECT_EQ(read(staged() / "code/public/exercises/lesson.py"), "import common.mesh\n");
  EXPECT_EQ(read(staged() / "code/public/exercises/common/mesh.py"), "MESH = 1\n");
  EXPECT_EQ(read(staged() / "start"), written->start + "\n");
  auto record = parse_plan_record(read(fs::path(m_request.run_dir) / "plan.rec"), "plan.rec");
  ASSERT_TRUE(record.ok()) << record.error().message;
  EXPECT_EQ(record->plan_sha256, std::string(64, 'a'));
  EXPECT_EQ(record->start, written->start);
  // Written again (a plan pasted again): a new start token, the same files.
  auto again = write_stage(m_request);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->start, written->start);
  EXPECT_EQ(read(staged() / "start"), again->start + "\n");
}

TEST_F(StageTest, AFileThatChangedSinceThePlanIsRefusedAndNothingIsWritten) {
  write(m_root / "course/public/exercises/common/mesh.py", "MESH = 2\n");
  auto written = write_stage(m_request);
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.error().code, ExitCode::refused);
  EXPECT_NE(written.error().message.find("common/mesh.py changed since the plan was made"), std::string::npos)
      << written.error().message;
  EXPECT_FALSE(fs::exists(m_request.run_dir));
}

TEST_F(StageTest, AnotherGuardOrBadValuesAreRefused) {
  m_request.guard_sha256 = std::string(64, 'f');
  EXPECT_EQ(write_stage(m_request).error().code, ExitCode::refused);
  m_request.guard_sha256 = run_guard_program().sha256;
  m_request.files[1].path = "../escape.py";
  EXPECT_EQ(write_stage(m_request).error().code, ExitCode::usage);
  m_request.files[1].path = "/abs.py";
  EXPECT_EQ(write_stage(m_request).error().code, ExitCode::usage);
  m_request.files.pop_back();
  m_request.plan.plan_sha256 = "abc";
  EXPECT_EQ(write_stage(m_request).error().code, ExitCode::usage);
  EXPECT_FALSE(fs::exists(m_request.run_dir));
}

TEST_F(StageTest, TheDiscoveryProgramIsStagedAsCodeDiscoverPy) {
  m_request.files.clear();
  m_request.discovery = true;
  ASSERT_TRUE(write_stage(m_request).ok());
  EXPECT_EQ(read(staged() / "code/discover.py"), discovery_program().text);
}

} // namespace
} // namespace tpulaunch
