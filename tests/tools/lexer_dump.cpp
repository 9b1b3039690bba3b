// lexer_dump FILE...: prints the tokens of each file as tpulaunch's lexer reads them, for the
// differential test against Python's own tokenizer (tests/lexer_diff/lexer_diff.py). Per file:
//   FILE <path>
//   <kind> <line> <column> <end line> <end column>   (columns are 0-based byte offsets)
//   ERROR <line> <column> <message>                   (when the lexer recorded an error)
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "tpulaunch/classify/python_lexer.hpp"

namespace {

// Where `text`, starting at (line, column), ends: line breaks are \n, \r\n and \r.
void end_of(const tpulaunch::Token& t, unsigned long& line, unsigned long& column) {
  line = t.line;
  column = t.column - 1UL;
  for (std::size_t i = 0; i < t.text.size(); ++i) {
    const char c = t.text[i];
    if (c == '\r' && i + 1 < t.text.size() && t.text[i + 1] == '\n') {
      continue;
    }
    if (c == '\n' || c == '\r') {
      ++line;
      column = 0;
    } else {
      ++column;
    }
  }
}

} // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "lexer_dump: cannot read %s\n", argv[i]);
      return 2;
    }
    const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::optional<tpulaunch::LexError> error;
    const auto tokens = tpulaunch::tokenize(source, &error);
    std::printf("FILE %s\n", argv[i]);
    for (const auto& t : tokens) {
      if (t.kind == tpulaunch::TokenKind::end) {
        break;
      }
      unsigned long end_line = 0;
      unsigned long end_column = 0;
      end_of(t, end_line, end_column);
      std::printf("%s %u %u %lu %lu\n", std::string(tpulaunch::to_string(t.kind)).c_str(), t.line, t.column - 1U,
                  end_line, end_column);
    }
    if (error) {
      std::printf("ERROR %u %u %s\n", error->line, error->column - 1U, error->message.c_str());
    }
  }
  return 0;
}
