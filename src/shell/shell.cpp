#include "tpulaunch/shell/shell.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace tpulaunch {
namespace {

// The bytes a word may hold bare: [A-Za-z0-9@%+=:,./_-]. Not '~', which bash expands at the start
// of a word and after '=' or ':'.
constexpr std::array<bool, 256> make_safe_bytes() {
  std::array<bool, 256> safe{};
  for (const char c : std::string_view("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-")) {
    safe[static_cast<unsigned char>(c)] = true;
  }
  return safe;
}
constexpr std::array<bool, 256> k_safe_bytes = make_safe_bytes();

} // namespace

Word& Word::append(std::string literal) {
  // Each literal part is quoted on its own, so "--zone=" stays bare in front of a quoted value.
  m_parts.push_back(Part{false, std::move(literal)});
  return *this;
}

Word& Word::append(Code code) {
  m_parts.push_back(Part{true, std::string(code.text())});
  return *this;
}

Word& Word::append(const Word& other) {
  m_parts.insert(m_parts.end(), other.m_parts.begin(), other.m_parts.end());
  return *this;
}

std::string Word::text() const {
  std::string out;
  for (const auto& part : m_parts) {
    out += part.text;
  }
  return out;
}

Word home_path(std::string relative) {
  Word word(k_home);
  if (!relative.empty()) {
    word.append(std::move(relative));
  }
  return word;
}

ShellLine::ShellLine(std::initializer_list<Word> words) {
  for (const auto& w : words) {
    m_elements.emplace_back(w);
  }
}

ShellLine& ShellLine::word(Word w) {
  m_elements.emplace_back(std::move(w));
  return *this;
}

ShellLine& ShellLine::code(Code c) {
  m_elements.emplace_back(c);
  return *this;
}

ShellLine& ShellLine::element(Element e) {
  m_elements.push_back(std::move(e));
  return *this;
}

ShellLine& ShellLine::words(const std::vector<Word>& ws) {
  for (const auto& w : ws) {
    m_elements.emplace_back(w);
  }
  return *this;
}

ShellLine& ShellLine::line(const ShellLine& other) {
  m_elements.insert(m_elements.end(), other.m_elements.begin(), other.m_elements.end());
  return *this;
}

std::vector<std::string> ShellLine::argv() const {
  std::vector<std::string> out;
  for (const auto& element : m_elements) {
    if (const auto* w = std::get_if<Word>(&element)) {
      out.push_back(w->text());
    }
  }
  return out;
}

ShellScript& ShellScript::line(ShellLine line) {
  m_elements.emplace_back(std::move(line));
  return *this;
}

ShellScript& ShellScript::comment(std::string text) {
  m_elements.emplace_back(Comment(std::move(text)));
  return *this;
}

ShellLine fill_holes(Code text, std::initializer_list<Hole> holes) {
  const auto is_name_byte = [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; };
  const std::string_view whole = text.text();
  std::vector<bool> filled(holes.size(), false);
  ShellLine line;
  std::size_t code_from = 0; // the code not yet added ends where a hole starts
  for (std::size_t at = whole.find('@'); at != std::string_view::npos; at = whole.find('@', at + 1)) {
    std::size_t end = at + 1;
    while (end < whole.size() && is_name_byte(whole[end])) {
      ++end;
    }
    if (end == at + 1 || end == whole.size() || whole[end] != '@') {
      continue; // "$@", "${list[@]}": code
    }
    const std::string_view name = whole.substr(at + 1, end - at - 1);
    const auto hole = std::find_if(holes.begin(), holes.end(), [name](const Hole& h) { return h.name == name; });
    if (hole == holes.end()) {
      throw std::logic_error("fill_holes: no value for @" + std::string(name) + "@");
    }
    line.code(text.substr(code_from, at - code_from)).line(hole->value);
    filled[static_cast<std::size_t>(hole - holes.begin())] = true;
    code_from = end + 1;
    at = end;
  }
  line.code(text.substr(code_from));
  if (const auto unused = std::find(filled.begin(), filled.end(), false); unused != filled.end()) {
    throw std::logic_error("fill_holes: the text has no @" +
                           std::string(holes.begin()[unused - filled.begin()].name) + "@");
  }
  return line;
}

namespace {

// The renderer's parts append to one string: a line of forty words is one allocation, not one per
// word and quoted part.
void append_quoted(std::string& out, std::string_view value) {
  std::size_t bare = 0;
  while (bare < value.size() && k_safe_bytes[static_cast<unsigned char>(value[bare])]) {
    ++bare;
  }
  if (!value.empty() && bare == value.size()) {
    out.append(value);
    return;
  }
  out += '\'';
  std::size_t from = 0;
  for (auto quote = value.find('\''); quote != std::string_view::npos; quote = value.find('\'', from)) {
    out.append(value.substr(from, quote - from));
    out += "'\\''";
    from = quote + 1;
  }
  out.append(value.substr(from));
  out += '\'';
}

void append_word(std::string& out, const Word& word) {
  if (word.parts().empty()) {
    out += "''";
    return;
  }
  for (const auto& part : word.parts()) {
    if (part.is_code) {
      out += part.text;
    } else {
      append_quoted(out, part.text);
    }
  }
}

void append_line(std::string& out, const ShellLine& line) {
  bool previous_was_word = false;
  for (const auto& element : line.elements()) {
    if (const auto* w = std::get_if<Word>(&element)) {
      if (previous_was_word) {
        out += ' ';
      }
      append_word(out, *w);
      previous_was_word = true;
    } else {
      out += std::get<Code>(element).text();
      previous_was_word = false;
    }
  }
}

void append_comment(std::string& out, const Comment& comment) {
  constexpr std::string_view k_hex = "0123456789abcdef";
  out += "# ";
  for (const char c : comment.text()) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += k_hex[byte >> 4U];
      out += k_hex[byte & 0xfU];
    } else {
      out += c;
    }
  }
}

} // namespace

std::string shell_quote(std::string_view value) {
  std::string out;
  out.reserve(value.size() + 2);
  append_quoted(out, value);
  return out;
}

std::string to_shell(const Word& word) {
  std::string out;
  append_word(out, word);
  return out;
}

std::string to_shell(const ShellLine& line) {
  std::string out;
  append_line(out, line);
  return out;
}

std::string to_shell(const Comment& comment) {
  std::string out;
  append_comment(out, comment);
  return out;
}

std::string to_shell(const ShellScript& script) {
  std::string out;
  for (const auto& element : script.elements()) {
    if (const auto* line = std::get_if<ShellLine>(&element)) {
      append_line(out, *line);
    } else {
      append_comment(out, std::get<Comment>(element));
    }
    out += '\n';
  }
  return out;
}

} // namespace tpulaunch
