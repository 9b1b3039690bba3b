// `review` under failure, against the core (matrix_file.hpp): a read-only matrix, a full disk
// (simulated with RLIMIT_FSIZE), two writers at once, and a writer killed between write and
// rename. After each, the original must be intact (or hold every entry that was reported
// written), nothing half-written may be left as the matrix, and the next update must work.
#include "tpulaunch/matrix/matrix_file.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/temp_folder.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view k_matrix = R"({
  "version": 1,
  "exercises_dir": "public/exercises",
  "scripts": {
    "base": {
      "class": "cpu-only",
      "sha256": "0000000000000000000000000000000000000000000000000000000000000000",
      "reviewed_by": "course-staff"
    }
  }
}
)";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// The pid a lock file records (its first line).
std::string pid_of_lock(const fs::path& lock) {
  const std::string text = read_file(lock);
  return text.substr(0, text.find('\n'));
}

void write_file(const fs::path& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
}

MatrixEntry entry(const std::string& id, std::string note = "") {
  MatrixEntry e;
  e.id = id;
  e.class_name = "single-host-compatible";
  e.script_class = ScriptClass::single_host_compatible;
  e.sha256 = std::string(64, 'a');
  e.reviewed_by = "tester";
  e.note = std::move(note);
  return e;
}

std::function<Status(Matrix&)> add(const std::string& id, std::string note = "") {
  return [id, note](Matrix& m) -> Status {
    m.scripts[id] = entry(id, note);
    return Ok{};
  };
}

// Runs `body` in a forked child and returns its pid; the child's exit status is body's result.
pid_t spawn(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int code = 100;
    try {
      code = body();
    } catch (...) {
      code = 101;
    }
    ::_exit(code);
  }
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

class MatrixFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    m_path = (m_dir / "execution-matrix.json").string();
    write_file(m_path, k_matrix);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(m_path, fs::perms::owner_read | fs::perms::owner_write, ec); // so it can be removed
  }

  // Everything in the folder besides the matrix itself (temp files, lock files).
  [[nodiscard]] std::vector<std::string> leftovers() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(m_dir)) {
      if (e.path().filename() != "execution-matrix.json") {
        out.push_back(e.path().filename().string());
      }
    }
    return out;
  }

  [[nodiscard]] std::vector<std::string> temp_files() const {
    std::vector<std::string> out;
    for (const auto& name : leftovers()) {
      if (name.starts_with(".execution-matrix.json.tmp.")) {
        out.push_back(name);
      }
    }
    return out;
  }

  test_support::TempFolder m_folder{"matrix-file"};
  const fs::path& m_dir = m_folder.path();
  std::string m_path;
};

TEST_F(MatrixFileTest, InitNeedsAnExercisesFolderThatExistsAndWritesNothingOtherwise) {
  const std::string path = (m_dir / "new" / "execution-matrix.json").string();
  fs::create_directories(m_dir / "new");
  auto missing = init_matrix_file(path, "public/exercises");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ExitCode::usage);
  EXPECT_NE(missing.error().message.find("the exercises folder " + (m_dir / "new" / "public/exercises").string() +
                                         " does not exist"),
            std::string::npos)
      << missing.error().message;
  EXPECT_FALSE(fs::exists(path));
  fs::create_directories(m_dir / "new" / "public" / "exercises");
  auto made = init_matrix_file(path, "public/exercises");
  ASSERT_TRUE(made.ok()) << made.error().message;
  EXPECT_TRUE(fs::exists(path));
}

TEST_F(MatrixFileTest, ReadOnlyMatrixIsRefusedAndLeftIntact) {
  ASSERT_EQ(::chmod(m_path.c_str(), 0444), 0);
  bool edited = false;
  auto result = update_matrix_file(m_path, [&](Matrix& m) -> Status {
    edited = true;
    m.scripts["new"] = entry("new");
    return Ok{};
  });
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ExitCode::failure);
  EXPECT_NE(result.error().message.find(m_path), std::string::npos) << result.error().message;
  EXPECT_NE(result.error().message.find("read-only"), std::string::npos) << result.error().message;
  EXPECT_FALSE(edited);
  EXPECT_EQ(read_file(m_path), k_matrix);
  EXPECT_EQ(fs::status(m_path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  EXPECT_TRUE(leftovers().empty());
}

TEST_F(MatrixFileTest, FullDiskLeavesTheOriginalAndNoTempFile) {
  // A file-size limit makes write() fail with EFBIG once the temp file reaches it, as a full
  // disk fails with ENOSPC; in a child, so the limit does not leak into the other tests.
  const std::string note(256 * 1024, 'n');
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t pid = spawn([&]() {
    ::close(pipe_fds[0]);
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{64 * 1024, 64 * 1024};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) {
      return 10;
    }
    auto result = update_matrix_file(m_path, add("big", note));
    const std::string message = result.ok() ? std::string("ok") : result.error().message;
    (void)!::write(pipe_fds[1], message.data(), message.size());
    ::close(pipe_fds[1]);
    return result.ok() ? 11 : (result.error().code == ExitCode::failure ? 0 : 12);
  });
  ::close(pipe_fds[1]);
  std::string message;
  char buffer[512];
  for (ssize_t n = 0; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) {
    message.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  ASSERT_EQ(wait_for(pid), 0) << message;
  EXPECT_NE(message.find("cannot write"), std::string::npos) << message;
  EXPECT_NE(message.find("the original is unchanged"), std::string::npos) << message;
  EXPECT_EQ(read_file(m_path), k_matrix);
  EXPECT_TRUE(leftovers().empty()) << fmt::format("{}", fmt::join(leftovers(), ", "));

  // Once there is room again, the same update lands.
  auto again = update_matrix_file(m_path, add("big", note));
  ASSERT_TRUE(again.ok()) << again.error().message;
  auto matrix = load_matrix_file(m_path);
  ASSERT_TRUE(matrix.ok());
  ASSERT_NE(matrix->find("big"), nullptr);
  EXPECT_EQ(matrix->find("big")->note, note);
}

TEST_F(MatrixFileTest, WriteFileAtomicallyUnderAFileSizeLimitKeepsTheOriginal) {
  const pid_t pid = spawn([&]() {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{4096, 4096};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) {
      return 10;
    }
    const Status status = write_file_atomically(m_path, std::string(100000, 'x'));
    return status.ok() ? 11 : 0;
  });
  ASSERT_EQ(wait_for(pid), 0);
  EXPECT_EQ(read_file(m_path), k_matrix);
  EXPECT_TRUE(leftovers().empty());
}

// Child exit codes for the concurrent writers.
constexpr int k_wrote = 0;
constexpr int k_locked_out = 1;
constexpr int k_other_error = 2;

int write_entry(const std::string& path, const std::string& id, int start_fd, std::chrono::milliseconds wait) {
  char go = 0;
  if (::read(start_fd, &go, 1) != 1) { // both start together
    return 20;
  }
  UpdateOptions options;
  options.lock_wait = wait;
  auto result = update_matrix_file(
      path,
      [&](Matrix& m) -> Status {
        ::usleep(2000); // widen the read-modify-write window (not a timing assertion)
        m.scripts[id] = entry(id);
        return Ok{};
      },
      options);
  if (result.ok()) {
    return result->find(id) != nullptr ? k_wrote : k_other_error;
  }
  return result.error().message.find("is locked by another review") != std::string::npos ? k_locked_out : k_other_error;
}

void race(const std::string& path, std::chrono::milliseconds wait, int round, int& refusals) {
  int start[2];
  ASSERT_EQ(::pipe(start), 0);
  const std::string a = fmt::format("writer-a-{}", round);
  const std::string b = fmt::format("writer-b-{}", round);
  const pid_t pa = spawn([&]() { return write_entry(path, a, start[0], wait); });
  const pid_t pb = spawn([&]() { return write_entry(path, b, start[0], wait); });
  ::close(start[0]);
  ASSERT_EQ(::write(start[1], "gg", 2), 2);
  ::close(start[1]);
  const int ra = wait_for(pa);
  const int rb = wait_for(pb);
  ASSERT_TRUE(ra == k_wrote || ra == k_locked_out) << "round " << round << ": writer a exited " << ra;
  ASSERT_TRUE(rb == k_wrote || rb == k_locked_out) << "round " << round << ": writer b exited " << rb;
  ASSERT_TRUE(ra == k_wrote || rb == k_wrote) << "round " << round << ": both were locked out";
  refusals += (ra == k_locked_out ? 1 : 0) + (rb == k_locked_out ? 1 : 0);
  auto matrix = load_matrix_file(path);
  ASSERT_TRUE(matrix.ok()) << "round " << round << ": " << matrix.error().message;
  // Never a lost entry: whoever reported success is in the file, with everything from before.
  EXPECT_EQ(matrix->find(a) != nullptr, ra == k_wrote) << "round " << round;
  EXPECT_EQ(matrix->find(b) != nullptr, rb == k_wrote) << "round " << round;
  EXPECT_NE(matrix->find("base"), nullptr);
  for (int earlier = 0; earlier < round; ++earlier) {
    const bool had_a = matrix->find(fmt::format("writer-a-{}", earlier)) != nullptr;
    const bool had_b = matrix->find(fmt::format("writer-b-{}", earlier)) != nullptr;
    ASSERT_TRUE(had_a || had_b) << "round " << round << " lost round " << earlier << "'s entries";
  }
}

TEST_F(MatrixFileTest, TwoWritersAtOnceNeverLoseAnEntry) {
  int refusals = 0;
  for (int round = 0; round < 50; ++round) {
    race(m_path, std::chrono::milliseconds(2000), round, refusals);
    ASSERT_TRUE(leftovers().empty()) << "round " << round << ": " << fmt::format("{}", fmt::join(leftovers(), ", "));
  }
  // With a 2 s wait each writer gets its turn: every entry of every round landed.
  auto matrix = load_matrix_file(m_path);
  ASSERT_TRUE(matrix.ok());
  EXPECT_EQ(matrix->scripts.size(), 1U + 2U * 50U);
  EXPECT_EQ(refusals, 0);
}

TEST_F(MatrixFileTest, TwoWritersWithoutWaitingAreRefusedCleanly) {
  // No wait: the second writer is refused with the lock message, or gets the lock after the
  // first let go; either way the file parses and holds exactly the reported entries.
  int refusals = 0;
  for (int round = 0; round < 50; ++round) {
    race(m_path, std::chrono::milliseconds(0), round, refusals);
    ASSERT_TRUE(leftovers().empty()) << "round " << round;
  }
  RecordProperty("refusals", refusals);
}

TEST_F(MatrixFileTest, KillBetweenWriteAndRenameKeepsTheOriginal) {
  // The child writes a large matrix; the moment its temp file appears the child is stopped and,
  // if the rename has not happened yet, killed. Retried until a kill lands in that window.
  const std::string note(16 * 1024 * 1024, 'k');
  struct stat original {};
  ASSERT_EQ(::stat(m_path.c_str(), &original), 0);
  bool caught = false;
  for (int attempt = 0; attempt < 20 && !caught; ++attempt) {
    const pid_t pid = spawn([&]() { return update_matrix_file(m_path, add("killed", note)).ok() ? 0 : 1; });
    while (temp_files().empty()) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        break; // finished before we saw its temp file
      }
    }
    ::kill(pid, SIGSTOP);
    struct stat now {};
    ASSERT_EQ(::stat(m_path.c_str(), &now), 0);
    caught = now.st_ino == original.st_ino && !temp_files().empty();
    ::kill(pid, SIGKILL);
    wait_for(pid);
    if (!caught) {
      // The write won the race: put the original back and try again.
      std::error_code ec;
      for (const auto& name : leftovers()) {
        fs::remove(m_dir / name, ec);
      }
      write_file(m_path, k_matrix);
      ASSERT_EQ(::stat(m_path.c_str(), &original), 0);
    }
  }
  ASSERT_TRUE(caught) << "never managed to kill the writer between creating its temp file and the rename";

  // The original parses and is byte for byte what it was.
  EXPECT_EQ(read_file(m_path), k_matrix);
  auto matrix = load_matrix_file(m_path);
  ASSERT_TRUE(matrix.ok()) << matrix.error().message;
  EXPECT_EQ(matrix->find("killed"), nullptr);

  // The killed review leaves its lock. The next review is refused with a message that says which
  // file to remove, instead of hanging or writing over a lock it does not hold.
  const std::string lock = m_path + ".lock";
  ASSERT_TRUE(fs::exists(lock));
  UpdateOptions quick;
  quick.lock_wait = std::chrono::milliseconds(50);
  auto blocked = update_matrix_file(m_path, add("next"), quick);
  ASSERT_FALSE(blocked.ok());
  EXPECT_EQ(blocked.error().code, ExitCode::failure);
  EXPECT_NE(blocked.error().message.find(lock), std::string::npos) << blocked.error().message;
  EXPECT_NE(blocked.error().message.find("remove the lock"), std::string::npos) << blocked.error().message;
  // The lock names the killed process, and the message says it is gone.
  EXPECT_NE(blocked.error().message.find(fmt::format("process {}, no longer running", pid_of_lock(lock))),
            std::string::npos)
      << blocked.error().message;
  EXPECT_EQ(read_file(m_path), k_matrix);

  // Once the stale lock is removed, the next update works, and removes the killed writer's
  // temp file, which only a lock holder can have written.
  ASSERT_FALSE(temp_files().empty());
  ASSERT_TRUE(fs::remove(lock));
  auto next = update_matrix_file(m_path, add("next"));
  ASSERT_TRUE(next.ok()) << next.error().message;
  auto after = load_matrix_file(m_path);
  ASSERT_TRUE(after.ok());
  EXPECT_NE(after->find("next"), nullptr);
  EXPECT_NE(after->find("base"), nullptr);
  EXPECT_FALSE(fs::exists(lock));
  EXPECT_TRUE(temp_files().empty());
}

TEST_F(MatrixFileTest, LockHeldByARunningReviewSaysSo) {
  // This process stands for a review that is still running.
  write_file(m_path + ".lock", std::to_string(::getpid()) + "\n");
  UpdateOptions quick;
  quick.lock_wait = std::chrono::milliseconds(0);
  auto blocked = update_matrix_file(m_path, add("next"), quick);
  ASSERT_FALSE(blocked.ok());
  EXPECT_EQ(blocked.error().code, ExitCode::failure);
  EXPECT_NE(blocked.error().message.find(fmt::format("process {}, still running", ::getpid())), std::string::npos)
      << blocked.error().message;
  EXPECT_EQ(blocked.error().message.find("remove"), std::string::npos) << blocked.error().message;

  // A lock without a readable pid still names the file to remove.
  write_file(m_path + ".lock", "garbage");
  blocked = update_matrix_file(m_path, add("next"), quick);
  ASSERT_FALSE(blocked.ok());
  EXPECT_NE(blocked.error().message.find(m_path + ".lock exists"), std::string::npos) << blocked.error().message;
  EXPECT_EQ(read_file(m_path), k_matrix);
}

TEST_F(MatrixFileTest, FailedEditWritesNothing) {
  auto result = update_matrix_file(m_path, [](Matrix& m) -> Status {
    m.scripts["half"] = entry("half");
    return usage_error("no");
  });
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ExitCode::usage);
  EXPECT_EQ(read_file(m_path), k_matrix);
  EXPECT_TRUE(leftovers().empty());
}

TEST_F(MatrixFileTest, MalformedMatrixIsReportedBeforeAnyLock) {
  write_file(m_path, "{\"version\": 1,");
  auto result = update_matrix_file(m_path, add("x"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ExitCode::config);
  EXPECT_EQ(read_file(m_path), "{\"version\": 1,");
  EXPECT_TRUE(leftovers().empty());
}

} // namespace
} // namespace tpulaunch
