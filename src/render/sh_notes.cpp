// The sh form's notes for shellcheck (sh_notes.hpp).
#include "render/sh_notes.hpp"

#include <string_view>
#include <utility>
#include <variant>

namespace tpulaunch::sh_notes {
namespace {

constexpr Code k_remote_code_note{
    "# shellcheck disable=SC2016 # the remote shell expands what is quoted here, not this one"};
constexpr Code k_quoted_text_note{
    "# shellcheck disable=SC2016 # a value here holds $ or a backquote: quoted, it is text"};
constexpr Code k_nested_quote_note{
    "# shellcheck disable=SC1003 # a value here holds a quote, quoted again for the remote shell"};

} // namespace

QuotedText quoted_text(const ShellLine& line) {
  QuotedText found;
  for (const auto& element : line.elements()) {
    const auto* word = std::get_if<Word>(&element);
    if (word == nullptr) {
      continue;
    }
    const bool command = !word->parts().empty() && word->parts().front().text == "--command=";
    for (const auto& part : word->parts()) {
      if (part.is_code) {
        continue;
      }
      const bool expansion = part.text.find_first_of("$`") != std::string::npos;
      found.remote_code = found.remote_code || (command && expansion);
      found.expansion = found.expansion || (!command && expansion);
      found.backslash_quote = found.backslash_quote || part.text.find("\\'") != std::string::npos;
    }
  }
  return found;
}

void add_notes(ShellScript& sh, const QuotedText& found) {
  if (found.remote_code) {
    sh.code(k_remote_code_note);
  }
  if (found.expansion) {
    sh.code(k_quoted_text_note);
  }
  if (found.backslash_quote) {
    sh.code(k_nested_quote_note);
  }
}

void add_line(ShellScript& sh, ShellLine line) {
  add_notes(sh, quoted_text(line));
  sh.line(std::move(line));
}

void add_plan_notes(ShellScript& sh, const std::vector<std::string>& notes) {
  constexpr std::size_t k_width = 98; // a comment's text, after its "# "
  if (notes.empty()) {
    return;
  }
  sh.comment("Notes:");
  for (const std::string& note : notes) {
    std::string line("- ");
    bool words = false; // a word is on `line` already
    std::size_t from = 0;
    while (from < note.size()) {
      std::size_t end = note.find(' ', from);
      end = end == std::string::npos ? note.size() : end;
      const std::string_view word(note.data() + from, end - from);
      if (words && line.size() + 1 + word.size() > k_width) {
        sh.comment(std::exchange(line, std::string(2, ' '))); // continued under the text after "- "
        words = false;
      }
      if (words) {
        line.push_back(' ');
      }
      line.append(word);
      words = true;
      from = end + 1;
    }
    sh.comment(std::move(line));
  }
}

} // namespace tpulaunch::sh_notes
