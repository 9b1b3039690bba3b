#pragma once
// JSON output: the text `--format json` prints, nlohmann's own dump(2) of a document built with
// nlohmann's types. The reader's counterpart (json_reader.hpp).
#include <string>

#include <nlohmann/json.hpp>

#include "tpulaunch/util/error.hpp"

namespace tpulaunch {

// The document as JSON text: `document.dump(2)` (two-space indent, members in the order built,
// UTF-8 kept, control bytes escaped) and a final newline. JSON text is Unicode (RFC 8259 §8.1), so
// a string or key that is not UTF-8 is refused rather than altered: a usage Error that names where
// it stands (a JSON Pointer, "/env/SEED"), the value (printable()) and its first byte that is not
// UTF-8. Nothing is printed then; the text and sh forms carry any bytes.
Result<std::string> json_text(const nlohmann::ordered_json& document);
// Ok when every string and key of `document` is UTF-8; otherwise the Error json_text returns.
Status check_json_strings(const nlohmann::ordered_json& document);

} // namespace tpulaunch
