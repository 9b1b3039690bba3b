#pragma once
// Shell text, safe by construction. A command is data — a `ShellLine` of words and fixed shell
// code — until `to_shell` renders it; a whole script is a `ShellScript` of such lines and
// `Comment`s. Every byte of a user value travels in a literal part, and `shell_quote` is the one
// function that quotes literals. Shell code (operators, `~/`, `"$(hostname)"`, `"$TPU_RUN_DIR"`,
// the embedded programs under src/remote/) can only be written as a compile-time constant: `Code`
// has a consteval constructor, so no run-time string can ever become code.
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tpulaunch {

// A fragment of shell code known at compile time.
class Code {
public:
  explicit consteval Code(const char* text) : m_text(text) {}
  [[nodiscard]] constexpr std::string_view text() const { return m_text; }
  // The same code without its final newlines: an embedded file as one line of a script.
  [[nodiscard]] consteval Code without_final_newline() const {
    std::string_view text = m_text;
    while (text.ends_with('\n')) {
      text.remove_suffix(1);
    }
    return Code(text);
  }
  // A part of compile-time code is compile-time code: fill_holes cuts an embedded program at its
  // holes with this, at run time, and nothing else can make a Code of a run-time string.
  [[nodiscard]] constexpr Code substr(std::size_t pos, std::size_t count = std::string_view::npos) const {
    return Code(m_text.substr(pos, count), Narrowed{});
  }

private:
  struct Narrowed {};
  explicit consteval Code(std::string_view text) : m_text(text) {}
  constexpr Code(std::string_view part_of_code, Narrowed /*tag*/) : m_text(part_of_code) {}
  std::string_view m_text;
};

// Expansions the remote side performs on purpose. Each renders bare, never inside quotes.
inline constexpr Code k_home{"~/"};                  // the worker's home folder
inline constexpr Code k_hostname{"\"$(hostname)\""}; // the worker's hostname, e.g. t1v-n-…-w-3

// One shell word: literal parts (quoted as needed) and code parts (written as they are).
class Word {
public:
  struct Part {
    bool is_code = false;
    std::string text;
  };

  Word() = default;
  Word(std::string literal) { append(std::move(literal)); } // NOLINT(google-explicit-constructor)
  Word(const char* literal) { append(std::string(literal)); } // NOLINT(google-explicit-constructor)
  Word(Code code) { append(code); }                        // NOLINT(google-explicit-constructor)

  Word& append(std::string literal);
  Word& append(const char* literal) { return append(std::string(literal)); }
  Word& append(Code code);
  Word& append(const Word& other);

  [[nodiscard]] const std::vector<Part>& parts() const { return m_parts; }
  // The argument the program receives when no part expands (literal text plus code as written).
  [[nodiscard]] std::string text() const;

private:
  std::vector<Part> m_parts;
};

// "~/" followed by `relative` (literal): a path in the remote user's home.
Word home_path(std::string relative);

// A shell line: words separated by spaces, and code between them (";", "|", "&&", redirections).
class ShellLine {
public:
  using Element = std::variant<Word, Code>;
  ShellLine() = default;
  ShellLine(std::initializer_list<Word> words);

  ShellLine& word(Word w);
  ShellLine& code(Code c); // written exactly as given, with no added spaces
  ShellLine& words(const std::vector<Word>& ws);
  ShellLine& element(Element e);
  ShellLine& line(const ShellLine& other);

  [[nodiscard]] const std::vector<Element>& elements() const { return m_elements; }
  // The argv a program started from this line receives (only meaningful for a line without code
  // elements): each word's text().
  [[nodiscard]] std::vector<std::string> argv() const;

private:
  std::vector<Element> m_elements;
};

// A comment line for a person reading the script: "# " and the text. A newline would end the
// comment and start a command, so control bytes are written as \xNN: any text is safe here.
class Comment {
public:
  explicit Comment(std::string text) : m_text(std::move(text)) {}
  [[nodiscard]] const std::string& text() const { return m_text; }

private:
  std::string m_text;
};

// A script: shell lines and comments, one per line, in order. An empty ShellLine is a blank line;
// a line may hold newlines only inside its Code (an if/fi block, a continued command).
class ShellScript {
public:
  using Element = std::variant<ShellLine, Comment>;

  ShellScript& line(ShellLine line);
  ShellScript& code(Code code) { return line(ShellLine().code(code)); }
  ShellScript& comment(std::string text);
  ShellScript& blank() { return line(ShellLine()); }

  [[nodiscard]] const std::vector<Element>& elements() const { return m_elements; }

private:
  std::vector<Element> m_elements;
};

// A hole in shell code and what fills it: a command (argv data), or one word (a message, a status
// number from exit_code.hpp).
struct Hole {
  std::string_view name;
  ShellLine value;
};

// Shell code with holes: `text` (an embedded program under src/remote/) with each `@name@` in it,
// name in [a-z_], replaced by the value of the hole of that name; the text around the holes stays
// code, and a value's words are quoted by shell_quote as everywhere. Any other `@` is code. A hole
// the text does not have, or a `@name@` without a hole, is a bug: std::logic_error.
ShellLine fill_holes(Code text, std::initializer_list<Hole> holes);

// The one quoting function: `value` bare when every byte is in [A-Za-z0-9@%+=:,./_-] (and it is
// not empty), otherwise in single quotes with each ' written as '\''.
std::string shell_quote(std::string_view value);

// The one renderer: a word, line, comment or script as POSIX shell text. A script ends each of
// its lines with a newline.
std::string to_shell(const Word& word);
std::string to_shell(const ShellLine& line);
std::string to_shell(const Comment& comment);
std::string to_shell(const ShellScript& script);

} // namespace tpulaunch
