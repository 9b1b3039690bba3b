// Inputs that broke a fuzz target's invariants (tests/data/fuzz-regressions/, see its README),
// replayed through the same readers: each must give a one-line config Error whose message holds
// no control bytes, so that `tpulaunch: error: ...` stays one line on stderr and a file cannot
// send escape sequences to the terminal.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tpulaunch/catalog/catalog.hpp"
#include "tpulaunch/json/json_reader.hpp"
#include "tpulaunch/matrix/matrix.hpp"
#include "tpulaunch/values/validate.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

const fs::path k_dir = fs::path(TPULAUNCH_SOURCE_DIR) / "tests/data/fuzz-regressions";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

std::vector<fs::path> inputs(std::string_view prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(k_dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(prefix) && name != "README.md") {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void expect_one_clean_line(const Error& error, const fs::path& path) {
  EXPECT_EQ(error.code, ExitCode::config) << path;
  const bool clean = std::none_of(error.message.begin(), error.message.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
  EXPECT_TRUE(clean) << path.filename() << ": the message holds control bytes: " << printable(error.message);
}

TEST(FuzzRegression, JsonInputsGiveOneCleanErrorLine) {
  const auto files = inputs("json-");
  ASSERT_FALSE(files.empty());
  for (const auto& path : files) {
    auto doc = parse_json(read_file(path), path.filename().string());
    ASSERT_FALSE(doc.ok()) << path;
    expect_one_clean_line(doc.error(), path);
    EXPECT_TRUE(doc.error().message.starts_with(path.filename().string() + ":")) << doc.error().message;
  }
}

TEST(FuzzRegression, CatalogInputsGiveOneCleanErrorLine) {
  const auto files = inputs("catalog-");
  ASSERT_FALSE(files.empty());
  for (const auto& path : files) {
    auto catalog = parse_catalog(read_file(path), path.filename().string());
    ASSERT_FALSE(catalog.ok()) << path;
    expect_one_clean_line(catalog.error(), path);
  }
}

TEST(FuzzRegression, EveryInputGivesOneCleanErrorLineAsAMatrix) {
  // The matrix reader shares the JSON reader: the same inputs must not break its messages.
  for (const auto& path : inputs("")) {
    if (path.extension() != ".json") {
      continue;
    }
    auto matrix = parse_matrix(read_file(path), "execution-matrix.json");
    ASSERT_FALSE(matrix.ok()) << path;
    expect_one_clean_line(matrix.error(), path);
  }
}

TEST(JsonReaderRegression, NulByteIsNotCalledTheEndOfInput) {
  // Found by hand next to the fuzzing: peek() returns '\0' at the end, so a real NUL byte in the
  // file was described as "end of input", pointing the reader of the message the wrong way.
  auto doc = parse_json(std::string("{\"k\":\0}", 7), "nul.json");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().message.find("end of input"), std::string::npos) << doc.error().message;
  EXPECT_NE(doc.error().message.find("0x00"), std::string::npos) << doc.error().message;
}

} // namespace
} // namespace tpulaunch
