#pragma once
// What the backslash escapes of JSON strings (src/json/json_parser.hpp) and Python string literals
// (src/classify/string_literal.cpp) share, spelled once.

namespace tpulaunch::escapes {

// The control character a one-letter escape stands for: \b \f \n \r \t in JSON and Python, and
// \a \v, which only Python has (JSON's reader does not ask for them). '\0' for any other letter.
constexpr char control(char letter) {
  switch (letter) {
  case 'a':
    return '\a';
  case 'b':
    return '\b';
  case 'f':
    return '\f';
  case 'n':
    return '\n';
  case 'r':
    return '\r';
  case 't':
    return '\t';
  case 'v':
    return '\v';
  default:
    return '\0';
  }
}

// The value of one hexadecimal digit (either case), or -1.
constexpr int hex_digit(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

} // namespace tpulaunch::escapes
