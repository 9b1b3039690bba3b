#pragma once
// UTF-8: encoding one code point, recognising one sequence, and checking that a file is text.
// The JSON reader, the Python string decoder and the script check share these.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tpulaunch/util/error.hpp"

namespace tpulaunch {

// Appends code point `cp` (at most U+10FFFF, not a surrogate) to `out` as UTF-8.
void append_utf8(std::string& out, std::uint32_t cp);

// Length (2–4) of the valid multi-byte UTF-8 sequence starting at `text[pos]`, or 0 when the
// bytes there are not one (ASCII, overlong forms, surrogates, code points above U+10FFFF).
std::size_t utf8_sequence_length(std::string_view text, std::size_t pos);

// The offset of the first byte of `text` that does not begin a valid UTF-8 sequence, if any (any
// ASCII byte, NUL included, is one: JSON escapes it).
std::optional<std::size_t> first_non_utf8_byte(std::string_view text);

// Where to cut `text` to keep at most `max` bytes without splitting a UTF-8 sequence: `max`, or
// less when byte `max` continues a sequence (a shortened source line stays text JSON can carry).
std::size_t utf8_cut(std::string_view text, std::size_t max);

// Ok when `text` is UTF-8 without NUL bytes; otherwise a config Error
// "path:line:column: <what> is not UTF-8 text (byte 0xNN)".
Status check_utf8_text(std::string_view text, std::string_view path, std::string_view what);

} // namespace tpulaunch
