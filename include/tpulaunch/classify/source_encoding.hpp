#pragma once
// The encoding of a Python source file (PEP 263): the `# -*- coding: NAME -*-` (or `# vim: set
// fileencoding=NAME :`) declaration Python honours on line 1 or 2, the encodings tpulaunch reads
// (UTF-8, Latin-1, cp1252 and ASCII, under every name Python gives them), and the check that a
// script's bytes are text in its encoding. A script is hashed and staged as the bytes it is; only
// the classifier reads it decoded. docs/cli.md ("Classifier rules") cites the sources.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tpulaunch/util/error.hpp"

namespace tpulaunch {

// An encoding tpulaunch decodes.
enum class SourceCodec : std::uint8_t { utf8, latin1, cp1252, ascii };

// "utf-8", "latin-1", "cp1252" or "ascii".
std::string_view to_string(SourceCodec codec);

// The codec Python uses for the encoding `name` (any spelling Python accepts: "latin-1",
// "ISO_8859-1", "l1", "utf-8-unix", "windows-1252", ...), or nullopt for any other encoding.
std::optional<SourceCodec> source_codec(std::string_view name);

// An encoding declaration, as Python finds it.
struct CodingDeclaration {
  std::string_view name;            // as written, e.g. "latin-1"
  std::uint32_t line = 0;           // 1 or 2
  std::optional<SourceCodec> codec; // source_codec(name)
};

// The declaration of `source`: a comment on line 1 (after a UTF-8 byte order mark), or on line 2
// when line 1 is blank or a comment, matching `^[ \t\f]*#.*?coding[:=][ \t]*([-_.a-zA-Z0-9]+)`.
// Looks at those two lines only.
std::optional<CodingDeclaration> find_coding_declaration(std::string_view source);

// Ok when `source` is Python source text: no NUL byte anywhere, and text in its declared
// encoding (UTF-8 without a declaration). Otherwise a config Error that names the file, the
// position and the reason: "path:3:7: script contains a NUL byte (byte offset 31)", "path:2:4:
// script is not UTF-8 text (byte 0xe9)", "path:1: script declares the encoding 'shift_jis'
// (PEP 263), which tpulaunch does not read; ...", "path:2:1: script declares the encoding
// 'cp1252' (line 1), but byte 0x81 is not cp1252". `what` names the file ("script").
Status check_python_source(std::string_view source, std::string_view path, std::string_view what);

// The UTF-8 text of `source` when it declares Latin-1 or cp1252 (a byte cp1252 leaves undefined
// becomes U+FFFD); nullopt when it is to be read as it is (UTF-8, ASCII, no declaration, or an
// encoding tpulaunch does not read, which check_python_source refuses).
std::optional<std::string> decode_python_source(std::string_view source);

} // namespace tpulaunch
