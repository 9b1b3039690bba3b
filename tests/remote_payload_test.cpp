// The remote programs that travel inside a command (tools/remote_payload.cpp): the payload the
// plan carries decodes, with the worker's own steps (base64 --decode | gunzip), to the text that
// ships, and that text is the source file without its comment lines and blank lines.
#include <zlib.h>

#include <array>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "tpulaunch/embedded/discover_py.hpp"
#include "tpulaunch/embedded/run_guard_bash.hpp"

namespace {

std::string source_file(const char* path) {
  std::ifstream in(std::string(TPULAUNCH_SOURCE_DIR) + "/" + path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// RFC 4648 base64, strictly: every byte from the alphabet, '=' only as padding.
std::string base64_decode(std::string_view text) {
  constexpr std::string_view k_alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned group = 0;
  int bits = 0;
  for (const char c : text) {
    if (c == '=') {
      break;
    }
    const auto value = k_alphabet.find(c);
    if (value == std::string_view::npos) {
      ADD_FAILURE() << "not a base64 byte: " << static_cast<int>(c);
      return {};
    }
    group = (group << 6U) | static_cast<unsigned>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((group >> static_cast<unsigned>(bits)) & 0xffU);
    }
  }
  return out;
}

// What gunzip writes for a gzip stream; empty (and a failure) when it is not one.
std::string gunzip(const std::string& compressed) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 16) != Z_OK) {
    ADD_FAILURE() << "inflateInit2";
    return {};
  }
  std::string out;
  std::array<char, 16384> buffer{};
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data())); // NOLINT: zlib's API
  stream.avail_in = static_cast<uInt>(compressed.size());
  int status = Z_OK;
  while (status == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer.data()); // NOLINT: zlib's API
    stream.avail_out = static_cast<uInt>(buffer.size());
    status = inflate(&stream, Z_NO_FLUSH);
    out.append(buffer.data(), buffer.size() - stream.avail_out);
  }
  inflateEnd(&stream);
  EXPECT_EQ(status, Z_STREAM_END) << "the payload is not one whole gzip stream";
  return out;
}

// The source without blank lines and without the lines whose first non-blank byte is '#', except
// shellcheck's directives.
std::string without_comment_lines(const std::string& source) {
  std::istringstream lines(source);
  std::string line;
  std::string out;
  while (std::getline(lines, line)) {
    const auto first = line.find_first_not_of(" \t");
    if (first != std::string::npos && (line[first] != '#' || line.compare(first, 13, "# shellcheck ") == 0)) {
      out += line + "\n";
    }
  }
  return out;
}

TEST(RemotePayload, RunGuardDecodesToItsSourceWithoutComments) {
  const std::string source = source_file("src/remote/run_guard.bash");
  const std::string shipped = tpulaunch::embedded::run_guard_bash;
  EXPECT_EQ(shipped, without_comment_lines(source));
  EXPECT_EQ(gunzip(base64_decode(tpulaunch::embedded::run_guard_bash_payload)), shipped);
  // The point of packing it: the run command stays a few kilobytes.
  EXPECT_LT(std::string_view(tpulaunch::embedded::run_guard_bash_payload).size(), source.size() / 2);
}

TEST(RemotePayload, DiscoveryProgramArrivesByteForByte) {
  const std::string source = source_file("src/remote/discover.py");
  EXPECT_EQ(std::string(tpulaunch::embedded::discover_py), source);
  EXPECT_EQ(gunzip(base64_decode(tpulaunch::embedded::discover_py_payload)), source);
}

TEST(RemotePayload, PayloadsHoldOnlyBytesNoShellQuotes) {
  for (const std::string_view payload : {std::string_view(tpulaunch::embedded::run_guard_bash_payload),
                                         std::string_view(tpulaunch::embedded::discover_py_payload)}) {
    EXPECT_EQ(payload.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="),
              std::string_view::npos);
    EXPECT_FALSE(payload.empty());
  }
}

} // namespace
