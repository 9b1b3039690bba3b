// Reading input files (src/util/text_file.cpp): whole files in one piece, nothing that is not a regular
// file ever read, and read_file_nofollow telling a symlink, a missing path and a FIFO apart
// without following or blocking on any of them.
#include "tpulaunch/util/text_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "support/temp_folder.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

class TextFileTest : public ::testing::Test {
protected:
  std::string write(const std::string& name, const std::string& content) {
    const auto path = (m_root / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  test_support::TempFolder m_folder{"text-file"};
  const fs::path& m_root = m_folder.path();
};

TEST_F(TextFileTest, ReadsAWholeRegularFileOfAnySizeUpToTheLimit) {
  for (const std::size_t size :
       {std::size_t{0}, std::size_t{1}, std::size_t{4095}, std::size_t{4096}, std::size_t{70000}}) {
    const std::string content(size, 'x');
    const auto path = write("f.py", content);
    auto text = read_text_file(path, "script");
    ASSERT_TRUE(text) << size;
    EXPECT_EQ(*text, content);
    auto file = read_file_nofollow(path, "script", k_max_script_bytes);
    ASSERT_TRUE(file) << size;
    EXPECT_EQ(file->kind, FileKind::regular);
    EXPECT_EQ(file->size, size);
    EXPECT_EQ(file->text, content);
  }
}

TEST_F(TextFileTest, ALargerFileIsRefusedWithItsSizeAndNeverRead) {
  const auto path = write("big.py", std::string(100, 'x'));
  auto text = read_text_file(path, "script", 99);
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("100 bytes, more than the 99"), std::string::npos) << text.error().message;
  auto file = read_file_nofollow(path, "script", 99);
  ASSERT_TRUE(file);
  EXPECT_EQ(file->kind, FileKind::regular);
  EXPECT_EQ(file->size, 100U);
  EXPECT_TRUE(file->text.empty());
}

TEST_F(TextFileTest, NoFollowReportsASymlinkInsteadOfReadingWhereItLeads) {
  const auto target = write("target.py", "print('elsewhere')\n");
  const auto link = (m_root / "link.py").string();
  fs::create_symlink(target, link);
  auto file = read_file_nofollow(link, "script", k_max_script_bytes);
  ASSERT_TRUE(file);
  EXPECT_EQ(file->kind, FileKind::symlink);
  EXPECT_TRUE(file->text.empty());
  // read_text_file follows it, as it does for a catalog or matrix named on the command line.
  EXPECT_EQ(read_text_file(link, "matrix").value(), "print('elsewhere')\n");
}

TEST_F(TextFileTest, NoFollowReportsAMissingPathAndAMissingFolder) {
  for (const auto& path :
       {(m_root / "absent.py").string(), (m_root / "absent" / "x.py").string(), write("plain", "x") + "/x.py"}) {
    auto file = read_file_nofollow(path, "script", k_max_script_bytes);
    ASSERT_TRUE(file) << path;
    EXPECT_EQ(file->kind, FileKind::missing) << path;
  }
  EXPECT_FALSE(read_text_file((m_root / "absent.py").string(), "script"));
}

TEST_F(TextFileTest, AFifoOrAFolderIsNeverReadAndNeverWaitedOn) {
  const auto fifo = (m_root / "fifo.py").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto folder = (m_root / "folder.py").string();
  fs::create_directory(folder);
  for (const auto& path : {fifo, folder}) {
    auto file = read_file_nofollow(path, "script", k_max_script_bytes); // would hang here if it waited for a writer
    ASSERT_TRUE(file) << path;
    EXPECT_EQ(file->kind, FileKind::other) << path;
    auto text = read_text_file(path, "script");
    ASSERT_FALSE(text) << path;
    EXPECT_NE(text.error().message.find(path == fifo ? "not a regular file" : "is a directory"), std::string::npos)
        << text.error().message;
  }
}

TEST_F(TextFileTest, APathThatCannotBeOpenedIsAnErrorNamingIt) {
  // A name longer than any file system allows: open(2) fails with ENAMETOOLONG, as root too.
  const auto path = (m_root / (std::string(300, 'n') + ".py")).string();
  auto file = read_file_nofollow(path, "script", k_max_script_bytes);
  ASSERT_FALSE(file);
  const std::string& message = file.error().message;
  EXPECT_EQ(message.rfind("cannot read script '" + m_root.string() + "/nnn", 0), 0U) << message;
  EXPECT_NE(message.find("': File name too long"), std::string::npos) << message;
}

} // namespace
} // namespace tpulaunch
