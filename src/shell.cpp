#include "tpulaunch/shell.hpp"

#include <array>

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

bool Word::has_code() const {
  for (const auto& part : m_parts) {
    if (part.is_code) {
      return true;
    }
  }
  return false;
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

ShellScript& ShellScript::script(const ShellScript& other) {
  m_elements.insert(m_elements.end(), other.m_elements.begin(), other.m_elements.end());
  return *this;
}

std::string shell_quote(std::string_view value) {
  std::size_t bare = 0;
  while (bare < value.size() && k_safe_bytes[static_cast<unsigned char>(value[bare])]) {
    ++bare;
  }
  if (!value.empty() && bare == value.size()) {
    return std::string(value);
  }
  std::string out;
  out.reserve(value.size() + 2);
  out += '\'';
  std::size_t from = 0;
  for (auto quote = value.find('\''); quote != std::string_view::npos; quote = value.find('\'', from)) {
    out.append(value.substr(from, quote - from));
    out += "'\\''";
    from = quote + 1;
  }
  out.append(value.substr(from));
  out += '\'';
  return out;
}

std::string to_shell(const Word& word) {
  if (word.parts().empty()) {
    return "''";
  }
  std::string out;
  for (const auto& part : word.parts()) {
    out += part.is_code ? part.text : shell_quote(part.text);
  }
  return out;
}

std::string to_shell(const ShellLine& line) {
  std::string out;
  bool previous_was_word = false;
  for (const auto& element : line.elements()) {
    if (const auto* w = std::get_if<Word>(&element)) {
      if (previous_was_word) {
        out += ' ';
      }
      out += to_shell(*w);
      previous_was_word = true;
    } else {
      out += std::get<Code>(element).text();
      previous_was_word = false;
    }
  }
  return out;
}

std::string to_shell(const Comment& comment) {
  constexpr std::string_view k_hex = "0123456789abcdef";
  std::string out = "# ";
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
  return out;
}

std::string to_shell(const ShellScript& script) {
  std::string out;
  for (const auto& element : script.elements()) {
    out += std::visit([](const auto& e) { return to_shell(e); }, element);
    out += '\n';
  }
  return out;
}

} // namespace tpulaunch
