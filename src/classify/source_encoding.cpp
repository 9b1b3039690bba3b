#include "tpulaunch/classify/source_encoding.hpp"

#include <array>
#include <cstring>

#include <fmt/format.h>

#include "tpulaunch/util/utf8.hpp"

namespace tpulaunch {
namespace {

constexpr std::string_view k_bom = "\xEF\xBB\xBF";

// Python's names for the codecs tpulaunch reads, as encodings.normalize_encoding() leaves them
// (lower case, runs of other characters than letters, digits and '.' made one '_'): each codec's
// module name and the aliases in Lib/encodings/aliases.py.
struct CodecName {
  std::string_view name;
  SourceCodec codec;
};
constexpr std::array<CodecName, 36> k_codec_names{{
    {"utf_8", SourceCodec::utf8},
    {"u8", SourceCodec::utf8},
    {"utf", SourceCodec::utf8},
    {"utf8", SourceCodec::utf8},
    {"utf8_ucs2", SourceCodec::utf8},
    {"utf8_ucs4", SourceCodec::utf8},
    {"cp65001", SourceCodec::utf8},
    {"latin_1", SourceCodec::latin1},
    {"iso8859_1", SourceCodec::latin1},
    {"8859", SourceCodec::latin1},
    {"cp819", SourceCodec::latin1},
    {"csisolatin1", SourceCodec::latin1},
    {"ibm819", SourceCodec::latin1},
    {"iso8859", SourceCodec::latin1},
    {"iso_8859_1", SourceCodec::latin1},
    {"iso_8859_1_1987", SourceCodec::latin1},
    {"iso_ir_100", SourceCodec::latin1},
    {"l1", SourceCodec::latin1},
    {"latin", SourceCodec::latin1},
    {"latin1", SourceCodec::latin1},
    {"cp1252", SourceCodec::cp1252},
    {"windows_1252", SourceCodec::cp1252},
    {"1252", SourceCodec::cp1252},
    {"ascii", SourceCodec::ascii},
    {"646", SourceCodec::ascii},
    {"ansi_x3.4_1968", SourceCodec::ascii},
    {"ansi_x3.4_1986", SourceCodec::ascii},
    {"ansi_x3_4_1968", SourceCodec::ascii},
    {"cp367", SourceCodec::ascii},
    {"csascii", SourceCodec::ascii},
    {"ibm367", SourceCodec::ascii},
    {"iso646_us", SourceCodec::ascii},
    {"iso_646.irv_1991", SourceCodec::ascii},
    {"iso_ir_6", SourceCodec::ascii},
    {"us", SourceCodec::ascii},
    {"us_ascii", SourceCodec::ascii},
}};

// The tokenizer's own shortcut (get_normal_name in CPython's tokenizer, _get_normal_name in
// Lib/tokenize.py), looked at before the codec registry: these names and any with a "-suffix"
// (Emacs writes "utf-8-unix"), on the first 12 characters, lower case, '_' read as '-'.
constexpr std::array<CodecName, 4> k_tokenizer_names{{
    {"utf-8", SourceCodec::utf8},
    {"latin-1", SourceCodec::latin1},
    {"iso-8859-1", SourceCodec::latin1},
    {"iso-latin-1", SourceCodec::latin1},
}};

// cp1252's bytes 0x80..0x9f (the rest is Latin-1); 0 where cp1252 defines no character.
constexpr std::array<std::uint16_t, 32> k_cp1252_high{{
    0x20AC, 0,      0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0,      0x017D, 0,      0,      0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0,      0x017E, 0x0178,
}};

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// The code point of byte `b` in `codec` (Latin-1 or cp1252), 0 when it has none.
std::uint32_t code_point(SourceCodec codec, unsigned char b) {
  if (codec == SourceCodec::cp1252 && b >= 0x80 && b < 0xA0) {
    return k_cp1252_high[b - 0x80U];
  }
  return b;
}

// The end of the line starting at `begin` (at its \n, \r\n or \r), and where the next one starts.
std::pair<std::size_t, std::size_t> line_bounds(std::string_view text, std::size_t begin) {
  std::size_t end = begin;
  while (end < text.size() && text[end] != '\n' && text[end] != '\r') {
    ++end;
  }
  std::size_t next = end;
  if (next < text.size()) {
    next += (text[next] == '\r' && next + 1 < text.size() && text[next + 1] == '\n') ? 2U : 1U;
  }
  return {end, next};
}

// `line` from its first non-[ \t\f] byte on.
std::string_view skip_blanks(std::string_view line) {
  const auto first = line.find_first_not_of(" \t\f");
  return first == std::string_view::npos ? std::string_view() : line.substr(first);
}

// The encoding name a declaration comment on `line` gives, or nullopt.
std::optional<std::string_view> declared_name(std::string_view line) {
  line = skip_blanks(line);
  if (line.empty() || line.front() != '#') {
    return std::nullopt;
  }
  for (std::size_t at = line.find("coding"); at != std::string_view::npos; at = line.find("coding", at + 1)) {
    std::size_t i = at + 6;
    if (i >= line.size() || (line[i] != ':' && line[i] != '=')) {
      continue;
    }
    ++i;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) {
      ++i;
    }
    const std::size_t begin = i;
    while (i < line.size() && (alnum(line[i]) || line[i] == '-' || line[i] == '_' || line[i] == '.')) {
      ++i;
    }
    if (i > begin) {
      return line.substr(begin, i - begin);
    }
  }
  return std::nullopt;
}

// The position of byte `offset` as "line:column" (1-based, columns in bytes).
std::string position(std::string_view text, std::size_t offset) {
  std::size_t line = 1;
  std::size_t column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("{}:{}", line, column);
}

} // namespace

std::string_view to_string(SourceCodec codec) {
  switch (codec) {
  case SourceCodec::utf8:
    return "utf-8";
  case SourceCodec::latin1:
    return "latin-1";
  case SourceCodec::cp1252:
    return "cp1252";
  case SourceCodec::ascii:
    return "ascii";
  }
  return "utf-8";
}

std::optional<SourceCodec> source_codec(std::string_view name) {
  std::string shortcut;
  for (std::size_t i = 0; i < name.size() && i < 12; ++i) {
    shortcut += name[i] == '_' ? '-' : lower(name[i]);
  }
  for (const auto& row : k_tokenizer_names) {
    if (shortcut == row.name || (shortcut.starts_with(row.name) && shortcut[row.name.size()] == '-')) {
      return row.codec;
    }
  }
  // encodings.normalize_encoding(), then the registry's lower case.
  std::string normal;
  bool gap = false;
  for (const char c : name) {
    if (alnum(c) || c == '.') {
      if (gap && !normal.empty()) {
        normal += '_';
      }
      normal += lower(c);
      gap = false;
    } else {
      gap = true;
    }
  }
  for (const auto& row : k_codec_names) {
    if (normal == row.name) {
      return row.codec;
    }
  }
  return std::nullopt;
}

std::optional<CodingDeclaration> find_coding_declaration(std::string_view source) {
  const std::size_t start = source.starts_with(k_bom) ? k_bom.size() : 0;
  const auto [end1, next1] = line_bounds(source, start);
  const std::string_view line1 = source.substr(start, end1 - start);
  if (const auto name = declared_name(line1)) {
    return CodingDeclaration{*name, 1, source_codec(*name)};
  }
  // Line 2 counts only after a line 1 that is blank or a comment.
  const std::string_view rest1 = skip_blanks(line1);
  if (next1 >= source.size() || !(rest1.empty() || rest1.front() == '#')) {
    return std::nullopt;
  }
  const auto [end2, next2] = line_bounds(source, next1);
  (void)next2;
  if (const auto name = declared_name(source.substr(next1, end2 - next1))) {
    return CodingDeclaration{*name, 2, source_codec(*name)};
  }
  return std::nullopt;
}

Status check_python_source(std::string_view source, std::string_view path, std::string_view what) {
  // A NUL byte first, in any encoding (memchr passes over a script many times faster than the
  // classifier reads it).
  if (const void* nul = std::memchr(source.data(), 0, source.size())) {
    const auto offset = static_cast<std::size_t>(static_cast<const char*>(nul) - source.data());
    return config_error(fmt::format("{}:{}: {} contains a NUL byte (byte offset {}), which Python source cannot hold",
                                    path, position(source, offset), what, offset));
  }
  const auto declaration = find_coding_declaration(source);
  if (!declaration || declaration->codec == SourceCodec::utf8) {
    return check_utf8_text(source, path, what);
  }
  if (!declaration->codec) {
    return config_error(fmt::format("{}:{}: {} declares the encoding '{}' (PEP 263), which tpulaunch does not read; "
                                    "save it as UTF-8 (or declare utf-8, latin-1, cp1252 or ascii)",
                                    path, declaration->line, what, printable(declaration->name)));
  }
  if (source.starts_with(k_bom)) {
    return config_error(fmt::format("{}:{}: {} starts with a UTF-8 byte order mark but declares the encoding '{}', "
                                    "which Python refuses; remove one of them",
                                    path, declaration->line, what, printable(declaration->name)));
  }
  const SourceCodec codec = *declaration->codec;
  for (std::size_t i = 0; i < source.size(); ++i) {
    const auto b = static_cast<unsigned char>(source[i]);
    const bool bad = codec == SourceCodec::ascii ? b >= 0x80 : code_point(codec, b) == 0;
    if (bad) {
      return config_error(fmt::format("{}:{}: {} declares the encoding '{}' (line {}), but byte 0x{:02x} is not {}",
                                      path, position(source, i), what, printable(declaration->name),
                                      declaration->line, b, codec == SourceCodec::ascii ? "ASCII" : to_string(codec)));
    }
  }
  return Ok{};
}

std::optional<std::string> decode_python_source(std::string_view source) {
  const auto declaration = find_coding_declaration(source);
  if (!declaration || !declaration->codec || source.starts_with(k_bom) ||
      (*declaration->codec != SourceCodec::latin1 && *declaration->codec != SourceCodec::cp1252)) {
    return std::nullopt;
  }
  std::string text;
  text.reserve(source.size() + source.size() / 8);
  for (const char c : source) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x80) {
      text += c;
      continue;
    }
    const std::uint32_t cp = code_point(*declaration->codec, b);
    append_utf8(text, cp == 0 ? 0xFFFDU : cp);
  }
  return text;
}

} // namespace tpulaunch
