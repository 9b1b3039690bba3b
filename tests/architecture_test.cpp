// docs/architecture.md is the map of the house; these tests keep it true to the tree: one row per
// folder under src/ with the folders it uses and its size, no include cycles between folders, no
// file over 500 lines, and test folders that mirror the source folders.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

const fs::path source_dir{TPULAUNCH_SOURCE_DIR};

// Folders under tests/ that are not a source folder's unit tests: what each holds is said in
// docs/architecture.md. Add one here only for tests that do not belong to a single folder.
const std::set<std::string> test_folders_not_mirroring_src = {
    "bad-inputs",     // the table of bad command lines run by ctest
    "catalog-build",  // the build-time catalog generator refusing a malformed catalog
    "data",           // fixtures: courses, catalogs, matrices
    "e2e",            // end-to-end bash cases against the stand-in
    "gcloud-standin", // the Python gcloud stand-in
    "golden",         // rendered plans compared byte for byte
    "lexer_diff",     // the Python lexer compared with CPython's tokenize
    "real-gcloud",    // the harness that parses our commands with the real gcloud
    "real-kubectl",   // the real kubectl against a loopback Kubernetes API
    "support",        // helpers shared by the unit tests
    "tools",          // tests of tools/
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

long line_count(const fs::path& path) {
  const std::string text = read_file(path);
  return static_cast<long>(std::count(text.begin(), text.end(), '\n'));
}

std::vector<fs::path> files_in(const fs::path& folder) {
  std::vector<fs::path> files;
  if (!fs::is_directory(folder)) {
    return files;
  }
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    if (entry.is_regular_file()) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> src_folders() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(source_dir / "src")) {
    if (entry.is_directory()) {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// What one folder is: src/NAME/ and include/tpulaunch/NAME/ together.
struct Folder {
  long files = 0;
  long lines = 0;
  std::set<std::string> uses; // the other src folders whose headers it includes
};

std::map<std::string, Folder> measure_tree() {
  const std::vector<std::string> names = src_folders();
  const std::set<std::string> known(names.begin(), names.end());
  // #include "tpulaunch/<folder>/x.hpp", or "<folder>/x.hpp" for a header private to src/<folder>/.
  const std::regex include_line(R"(^\s*#\s*include\s*"(?:tpulaunch/)?([A-Za-z0-9_-]+)/)");
  std::map<std::string, Folder> tree;
  for (const std::string& name : names) {
    Folder& folder = tree[name];
    std::vector<fs::path> files = files_in(source_dir / "src" / name);
    const std::vector<fs::path> headers = files_in(source_dir / "include" / "tpulaunch" / name);
    files.insert(files.end(), headers.begin(), headers.end());
    for (const fs::path& file : files) {
      ++folder.files;
      folder.lines += line_count(file);
      std::istringstream text(read_file(file));
      std::string line;
      std::smatch match;
      while (std::getline(text, line)) {
        if (std::regex_search(line, match, include_line) && known.count(match[1].str()) != 0 &&
            match[1].str() != name) {
          folder.uses.insert(match[1].str());
        }
      }
    }
  }
  return tree;
}

TEST(Architecture, NoSourceFileIsOver500Lines) {
  const std::set<std::string> checked = {".cpp", ".hpp", ".bash", ".sh", ".py"};
  for (const char* root : {"src", "include"}) {
    for (const fs::path& file : files_in(source_dir / root)) {
      if (checked.count(file.extension().string()) == 0) {
        continue;
      }
      const long lines = line_count(file);
      const std::string relative = fs::relative(file, source_dir).generic_string();
      EXPECT_LE(lines, 500) << relative << " has " << lines
                            << " lines: split it by concept (issue 24: no file over 500 lines)";
    }
  }
}

// Shell code (the consteval `Code`) is a named constant, `constexpr Code k_name{"..."}`, never a
// `Code{"..."}` temporary inside a function: clang 14, which builds the fuzz targets, crashed
// generating one as a call argument (src/runs/calls.cpp), and names say what the code is for.
TEST(Architecture, ShellCodeIsANamedConstant) {
  const std::regex temporary(R"(\bCode\{")");
  const std::regex named(R"(^\s*(inline\s+)?(static\s+)?constexpr\s+Code\s+k_\w+\{")");
  for (const char* root : {"src", "include"}) {
    for (const fs::path& file : files_in(source_dir / root)) {
      if (file.extension() != ".cpp" && file.extension() != ".hpp") {
        continue;
      }
      std::istringstream text(read_file(file));
      std::string line;
      int number = 0;
      while (std::getline(text, line)) {
        ++number;
        EXPECT_FALSE(std::regex_search(line, temporary) && !std::regex_search(line, named))
            << fs::relative(file, source_dir).generic_string() << ":" << number << ": " << line;
      }
    }
  }
}

TEST(Architecture, FolderTableMatchesTheTree) {
  const std::string doc = read_file(source_dir / "docs" / "architecture.md");
  ASSERT_FALSE(doc.empty()) << "docs/architecture.md is missing";
  // | `src/NAME/` | concept | `a`, `b` (or —) | FILES | LINES |
  const std::regex row(R"(^\| `src/([A-Za-z0-9_-]+)/` \|[^|]*\| ([^|]*) \| (\d+) \| (\d+) \|\s*$)");
  const std::regex used_name("`([A-Za-z0-9_-]+)`");
  const std::map<std::string, Folder> tree = measure_tree();
  std::set<std::string> rows;
  std::istringstream text(doc);
  std::string line;
  std::smatch match;
  while (std::getline(text, line)) {
    if (!std::regex_match(line, match, row)) {
      continue;
    }
    const std::string name = match[1].str();
    rows.insert(name);
    const auto found = tree.find(name);
    if (found == tree.end()) {
      ADD_FAILURE() << "docs/architecture.md has a row for src/" << name
                    << "/ but there is no such folder: remove the row";
      continue;
    }
    const Folder& folder = found->second;
    std::set<std::string> documented;
    const std::string uses_cell = match[2].str();
    for (auto it = std::sregex_iterator(uses_cell.begin(), uses_cell.end(), used_name); it != std::sregex_iterator();
         ++it) {
      documented.insert((*it)[1].str());
    }
    EXPECT_EQ(documented, folder.uses)
        << "docs/architecture.md, row src/" << name << "/: the uses column should be "
        << (folder.uses.empty() ? std::string("—") : fmt::format("`{}`", fmt::join(folder.uses, "`, `")))
        << " (the folders whose headers src/" << name << "/ and include/tpulaunch/" << name << "/ include)";
    EXPECT_EQ(std::stol(match[3].str()), folder.files)
        << "docs/architecture.md, row src/" << name << "/: the files column should be " << folder.files
        << " (files in src/" << name << "/ and include/tpulaunch/" << name << "/)";
    const long documented_lines = std::stol(match[4].str());
    EXPECT_LE(std::abs(documented_lines - folder.lines) * 10, folder.lines)
        << "docs/architecture.md, row src/" << name << "/: the lines column says " << documented_lines
        << " but the folder has " << folder.lines << " lines (more than 10% apart): write " << folder.lines;
  }
  for (const auto& [name, folder] : tree) {
    EXPECT_EQ(rows.count(name), 1U) << "docs/architecture.md has no row for src/" << name
                                    << "/: add | `src/" << name << "/` | concept | uses | " << folder.files
                                    << " | " << folder.lines << " | to the folder table";
  }
}

// Depth-first search; returns the first cycle found as a path a -> b -> ... -> a.
bool find_cycle(const std::map<std::string, Folder>& tree, const std::string& name,
                std::map<std::string, int>& state, std::vector<std::string>& path) {
  state[name] = 1;
  path.push_back(name);
  for (const std::string& used : tree.at(name).uses) {
    if (state[used] == 1) {
      path.erase(path.begin(), std::find(path.begin(), path.end(), used));
      path.push_back(used);
      return true;
    }
    if (state[used] == 0 && find_cycle(tree, used, state, path)) {
      return true;
    }
  }
  path.pop_back();
  state[name] = 2;
  return false;
}

TEST(Architecture, NoIncludeCyclesBetweenFolders) {
  const std::map<std::string, Folder> tree = measure_tree();
  std::map<std::string, int> state;
  for (const auto& entry : tree) {
    std::vector<std::string> path;
    if (state[entry.first] == 0 && find_cycle(tree, entry.first, state, path)) {
      ADD_FAILURE() << "folders include each other in a cycle: " << fmt::format("{}", fmt::join(path, " -> "))
                    << ": move the shared header into the lower folder (or a new one) so the layers stay one-way";
      return;
    }
  }
}

TEST(Architecture, TestFoldersMirrorSourceFolders) {
  const std::vector<std::string> names = src_folders();
  const std::set<std::string> known(names.begin(), names.end());
  for (const auto& entry : fs::directory_iterator(source_dir / "tests")) {
    if (!entry.is_directory()) {
      continue;
    }
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(known.count(name) != 0 || test_folders_not_mirroring_src.count(name) != 0)
        << "tests/" << name << "/ is neither a source folder's tests (no src/" << name
        << "/) nor listed in test_folders_not_mirroring_src in tests/architecture_test.cpp: rename it after the "
           "folder it tests, or list it there and in docs/architecture.md";
  }
}

} // namespace
} // namespace tpulaunch
