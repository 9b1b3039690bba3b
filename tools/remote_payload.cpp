// remote_payload: the build step that turns a program which travels inside a generated command
// (src/remote/run_guard.bash, src/remote/discover.py) into a header of compile-time constants, so
// that `tpulaunch plan` does no encoding at run time and the command it prints stays short.
//
//   tpulaunch_remote_payload [--strip-comment-lines] INPUT VARIABLE HEADER [SHIPPED]
//
// HEADER defines, in namespace tpulaunch::embedded:
//   VARIABLE          the text that arrives on the worker: INPUT, or with --strip-comment-lines
//                     INPUT without its comment lines and blank lines (a bash file only);
//   VARIABLE_payload  that text compressed with gzip (zlib, level 9, no name, time 0: the same
//                     bytes at every build) and then base64-encoded (RFC 4648), so it holds only
//                     [A-Za-z0-9+/=], bytes no shell level quotes or expands.
// SHIPPED, when given, receives the arriving text as a file, for the tests and for shellcheck.
//
// A comment line is one whose first non-blank byte is '#'; a "#!" first line and shellcheck's
// directives ("# shellcheck ...", so the shipped text passes shellcheck as the source does) stay. Removing
// such lines is safe only outside here-documents and multi-line strings; a here-document in INPUT
// fails the build, and tests/remote/run_guard_test.bash runs the shipped text, not the source.
// Every output is written whole or not at all; a failure prints one line and exits 1.
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string& message) {
  throw std::runtime_error(message);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fail(path + ": cannot read");
  }
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

void write_file(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.close();
    if (!out) {
      fail(tmp + ": cannot write");
    }
  }
  std::filesystem::rename(tmp, path);
}

// True when the line holds a here-document operator: "<<" not followed by another '<'.
bool has_here_document(std::string_view line) {
  for (std::size_t at = line.find("<<"); at != std::string_view::npos; at = line.find("<<", at + 3)) {
    if (at + 2 >= line.size() || line[at + 2] != '<') {
      return true;
    }
  }
  return false;
}

std::string strip_comment_lines(const std::string& input, const std::string& path) {
  std::string out;
  std::istringstream lines(input);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    const auto first = line.find_first_not_of(" \t");
    const bool blank = first == std::string::npos;
    const std::string_view rest = std::string_view(line).substr(blank ? 0 : first);
    const bool kept = (number == 1 && line.starts_with("#!")) || rest.starts_with("# shellcheck ");
    const bool comment = !blank && line[first] == '#' && !kept;
    if (blank || comment) {
      continue;
    }
    if (has_here_document(line)) {
      fail(path + ":" + std::to_string(number) +
           ": a here-document; its lines could start with '#', so comment lines cannot be removed safely");
    }
    out += line;
    out += '\n';
  }
  return out;
}

std::string gzip(const std::string& input) {
  z_stream stream{};
  // 15 + 16: a 32 KiB window with a gzip header and trailer; zlib writes time 0 and no name.
  if (deflateInit2(&stream, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
    fail("zlib: deflateInit2 failed");
  }
  std::vector<unsigned char> out(deflateBound(&stream, static_cast<uLong>(input.size())) + 32);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data())); // NOLINT: zlib's API is not const
  stream.avail_in = static_cast<uInt>(input.size());
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&stream, Z_FINISH);
  const auto size = static_cast<std::size_t>(stream.total_out);
  deflateEnd(&stream);
  if (status != Z_STREAM_END) {
    fail("zlib: deflate did not finish");
  }
  return {reinterpret_cast<const char*>(out.data()), size};
}

std::string base64(std::string_view bytes) {
  constexpr std::string_view k_alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    unsigned group = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      group = (group << 8U) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0U);
    }
    for (std::size_t k = 0; k < 4; ++k) {
      out += k <= n ? k_alphabet[(group >> (18U - 6U * k)) & 0x3fU] : '=';
    }
  }
  return out;
}

std::string header(const std::string& input_path, const std::string& variable, const std::string& shipped,
                   const std::string& payload) {
  constexpr std::string_view k_delimiter = "tpl_embed";
  if (shipped.find(")" + std::string(k_delimiter) + "\"") != std::string::npos) {
    fail(input_path + ": contains the raw-string delimiter )" + std::string(k_delimiter) + "\"");
  }
  std::string out = "// Generated from " + input_path + " by tools/remote_payload.cpp. Do not edit.\n";
  out += "#pragma once\nnamespace tpulaunch::embedded {\n";
  out += "// The text that arrives on the worker.\n";
  out += "inline constexpr char " + variable + "[] = R\"" + std::string(k_delimiter) + "(" + shipped + ")" +
         std::string(k_delimiter) + "\";\n";
  out += "// The same, gzip-compressed, then base64-encoded: only [A-Za-z0-9+/=].\n";
  out += "inline constexpr char " + variable + "_payload[] = \"" + payload + "\";\n";
  out += "} // namespace tpulaunch::embedded\n";
  return out;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool strip = false;
  if (!args.empty() && args.front() == "--strip-comment-lines") {
    strip = true;
    args.erase(args.begin());
  }
  if (args.size() != 3 && args.size() != 4) {
    std::fputs("usage: tpulaunch_remote_payload [--strip-comment-lines] INPUT VARIABLE HEADER [SHIPPED]\n", stderr);
    return 2;
  }
  try {
    const std::string& input_path = args[0];
    const std::string input = read_file(input_path);
    const std::string shipped = strip ? strip_comment_lines(input, input_path) : input;
    const std::string payload = base64(gzip(shipped));
    write_file(args[2], header(input_path, args[1], shipped, payload));
    if (args.size() == 4) {
      write_file(args[3], shipped);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tpulaunch-remote-payload: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
