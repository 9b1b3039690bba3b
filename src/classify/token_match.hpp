#pragma once
// Token predicates the scanner runs on a large share of all tokens, inline so that each is a few
// compares. Internal to the classifier.
#include <cstddef>
#include <cstring>
#include <string_view>

#include "tpulaunch/classify/python_lexer.hpp"

namespace tpulaunch::scan {

// Equality with a literal of known length: the compiler turns the memcmp into a few inline
// compares instead of a library call (these run for a large share of all tokens).
template <std::size_t N> inline bool equals(std::string_view text, const char (&literal)[N]) {
  return text.size() == N - 1 && std::memcmp(text.data(), literal, N - 1) == 0;
}
template <std::size_t N> inline bool is_op(const Token& t, const char (&text)[N]) {
  return t.kind == TokenKind::op && equals(t.text, text);
}
template <std::size_t N> inline bool is_name(const Token& t, const char (&text)[N]) {
  return t.kind == TokenKind::name && equals(t.text, text);
}
inline bool is_op(const Token& t, std::string_view text) { return t.kind == TokenKind::op && t.text == text; }
inline bool is_op1(const Token& t, char c) { return t.kind == TokenKind::op && t.text.size() == 1 && t.text[0] == c; }

inline bool is_opener(const Token& t) {
  return t.kind == TokenKind::op && t.text.size() == 1 && (t.text[0] == '(' || t.text[0] == '[' || t.text[0] == '{');
}
inline bool is_closer(const Token& t) {
  return t.kind == TokenKind::op && t.text.size() == 1 && (t.text[0] == ')' || t.text[0] == ']' || t.text[0] == '}');
}

// An f-string with a field is not a literal; other strings are.
inline bool is_literal_string(const Token& t) {
  return t.kind == TokenKind::string && !(t.fstring && t.body().find('{') != std::string_view::npos);
}

} // namespace tpulaunch::scan
