// The exercises folder (src/matrix/exercises.cpp): what list_exercises finds in it, through every real
// subfolder, and what it reports instead of skipping silently.
#include "tpulaunch/matrix/exercises.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/temp_folder.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

class ExercisesTest : public ::testing::Test {
protected:
  void SetUp() override {
    fs::create_directories(m_root / "ex");
    m_matrix.base_dir = m_root.string();
    m_matrix.exercises_dir = "ex";
    m_matrix.origin = (m_root / "execution-matrix.json").string();
  }
  void file(const std::string& relative) {
    fs::create_directories((m_root / "ex" / relative).parent_path());
    std::ofstream(m_root / "ex" / relative) << "print(1)\n";
  }
  [[nodiscard]] std::string shown(const std::string& relative) const { return (m_root / "ex" / relative).string(); }

  test_support::TempFolder m_folder{"exercises"};
  const fs::path& m_root = m_folder.path();
  Matrix m_matrix;
};

TEST_F(ExercisesTest, ListsEveryScriptThroughSubfoldersSortedById) {
  for (const char* name : {"b.py", "a.py", "advanced/sub_lesson.py", "advanced/deeper/x.py", "notes.txt", ".py",
                           "data.py.bak", "a.tar.py"}) {
    file(name);
  }
  fs::create_directories(m_root / "ex" / "folder.py"); // a folder, whatever its name
  fs::create_symlink("nowhere.py", m_root / "ex" / "dangling.py");
  ASSERT_EQ(::mkfifo((m_root / "ex" / "fifo.py").c_str(), 0600), 0);
  auto listing = list_exercises(m_matrix);
  ASSERT_TRUE(listing.ok()) << listing.error().message;
  // A dangling symlink and a FIFO are listed as scripts: reading them says what they are.
  EXPECT_EQ(listing->ids, (std::vector<std::string>{"a", "a.tar", "advanced/deeper/x", "advanced/sub_lesson", "b",
                                                    "dangling", "fifo"}));
  EXPECT_TRUE(listing->invalid_names.empty());
  EXPECT_TRUE(listing->linked_folders.empty());
}

TEST_F(ExercisesTest, NamesThatCanNeverBeReviewedAndLinkedFoldersAreReported) {
  file("good.py");
  file("bad name.py");
  file("..py");
  file(".drafts/hidden.py"); // not searched: no id can start with its folder
  file("-x/y.py");
  fs::create_directories(m_root / "elsewhere");
  std::ofstream(m_root / "elsewhere" / "z.py") << "print(2)\n";
  fs::create_directory_symlink(m_root / "elsewhere", m_root / "ex" / "linked");
  auto listing = list_exercises(m_matrix);
  ASSERT_TRUE(listing.ok()) << listing.error().message;
  EXPECT_EQ(listing->ids, (std::vector<std::string>{"good"}));
  EXPECT_EQ(listing->invalid_names,
            (std::vector<std::string>{shown("-x"), shown("..py"), shown(".drafts"), shown("bad name.py")}));
  EXPECT_EQ(listing->linked_folders, (std::vector<std::string>{shown("linked")}));
}

TEST_F(ExercisesTest, AMissingFolderIsAConfigErrorNamingTheMatrix) {
  m_matrix.exercises_dir = "absent";
  auto listing = list_exercises(m_matrix);
  ASSERT_FALSE(listing.ok());
  EXPECT_EQ(listing.error().code, ExitCode::config);
  EXPECT_EQ(listing.error().message, "cannot read the exercises folder '" + (m_root / "absent").string() +
                                         "' named by " + m_matrix.origin + ": No such file or directory");
}

TEST_F(ExercisesTest, PythonFilesBelowAFolderTakeEverySubfolderButHiddenAndLinkedOnes) {
  for (const char* name : {"b.py", "a.py", "advanced/sub_lesson.py", "advanced/deeper/x.py", "notes.txt",
                           "bad name.py", ".drafts/hidden.py", ".venv/lib/site.py"}) {
    file(name);
  }
  fs::create_directories(m_root / "elsewhere");
  std::ofstream(m_root / "elsewhere" / "z.py") << "print(2)\n";
  fs::create_directory_symlink(m_root / "elsewhere", m_root / "ex" / "linked");
  const std::string folder = (m_root / "ex").string();
  auto files = python_files_below(folder);
  ASSERT_TRUE(files.ok()) << files.error().message;
  EXPECT_EQ(files->files,
            (std::vector<std::string>{folder + "/a.py", folder + "/advanced/deeper/x.py",
                                      folder + "/advanced/sub_lesson.py", folder + "/b.py", folder + "/bad name.py"}));
  EXPECT_TRUE(files->unreadable.empty());
  fs::create_directories(m_root / "empty" / "sub");
  auto none = python_files_below((m_root / "empty").string());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, ExitCode::usage);
  EXPECT_NE(none.error().message.find("no .py file in the folder"), std::string::npos) << none.error().message;
}

TEST_F(ExercisesTest, PythonFilesBelowAFolderListEveryEntryNamedPyForItsReaderToJudge) {
  file("a.py");
  const fs::path fifo = m_root / "ex" / "pipe.py";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink(m_root / "nowhere.py", m_root / "ex" / "dangling.py");
  const std::string folder = (m_root / "ex").string();
  auto files = python_files_below(folder);
  ASSERT_TRUE(files.ok()) << files.error().message;
  // Not only regular files: classify reads each one and reports what it cannot read, as check does.
  EXPECT_EQ(files->files, (std::vector<std::string>{folder + "/a.py", folder + "/dangling.py", folder + "/pipe.py"}));
}

TEST(StagedScript, KeepsTheSubfolderAndNamesTheCopyAfterTheLastPart) {
  const StagedScript top = staged_script("tpu-hello");
  EXPECT_EQ(top.file, "tpu-hello.py");
  EXPECT_EQ(top.folder, "");
  EXPECT_EQ(top.name, "tpu-hello");
  const StagedScript nested = staged_script("advanced/sub_lesson");
  EXPECT_EQ(nested.file, "advanced/sub_lesson.py");
  EXPECT_EQ(nested.folder, "advanced/");
  EXPECT_EQ(nested.name, "sub_lesson");
}

} // namespace
} // namespace tpulaunch
