#pragma once
// Small text helpers shared by the core: spelling suggestions and file reading.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tpulaunch/error.hpp"

namespace tpulaunch {

// The candidate closest to `word` by edit distance, if it is close enough to be a likely typo
// (distance ≤ max(2, |word|/3)); empty otherwise.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "" — for appending to an error message.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// Inputs larger than this are refused rather than read: no catalog, matrix or receipt is near it.
inline constexpr std::size_t k_max_input_bytes = 64U * 1024U * 1024U;
// Course scripts are smaller still.
inline constexpr std::size_t k_max_script_bytes = 16U * 1024U * 1024U;

// The whole content of the regular file at `path`. A missing or unreadable file, one that is not
// a regular file (a FIFO, a device, a folder: never opened for reading, so never a hang), or one
// larger than `max_bytes` is a config Error naming the path and the reason; `what` says what the
// file is ("catalog", "matrix").
Result<std::string> read_text_file(const std::string& path, std::string_view what,
                                   std::size_t max_bytes = k_max_input_bytes);

// Appends code point `cp` (at most U+10FFFF, not a surrogate) to `out` as UTF-8.
void append_utf8(std::string& out, std::uint32_t cp);

// Length (2–4) of the valid multi-byte UTF-8 sequence starting at `text[pos]`, or 0 when the
// bytes there are not one (ASCII, overlong forms, surrogates, code points above U+10FFFF).
std::size_t utf8_sequence_length(std::string_view text, std::size_t pos);

// Ok when `text` is UTF-8 without NUL bytes; otherwise a config Error
// "path:line:column: <what> is not UTF-8 text (byte 0xNN)".
Status check_utf8_text(std::string_view text, std::string_view path, std::string_view what);

} // namespace tpulaunch
