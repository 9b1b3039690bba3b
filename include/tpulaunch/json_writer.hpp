#pragma once
// JSON output: what `--format json` prints. The reader's counterpart (json_reader.hpp).
#include <string>

#include <nlohmann/json.hpp>

namespace tpulaunch {

// The text of value.dump(2), byte for byte: two-space indent, members in their order, UTF-8 kept,
// control bytes escaped. A string of printable ASCII is copied in one piece instead of going
// through nlohmann's per-byte UTF-8 decoder, which a plan's long commands made the largest cost of
// `plan --format json`; any other string, and every number, is written by nlohmann itself, so
// invalid UTF-8 throws nlohmann's type_error as dump() does.
std::string dump_json(const nlohmann::ordered_json& value);

} // namespace tpulaunch
